"""Configuration from environment variables only.

A process refuses to start, naming the setting, when one is missing or invalid:
a half-configured service that starts and fails later is harder to diagnose at night.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import ParamSpec, TypedDict, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class SettingError(RuntimeError):
    """A required setting is missing or has an invalid value."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"setting {name}: {problem}")
        self.name = name


def required(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise SettingError(name, "is required but not set")
    return value


def optional(name: str, default: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or default


def integer(name: str, default: int | None = None, minimum: int = 0) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        if default is None:
            raise SettingError(name, "is required but not set")
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingError(name, f"must be an integer, got {raw!r}") from None
    if value < minimum:
        raise SettingError(name, f"must be at least {minimum}, got {value}")
    return value


@dataclass(frozen=True)
class Endpoint:
    """Where a service serves gRPC, as whom, and where the kubelet may ask its health."""

    service: str  # its name in the boundary table: "booking"
    address: str  # host:port, mutual TLS
    tls_dir: str  # its certificate folder (servicekit.mtls)
    # host:port of a plaintext server that answers only health checks, for probes that
    # cannot present a certificate (the kubelet's); empty: none.
    health_address: str = ""


class ServiceBasics(TypedDict):
    """The settings every service has, named after the service (`BOOKING_DATABASE_URL`)."""

    database_url: str
    kafka_bootstrap: str
    grpc_address: str
    topic_prefix: str
    idempotency_secret: bytes
    metrics_address: str
    tls_dir: str
    health_address: str


def service_basics(service: str, grpc_port: int) -> ServiceBasics:
    prefix = service.upper()
    return ServiceBasics(
        database_url=database_url(f"{prefix}_DATABASE_URL"),
        kafka_bootstrap=required("KAFKA_BOOTSTRAP"),
        grpc_address=optional(f"{prefix}_GRPC_ADDRESS", f"127.0.0.1:{grpc_port}"),
        topic_prefix=optional("TOPIC_PREFIX", ""),
        idempotency_secret=hashing_secret(f"{prefix}_IDEMPOTENCY_SECRET"),
        # Where /metrics is served (host:port); unset, the service serves none.
        metrics_address=optional(f"{prefix}_METRICS_ADDRESS", ""),
        # Its key pair and the authorities it trusts (servicekit.mtls): no default, a
        # service never serves without mutual TLS.
        tls_dir=grpc_tls(prefix),
        # A plaintext port answering health checks only, for the kubelet; unset: none.
        health_address=optional(f"{prefix}_HEALTH_ADDRESS", ""),
    )


TLS_FILES = ("tls.crt", "tls.key", "ca.crt")


# Plaintext gRPC with no caller checks, only to measure what the boundary costs beside it
# (make bench-booking): set to exactly this value, or not at all. No manifest sets it.
PLAINTEXT_SETTING, PLAINTEXT_VALUE = "LIFTFIT_GRPC_PLAINTEXT", "for-measurement-only"


def grpc_tls(prefix: str) -> str:
    """A service's certificate folder; "" (plaintext) only when the measurement setting
    names it exactly."""
    plaintext = os.environ.get(PLAINTEXT_SETTING, "").strip()
    if plaintext == PLAINTEXT_VALUE:
        return ""
    if plaintext:
        raise SettingError(PLAINTEXT_SETTING, f"must be {PLAINTEXT_VALUE!r} or unset")
    return tls_folder(f"{prefix}_TLS_DIR")


def tls_folder(name: str) -> str:
    """A certificate folder as servicekit.mtls reads it: refused now, by name, when a file
    is missing, rather than at the first connection."""
    folder = required(name)
    missing = [file for file in TLS_FILES if not os.path.isfile(os.path.join(folder, file))]
    if missing:
        raise SettingError(name, f"{folder} lacks {', '.join(missing)}")
    return folder


def database_url(name: str) -> str:
    """A service's database URL: SQLAlchemy's psycopg dialect, which runs async and sync."""
    url = required(name)
    if not url.startswith("postgresql+psycopg://"):
        raise SettingError(name, "must be a postgresql+psycopg:// URL")
    return url


def hashing_secret(name: str) -> bytes:
    """A secret for keyed hashes; a short one would make the stored hashes guessable."""
    secret = required(name)
    if len(secret) < 16:
        raise SettingError(name, "must be at least 16 characters")
    return secret.encode()


def secret_list(name: str) -> list[str]:
    """A comma-separated list of secrets (several during a rotation)."""
    values = [part.strip() for part in required(name).split(",") if part.strip()]
    if not values:
        raise SettingError(name, "must name at least one secret")
    return values


def refuse_to_start_on_bad_settings(main: Callable[P, R]) -> Callable[P, R]:
    """Wraps a process entry point: a SettingError ends it with exit code 2 and the reason."""

    @wraps(main)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return main(*args, **kwargs)
        except SettingError as error:
            print(f"refusing to start: {error}", file=sys.stderr)
            raise SystemExit(2) from None

    return guarded
