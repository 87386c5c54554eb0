"""Whether a benchmark's processes run with the settings `make up` and deploy/k8s give them.

The figures users quote are the platform's, so a benchmark that starts services checks
their environment against the platform's configuration before it measures: mutual TLS,
traces exported over OTLP (every trace sampled, database spans off), logs at the default
level, and, where asked, /metrics served. A stripped configuration a benchmark measures
beside it is named as such next to its figures, and never checked here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from servicekit.config import PLAINTEXT_SETTING

PLATFORM_PARTS = ("booking", "payment", "access", "notify", "gateway")
# OpenTelemetry's default sampler, which platform.env and the manifests leave in place.
EVERY_TRACE = ("", "parentbased_always_on", "always_on")
# What OpenTelemetry's batch span processor logs when its queue is full and it drops spans:
# a figure measured meanwhile would not include exporting every trace.
SPANS_DROPPED = "Queue full, dropping"


def deviations(
    env: Mapping[str, str],
    tls_parts: Sequence[str] = PLATFORM_PARTS,
    metrics_parts: Sequence[str] = (),
) -> list[str]:
    """What in an environment would run the processes otherwise than `make up` does."""
    found = []
    if env.get(PLAINTEXT_SETTING):
        found.append(f"{PLAINTEXT_SETTING} is set: no mutual TLS")
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() != "otlp":
        found.append("OTEL_TRACES_EXPORTER is not otlp: no trace export")
    if env.get("OTEL_TRACES_SAMPLER", "").strip().lower() not in EVERY_TRACE:
        found.append("OTEL_TRACES_SAMPLER is set: not every trace sampled")
    if env.get("OTEL_DB_SPANS", "off").strip().lower() not in ("", "off"):
        found.append("OTEL_DB_SPANS is on: database spans, which make up leaves off")
    if env.get("LOG_LEVEL", "INFO").strip().upper() not in ("", "INFO"):
        found.append("LOG_LEVEL is not INFO")
    found += [
        f"{p.upper()}_TLS_DIR is empty" for p in tls_parts if not env.get(f"{p.upper()}_TLS_DIR")
    ]
    found += [
        f"{p.upper()}_METRICS_ADDRESS is empty: no /metrics"
        for p in metrics_parts
        if not env.get(f"{p.upper()}_METRICS_ADDRESS")
    ]
    return found


@dataclass(frozen=True)
class Configuration:
    """One way a benchmark runs the processes it measures: the platform's own, or stripped
    of its observability for comparison; `says` is printed beside its figures."""

    name: str
    says: str
    platform: bool
    # Mutual TLS and the callers' checks; off (servicekit.config.PLAINTEXT_SETTING) only to
    # show what they cost, never in the platform's configuration.
    boundary: bool = True

    def traces(self, otlp_endpoint: str) -> dict[str, str]:
        """OpenTelemetry's settings: platform.env's (every trace sampled and exported over
        OTLP, database spans off), or no export."""
        exporter = (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_endpoint}
            if self.platform
            else {"OTEL_TRACES_EXPORTER": "none"}
        )
        return {**exporter, "OTEL_DB_SPANS": "off"}
