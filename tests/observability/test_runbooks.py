"""Every alert leads its on-call engineer to a runbook: each rule, in the rules file and in
the PrometheusRule shipped to Kubernetes, carries a `runbook_url` naming a section of
docs/operations.md that exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.markdown import anchors

REPO = Path(__file__).resolve().parents[2]
RUNBOOKS = "docs/operations.md"
RULE_FILES = {
    "deploy/prometheus/rules/liftfit.yml": lambda loaded: loaded["groups"],
    "deploy/k8s/prometheus-rules.yaml": lambda loaded: loaded["spec"]["groups"],
}


def _alerts(path: str) -> list[dict[str, Any]]:
    groups = RULE_FILES[path](yaml.safe_load((REPO / path).read_text()))
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def runbook_problems(alerts: list[dict[str, Any]], sections: set[str]) -> list[str]:
    """What is wrong with the alerts' runbook links, one line per alert; none when all lead
    to a section of the runbooks."""
    problems = []
    for rule in alerts:
        url = rule.get("annotations", {}).get("runbook_url")
        if not url:
            problems.append(f"{rule['alert']}: no runbook_url")
            continue
        document, _, section = url.partition("#")
        if document != RUNBOOKS or section not in sections:
            problems.append(f"{rule['alert']}: {url} names no section of {RUNBOOKS}")
    return problems


@pytest.mark.parametrize("path", sorted(RULE_FILES))
def test_every_alert_links_to_its_section_of_the_runbooks(path: str) -> None:
    alerts = _alerts(path)
    assert alerts, f"{path} has no alert"
    assert runbook_problems(alerts, anchors(REPO / RUNBOOKS)) == []


def test_an_alert_without_a_runbook_or_with_a_missing_section_is_named() -> None:
    sections = anchors(REPO / RUNBOOKS)
    alerts = [
        {"alert": "Silent", "annotations": {"summary": "no link"}},
        {"alert": "Lost", "annotations": {"runbook_url": f"{RUNBOOKS}#no-such-section"}},
    ]
    assert runbook_problems(alerts, sections) == [
        "Silent: no runbook_url",
        f"Lost: {RUNBOOKS}#no-such-section names no section of {RUNBOOKS}",
    ]
