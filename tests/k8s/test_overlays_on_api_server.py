"""Every overlay passes a real API server's strict validation, with no warning."""

from __future__ import annotations

from collections import Counter

import pytest
import yaml

from tests.k8s.apiserver import ApiServer
from tests.k8s.checks import K8S, check_overlays, render

# The first test also waits for the API server to start and take the CRDs.
pytestmark = pytest.mark.timeout(900)

OPERATED_KINDS = {
    "Kafka",
    "KafkaNodePool",
    "KafkaTopic",
    "KafkaUser",
    "Cluster",
    "PodMonitor",
    "PrometheusRule",
    "NetworkPolicy",
    "HorizontalPodAutoscaler",
    "PodDisruptionBudget",
}


def test_every_overlay_passes_strict_server_side_validation_without_warnings(
    api: ApiServer,
) -> None:
    verdicts = check_overlays(api)
    failed = {name: v.report() for name, v in verdicts.items() if not v.passed}
    assert not failed, "\n".join(f"{name}:\n{report}" for name, report in failed.items())


def test_production_declares_kafka_postgres_monitoring_policies_and_scaling() -> None:
    documents = [doc for doc in yaml.safe_load_all(render(K8S)) if doc]
    kinds = Counter(doc["kind"] for doc in documents)
    (namespace,) = [doc for doc in documents if doc["kind"] == "Namespace"]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert set(kinds) >= OPERATED_KINDS, OPERATED_KINDS - set(kinds)
    assert kinds["Deployment"] >= 5 and kinds["Job"] == 5
