"""checkov's Kubernetes checks on each rendered overlay: none fails but the exceptions
deploy/k8s/policy-exceptions.yaml writes down, each with its reason and its overlays."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.k8s.apiserver import REPO
from tests.k8s.checks import K8S, render

CHECKOV = REPO / ".local/checkov/bin/checkov"
EXCEPTIONS = K8S / "policy-exceptions.yaml"
OVERLAYS = {"production": K8S, "local": K8S / "local"}


def failed_checks(manifests: Path) -> list[dict[str, Any]]:
    assert CHECKOV.is_file(), f"{CHECKOV} is missing: `make k8s-tools` installs it"
    ran = subprocess.run(
        [str(CHECKOV), "-f", str(manifests), "--framework", "kubernetes", "--quiet", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert ran.stdout.strip(), ran.stderr
    report = json.loads(ran.stdout)
    failed: list[dict[str, Any]] = report["results"]["failed_checks"]
    return failed


def unexcused(failed: list[dict[str, Any]], overlay: str) -> list[str]:
    exceptions = yaml.safe_load(EXCEPTIONS.read_text())
    return sorted(
        f"{check['check_id']} {check['check_name']}: {check['resource']}"
        for check in failed
        if overlay not in exceptions.get(check["check_id"], {}).get("overlays", [])
    )


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_no_policy_check_fails_but_the_written_down_exceptions(
    overlay: str, tmp_path: Path
) -> None:
    manifests = tmp_path / f"{overlay}.yaml"
    manifests.write_text(render(OVERLAYS[overlay]))
    assert unexcused(failed_checks(manifests), overlay) == []


def test_every_exception_gives_its_reason() -> None:
    for check, exception in yaml.safe_load(EXCEPTIONS.read_text()).items():
        assert len(exception["reason"]) > 40, check
        assert set(exception["overlays"]) <= set(OVERLAYS), check


def test_a_failed_check_without_an_exception_is_named(tmp_path: Path) -> None:
    manifests = tmp_path / "privileged.yaml"
    manifests.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: loose, namespace: liftfit}\n"
        "spec:\n  containers:\n    - {name: c, image: x/y:1, securityContext: {privileged: true}}\n"
    )
    assert any("CKV_K8S_16" in line for line in unexcused(failed_checks(manifests), "production"))
