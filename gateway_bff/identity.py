"""Who is calling: the user a request speaks for, or None (the gateway then answers 401).

In development mode the caller names itself with `X-Dev-User`, and nothing else counts: a
bearer token is ignored there, so a local run never half-checks one. In JWT mode that header
is ignored and the caller must present `Authorization: Bearer <token>`, signed by the
configured issuer with RS256 or ES256 only. The algorithm is taken from the issuer's key,
never from the token, so neither `none` nor an HMAC keyed with the public key's text (the
classic confusion) can pass. Issuer, audience, expiry and subject are required.

A bad token is an answer, not an error: `caller` returns None and logs at debug level
without the token's text, which is a credential.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import httpx
import jwt

from servicekit import config, validation

log = logging.getLogger(__name__)

SIGNING_ALGORITHMS = ("RS256", "ES256")
LEEWAY_S = 30  # clock skew between the issuer and this process
DEV_USER_HEADER = "x-dev-user"
_BEARER = "bearer "
_MAX_JWKS_BYTES = 256 * 1024  # a key set is a few KiB; more is not one


class IdentityMode(StrEnum):
    DEV = "dev"
    JWT = "jwt"


@dataclass(frozen=True)
class IdentitySettings:
    """How callers prove who they are; JWT mode names the issuer and where its keys are."""

    mode: IdentityMode
    issuer: str = ""
    audience: str = ""
    jwks_url: str = ""
    jwks_file: str = ""
    jwks_refetch_s: int = 60  # an unknown key id fetches the key set again at most this often

    @classmethod
    def from_env(cls) -> IdentitySettings:
        # No default mode: a gateway that fell back to dev mode would let anyone be anyone.
        raw = config.required("GATEWAY_IDENTITY")
        if raw not in tuple(IdentityMode):
            raise config.SettingError("GATEWAY_IDENTITY", "must be dev or jwt")
        if raw == IdentityMode.DEV:
            return cls(IdentityMode.DEV)
        url = config.optional("GATEWAY_JWT_JWKS_URL", "")
        file = config.optional("GATEWAY_JWT_JWKS_FILE", "")
        if bool(url) == bool(file):
            raise config.SettingError(
                "GATEWAY_JWT_JWKS_URL", "set it or GATEWAY_JWT_JWKS_FILE, exactly one"
            )
        return cls(
            IdentityMode.JWT,
            issuer=config.required("GATEWAY_JWT_ISSUER"),
            audience=config.required("GATEWAY_JWT_AUDIENCE"),
            jwks_url=url,
            jwks_file=file,
            jwks_refetch_s=config.integer("GATEWAY_JWT_JWKS_REFETCH_SECONDS", 60),
        )


class Authenticator(ABC):
    """Names the user a request speaks for."""

    @abstractmethod
    async def caller(self, headers: Mapping[str, str]) -> str | None:
        """The user name, or None when the request proves no identity."""

    async def aclose(self) -> None:
        """Releases what the authenticator holds open (a key set's HTTP client)."""
        return None

    @classmethod
    def from_env(cls) -> Authenticator:
        """The authenticator the environment's settings ask for; raises SettingError."""
        settings = IdentitySettings.from_env()
        if settings.mode is IdentityMode.DEV:
            return DevAuthenticator()
        # No connection is made here: the key set is fetched when the first token comes.
        return authenticator(settings, httpx.AsyncClient(), owns_http=True)


def authenticator(
    settings: IdentitySettings, http: httpx.AsyncClient, owns_http: bool = False
) -> Authenticator:
    """The authenticator the settings ask for; `http` fetches a key set from a URL, and is
    closed by the authenticator's aclose() only when it `owns_http`."""
    if settings.mode is IdentityMode.DEV:
        return DevAuthenticator()
    source: KeySetSource = (
        KeySetUrl(settings.jwks_url, http) if settings.jwks_url else KeySetFile(settings.jwks_file)
    )
    keys = SigningKeys(source, settings.jwks_refetch_s)
    return BearerAuthenticator(
        keys, settings.issuer, settings.audience, http if owns_http else None
    )


class DevAuthenticator(Authenticator):
    async def caller(self, headers: Mapping[str, str]) -> str | None:
        return _user(_header(headers, DEV_USER_HEADER))


class BearerAuthenticator(Authenticator):
    def __init__(
        self,
        keys: SigningKeys,
        issuer: str,
        audience: str,
        owned_http: httpx.AsyncClient | None = None,
    ) -> None:
        self._keys = keys
        self._issuer = issuer
        self._audience = audience
        self._owned_http = owned_http

    async def aclose(self) -> None:
        if self._owned_http is not None:
            await self._owned_http.aclose()

    async def caller(self, headers: Mapping[str, str]) -> str | None:
        authorization = _header(headers, "authorization") or ""
        if authorization[: len(_BEARER)].lower() != _BEARER:
            return None
        token = authorization[len(_BEARER) :].strip()
        try:
            key = await self._keys.for_kid(_key_id(token))
            if key is None:
                log.debug("bearer token refused: no signing key with its key id")
                return None
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[key.algorithm_name],
                audience=self._audience,
                issuer=self._issuer,
                leeway=LEEWAY_S,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as error:
            # The class says why (expired, audience, signature) without repeating the token.
            log.debug("bearer token refused: %s", type(error).__name__)
            return None
        return _user(claims.get("sub"))


def _key_id(token: str) -> str:
    header = jwt.get_unverified_header(token)
    if header.get("alg") not in SIGNING_ALGORITHMS:
        raise jwt.InvalidAlgorithmError("algorithm not allowed")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise jwt.InvalidTokenError("no key id")
    return kid


def _header(headers: Mapping[str, str], name: str) -> str | None:
    # Starlette's headers match any case; a plain dict (a test, a tool) may not.
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def _user(value: object) -> str | None:
    """The same rule for a user as every service applies: printable, 1 to 200 characters."""
    if not isinstance(value, str):
        return None
    try:
        return validation.text("user", value)
    except validation.InvalidField:
        return None


class KeySetSource(ABC):
    """Where the issuer's JSON Web Key Set is read."""

    @abstractmethod
    async def read(self) -> Mapping[str, Any]: ...


class KeySetUrl(KeySetSource):
    def __init__(self, url: str, http: httpx.AsyncClient) -> None:
        self._url = url
        self._http = http

    async def read(self) -> Mapping[str, Any]:
        response = await self._http.get(self._url, timeout=5.0)
        response.raise_for_status()
        if len(response.content) > _MAX_JWKS_BYTES:
            raise ValueError("key set too large")
        return _key_set(response.content)


class KeySetFile(KeySetSource):
    """A key set on disk: tests and a local issuer."""

    def __init__(self, path: str) -> None:
        self._path = Path(path)

    async def read(self) -> Mapping[str, Any]:
        return _key_set(await asyncio.to_thread(self._path.read_bytes))


def _key_set(raw: bytes) -> Mapping[str, Any]:
    document = json.loads(raw)
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("not a JSON Web Key Set")
    return document


class SigningKeys:
    """The issuer's signing keys by key id, read on first use and again when a token names
    a key id not seen yet (a rotation), at most once per `refetch_s`: a flood of tokens with
    made-up key ids costs one read per interval, not one per request."""

    def __init__(
        self, source: KeySetSource, refetch_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._source = source
        self._refetch_s = refetch_s
        self._clock = clock
        self._keys: dict[str, jwt.PyJWK] = {}
        self._read_at: float | None = None
        self._lock = asyncio.Lock()

    async def for_kid(self, kid: str) -> jwt.PyJWK | None:
        if kid not in self._keys:
            async with self._lock:
                if kid not in self._keys and self._may_read():
                    await self._read()
        return self._keys.get(kid)

    def _may_read(self) -> bool:
        return self._read_at is None or self._clock() - self._read_at >= self._refetch_s

    async def _read(self) -> None:
        self._read_at = self._clock()
        try:
            document = await self._source.read()
        except (httpx.HTTPError, OSError, ValueError) as error:
            # The keys known so far stay; the next unknown key id tries again after refetch_s.
            log.warning("signing keys not read: %s", type(error).__name__)
            return
        self._keys = _signing_keys(document)


def _signing_keys(document: Mapping[str, Any]) -> dict[str, jwt.PyJWK]:
    """The set's RS256 and ES256 signing keys; any other key (HMAC, encryption) is skipped."""
    keys: dict[str, jwt.PyJWK] = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        kid = entry.get("kid")
        try:
            key = jwt.PyJWK(entry)
        except (jwt.PyJWTError, ValueError, TypeError):
            continue
        if isinstance(kid, str) and kid and key.algorithm_name in SIGNING_ALGORITHMS:
            keys[kid] = key
    return keys
