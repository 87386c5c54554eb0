"""The access service's settings, from environment variables only.

Beside what every service has: the lock provider (URL, API key, time-out), which lock
opens which space (ACCESS_DEFAULT_DEVICE, and ACCESS_SPACE_DEVICES as
`<space id>=<device id>,...` for spaces with a lock of their own), how long before its
window a credential is created (ACCESS_ACTIVATION_LEAD_SECONDS), and the keys that seal
PINs (ACCESS_PIN_KEYS as `<key id>:<base64 of 16, 24 or 32 bytes>,...`: the first seals,
every one opens, so a rotation puts the new key first and keeps the old one until the
resealing job has re-encrypted every PIN).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field

from servicekit import config, validation
from servicekit.config import SettingError

_KEY_ID = re.compile(r"[A-Za-z0-9_.-]{1,32}")
_DEVICE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
_ALIAS_PREFIX = re.compile(r"[a-z][a-z0-9]{0,15}")


SERVICE = "access"  # its name in the boundary table (deploy/boundary.yaml)


@dataclass(frozen=True)
class Settings:
    database_url: str
    kafka_bootstrap: str
    grpc_address: str
    topic_prefix: str
    idempotency_secret: bytes
    tls_dir: str  # its certificate folder (servicekit.mtls)
    lock_provider_url: str
    lock_provider_api_key: str
    default_device: str
    pin_keys: tuple[tuple[str, bytes], ...]
    space_devices: dict[str, str] = field(default_factory=dict)
    activation_lead_s: int = 900
    lock_provider_timeout_s: float = 5.0
    provider_retry_base_s: float = 0.5
    provider_max_tries: int = 8
    drift_every_s: int = 300
    activation_grace_s: int = 120
    revocation_overdue_s: int = 600
    reseal_every_s: int = 600
    alias_prefix: str = "liftfit"
    metrics_address: str = ""  # host:port of /metrics; empty: none served
    health_address: str = ""  # host:port of plaintext health checks only; empty: none

    @property
    def endpoint(self) -> config.Endpoint:
        return config.Endpoint(SERVICE, self.grpc_address, self.tls_dir, self.health_address)

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            **config.service_basics("access", grpc_port=15053),
            lock_provider_url=http_url("LOCK_PROVIDER_URL"),
            lock_provider_api_key=config.required("LOCK_PROVIDER_API_KEY"),
            default_device=device(
                "ACCESS_DEFAULT_DEVICE", config.required("ACCESS_DEFAULT_DEVICE")
            ),
            pin_keys=pin_keys("ACCESS_PIN_KEYS"),
            space_devices=space_devices("ACCESS_SPACE_DEVICES"),
            activation_lead_s=config.integer("ACCESS_ACTIVATION_LEAD_SECONDS", 900),
            lock_provider_timeout_s=config.integer("LOCK_PROVIDER_TIMEOUT_MS", 5000, 50) / 1000,
            provider_retry_base_s=config.integer("LOCK_PROVIDER_RETRY_BASE_MS", 500) / 1000,
            provider_max_tries=config.integer("LOCK_PROVIDER_MAX_TRIES", 8, minimum=1),
            drift_every_s=config.integer("ACCESS_DRIFT_CHECK_EVERY_SECONDS", 300, minimum=1),
            activation_grace_s=config.integer("ACCESS_ACTIVATION_GRACE_SECONDS", 120),
            revocation_overdue_s=config.integer("ACCESS_REVOCATION_OVERDUE_SECONDS", 600),
            reseal_every_s=config.integer("ACCESS_PIN_RESEAL_EVERY_SECONDS", 600, minimum=1),
            alias_prefix=alias_prefix("ACCESS_ALIAS_PREFIX"),
        )

    def topic(self, name: str) -> str:
        return f"{self.topic_prefix}{name}"


def http_url(name: str) -> str:
    value = config.required(name)
    if not value.startswith(("http://", "https://")):
        raise SettingError(name, "must be an http(s) URL")
    return value.rstrip("/")


def device(name: str, value: str) -> str:
    if not _DEVICE.fullmatch(value):
        raise SettingError(name, f"{value!r} is not a device id (1-128 of A-Z a-z 0-9 _ . : -)")
    return value


def space_devices(name: str) -> dict[str, str]:
    """`<space id>=<device id>,...`; empty: every space has the default device."""
    mapping: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in config.optional(name, "").split(","))):
        space, equals, lock = part.partition("=")
        if not equals or not validation.CANONICAL_UUID.fullmatch(space.strip()):
            raise SettingError(name, f"{part!r} is not <space id>=<device id>")
        mapping[space.strip()] = device(name, lock.strip())
    return mapping


def pin_keys(name: str) -> tuple[tuple[str, bytes], ...]:
    """`<key id>:<base64 key>,...`; the values are secrets, so no message repeats them."""
    keys: list[tuple[str, bytes]] = []
    for part in config.secret_list(name):
        key_id, colon, encoded = part.partition(":")
        if not colon or not _KEY_ID.fullmatch(key_id):
            raise SettingError(name, "each key must be <key id>:<base64 key>")
        try:
            key = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise SettingError(name, f"key {key_id!r} is not base64") from None
        if len(key) not in (16, 24, 32):
            raise SettingError(name, f"key {key_id!r} must be 16, 24 or 32 bytes")
        if key_id in (known for known, _ in keys):
            raise SettingError(name, f"key id {key_id!r} appears twice")
        keys.append((key_id, key))
    return tuple(keys)


def alias_prefix(name: str) -> str:
    value = config.optional(name, "liftfit")
    if not _ALIAS_PREFIX.fullmatch(value):
        raise SettingError(name, "must be 1-16 of a-z 0-9, starting with a letter")
    return value
