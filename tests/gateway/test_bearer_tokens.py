"""Outside development mode the caller presents a bearer JWT: a second gateway process,
started on the same platform in JWT mode with an issuer whose keys this test minted, admits
a good token's subject as that user and answers 401 to an expired token, one signed by
another key, one for another audience or issuer, and to X-Dev-User, which counts only in
development mode."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.gateway.api import Api
from tests.support.gateway_process import gateway_process, replica_settings
from tests.support.platform import Platform

ISSUER = "https://issuer.liftfit.test"
AUDIENCE = "liftfit-gateway"


@dataclass
class Issuer:
    key: rsa.RSAPrivateKey
    kid: str

    def token(self, subject: str, **changes: Any) -> str:
        now = int(time.time())
        claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + 300}
        claims.update(changes)
        claims = {k: v for k, v in claims.items() if v is not None}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.kid})


def _unsigned(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


def _new_issuer() -> Issuer:
    return Issuer(rsa.generate_private_key(public_exponent=65537, key_size=2048), uuid.uuid4().hex)


@pytest.fixture(scope="module")
async def issuer_and_gateway(
    platform: Platform, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Issuer, str]]:
    issuer = _new_issuer()
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(issuer.key.public_key()))
    jwks = tmp_path_factory.mktemp("jwks") / "keys.json"
    jwks.write_text(
        json.dumps({"keys": [{**public, "kid": issuer.kid, "alg": "RS256", "use": "sig"}]})
    )
    env = replica_settings(
        platform.env,
        GATEWAY_IDENTITY="jwt",
        GATEWAY_JWT_ISSUER=ISSUER,
        GATEWAY_JWT_AUDIENCE=AUDIENCE,
        GATEWAY_JWT_JWKS_FILE=str(jwks),
    )
    log = Path(tmp_path_factory.mktemp("jwt-gateway")) / "gateway.log"
    async with gateway_process(env, log) as gateway:
        yield issuer, gateway.url


async def test_a_good_token_speaks_for_its_subject_and_bad_ones_are_401(
    api: Api, issuer_and_gateway: tuple[Issuer, str]
) -> None:
    issuer, url = issuer_and_gateway
    org = await api.org()  # made through the development gateway; the same database
    path = f"/v1/orgs/{org.org_id}/bookings"
    stranger = _new_issuer()
    now = int(time.time())
    bad = {
        "expired": issuer.token(org.owner, iat=now - 3600, exp=now - 600),
        "signed by another key": Issuer(stranger.key, issuer.kid).token(org.owner),
        "another audience": issuer.token(org.owner, aud="someone-else"),
        "another issuer": issuer.token(org.owner, iss="https://evil.test"),
        "no expiry": issuer.token(org.owner, exp=None),
        "unsigned": _unsigned({"iss": ISSUER, "aud": AUDIENCE, "sub": org.owner, "exp": now + 300}),
        "garbage": "not.a.token",
    }
    async with httpx.AsyncClient(base_url=url, timeout=15) as client:
        good = await client.get(
            path, headers={"Authorization": f"Bearer {issuer.token(org.owner)}"}
        )
        assert good.status_code == 200, good.text
        assert good.json() == []
        other_member = await client.get(
            path, headers={"Authorization": f"Bearer {issuer.token('not-a-member')}"}
        )
        assert (other_member.status_code, other_member.json()["code"]) == (404, "not_found")
        for why, token in bad.items():
            refused = await client.get(path, headers={"Authorization": f"Bearer {token}"})
            assert (refused.status_code, refused.json()["code"]) == (401, "unauthenticated"), why
        dev = await client.get(path, headers={"X-Dev-User": org.owner})
        assert (dev.status_code, dev.json()["code"]) == (401, "unauthenticated")
        ops = await client.get("/v1/ops/audit", headers={"X-Dev-User": "ops"})
        assert ops.status_code == 401
