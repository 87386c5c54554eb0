"""The alerting rules are code: promtool checks them and runs their unit tests, every alert
has a test where it fires and one where it stays quiet, and the PrometheusRule shipped to
Kubernetes is the same rules. promtool missing is a failure, never a skip (`make test`
installs it)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.observability.documented import DOCUMENTED

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy/prometheus/rules/liftfit.yml"
UNIT_TESTS = sorted((REPO / "deploy/prometheus/tests").glob("*.yml"))
K8S_RULE = REPO / "deploy/k8s/prometheus-rules.yaml"


# What the processes expose at /metrics (and Prometheus's own `up`); a rule on any other
# name would never fire.
METRICS = frozenset({"up"}).union(*DOCUMENTED.values())


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make test` installs Debian's prometheus package"
    return subprocess.run(
        [promtool, *args], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )


def _rules() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_promtool_accepts_the_rules() -> None:
    checked = _promtool("check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_rules_pass_their_promtool_unit_tests() -> None:
    assert UNIT_TESTS, "no unit tests in deploy/prometheus/tests"
    tested = _promtool("test", "rules", *map(str, UNIT_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_rules_read_only_metrics_the_processes_expose() -> None:
    for rule in _rules():
        named = set(re.findall(r"\b(up|liftfit_[a-z_]+?)(?:_bucket|_sum|_count)?\b", rule["expr"]))
        assert named and named <= METRICS, f"{rule['alert']}: {named - METRICS}"


def test_every_alert_says_what_to_do_how_severe_and_how_long_it_waits() -> None:
    for rule in _rules():
        name = rule["alert"]
        assert rule.get("for"), f"{name}: no `for:`"
        assert rule["labels"]["severity"] in ("critical", "warning"), name
        annotations = rule["annotations"]
        assert annotations.get("summary"), f"{name}: no summary"
        assert "/v1/ops/" in annotations.get("description", ""), f"{name}: no operators' path"


def test_every_alert_has_a_unit_test_where_it_fires_and_one_where_it_stays_quiet() -> None:
    fires: set[str] = set()
    quiet: set[str] = set()
    for path in UNIT_TESTS:
        for group in yaml.safe_load(path.read_text())["tests"]:
            for case in group.get("alert_rule_test", []):
                (fires if case.get("exp_alerts") else quiet).add(case["alertname"])
    names = {rule["alert"] for rule in _rules()}
    assert names - fires == set(), "alerts never seen firing in a unit test"
    assert names - quiet == set(), "alerts never seen quiet in a unit test"


def test_the_failed_outbox_alert_fires_for_a_failed_outbox_row() -> None:
    cases = [
        case
        for path in UNIT_TESTS
        for group in yaml.safe_load(path.read_text())["tests"]
        if any("liftfit_outbox_failed_rows" in s["series"] for s in group["input_series"])
        for case in group["alert_rule_test"]
        if case["alertname"] == "LiftfitOutboxRowsFailed" and case.get("exp_alerts")
    ]
    assert cases, "no unit test where a failed outbox row fires LiftfitOutboxRowsFailed"


def test_the_kubernetes_prometheus_rule_is_generated_from_the_rules() -> None:
    generated = subprocess.run(
        [sys.executable, "scripts/prometheus_rule.py", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert generated.returncode == 0, generated.stdout + generated.stderr
    shipped = yaml.safe_load(K8S_RULE.read_text())
    assert shipped["kind"] == "PrometheusRule"
    assert shipped["spec"]["groups"] == yaml.safe_load(RULES.read_text())["groups"]
    kustomization = yaml.safe_load((REPO / "deploy/k8s/kustomization.yaml").read_text())
    assert K8S_RULE.name in kustomization["resources"]
