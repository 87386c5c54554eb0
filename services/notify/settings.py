"""The notify service's settings, from environment variables only.

Beside what every service has: the mail server (MAIL_SMTP_HOST, MAIL_SMTP_PORT, its
time-out, NOTIFY_MAIL_FROM), the access service's gRPC address for the access mail's PIN
(NOTIFY_ACCESS_ADDRESS), the time zone a studio's times are shown in
(NOTIFY_DEFAULT_TIMEZONE, and NOTIFY_SPACE_TIMEZONES as `<space id>=<IANA zone>,...` for
studios elsewhere), and how often and how late a refused-for-now mail is tried again.

MAIL_LOOKUP_URL is the mail provider's lookup of a message by Message-ID, where it offers
one (the mail sandbox's is `http://<host>:<http port>/v1/lookup`): notify asks it about a
delivery left `unknown`, NOTIFY_LOOKUP_MAX_TRIES times at most, spaced like the sends'
retries, each within MAIL_LOOKUP_TIMEOUT_MS. Empty (the default): plain SMTP, and an
`unknown` delivery waits for an operator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from servicekit import config, validation
from servicekit.config import SettingError

_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252})")


SERVICE = "notify"  # its name in the boundary table (deploy/boundary.yaml)


@dataclass(frozen=True)
class Settings:
    database_url: str
    kafka_bootstrap: str
    grpc_address: str
    topic_prefix: str
    idempotency_secret: bytes
    tls_dir: str  # its certificate folder (servicekit.mtls)
    smtp_host: str
    smtp_port: int
    mail_from: str
    access_address: str
    default_timezone: str = "Europe/Prague"
    space_timezones: dict[str, str] = field(default_factory=dict)
    smtp_timeout_s: float = 10.0
    access_timeout_s: float = 5.0
    send_max_tries: int = 12
    send_retry_base_s: float = 1.0
    send_retry_max_s: float = 300.0
    metrics_address: str = ""  # host:port of /metrics; empty: none served
    health_address: str = ""  # host:port of plaintext health checks only; empty: none
    mail_lookup_url: str = ""  # the provider's lookup by Message-ID; empty: none
    mail_lookup_timeout_s: float = 5.0
    lookup_max_tries: int = 20

    @property
    def endpoint(self) -> config.Endpoint:
        return config.Endpoint(SERVICE, self.grpc_address, self.tls_dir, self.health_address)

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            **config.service_basics("notify", grpc_port=15054),
            smtp_host=host("MAIL_SMTP_HOST"),
            smtp_port=port("MAIL_SMTP_PORT"),
            mail_from=address("NOTIFY_MAIL_FROM"),
            access_address=config.required("NOTIFY_ACCESS_ADDRESS"),
            default_timezone=zone("NOTIFY_DEFAULT_TIMEZONE", "Europe/Prague"),
            space_timezones=space_timezones("NOTIFY_SPACE_TIMEZONES"),
            smtp_timeout_s=config.integer("MAIL_SMTP_TIMEOUT_MS", 10000, 50) / 1000,
            access_timeout_s=config.integer("NOTIFY_ACCESS_TIMEOUT_MS", 5000, 50) / 1000,
            send_max_tries=config.integer("NOTIFY_SEND_MAX_TRIES", 12, minimum=1),
            send_retry_base_s=config.integer("NOTIFY_SEND_RETRY_BASE_MS", 1000, 10) / 1000,
            send_retry_max_s=config.integer("NOTIFY_SEND_RETRY_MAX_MS", 300000, 10) / 1000,
            mail_lookup_url=optional_url("MAIL_LOOKUP_URL"),
            mail_lookup_timeout_s=config.integer("MAIL_LOOKUP_TIMEOUT_MS", 5000, 50) / 1000,
            lookup_max_tries=config.integer("NOTIFY_LOOKUP_MAX_TRIES", 20, minimum=1),
        )

    def topic(self, name: str) -> str:
        return f"{self.topic_prefix}{name}"


def host(name: str) -> str:
    value = config.required(name)
    if not _HOST.fullmatch(value):
        raise SettingError(name, "must be a host name or an IPv4 address")
    return value


def optional_url(name: str) -> str:
    value = config.optional(name, "")
    if value and not value.startswith(("http://", "https://")):
        raise SettingError(name, f"must be an http(s) URL, got {value!r}")
    return value


def port(name: str) -> int:
    value = config.integer(name, None, minimum=1)
    if value > 65535:
        raise SettingError(name, "must be 1 to 65535")
    return value


def address(name: str) -> str:
    value = config.required(name)
    try:
        return validation.email_address(name, value)
    except validation.InvalidField:
        raise SettingError(name, "must be an e-mail address") from None


def zone(name: str, default: str) -> str:
    value = config.optional(name, default)
    try:
        return validation.time_zone(name, value)
    except validation.InvalidField:
        raise SettingError(name, f"{value!r} is not an IANA time zone") from None


def space_timezones(name: str) -> dict[str, str]:
    """`<space id>=<IANA zone>,...`; empty: every studio is in the default zone."""
    mapping: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in config.optional(name, "").split(","))):
        space, equals, tz = part.partition("=")
        if not equals or not validation.CANONICAL_UUID.fullmatch(space.strip()):
            raise SettingError(name, f"{part!r} is not <space id>=<IANA zone>")
        try:
            mapping[space.strip()] = validation.time_zone(name, tz.strip())
        except validation.InvalidField:
            raise SettingError(name, f"{tz.strip()!r} is not an IANA time zone") from None
    return mapping
