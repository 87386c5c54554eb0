"""The sampler's gauges as /metrics serves them: a scrape never waits for a reading, and a
reading that fails (a broker that does not answer) leaves its gauges without samples
while the others are served as read. No platform: an endpoint on a free port."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from servicekit.lag import ConsumerLag, LagSettings
from servicekit.metrics.endpoint import MetricsEndpoint, registry_with
from servicekit.metrics.probes import CONSUMER_LAG, lag_probe
from servicekit.metrics.sampling import GaugeFamily, Probe, Reading, SampledGauges
from tests.support.sandboxes import silent_listener

READ = GaugeFamily("liftfit_test_read", "A gauge whose probe answers", ("kind",))


async def _answers() -> Reading:
    return {READ.name: {("one",): 1.0, ("two",): 2.0}}


@pytest.fixture
async def hung_broker_metrics() -> AsyncIterator[tuple[SampledGauges, str]]:
    with silent_listener() as port:
        lag = ConsumerLag(LagSettings(f"127.0.0.1:{port}", ""), deadline_s=1.0)
        gauges = SampledGauges([lag_probe(lag), Probe("answers", (READ,), _answers)])
        endpoint = MetricsEndpoint("127.0.0.1:0", registry_with(gauges))
        endpoint.start()
        try:
            yield gauges, f"http://127.0.0.1:{endpoint.port}/metrics"
        finally:
            await endpoint.stop()


async def test_a_broker_that_hangs_leaves_lag_unsampled_and_metrics_served(
    hung_broker_metrics: tuple[SampledGauges, str],
) -> None:
    gauges, url = hung_broker_metrics
    async with httpx.AsyncClient() as http:
        sampling = asyncio.create_task(gauges.sample())
        started = time.monotonic()
        during = await http.get(url, timeout=5)
        assert during.status_code == 200
        assert time.monotonic() - started < 0.5, "a scrape waited for the reading"
        assert not sampling.done()
        await sampling
        after = await http.get(url, timeout=5)
    families = {f.name: f for f in text_string_to_metric_families(after.text)}
    assert families[CONSUMER_LAG.name].samples == []
    read = {s.labels["kind"]: s.value for s in families[READ.name].samples}
    assert read == {"one": 1.0, "two": 2.0}
    assert "process_cpu_seconds" in families  # the default registry's families too
