"""`python -m gateway_bff`: builds the gateway once (bootstrap) and serves it with uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import uvicorn
from fastapi import FastAPI

from gateway_bff.app import create_app
from gateway_bff.booking_cache import BookingCache
from gateway_bff.booking_changes import BookingChanges, consumer_factory
from gateway_bff.identity import Authenticator
from gateway_bff.limits import Limits
from gateway_bff.parts import Parts
from gateway_bff.settings import SERVICES, Settings
from gateway_bff.store.directory import Directory
from gateway_bff.traces import Traces
from gateway_bff.upstream import Services
from servicekit.db import make_engine, make_session_factory
from servicekit.kafka_access import client_security
from servicekit.lag import ConsumerLag, LagSettings
from servicekit.metrics.endpoint import registry_with
from servicekit.metrics.probes import lag_probe
from servicekit.metrics.sampling import SampledGauges
from servicekit.runtime import service_main, settle_garbage_collector


def bootstrap(settings: Settings, identity: Authenticator) -> FastAPI:
    """Wires the gateway; nothing connects until a request needs it."""
    engine = make_engine(settings.database_url, pool_size=settings.db_pool_size)
    # The platform's own groups (`<prefix><service>`), not whatever else the broker serves:
    # with the empty prefix of the local run, every group of every test run would count.
    groups = tuple(f"{settings.topic_prefix}{service}" for service in SERVICES)
    lag = ConsumerLag(LagSettings(settings.kafka_bootstrap, settings.topic_prefix, groups))
    # Every group's lag, read from the broker: seen even while a consumer's process is stopped.
    gauges = SampledGauges([lag_probe(lag)])
    bookings = BookingCache(ttl_s=settings.booking_cache_ms / 1000)
    changes = BookingChanges(
        consumer_factory(settings.kafka_bootstrap, settings.topic_prefix, client_security()),
        bookings,
    )
    parts = Parts(
        services=Services(settings.service_addresses, settings.tls_dir, settings.deadline_s),
        directory=Directory(make_session_factory(engine)),
        identity=identity,
        lag=lag,
        metrics=registry_with(gauges),
        traces=Traces(settings.traces_url, settings.deadline_s),
        drift=settings.drift,
        limits=Limits(settings.limits),
        bookings=bookings,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await parts.directory.ensure_operators(settings.operators)
        stopping = asyncio.Event()
        sampler = asyncio.create_task(gauges.run(stopping))
        listener = asyncio.create_task(changes.run(stopping)) if bookings.enabled else None
        try:
            yield
        finally:
            stopping.set()
            await sampler
            if listener is not None:
                # Cancelled, not awaited to its end: a start against a broker that does not
                # answer would hold the shutdown for the client's whole request time-out.
                listener.cancel()
                await asyncio.gather(listener, return_exceptions=True)
            await gauges.close()  # the lag's broker clients, which the ops routes share
            await parts.services.close()
            await parts.traces.aclose()
            await identity.aclose()
            await engine.dispose()

    return create_app(parts, lifespan)


@dataclass(frozen=True)
class Configured:
    settings: Settings
    identity: Authenticator


def _from_env() -> Configured:
    return Configured(Settings.from_env(), Authenticator.from_env())


async def _serve(configured: Configured) -> None:
    # Built inside the running loop: gRPC's channels belong to the loop that made them.
    app = bootstrap(configured.settings, configured.identity)
    # Wired, so what it holds for good (modules, routes, the app) is alive now and frozen out
    # of the collector's reach, as in every service: full collections had walked it for
    # 100 ms each, 5.5 % of the gateway's CPU under `make bench-saga` (docs/performance.md).
    settle_garbage_collector()
    server = uvicorn.Server(server_config(app, configured.settings))
    await server.serve()


def server_config(app: Any, settings: Settings) -> uvicorn.Config:
    host, _, port = settings.address.rpartition(":")
    # X-Forwarded-For names the client only from a proxy the settings name: uvicorn's own
    # default trusts the loopback, so a client on the gateway's host could be anyone for
    # the rate limits by address.
    proxies = list(settings.trusted_proxies)
    # No logging configuration of uvicorn's own: its lines go through the process's JSON
    # handler. Its access line is the gate's (gateway_bff.edge), written after the answer.
    return uvicorn.Config(
        app,
        host=host,
        port=int(port),
        log_level="info",
        log_config=None,
        access_log=False,
        proxy_headers=bool(proxies),
        forwarded_allow_ips=proxies,
    )


main = service_main("gateway", _from_env, _serve)
