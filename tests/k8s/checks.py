"""k8s-check: every overlay rendered by kustomize and applied as a server-side dry run, with
strict field validation, to a real API server that has the operators' CRDs installed, into a
namespace that enforces the Pod Security Standard `restricted`.

What the server refuses and every warning it gives are collected, one line each, naming the
object; an overlay passes with neither, but for the warnings its own overlay explains (the
local run's host networking). The operators' CRDs come from the folder LIFTFIT_K8S_CRDS
names, by default ../shared/k8s/crds beside the repository, else /work/shared/k8s/crds.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.k8s.apiserver import REPO, ApiServer, kubectl

K8S = REPO / "deploy/k8s"
# Overlay folder -> the warnings it may give, each with the reason it is accepted.
OVERLAYS: dict[str, dict[str, str]] = {
    "": {},
    "local": {
        # The pods share the host's network to reach loopback, and the API server makes
        # each container port a host port of such a pod; nothing else may fall short of
        # `restricted`.
        r"host namespaces \(hostNetwork=true\)": "host networking on loopback",
        r"hostPort \(container \"[a-z-]+\" uses hostPorts? [0-9, ]+\)": "host networking",
    },
}
RESTRICTED = {
    f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn", "audit")
}
_APPLIED = re.compile(
    r"^\S+/\S+ (created|configured|unchanged|serverside-applied) \(server dry run\)$"
)
_PSA_WARNING = re.compile(r'would violate PodSecurity "restricted:[^"]+": (.*)$')


def crd_folder() -> Path:
    """The operators' CRDs: the setting, else shared/ beside the repository or the workspace's."""
    named = os.environ.get("LIFTFIT_K8S_CRDS")
    candidates = [Path(named)] if named else [REPO.parent / "shared/k8s/crds"]
    if not named:
        candidates.append(Path("/work/shared/k8s/crds"))
    for candidate in candidates:
        if candidate.is_dir() and any(candidate.rglob("*.yaml")):
            return candidate
    tried = ", ".join(str(candidate) for candidate in candidates)
    raise AssertionError(f"no CRD folder ({tried}): set LIFTFIT_K8S_CRDS to the operators' CRDs")


def install_crds(server: ApiServer, folder: Path) -> None:
    """Applies every CRD under `folder` (server-side: some exceed an annotation's size)."""
    applied = server.kubectl("apply", "--server-side", "-R", "-f", str(folder))
    assert applied.returncode == 0, applied.stderr
    established = server.kubectl(
        "wait", "--for=condition=Established", "crd", "--all", "--timeout=120s"
    )
    assert established.returncode == 0, established.stderr


def render(overlay: Path) -> str:
    rendered = kubectl("kustomize", str(overlay))
    if rendered.returncode != 0:
        raise AssertionError(f"kustomize {overlay}: {rendered.stderr.strip()}")
    return rendered.stdout


def namespaces(manifests: str) -> set[str]:
    documents = [doc for doc in yaml.safe_load_all(manifests) if doc]
    return {doc["metadata"]["namespace"] for doc in documents if "namespace" in doc["metadata"]}


def create_restricted_namespace(server: ApiServer, name: str) -> None:
    labels = "\n".join(f"    {key}: {value}" for key, value in RESTRICTED.items())
    manifest = f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels:\n{labels}\n"
    created = server.kubectl("apply", "-f", "-", stdin=manifest)
    assert created.returncode == 0, created.stderr


@dataclass
class Verdict:
    """What the API server said of one rendering: refusals and unexplained warnings."""

    refused: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.refused and not self.warnings

    def report(self) -> str:
        return "\n".join(
            [f"refused: {line}" for line in self.refused]
            + [f"warning: {line}" for line in self.warnings]
        )


def unexplained(warning: str, accepted: dict[str, str]) -> str:
    """What is left of a warning once the violations its overlay accepts are taken out."""
    found = _PSA_WARNING.search(warning)
    if not found or not accepted:
        return warning
    rest = found.group(1)
    for pattern in accepted:
        rest = re.sub(pattern, "", rest)
    return warning if rest.strip(" ,") else ""


def dry_run(server: ApiServer, manifests: str, accepted: dict[str, str]) -> Verdict:
    for namespace in namespaces(manifests):
        create_restricted_namespace(server, namespace)
    applied = server.kubectl(
        "apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=manifests, merged=True
    )
    verdict = Verdict()
    pending: list[str] = []
    for line in applied.stdout.splitlines():
        if line.startswith("Warning:"):
            pending.append(line)
        elif _APPLIED.search(line):
            # The server's warnings about an object come just before kubectl names it.
            name = line.split()[0]
            verdict.warnings += [f"{name}: {w}" for w in pending if unexplained(w, accepted)]
            pending = []
        elif line.startswith(("*", " ")) and verdict.refused:
            # A refusal's causes follow it one a line: they belong to its object.
            verdict.refused[-1] += " " + line.strip()
        elif line.strip():
            verdict.refused.append(line.strip())
    verdict.warnings += [w for w in pending if unexplained(w, accepted)]
    if applied.returncode != 0 and not verdict.refused:
        verdict.refused.append(f"kubectl exited {applied.returncode}")
    return verdict


def check_overlays(server: ApiServer, root: Path = K8S) -> dict[str, Verdict]:
    """Each overlay under `root` (its folder relative to it) and what the server said of it."""
    return {
        name or ".": dry_run(server, render(root / name), accepted)
        for name, accepted in OVERLAYS.items()
    }
