"""The local broker's principals and ACLs, from the table of who may do what
(deploy/boundary.yaml): a SCRAM-SHA-512 user per principal with Kafka grants, and the ACLs
the table gives it. Run by deploy/local/infra.sh after the broker starts, as its administrator;
a run's TOPIC_PREFIX (tests) gets ACLs for its own prefixed topics and groups. Idempotent:
users are upserted, an ACL that exists is left as it is.

    KAFKA_BOOTSTRAP=... KAFKA_ADMIN_PASSWORD=... python deploy/local/kafka_access.py [--prefix P]

Each principal's password is <PRINCIPAL>_KAFKA_PASSWORD (lag-reader: LAG_READER_KAFKA_PASSWORD):
from the environment, else from deploy/local/platform.env.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    KafkaAdminClient,
    ResourcePattern,
    ResourceType,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from servicekit.boundary import Principal, principals
from servicekit.kafka_access import ADMIN_USER, password_setting

RESOURCES = {
    "topic": ResourceType.TOPIC,
    "group": ResourceType.GROUP,
    "cluster": ResourceType.CLUSTER,
}
OPERATIONS = {
    "Read": ACLOperation.READ,
    "Write": ACLOperation.WRITE,
    "Describe": ACLOperation.DESCRIBE,
    "IdempotentWrite": ACLOperation.IDEMPOTENT_WRITE,
}


def with_kafka(table: dict[str, Principal]) -> list[Principal]:
    return [p for p in table.values() if p.kafka_rules()]


def acls(principal: Principal, prefix: str) -> list[ACL]:
    return [
        ACL(
            principal=f"User:{principal.name}",
            host="*",
            operation=OPERATIONS[operation],
            permission_type=ACLPermissionType.ALLOW,
            resource_pattern=ResourcePattern(RESOURCES[rule.resource], rule.name),
        )
        for rule in principal.kafka_rules(prefix)
        for operation in rule.operations
    ]


PLATFORM_ENV = Path(__file__).resolve().parent / "platform.env"


def local_setting(name: str) -> str:
    for line in PLATFORM_ENV.read_text().splitlines():
        if line.startswith(f"{name}="):
            return line.split("=", 1)[1]
    return ""


def password(principal: Principal) -> str:
    name = password_setting(principal.name)
    value = os.environ.get(name) or local_setting(name)
    if not value:
        raise SystemExit(f"{name} is not set: the password of Kafka principal {principal.name}")
    return value


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="the local broker's users and ACLs")
    parser.add_argument("--prefix", default=os.environ.get("TOPIC_PREFIX", ""))
    arguments = parser.parse_args(argv)
    kafka = with_kafka(principals())
    admin = KafkaAdminClient(
        bootstrap_servers=os.environ["KAFKA_BOOTSTRAP"],
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username=ADMIN_USER,
        sasl_plain_password=os.environ["KAFKA_ADMIN_PASSWORD"],
        client_id="liftfit-kafka-access",
    )
    try:
        users = [
            UserScramCredentialUpsertion(p.name, ScramMechanism.SCRAM_SHA_512, password(p))
            for p in kafka
        ]
        refused = {
            user: error
            for user, error in admin.alter_user_scram_credentials(users).items()
            if error
        }
        if refused:
            raise SystemExit(f"users refused: {refused}")
        created = admin.create_acls([acl for p in kafka for acl in acls(p, arguments.prefix)])
        if created["failed"]:
            raise SystemExit(f"ACLs refused: {created['failed']}")
    finally:
        admin.close()
    print(
        f"kafka access: {len(kafka)} principals, {len(created['succeeded'])} ACLs"
        f"{' for prefix ' + arguments.prefix if arguments.prefix else ''}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
