"""Who is calling: dev mode's header, and bearer tokens checked against the issuer's keys.

Every refused token differs from an accepted one in one respect only (built from the same
claims and key), so each refusal test fails if that one check is taken away.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from gateway_bff.identity import (
    Authenticator,
    BearerAuthenticator,
    DevAuthenticator,
    IdentityMode,
    IdentitySettings,
    KeySetFile,
    KeySetSource,
    KeySetUrl,
    SigningKeys,
    authenticator,
)
from gateway_bff.settings import SERVICES
from servicekit.config import SettingError
from tests.support import tls
from tests.support.sandboxes import REPO_ROOT

ISSUER = "https://issuer.example/"
AUDIENCE = "liftfit-gateway"
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def _jwk(public_key: Any, kid: str, algorithm: type[RSAAlgorithm | ECAlgorithm]) -> dict[str, Any]:
    jwk: dict[str, Any] = json.loads(algorithm.to_jwk(public_key))
    return {**jwk, "kid": kid, "use": "sig"}


def _key_set(*keys: dict[str, Any]) -> dict[str, Any]:
    return {"keys": list(keys)}


RSA_JWK = _jwk(RSA_KEY.public_key(), "rsa-1", RSAAlgorithm)
EC_JWK = _jwk(EC_KEY.public_key(), "ec-1", ECAlgorithm)


def _claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "alice",
        "iat": now,
        "exp": now + 300,
    }
    claims.update(changes)
    return {name: value for name, value in claims.items() if value is not None}


def _token(claims: Mapping[str, Any], key: Any = RSA_KEY, kid: str = "rsa-1") -> str:
    algorithm = "ES256" if isinstance(key, ec.EllipticCurvePrivateKey) else "RS256"
    return jwt.encode(dict(claims), key, algorithm=algorithm, headers={"kid": kid})


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class FixedKeySet(KeySetSource):
    """A key set in memory that counts how often it is read."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.reads = 0

    async def read(self) -> Mapping[str, Any]:
        self.reads += 1
        return self.document


def _bearer_authenticator(document: dict[str, Any] | None = None) -> BearerAuthenticator:
    keys = SigningKeys(FixedKeySet(document or _key_set(RSA_JWK, EC_JWK)), refetch_s=60)
    return BearerAuthenticator(keys, ISSUER, AUDIENCE)


@pytest.fixture
def jwks_file(tmp_path: Path) -> Path:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(_key_set(RSA_JWK, EC_JWK)))
    return path


@pytest.fixture
def jwks_url() -> Iterator[str]:
    body = json.dumps(_key_set(RSA_JWK, EC_JWK)).encode()

    class KeySetHandler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), KeySetHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    server.shutdown()
    server.server_close()


async def test_a_token_from_the_issuer_names_its_subject_with_keys_from_a_file(
    jwks_file: Path,
) -> None:
    async with httpx.AsyncClient() as http:
        settings = IdentitySettings(IdentityMode.JWT, ISSUER, AUDIENCE, jwks_file=str(jwks_file))
        assert await authenticator(settings, http).caller(_bearer(_token(_claims()))) == "alice"


async def test_an_es256_token_is_accepted_with_keys_served_over_http(jwks_url: str) -> None:
    async with httpx.AsyncClient() as http:
        keys = SigningKeys(KeySetUrl(jwks_url, http), refetch_s=60)
        token = _token(_claims(sub="bob"), EC_KEY, "ec-1")
        assert await BearerAuthenticator(keys, ISSUER, AUDIENCE).caller(_bearer(token)) == "bob"


async def test_an_audience_list_that_contains_ours_is_accepted() -> None:
    token = _token(_claims(aud=["another-api", AUDIENCE]))
    assert await _bearer_authenticator().caller(_bearer(token)) == "alice"


async def test_a_token_expired_within_the_leeway_is_accepted() -> None:
    token = _token(_claims(exp=int(time.time()) - 10))
    assert await _bearer_authenticator().caller(_bearer(token)) == "alice"


async def test_an_expired_token_is_refused() -> None:
    token = _token(_claims(exp=int(time.time()) - 120))
    assert await _bearer_authenticator().caller(_bearer(token)) is None


async def test_a_token_signed_by_another_key_under_the_issuers_key_id_is_refused() -> None:
    token = _token(_claims(), OTHER_RSA_KEY, "rsa-1")
    assert await _bearer_authenticator().caller(_bearer(token)) is None


