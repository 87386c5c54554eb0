"""Whose address the rate limits by address count: the peer's, unless the peer is a proxy
GATEWAY_TRUSTED_PROXIES names, which alone may name the client in X-Forwarded-For. The
server is configured as `python -m gateway_bff` configures it (gateway_bff.main), and a
request goes through uvicorn's own middleware to an app that notes the client it is given.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway_bff.main import server_config
from gateway_bff.settings import SERVICES, Settings
from servicekit.config import SettingError
from tests.gateway.unit.edge import request_scope
from tests.support import tls

FORGED = b"203.0.113.9"


def _settings(proxies: tuple[str, ...] = ()) -> Settings:
    return Settings(
        address="127.0.0.1:18080",
        database_url="postgresql+psycopg://unused@127.0.0.1/unused",
        service_addresses={},
        kafka_bootstrap="127.0.0.1:9092",
        tls_dir="",
        trusted_proxies=proxies,
    )


async def _client_seen(settings: Settings, peer: str) -> str:
    seen: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope["client"][0])

    config = server_config(app, settings)
    config.load()
    scope = request_scope(
        "POST", "/v1/orgs/o/bookings", (peer, 40000), [(b"x-forwarded-for", FORGED)]
    )
    await config.loaded_app(scope, None, None)
    return seen[0]


async def test_without_trusted_proxies_a_client_on_the_gateways_host_cannot_name_its_address() -> (
    None
):
    assert await _client_seen(_settings(), "127.0.0.1") == "127.0.0.1"


async def test_a_named_proxy_may_name_the_client_and_no_one_else_may() -> None:
    settings = _settings(("10.0.0.0/8",))
    assert await _client_seen(settings, "10.1.2.3") == FORGED.decode()
    assert await _client_seen(settings, "127.0.0.1") == "127.0.0.1"


def test_a_proxy_setting_that_is_no_address_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    every_other = {
        "GATEWAY_DATABASE_URL": "postgresql+psycopg://unused:unused@127.0.0.1/gateway",
        "KAFKA_BOOTSTRAP": "127.0.0.1:9092",
        "GATEWAY_TLS_DIR": tls.folder("gateway"),
        **{f"{name.upper()}_GRPC_ADDRESS": "127.0.0.1:1" for name in SERVICES},
    }
    for name, value in every_other.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GATEWAY_TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.7")
    assert Settings.from_env().trusted_proxies == ("10.0.0.0/8", "192.0.2.7")
    monkeypatch.setenv("GATEWAY_TRUSTED_PROXIES", "10.0.0.0/8, the-ingress")
    with pytest.raises(SettingError, match=r"GATEWAY_TRUSTED_PROXIES: 'the-ingress'"):
        Settings.from_env()
