"""Gauges read by a sampler every few seconds and served as the last reading.

A scrape never waits on the database or the broker: it serves the last reading of each
probe, swapped in whole, so a slow database or a broker that is down never fails
/metrics. A probe that fails leaves its gauges without samples until it reads again (a
stale number would pass for the truth); the failure is logged when it starts, every 30 s
while it lasts and when it ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from servicekit.outage import OutageLog
from servicekit.supervision import pause

log = logging.getLogger(__name__)
SAMPLE_EVERY_S = 5.0
# A probe that has not answered in this long is a failed reading, not a stuck sampler.
PROBE_DEADLINE_S = 10.0

Samples = dict[tuple[str, ...], float]  # the label values, in the family's order -> value
Reading = Mapping[str, Samples]  # a family's name -> its samples


@dataclass(frozen=True)
class GaugeFamily:
    name: str
    documentation: str
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class Probe:
    """Some gauges and how to read them together (one query, one broker round)."""

    name: str  # what the log calls it when it fails
    families: tuple[GaugeFamily, ...]
    read: Callable[[], Awaitable[Reading]]
    # What the probe keeps open between readings (a broker's clients), closed at the end.
    close: Callable[[], Awaitable[None]] | None = None


class SampledGauges(Collector):
    """The probes' gauges for a registry, and the sampler that reads them."""

    def __init__(self, probes: Sequence[Probe], every_s: float = SAMPLE_EVERY_S) -> None:
        self.probes = tuple(probes)
        self._every_s = every_s
        self._last: dict[str, Reading] = {}
        self._outages = {probe.name: OutageLog(log, f"metrics: {probe.name}") for probe in probes}

    def collect(self) -> Iterator[GaugeMetricFamily]:
        last = self._last  # one reference: a scrape sees one sample, whatever the sampler does
        for probe in self.probes:
            reading = last.get(probe.name, {})
            for family in probe.families:
                gauge = GaugeMetricFamily(family.name, family.documentation, labels=family.labels)
                for values, value in sorted(reading.get(family.name, {}).items()):
                    gauge.add_metric(list(values), value)
                yield gauge

    async def sample(self) -> None:
        """Reads every probe once, side by side, and serves what they read."""
        readings = await asyncio.gather(*(self._read(probe) for probe in self.probes))
        self._last = {
            probe.name: reading
            for probe, reading in zip(self.probes, readings, strict=True)
            if reading is not None
        }

    async def run(self, stopping: asyncio.Event) -> None:
        """The sampler's worker: a reading every few seconds until stopped."""
        while not stopping.is_set():
            await self.sample()
            await pause(stopping, self._every_s)

    async def close(self) -> None:
        """Closes what the probes keep open; for after the sampler has stopped."""
        for probe in self.probes:
            if probe.close is not None:
                await probe.close()

    async def _read(self, probe: Probe) -> Reading | None:
        outage = self._outages[probe.name]
        try:
            async with asyncio.timeout(PROBE_DEADLINE_S):
                reading = await probe.read()
        except Exception as error:  # any failure is a missing reading, never a dead sampler
            outage.failed(error)
            return None
        outage.succeeded()
        return reading


def counted(rows: Sequence[tuple[str, int]], known: Sequence[str] = ()) -> Samples:
    """Counts by one label (a kind, a state): the known values at 0 unless counted."""
    samples: Samples = {(value,): 0.0 for value in known}
    samples.update({(str(value),): float(count) for value, count in rows})
    return samples
