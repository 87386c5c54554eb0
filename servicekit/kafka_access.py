"""How a process proves who it is to the broker: SASL/SCRAM-SHA-512 over the client listener,
as the principal the table of who may do what (deploy/boundary.yaml) names.

Every Kafka client of the platform takes its options from `client_security()`: the process's
KAFKA_USERNAME and KAFKA_PASSWORD (each process its own principal; scripts/platform.sh and the
Kubernetes Secrets set them). Without a user name the client connects unauthenticated, which
the platform's brokers refuse; a user name without a password is a setting error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from servicekit.config import SettingError

ADMIN_USER = "admin"  # the local broker's administrator (deploy/local/infra.sh), a super user
MECHANISM = "SCRAM-SHA-512"


def password_setting(principal: str) -> str:
    """Where platform.env keeps a principal's password: booking -> BOOKING_KAFKA_PASSWORD."""
    return principal.upper().replace("-", "_") + "_KAFKA_PASSWORD"


def client_security(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """aiokafka's (and kafka-python's) keyword arguments for this process's principal."""
    source = os.environ if env is None else env
    username = source.get("KAFKA_USERNAME", "")
    if not username:
        return {}
    password = source.get("KAFKA_PASSWORD", "")
    if not password:
        raise SettingError("KAFKA_PASSWORD", f"is empty; the broker's user {username!r} needs one")
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": MECHANISM,
        "sasl_plain_username": username,
        "sasl_plain_password": password,
    }
