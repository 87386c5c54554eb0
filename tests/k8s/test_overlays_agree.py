"""The local overlay runs the production overlay's processes and migrations as they are:
their Deployments and Jobs differ only in the addresses they use, replica counts and host
networking, and the local settings are the ones deploy/local/platform.env gives `make up`."""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml

from tests.k8s.apiserver import REPO
from tests.k8s.checks import K8S, render

# Settings whose value is where something is: a host:port, a URL, a host name.
_ADDRESS = re.compile(r"_(ADDRESS|URL|HOST|ENDPOINT|BOOTSTRAP)$")
# The only Deployment the production overlay adds: the local run uses `make up`'s Jaeger.
PRODUCTION_ONLY = {("Deployment", "jaeger")}


def workloads(manifests: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (doc["kind"], doc["metadata"]["name"]): doc
        for doc in yaml.safe_load_all(manifests)
        if doc and doc["kind"] in ("Deployment", "Job")
    }


def without_placement(workload: dict[str, Any]) -> dict[str, Any]:
    """The workload less its replicas, its host networking and the addresses it names."""
    stripped = copy.deepcopy(workload)
    stripped["spec"].pop("replicas", None)
    pod = stripped["spec"]["template"]["spec"]
    pod.pop("hostNetwork", None)
    for container in pod["containers"]:
        container["image"] = container["image"].removeprefix("localhost/")
        for variable in container.get("env", []):
            if _ADDRESS.search(variable["name"]):
                variable["value"] = "<address>"
    return stripped


def test_local_deployments_and_jobs_differ_only_in_addresses_replicas_and_host_network() -> None:
    production, local = workloads(render(K8S)), workloads(render(K8S / "local"))
    assert set(production) - set(local) == PRODUCTION_ONLY
    assert set(local) <= set(production)
    for key, workload in local.items():
        assert without_placement(workload) == without_placement(production[key]), key
        assert workload["spec"]["template"]["spec"]["hostNetwork"] is True, key
        if key[0] == "Deployment":
            assert workload["spec"]["replicas"] == 1, key


def test_a_difference_beyond_placement_is_found() -> None:
    local = workloads(render(K8S / "local"))[("Deployment", "booking")]
    changed = copy.deepcopy(local)
    changed["spec"]["template"]["spec"]["containers"][0]["command"].append("--debug")
    assert without_placement(changed) != without_placement(local)


def _platform_env() -> dict[str, str]:
    lines = (REPO / "deploy/local/platform.env").read_text().splitlines()
    pairs = [line.split("=", 1) for line in lines if "=" in line and not line.startswith("#")]
    return {key: value for key, value in pairs}


def test_the_local_settings_are_those_of_platform_env() -> None:
    configs = [
        doc
        for doc in yaml.safe_load_all(render(K8S / "local"))
        if doc and doc["kind"] == "ConfigMap"
    ]
    env = _platform_env()
    shared = {key: value for key, value in configs[0]["data"].items() if key in env}
    assert shared == {key: env[key] for key in shared}
    assert {"KAFKA_BOOTSTRAP", "MAIL_SMTP_PORT", "CARD_GATEWAY_URL"} <= set(shared)


# Linux's default range of ports it gives a connection's own end (ip_local_port_range).
EPHEMERAL = range(32768, 61000)
_LOOPBACK_PORT = re.compile(r"127\.0\.0\.1:(\d+)")
_PORT_FIELD = re.compile(r"\b(?:containerPort|port): (\d+)\b")


def listening_ports(text: str) -> set[int]:
    """The ports a host-network run binds: every loopback address and every port field."""
    found = _LOOPBACK_PORT.findall(text) + _PORT_FIELD.findall(text)
    return {int(port) for port in found}


def test_the_local_runs_listen_outside_the_ephemeral_range() -> None:
    # Host-network pods and `make up` share the host's ports with every connection on it.
    # A listener in the range the kernel hands out to connections fails to bind when a
    # long-lived connection (a pool's, the kubelet's) happened to take its port first, and
    # then fails again on every restart while that connection lasts.
    text = render(K8S / "local") + (REPO / "deploy/local/platform.env").read_text()
    ports = listening_ports(text)
    assert {15051, 15064, 19092, 15432} <= ports
    assert sorted(port for port in ports if port in EPHEMERAL) == []


def test_a_listener_in_the_ephemeral_range_is_found() -> None:
    assert listening_ports("A_ADDRESS: 127.0.0.1:50051\n  - grpc: {port: 50061}") == {
        50051,
        50061,
    }
