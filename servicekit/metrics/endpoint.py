"""`/metrics` on a port of its own: the process's counters (the default registry, which
also holds prometheus_client's process and garbage-collector families) beside the gauges
its sampler read. Served by prometheus_client's threaded HTTP server, so a scrape never
waits for the event loop, and the event loop never for a scrape."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, CollectorRegistry, start_http_server
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector


class _Counted(Collector):
    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def registry_with(gauges: Collector) -> CollectorRegistry:
    """What one process serves: the shared counters and its own gauges. A registry of its
    own, so services built side by side in one test process do not collide."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Counted())
    registry.register(gauges)
    return registry


class MetricsEndpoint:
    def __init__(self, address: str, registry: CollectorRegistry) -> None:
        self._address = address
        self._registry = registry
        self._server: WSGIServer | None = None
        self.port = 0

    def start(self) -> None:
        """Binds `host:port` (port 0: any free one, then `port` says which)."""
        host, _, port = self._address.rpartition(":")
        self._server, _ = start_http_server(int(port), host or "0.0.0.0", self._registry)
        self.port = int(self._server.server_address[1])

    async def stop(self) -> None:
        if self._server is not None:
            # shutdown() waits for the serving thread's loop to notice (up to half a second).
            await asyncio.to_thread(self._server.shutdown)
            self._server.server_close()
            self._server = None
