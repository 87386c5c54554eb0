"""The payment service's settings, from environment variables only."""

from __future__ import annotations

from dataclasses import dataclass

from servicekit import config
from servicekit.config import SettingError

SERVICE = "payment"  # its name in the boundary table (deploy/boundary.yaml)


@dataclass(frozen=True)
class Settings:
    database_url: str
    kafka_bootstrap: str
    card_gateway_url: str
    card_gateway_api_key: str
    webhook_secrets: tuple[str, ...]
    idempotency_secret: bytes
    tls_dir: str  # its certificate folder (servicekit.mtls)
    grpc_address: str = "127.0.0.1:15052"
    topic_prefix: str = ""
    return_url: str = ""
    reconcile_after_s: int = 300
    reconcile_every_s: int = 30
    gateway_timeout_s: float = 5.0
    gateway_retry_base_s: float = 0.5
    gateway_max_tries: int = 8
    metrics_address: str = ""  # host:port of /metrics; empty: none served
    health_address: str = ""  # host:port of plaintext health checks only; empty: none

    @property
    def endpoint(self) -> config.Endpoint:
        return config.Endpoint(SERVICE, self.grpc_address, self.tls_dir, self.health_address)

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            **config.service_basics("payment", grpc_port=15052),
            card_gateway_url=_http_url("CARD_GATEWAY_URL", config.required("CARD_GATEWAY_URL")),
            card_gateway_api_key=config.required("CARD_GATEWAY_API_KEY"),
            webhook_secrets=tuple(config.secret_list("PAYMENT_WEBHOOK_SECRETS")),
            return_url=_optional_url("PAYMENT_RETURN_URL"),
            reconcile_after_s=config.integer("PAYMENT_RECONCILE_AFTER_SECONDS", 300, minimum=1),
            reconcile_every_s=config.integer("PAYMENT_RECONCILE_EVERY_SECONDS", 30, minimum=1),
            gateway_timeout_s=config.integer("CARD_GATEWAY_TIMEOUT_MS", 5000, minimum=50) / 1000,
            gateway_retry_base_s=config.integer("CARD_GATEWAY_RETRY_BASE_MS", 500) / 1000,
            gateway_max_tries=config.integer("CARD_GATEWAY_MAX_TRIES", 8, minimum=1),
        )

    @property
    def booking_events_topic(self) -> str:
        return f"{self.topic_prefix}booking.events"

    @property
    def payment_events_topic(self) -> str:
        return f"{self.topic_prefix}payment.events"

    @property
    def consumer_group(self) -> str:
        return f"{self.topic_prefix}payment"


def _http_url(name: str, value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise SettingError(name, f"must be an http(s) URL, got {value!r}")
    return value.rstrip("/")


def _optional_url(name: str) -> str:
    value = config.optional(name, "")
    return _http_url(name, value) if value else ""