async def test_a_token_for_another_audience_is_refused() -> None:
    token = _token(_claims(aud="another-api"))
    assert await _bearer_authenticator().caller(_bearer(token)) is None


async def test_a_token_from_another_issuer_is_refused() -> None:
    token = _token(_claims(iss="https://elsewhere.example/"))
    assert await _bearer_authenticator().caller(_bearer(token)) is None


async def test_a_token_without_expiry_is_refused() -> None:
    token = _token(_claims(exp=None))
    assert await _bearer_authenticator().caller(_bearer(token)) is None


async def test_a_token_without_subject_is_refused() -> None:
    token = _token(_claims(sub=None))
    assert await _bearer_authenticator().caller(_bearer(token)) is None


async def test_an_unsigned_token_is_refused() -> None:
    token = jwt.encode(_claims(), "", algorithm="none", headers={"kid": "rsa-1"})
    assert await _bearer_authenticator().caller(_bearer(token)) is None


def _hs256(claims: Mapping[str, Any], secret: bytes, kid: str) -> str:
    """An HMAC token minted by hand: PyJWT itself refuses to key HMAC with a public key."""

    def part(value: Mapping[str, Any]) -> bytes:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=")

    signed = part({"alg": "HS256", "typ": "JWT", "kid": kid}) + b"." + part(claims)
    signature = hmac.new(secret, signed, hashlib.sha256).digest()
    return (signed + b"." + base64.urlsafe_b64encode(signature).rstrip(b"=")).decode()


async def test_an_hmac_token_keyed_with_the_public_keys_text_is_refused() -> None:
    public_pem = RSA_KEY.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    token = _hs256(_claims(), public_pem, "rsa-1")
    assert await _bearer_authenticator().caller(_bearer(token)) is None


async def test_an_hmac_key_in_the_key_set_signs_nothing() -> None:
    secret = b"s" * 32
    oct_key = {"kty": "oct", "kid": "hmac-1", "k": base64.urlsafe_b64encode(secret).decode()}
    authenticate = _bearer_authenticator(_key_set(RSA_JWK, oct_key))
    assert await authenticate.caller(_bearer(_hs256(_claims(), secret, "hmac-1"))) is None


@pytest.mark.parametrize(
    "authorization",
    ["Bearer not-a-token", "Bearer a.b.c", "Bearer ", "Basic YWxpY2U6c2VjcmV0", "Bearer \x00"],
)
async def test_garbage_is_refused_without_an_error(authorization: str) -> None:
    assert await _bearer_authenticator().caller({"Authorization": authorization}) is None


async def test_a_subject_that_is_not_a_user_name_is_refused() -> None:
    token = _token(_claims(sub="a\u202eb"))
    assert await _bearer_authenticator().caller(_bearer(token)) is None


async def test_jwt_mode_ignores_the_dev_header() -> None:
    assert await _bearer_authenticator().caller({"X-Dev-User": "ops"}) is None


async def test_dev_mode_takes_the_header_in_any_case() -> None:
    assert await DevAuthenticator().caller({"x-dev-user": "ops"}) == "ops"
    assert await DevAuthenticator().caller({"X-Dev-User": "alice"}) == "alice"


async def test_dev_mode_ignores_a_bearer_token() -> None:
    assert await DevAuthenticator().caller(_bearer(_token(_claims()))) is None


@pytest.mark.parametrize("user", ["", "   ", "a" * 201, "ali\x07ce", "bob\u200b"])
async def test_dev_mode_refuses_a_header_that_is_not_a_user_name(user: str) -> None:
    assert await DevAuthenticator().caller({"X-Dev-User": user}) is None


async def test_a_new_key_id_reads_the_key_set_again_at_most_once_per_interval() -> None:
    source = FixedKeySet(_key_set(RSA_JWK))
    now = [1000.0]
    keys = SigningKeys(source, refetch_s=60, clock=lambda: now[0])
    authenticate = BearerAuthenticator(keys, ISSUER, AUDIENCE)
    assert await authenticate.caller(_bearer(_token(_claims()))) == "alice"
    rotated = _bearer(_token(_claims(), EC_KEY, "ec-1"))
    source.document = _key_set(RSA_JWK, EC_JWK)
    now[0] += 59
    assert await authenticate.caller(rotated) is None  # too soon to read again
    now[0] += 1
    assert await authenticate.caller(rotated) == "alice"
    assert source.reads == 2


