"""gRPC servers and channels as every service sets them up.

Health checking and server reflection on every server; the W3C trace context travels in
the call's metadata, so one trace follows a booking from the gateway into each service.

No internal detail leaves the process: an exception that is not a deliberate answer ends
the call as INTERNAL with a correlation id, which the log line carries too (with the
trace id and the whole exception), so a caller can report it and an operator find it.
An unreachable database is UNAVAILABLE (clients may retry), a deadlock or time-out that
outlived its retries is ABORTED.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from servicekit import logs, tracing
from servicekit.callers import Callers
from servicekit.config import Endpoint
from servicekit.errors import (
    CONFLICT,
    INTERNAL,
    UNAVAILABLE,
    abort_with,
    reason_of,
    rich_status,
    status_for,
)
from servicekit.faults import Fault, classify
from servicekit.grpc_spans import ServerSpans
from servicekit.grpc_wrapping import Behaviour, Layers, UnaryWrapper
from servicekit.metrics.grpc_requests import RequestMetrics
from servicekit.mtls import Identity, RotatingChannel, server_credentials
from servicekit.refusals import Refusal

__all__ = [
    "Endpoint",
    "RotatingChannel",
    "abort_with_reason",
    "channel",
    "reason_of",
    "start_server",
]
log = logging.getLogger(__name__)
Registration = Callable[[grpc.aio.Server], None]
MAX_DETAIL = 300


class GuardedServerInterceptor(UnaryWrapper):
    """Answers a domain refusal with its rich status (see servicekit.errors) and any other
    exception with a clean one, noting either on the call's server span.

    A refusal carries the error domain of the gRPC service that gave it: the server's own
    (`liftfit.booking`), or one named in `domains` for a service served beside it (the
    operators' `liftfit.ops`, the same in every server).
    """

    def __init__(
        self, error_domain: str = "liftfit", domains: Mapping[str, str] | None = None
    ) -> None:
        super().__init__()
        self._domain = error_domain
        self._domains = dict(domains or {})

    def wrap(self, method: str, inner: Behaviour) -> Behaviour:
        # "/liftfit.ops.v1.OperationsService/ListOutbox": the service is between the slashes.
        domain = self._domains.get(method.split("/")[1] if "/" in method else "", self._domain)

        async def guarded(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            # Every line logged while answering names the booking, payment or grant the
            # request is about.
            with logs.about(**logs.ids_in(request)):
                # The server span (servicekit.grpc_spans, the layer outside this one)
                # notes the status code of every abort. An unexpected error is
                # recorded on it too, with the exception.
                try:
                    return await inner(request, context)
                except grpc.aio.AbortError:
                    raise  # a deliberate answer, already given
                except Refusal as refusal:
                    await abort_with(context, status_for(refusal, domain))
                except Exception as error:
                    span = trace.get_current_span()
                    span.record_exception(error)
                    span.set_status(Status(StatusCode.ERROR, type(error).__name__))
                    await _answer_unexpected(context, method, error, domain)

        return guarded


async def _answer_unexpected(
    context: grpc.aio.ServicerContext[Any, Any], method: str, error: Exception, domain: str
) -> None:
    fault = classify(error)
    if fault is Fault.OUTAGE:
        log.warning("%s: the database is unreachable: %s", method, type(error).__name__)
        await abort_with_reason(
            context,
            grpc.StatusCode.UNAVAILABLE,
            UNAVAILABLE,
            "a dependency is unavailable; retry",
        )
    correlation = uuid.uuid4().hex[:16]
    log.error(
        "%s failed: correlation=%s trace=%s",
        method,
        correlation,
        tracing.current_trace_id(),
        exc_info=error,
    )
    if fault is Fault.CONFLICT:
        detail = f"try again (correlation {correlation})"
        await abort_with_reason(context, grpc.StatusCode.ABORTED, CONFLICT, detail, domain)
    detail = f"internal error (correlation {correlation})"
    await abort_with_reason(context, grpc.StatusCode.INTERNAL, INTERNAL, detail, domain)


class Health:
    """The server's health as the supervisor reports it: all services together."""

    def __init__(
        self, servicer: Any, service_names: Sequence[str], probes: grpc.aio.Server | None = None
    ) -> None:
        self._servicer = servicer
        self._names = ("", *service_names)
        self.probes = probes  # the plaintext health-only server, stopped with the service

    async def serving(self, healthy: bool) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if healthy
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in self._names:
            await self._servicer.set(name, status)


async def start_server(
    endpoint: Endpoint,
    registrations: Sequence[Registration],
    service_names: Sequence[str],
    error_domain: str = "liftfit",
    error_domains: Mapping[str, str] | None = None,
) -> tuple[grpc.aio.Server, int, Health]:
    """Starts a server with health and reflection; returns it, the bound port and its health.

    Every call is authorised by the caller's certificate (servicekit.callers). Refusals are
    answered with their rich status in `error_domain` (servicekit.errors), or in the domain
    `error_domains` names for their gRPC service.
    """
    server = grpc.aio.server(interceptors=[_layers(endpoint, error_domain, error_domains)])
    for register in registrations:
        register(server)
    health_servicer = health.aio.HealthServicer()  # type: ignore[attr-defined]
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [*service_names, health.SERVICE_NAME, reflection.SERVICE_NAME]
    reflection.enable_server_reflection(names, server)
    if endpoint.tls_dir:
        credentials = server_credentials(Identity(Path(endpoint.tls_dir)))
        port = server.add_secure_port(endpoint.address, credentials)
    else:
        port = server.add_insecure_port(endpoint.address)
    await server.start()
    probes = await _start_probe_server(endpoint.health_address, health_servicer)
    server_health = Health(health_servicer, service_names, probes)
    await server_health.serving(True)
    return server, port, server_health


def _layers(
    endpoint: Endpoint, error_domain: str, error_domains: Mapping[str, str] | None
) -> Layers:
    """The metrics outermost, so they count the status the guard answered with; then the
    server span, so the guard runs inside it; a refused caller is counted and traced."""
    outer: list[UnaryWrapper] = [RequestMetrics(), ServerSpans()]
    guard = GuardedServerInterceptor(error_domain, error_domains)
    if not endpoint.tls_dir:  # servicekit.config.PLAINTEXT_SETTING: a measurement
        log.warning("%s serves gRPC in plaintext with no caller checks", endpoint.service)
        return Layers(*outer, guard)
    return Layers(*outer, Callers(endpoint.service, error_domain, error_domains), guard)


async def _start_probe_server(address: str, servicer: Any) -> grpc.aio.Server | None:
    if not address:
        return None
    probes = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, probes)
    probes.add_insecure_port(address)
    await probes.start()
    return probes


