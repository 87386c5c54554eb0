"""The booking service's settings, from environment variables only."""

from __future__ import annotations

from dataclasses import dataclass

from servicekit import config

SERVICE = "booking"  # its name in the boundary table (deploy/boundary.yaml)


@dataclass(frozen=True)
class Settings:
    database_url: str
    kafka_bootstrap: str
    grpc_address: str
    topic_prefix: str
    idempotency_secret: bytes
    tls_dir: str  # its certificate folder (servicekit.mtls)
    hold_seconds: int
    terms_version: str
    db_pool_size: int = 16
    # How long a card booking may hold its slot with no payment before drift names it.
    drift_no_payment_after_s: int = 120
    metrics_address: str = ""  # host:port of /metrics; empty: none served
    health_address: str = ""  # host:port of plaintext health checks only; empty: none

    @property
    def endpoint(self) -> config.Endpoint:
        return config.Endpoint(SERVICE, self.grpc_address, self.tls_dir, self.health_address)

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            **config.service_basics("booking", grpc_port=15051),
            hold_seconds=config.integer("BOOKING_HOLD_SECONDS", 900, minimum=1),
            terms_version=config.optional("BOOKING_TERMS_VERSION", "2026-11"),
            db_pool_size=config.integer("BOOKING_DB_POOL_SIZE", 16, minimum=1),
            drift_no_payment_after_s=config.integer(
                "BOOKING_DRIFT_NO_PAYMENT_AFTER_SECONDS", 120, minimum=1
            ),
        )

    def topic(self, name: str) -> str:
        return f"{self.topic_prefix}{name}"
