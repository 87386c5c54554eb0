"""A service's metrics as its bootstrap declares them: where /metrics is served, and the
gauges its sampler reads. Every service gets the same probes (outbox, timers, incidents,
drift findings, its own consumer group's lag) and adds only what is its own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from servicekit.lag import ConsumerLag
from servicekit.metrics import probes
from servicekit.metrics.endpoint import MetricsEndpoint, registry_with
from servicekit.metrics.sampling import SAMPLE_EVERY_S, Probe, SampledGauges
from servicekit.operations.hooks import DriftSource
from servicekit.schema import EventingTables
from servicekit.supervision import Worker


@dataclass
class ServiceMetrics:
    # host:port of /metrics; empty: neither served nor sampled (a service built in a test)
    address: str
    gauges: SampledGauges
    _endpoint: MetricsEndpoint | None = field(default=None, init=False)

    @property
    def port(self) -> int:
        return self._endpoint.port if self._endpoint is not None else 0

    def workers(self) -> list[Worker]:
        """The sampler, when the gauges are served."""
        return [Worker("metrics sampler", self.gauges.run)] if self.address else []

    def start(self) -> None:
        if self.address:
            self._endpoint = MetricsEndpoint(self.address, registry_with(self.gauges))
            self._endpoint.start()

    async def stop(self) -> None:
        """After the sampler has stopped (the runtime stops its workers first)."""
        if self._endpoint is not None:
            await self._endpoint.stop()
        await self.gauges.close()


def service_metrics(
    address: str,
    sessions: probes.Sessions,
    tables: EventingTables,
    lag: ConsumerLag,
    drift: DriftSource,
    own: Sequence[Probe] = (),
    every_s: float = SAMPLE_EVERY_S,
) -> ServiceMetrics:
    """The metrics every service has, and `own` (notify's mails, say)."""
    every: list[Probe] = [
        probes.outbox_probe(sessions, tables.outbox),
        probes.timers_probe(sessions, tables.timers),
        probes.incidents_probe(sessions, tables.incidents),
        probes.drift_probe(sessions, drift),
        probes.lag_probe(lag),
        *own,
    ]
    return ServiceMetrics(address, SampledGauges(every, every_s))