# A caller that answers people reconnects soon after a service comes back: gRPC's own
# backoff grows to two minutes, during which every call would fail at once.
PROMPT_RECONNECT: Sequence[tuple[str, int]] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)


def channel(
    target: str,
    tls_dir: str | Path,
    options: Sequence[tuple[str, int]] = (),
    client_spans: bool = True,
) -> RotatingChannel:
    """A channel to a service, as the principal whose certificate folder is `tls_dir`.

    `client_spans`: each call's client span is OpenTelemetry's interceptor's; False leaves
    them to the caller, who opens them around its calls (servicekit.grpc_client_spans, as
    the gateway does: the interceptor was a large part of its CPU per request)."""
    interceptors = tracing.client_interceptors() if client_spans else None

    def make(credentials: grpc.ChannelCredentials) -> grpc.aio.Channel:
        return grpc.aio.secure_channel(
            target, credentials, options=list(options), interceptors=interceptors
        )

    return RotatingChannel(Identity(Path(tls_dir)), make)


async def abort_with_reason(
    context: Any,
    code: grpc.StatusCode,
    reason: str,
    detail: str,
    domain: str = "liftfit",
    metadata: dict[str, str] | None = None,
) -> None:
    """Ends the call with a rich status whose ErrorInfo carries the reason (servicekit.errors).

    The detail is bounded: a message that echoed a caller's 10,000-character input would
    overflow gRPC's metadata limit and reach the caller as RESOURCE_EXHAUSTED instead.
    """
    await abort_with(context, rich_status(code, reason, domain, detail[:MAX_DETAIL], metadata))
