"""k8s-check refuses a copy of the manifests with a misspelled field, a wrong type or a missing
required field, in a Deployment and in Strimzi's Kafka, and names the field."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.k8s.apiserver import ApiServer
from tests.k8s.checks import K8S, OVERLAYS, check_overlays


@dataclass(frozen=True)
class Breakage:
    file: str
    before: str
    after: str
    named: tuple[str, ...]


# The first test may also wait for the API server to start and take the CRDs.
pytestmark = pytest.mark.timeout(900)

BREAKAGES = {
    "deployment-misspelled-field": Breakage(
        "base/booking.yaml",
        "imagePullPolicy: IfNotPresent",
        "imagePulPolicy: IfNotPresent",
        ("Deployment", 'unknown field "spec.template.spec.containers[0].imagePulPolicy"'),
    ),
    "deployment-wrong-type": Breakage(
        "base/payment.yaml",
        "replicas: 2",
        'replicas: "two"',
        ("Deployment", "spec.replicas", "int32"),
    ),
    "deployment-missing-required-field": Breakage(
        "base/access.yaml",
        "  selector:\n    matchLabels: {app: access}\n  template:",
        "  template:",
        ('Deployment "access"', "spec.selector: Required value"),
    ),
    "kafka-misspelled-field": Breakage(
        "production/kafka.yaml",
        "    listeners:",
        "    listners:",
        ("Kafka", 'unknown field "spec.kafka.listners"'),
    ),
    "kafka-wrong-type": Breakage(
        "production/kafka.yaml",
        "port: 9092",
        'port: "9092"',
        ('Kafka "liftfit"', "spec.kafka.listeners[0].port", "integer"),
    ),
    "kafka-missing-required-field": Breakage(
        "production/kafka.yaml",
        "        tls: false\n",
        "",
        ('Kafka "liftfit"', "spec.kafka.listeners[0].tls: Required value"),
    ),
}


def broken_copy(folder: Path, breakage: Breakage) -> Path:
    copy = folder / "k8s"
    shutil.copytree(K8S, copy)
    target = copy / breakage.file
    text = target.read_text()
    assert text.count(breakage.before) >= 1, breakage
    target.write_text(text.replace(breakage.before, breakage.after, 1))
    return copy


@pytest.mark.parametrize("case", sorted(BREAKAGES))
def test_k8s_check_refuses_and_names_a_broken_field(
    case: str, api: ApiServer, tmp_path: Path
) -> None:
    breakage = BREAKAGES[case]
    verdicts = check_overlays(api, broken_copy(tmp_path, breakage))
    production = verdicts["."]
    assert not production.passed
    refused = "\n".join(production.refused)
    for part in breakage.named:
        assert part in refused, f"{part!r} not in:\n{refused}"
    # Only the broken object is refused: one decode error stops that object's checks alone.
    assert len(production.refused) == 1, refused
    assert set(verdicts) == {name or "." for name in OVERLAYS}


def test_k8s_check_fails_a_pod_template_short_of_restricted(api: ApiServer, tmp_path: Path) -> None:
    without_seccomp = Breakage(
        "base/booking.yaml", "        seccompProfile: {type: RuntimeDefault}\n", "", ()
    )
    verdicts = check_overlays(api, broken_copy(tmp_path, without_seccomp))
    for name in (".", "local"):
        warned = "\n".join(verdicts[name].warnings)
        assert "deployment.apps/booking: " in warned and "seccompProfile" in warned, name
    assert not verdicts["."].refused
