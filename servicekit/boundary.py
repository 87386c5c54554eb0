"""The table of who may do what (deploy/boundary.yaml), read once for every layer that
enforces it: the broker's ACLs (locally and as Strimzi's KafkaUsers), the services' gRPC
authorisation, the database roles. Pure: it parses and derives, it enforces nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

TABLE = Path(__file__).resolve().parents[1] / "deploy/boundary.yaml"
DEAD_LETTER_SUFFIX = ".dlq"
HEALTH = "Health"  # grpc.health.v1.Health: open to every principal with a certificate


class BoundaryError(ValueError):
    """The table says something that cannot be meant: an unknown key, a wrong type."""


@dataclass(frozen=True)
class KafkaGrants:
    writes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    group: str | None = None
    describes: bool = False
    follows: tuple[str, ...] = ()  # read with no group: no offsets, no dead letters


@dataclass(frozen=True)
class KafkaRule:
    """One allow rule: `operations` on a resource (`topic`, `group` or `cluster`)."""

    resource: str
    name: str
    operations: tuple[str, ...]


@dataclass(frozen=True)
class Principal:
    name: str
    kafka: KafkaGrants = KafkaGrants()
    grpc: dict[str, tuple[str, ...]] = field(default_factory=dict)
    databases: tuple[str, ...] = ()
    speaks_for_users: bool = False

    def may_call(self, server: str, method: str) -> bool:
        """Whether the table lets this principal call `method` ("/liftfit.ops.v1.
        OperationsService/ListOutbox") on `server` (a service's name: "booking")."""
        service, name = short_method(method)
        if service == HEALTH:
            return True
        return any(
            allowed in ("*", f"{service}/*", f"{service}/{name}")
            for allowed in self.grpc.get(server, ())
        )

    def kafka_rules(self, prefix: str = "") -> list[KafkaRule]:
        """What the broker allows this principal; `prefix` is a run's TOPIC_PREFIX."""
        grants, rules = self.kafka, []
        for topic in grants.writes:
            rules.append(KafkaRule("topic", prefix + topic, ("Write", "Describe")))
        if grants.writes or grants.reads:
            rules.append(KafkaRule("cluster", "kafka-cluster", ("IdempotentWrite",)))
        for topic in grants.reads:
            rules.append(KafkaRule("topic", prefix + topic, ("Read", "Describe")))
            dead_letters = prefix + topic + DEAD_LETTER_SUFFIX
            rules.append(KafkaRule("topic", dead_letters, ("Write", "Describe")))
        if grants.reads and grants.group:
            rules.append(KafkaRule("group", prefix + grants.group, ("Read", "Describe")))
        for topic in grants.follows:
            rules.append(KafkaRule("topic", prefix + topic, ("Read", "Describe")))
        if grants.describes:
            # A literal "*" is Kafka's wildcard: every topic and every group.
            rules.append(KafkaRule("topic", "*", ("Describe",)))
            rules.append(KafkaRule("group", "*", ("Describe",)))
        return rules


def principals(text: str | None = None) -> dict[str, Principal]:
    """Every principal of the table (the file's, unless `text` is given)."""
    document = yaml.safe_load(TABLE.read_text() if text is None else text)
    entries = _mapping(document, "the table").get("principals")
    return {
        name: _principal(name, _mapping(entry, name))
        for name, entry in _mapping(entries, "principals").items()
    }


def short_method(method: str) -> tuple[str, str]:
    """("OperationsService", "ListOutbox") of "/liftfit.ops.v1.OperationsService/ListOutbox"."""
    _, _, qualified = method.rpartition("/")[0].rpartition("/")
    service = qualified.rpartition(".")[2]
    return service, method.rpartition("/")[2]


def _principal(name: str, entry: dict[str, Any]) -> Principal:
    unknown = set(entry) - {"kafka", "grpc", "database", "databases", "speaks_for_users"}
    if unknown:
        raise BoundaryError(f"{name}: unknown keys {sorted(unknown)}")
    databases = tuple(entry.get("databases", ())) + (
        (entry["database"],) if "database" in entry else ()
    )
    grpc = {
        service: tuple(methods)
        for service, methods in _mapping(entry.get("grpc", {}), f"{name}.grpc").items()
    }
    for service, methods in grpc.items():
        for method in methods:
            if method != "*" and method.count("/") != 1:
                raise BoundaryError(f"{name}.grpc.{service}: {method!r} is not Service/Method")
    return Principal(
        name,
        _kafka(name, _mapping(entry.get("kafka", {}), f"{name}.kafka")),
        grpc,
        databases,
        speaks_for_users=entry.get("speaks_for_users") is True,
    )


def _kafka(name: str, entry: dict[str, Any]) -> KafkaGrants:
    unknown = set(entry) - {"writes", "reads", "group", "describes", "follows"}
    if unknown:
        raise BoundaryError(f"{name}.kafka: unknown keys {sorted(unknown)}")
    reads = tuple(entry.get("reads", ()))
    if reads and not entry.get("group"):
        raise BoundaryError(f"{name}.kafka: reads topics but names no group")
    return KafkaGrants(
        writes=tuple(entry.get("writes", ())),
        reads=reads,
        group=entry.get("group"),
        describes=bool(entry.get("describes", False)),
        follows=tuple(entry.get("follows", ())),
    )


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BoundaryError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value
