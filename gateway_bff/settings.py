"""The gateway's settings, from environment variables only.

GATEWAY_ADDRESS (host:port it serves), GATEWAY_DATABASE_URL (its own database: organisations,
members, operators), the services' gRPC addresses under the names the services themselves
read (BOOKING_GRPC_ADDRESS, ...), GATEWAY_TLS_DIR (the gateway's certificate folder, whose
principal the services let speak for users: servicekit.mtls), GATEWAY_DEADLINE_MS (how long
one call to a service may take), GATEWAY_OPERATORS (users given the operator role at start,
`ops` in the local run), Kafka's address and topic prefix for the consumer lag it reports,
and GATEWAY_TRACES_URL (Jaeger's query API, which the operators' console reads traces from;
empty: no traces), and how long a saga step may take before drift names its absence:
GATEWAY_DRIFT_ACCESS_AFTER_SECONDS (a confirmed booking without a grant, 300),
GATEWAY_DRIFT_PAYMENT_OPEN_AFTER_SECONDS (an ended booking's payment still open, 300),
GATEWAY_DRIFT_UNPAID_AFTER_SECONDS (a confirmed booking whose payment is not paid, 300) and
GATEWAY_DRIFT_CREDENTIAL_AFTER_SECONDS (an active door code for a booking not confirmed,
300).
GATEWAY_TRUSTED_PROXIES (the addresses or networks of the proxies in front of the gateway,
comma-separated: only a request from one of them may name the client's address in
`X-Forwarded-For`; unset, no one may, and the rate limits by address count the peer).
GATEWAY_BOOKING_CACHE_MS (how long a booking read from the services may be answered again
from memory, 1000; 0 keeps none: decision 0008).
Identity settings are read by gateway_bff.identity, the rate limits' by
gateway_bff.limits.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from datetime import timedelta

from gateway_bff.drift import DriftBounds
from gateway_bff.limits import LimitSettings
from servicekit import config

SERVICES = ("booking", "payment", "access", "notify")


@dataclass(frozen=True)
class Settings:
    address: str
    database_url: str
    service_addresses: dict[str, str]
    kafka_bootstrap: str
    tls_dir: str  # the gateway's certificate for the services (servicekit.mtls)
    topic_prefix: str = ""
    deadline_s: float = 3.0
    operators: tuple[str, ...] = ()
    db_pool_size: int = 10
    traces_url: str = ""
    drift: DriftBounds = field(default_factory=DriftBounds)
    limits: LimitSettings = field(default_factory=LimitSettings)
    trusted_proxies: tuple[str, ...] = ()
    booking_cache_ms: int = 1000

    @classmethod
    def from_env(cls) -> Settings:
        operators = config.optional("GATEWAY_OPERATORS", "")
        return cls(
            address=config.optional("GATEWAY_ADDRESS", "127.0.0.1:18080"),
            database_url=config.database_url("GATEWAY_DATABASE_URL"),
            service_addresses={
                name: config.required(f"{name.upper()}_GRPC_ADDRESS") for name in SERVICES
            },
            kafka_bootstrap=config.required("KAFKA_BOOTSTRAP"),
            tls_dir=config.tls_folder("GATEWAY_TLS_DIR"),
            topic_prefix=config.optional("TOPIC_PREFIX", ""),
            deadline_s=config.integer("GATEWAY_DEADLINE_MS", 3000, minimum=50) / 1000,
            operators=tuple(u.strip() for u in operators.split(",") if u.strip()),
            db_pool_size=config.integer("GATEWAY_DB_POOL_SIZE", 10, minimum=1),
            traces_url=config.optional("GATEWAY_TRACES_URL", ""),
            drift=DriftBounds(
                access_after=_seconds("GATEWAY_DRIFT_ACCESS_AFTER_SECONDS", 300),
                payment_open_after=_seconds("GATEWAY_DRIFT_PAYMENT_OPEN_AFTER_SECONDS", 300),
                unpaid_after=_seconds("GATEWAY_DRIFT_UNPAID_AFTER_SECONDS", 300),
                credential_after=_seconds("GATEWAY_DRIFT_CREDENTIAL_AFTER_SECONDS", 300),
            ),
            limits=LimitSettings.from_env(),
            trusted_proxies=_networks("GATEWAY_TRUSTED_PROXIES"),
            booking_cache_ms=config.integer("GATEWAY_BOOKING_CACHE_MS", 1000, minimum=0),
        )


def _seconds(name: str, default: int) -> timedelta:
    return timedelta(seconds=config.integer(name, default, minimum=1))


def _networks(name: str) -> tuple[str, ...]:
    """Addresses or networks ("10.0.0.0/8, 192.0.2.7"), each checked; "" is none."""
    given = tuple(part.strip() for part in config.optional(name, "").split(",") if part.strip())
    for network in given:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise config.SettingError(name, f"{network!r} is not an address or network") from None
    return given
