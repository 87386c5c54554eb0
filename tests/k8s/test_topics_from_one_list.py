"""Topics, dead-letter topics and the services' Kafka users come from deploy/local/topics.txt,
and the code uses exactly the topics that list has."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import yaml

from servicekit.boundary import principals
from tests.k8s.apiserver import REPO

GENERATOR = REPO / "deploy/k8s/tools/kafka_objects.py"
# A topic name as the code writes it: "booking.events" or f"{prefix}booking.events".
_TOPIC_IN_CODE = re.compile(r"""["}]([a-z][a-z0-9_-]*\.events(?:\.dlq)?)["']""")
SERVICES = ("booking", "payment", "access", "notify")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kafka_objects", GENERATOR)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def topics_in_code(*paths: Path) -> set[str]:
    found: set[str] = set()
    for path in paths:
        for source in [path] if path.is_file() else path.rglob("*.py"):
            found.update(_TOPIC_IN_CODE.findall(source.read_text()))
    return found


def drift(listed: set[str], used: set[str]) -> list[str]:
    """How the list and the code disagree, one line per topic (dead-letter topics aside)."""
    streams = {topic for topic in listed if not topic.endswith(".dlq")}
    problems = [f"{topic}: used by the code, absent from topics.txt" for topic in used - streams]
    problems += [f"{topic}: in topics.txt, used by no code" for topic in streams - used]
    problems += [
        f"{topic}: no {topic}.dlq in topics.txt"
        for topic in streams
        if topic + ".dlq" not in listed
    ]
    problems += [
        f"{t}: dead letters of no topic"
        for t in listed - streams
        if t[: -len(".dlq")] not in streams
    ]
    return sorted(problems)


def _listed() -> set[str]:
    return set(_generator().topic_list((REPO / "deploy/local/topics.txt").read_text()))


def test_the_code_uses_exactly_the_listed_topics_each_with_its_dead_letter_topic() -> None:
    generator = _generator()
    platform = topics_in_code(REPO / "services", REPO / "servicekit", REPO / "gateway_bff")
    tests_only = topics_in_code(REPO / "tests/foundation/harness.py") - platform
    deployed = _listed() - set(generator.TEST_ONLY)
    assert drift(deployed, platform) == []
    assert drift(_listed() & set(generator.TEST_ONLY), tests_only) == []


def test_a_topic_missing_from_the_list_or_from_the_code_is_named() -> None:
    listed = {"booking.events", "booking.events.dlq", "old.events", "old.events.dlq"}
    assert drift(listed, {"booking.events", "payment.events"}) == [
        "old.events: in topics.txt, used by no code",
        "payment.events: used by the code, absent from topics.txt",
    ]
    assert drift({"booking.events", "stray.events.dlq"}, {"booking.events"}) == [
        "booking.events: no booking.events.dlq in topics.txt",
        "stray.events.dlq: dead letters of no topic",
    ]


def test_each_services_grants_in_the_table_are_the_topics_its_code_names() -> None:
    table = principals()
    for service in SERVICES:
        used = topics_in_code(REPO / "services" / service)
        granted = set(table[service].kafka.writes) | set(table[service].kafka.reads)
        assert used == granted, service


def test_the_kafka_topics_and_users_are_generated_from_the_current_list() -> None:
    checked = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    shipped = list(yaml.safe_load_all(_generator().TARGET.read_text()))
    topics = {doc["spec"]["topicName"] for doc in shipped if doc["kind"] == "KafkaTopic"}
    users = {doc["metadata"]["name"] for doc in shipped if doc["kind"] == "KafkaUser"}
    assert topics == _listed() - set(_generator().TEST_ONLY)
    assert users == {*SERVICES, "gateway", "lag-reader"}
    for doc in shipped:
        if doc["kind"] == "KafkaUser":
            named = {acl["resource"].get("name") for acl in doc["spec"]["authorization"]["acls"]}
            assert named - {None, "*", doc["metadata"]["name"]} <= topics
