"""Every overlay runs each service with mutual TLS from its own Secret and never in the
plaintext a benchmark may ask for (servicekit.config.PLAINTEXT_SETTING)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from servicekit.config import PLAINTEXT_SETTING
from tests.k8s.checks import K8S, render

PROCESSES = ("booking", "payment", "access", "notify", "gateway")


def _deployments(folder: Any) -> dict[str, dict[str, Any]]:
    return {
        doc["metadata"]["name"]: doc
        for doc in yaml.safe_load_all(render(folder))
        if doc and doc["kind"] == "Deployment"
    }


@pytest.mark.parametrize("overlay", ["production", "local"])
def test_each_process_reads_its_own_certificate_and_none_runs_in_plaintext(overlay: str) -> None:
    deployments = _deployments(K8S if overlay == "production" else K8S / "local")
    for name in PROCESSES:
        pod = deployments[name]["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        env = {item["name"]: item.get("value") for item in container.get("env", [])}
        assert env[f"{name.upper()}_TLS_DIR"] == "/etc/liftfit/tls", name
        assert PLAINTEXT_SETTING not in env, name
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        assert volumes["tls"]["secret"]["secretName"] == f"{name}-tls", name
        mounts = {mount["name"]: mount for mount in container["volumeMounts"]}
        assert mounts["tls"] == {"name": "tls", "mountPath": "/etc/liftfit/tls", "readOnly": True}
