"""Reading a process's /metrics as Prometheus would: prometheus-client's own parser."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from tests.support.platform import Platform

SERVICES = ("booking", "payment", "access", "notify")


def metrics_url(platform: Platform, process: str) -> str:
    """A service's /metrics on its own port; the gateway's on its HTTP address."""
    address = platform.env[
        "GATEWAY_ADDRESS" if process == "gateway" else f"{process.upper()}_METRICS_ADDRESS"
    ]
    return f"http://{address}/metrics"


@dataclass(frozen=True)
class Scrape:
    families: dict[str, Metric]

    def has(self, documented: str) -> bool:
        """A documented name is served: a counter's `_total` is its family's sample name."""
        family = self.families.get(documented.removesuffix("_total"))
        if family is None:
            return False
        return family.type == "counter" or not documented.endswith("_total")

    def value(self, sample: str, **labels: str) -> float:
        """The sum of the samples of that name (a counter's `_total`, a histogram's
        `_count`) whose labels include `labels`; 0 if none."""
        return sum(
            s.value
            for family in self.families.values()
            for s in family.samples
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
        )

    def samples(self, name: str) -> list[dict[str, str]]:
        return [s.labels for f in self.families.values() for s in f.samples if s.name == name]


async def scrape(http: httpx.AsyncClient, platform: Platform, process: str) -> Scrape:
    answer = await http.get(metrics_url(platform, process), timeout=5)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    parsed = text_string_to_metric_families(answer.text)
    return Scrape({family.name: family for family in parsed})