async def test_an_unreadable_key_set_keeps_the_keys_already_known(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(_key_set(RSA_JWK)))
    keys = SigningKeys(KeySetFile(str(path)), refetch_s=0)
    authenticate = BearerAuthenticator(keys, ISSUER, AUDIENCE)
    assert await authenticate.caller(_bearer(_token(_claims()))) == "alice"
    path.write_text("{not json")
    assert await authenticate.caller(_bearer(_token(_claims(), EC_KEY, "ec-1"))) is None
    assert await authenticate.caller(_bearer(_token(_claims()))) == "alice"


def test_jwt_mode_without_its_settings_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_IDENTITY", "jwt")
    monkeypatch.setenv("GATEWAY_JWT_JWKS_FILE", "/etc/jwks.json")
    monkeypatch.setenv("GATEWAY_JWT_AUDIENCE", AUDIENCE)
    monkeypatch.delenv("GATEWAY_JWT_ISSUER", raising=False)
    monkeypatch.delenv("GATEWAY_JWT_JWKS_URL", raising=False)
    with pytest.raises(SettingError, match="GATEWAY_JWT_ISSUER"):
        IdentitySettings.from_env()
    monkeypatch.setenv("GATEWAY_JWT_ISSUER", ISSUER)
    monkeypatch.delenv("GATEWAY_JWT_JWKS_FILE")
    with pytest.raises(SettingError, match="GATEWAY_JWT_JWKS_URL"):
        IdentitySettings.from_env()


def test_the_identity_mode_has_no_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GATEWAY_IDENTITY", raising=False)
    with pytest.raises(SettingError, match="GATEWAY_IDENTITY"):
        IdentitySettings.from_env()
    monkeypatch.setenv("GATEWAY_IDENTITY", "none")
    with pytest.raises(SettingError, match="GATEWAY_IDENTITY"):
        IdentitySettings.from_env()


def test_the_gateway_refuses_to_start_without_an_identity_setting() -> None:
    """Every other setting is there, so only the missing identity can stop it: the process
    ends with 2 before it serves, naming the setting, and never falls back to dev mode."""
    env = {
        "PATH": "/usr/bin:/bin",
        "GATEWAY_ADDRESS": "127.0.0.1:1",
        "GATEWAY_DATABASE_URL": "postgresql+psycopg://nobody:nothing@127.0.0.1:1/none",
        "KAFKA_BOOTSTRAP": "127.0.0.1:1",
        "GATEWAY_TLS_DIR": tls.folder("gateway"),
        **{f"{name.upper()}_GRPC_ADDRESS": "127.0.0.1:1" for name in SERVICES},
    }
    started = subprocess.run(
        [sys.executable, "-m", "gateway_bff"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 2, started.stderr
    assert "refusing to start: setting GATEWAY_IDENTITY" in started.stderr


def test_jwt_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_IDENTITY", "jwt")
    monkeypatch.setenv("GATEWAY_JWT_ISSUER", ISSUER)
    monkeypatch.setenv("GATEWAY_JWT_AUDIENCE", AUDIENCE)
    monkeypatch.setenv("GATEWAY_JWT_JWKS_URL", "https://issuer.example/jwks.json")
    monkeypatch.delenv("GATEWAY_JWT_JWKS_FILE", raising=False)
    assert IdentitySettings.from_env() == IdentitySettings(
        IdentityMode.JWT, ISSUER, AUDIENCE, jwks_url="https://issuer.example/jwks.json"
    )


async def test_the_environment_picks_the_authenticator(
    monkeypatch: pytest.MonkeyPatch, jwks_file: Path
) -> None:
    monkeypatch.setenv("GATEWAY_IDENTITY", "dev")
    dev = Authenticator.from_env()
    assert await dev.caller({"X-Dev-User": "ops"}) == "ops"
    monkeypatch.setenv("GATEWAY_IDENTITY", "jwt")
    monkeypatch.setenv("GATEWAY_JWT_ISSUER", ISSUER)
    monkeypatch.setenv("GATEWAY_JWT_AUDIENCE", AUDIENCE)
    monkeypatch.setenv("GATEWAY_JWT_JWKS_FILE", str(jwks_file))
    monkeypatch.delenv("GATEWAY_JWT_JWKS_URL", raising=False)
    bearer = Authenticator.from_env()
    try:
        assert await bearer.caller({"X-Dev-User": "ops"}) is None
        assert await bearer.caller(_bearer(_token(_claims()))) == "alice"
    finally:
        await bearer.aclose()
