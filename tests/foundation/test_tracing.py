"""Trace context is read from carriers that anyone can write: a carrier that cannot be read
is no trace context, reading it never fails, and nothing a carrier holds is written to the
log (OpenTelemetry's parsers log a malformed tracestate member or baggage entry whole)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import baggage, propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from servicekit import trace_context, tracing

VALID = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
KafkaHeaders = list[tuple[str, bytes | None]]


class _Utf8Headers(Getter[KafkaHeaders]):
    """Reads Kafka headers as an instrumentation would: each value decoded as UTF-8."""

    def get(self, carrier: KafkaHeaders, key: str) -> list[str] | None:
        values = [value.decode() for name, value in carrier if name == key and value]
        return values or None

    def keys(self, carrier: KafkaHeaders) -> list[str]:
        return [name for name, _value in carrier]


_utf8_headers = _Utf8Headers()


def test_a_carrier_its_getter_cannot_read_is_no_trace_context() -> None:
    headers: KafkaHeaders = [("traceparent", b"\xff\xfe\xfd")]
    with pytest.raises(UnicodeDecodeError):
        TraceContextTextMapPropagator().extract(headers, getter=_utf8_headers)
    assert isinstance(propagate.get_global_textmap(), trace_context.GuardedPropagator)
    context = propagate.extract(headers, getter=_utf8_headers)
    assert not trace.get_current_span(context).get_span_context().is_valid


def test_a_readable_kafka_trace_header_is_the_trace_it_names() -> None:
    headers: KafkaHeaders = [("traceparent", VALID.encode())]
    context = propagate.extract(headers, getter=_utf8_headers)
    span_context = trace.get_current_span(context).get_span_context()
    assert format(span_context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"


@given(
    headers=st.lists(
        st.tuples(
            st.sampled_from(["traceparent", "tracestate", "baggage", "other"]),
            st.binary(max_size=300) | st.none(),
        ),
        max_size=5,
    )
)
def test_no_kafka_headers_make_reading_the_trace_context_fail(
    headers: KafkaHeaders,
) -> None:
    propagate.extract(headers, getter=_utf8_headers)


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def _opentelemetry_log() -> Iterator[list[str]]:
    """What OpenTelemetry's own loggers write meanwhile, whatever the logging set-up."""
    logger, kept = logging.getLogger("opentelemetry"), _Kept()
    level = logger.level
    logger.addHandler(kept)
    logger.setLevel(logging.DEBUG)
    try:
        yield kept.lines
    finally:
        logger.removeHandler(kept)
        logger.setLevel(level)


def _read(carrier: dict[str, str]) -> trace.SpanContext:
    # As the gRPC server span reads its caller's metadata (servicekit.grpc_spans).
    return trace.get_current_span(tracing.context_from(carrier)).get_span_context()


@pytest.mark.parametrize(
    "tracestate",
    [
        "k=" + "v" * 5000 + "\x01",  # one malformed member, as long as the header allows
        "good=1," + "bad member " * 40,
        ",".join(f"k{i}=v" for i in range(33)),  # more members than the W3C allows
        "k=1,k=2",
        "k=" + "v" * 200 + ",l=" + "v" * 200 + ",m=" + "v" * 200,  # over 512 characters
    ],
)
def test_an_unfit_tracestate_is_left_out_and_nothing_is_logged(tracestate: str) -> None:
    with _opentelemetry_log() as lines:
        span_context = _read({"traceparent": VALID, "tracestate": tracestate})
    assert lines == []
    assert format(span_context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert len(span_context.trace_state) == 0


def test_a_well_formed_tracestate_travels_on() -> None:
    tracestate = "vendor=opaque value,tenant@system=1"
    span_context = _read({"traceparent": VALID, "tracestate": tracestate})
    assert dict(span_context.trace_state) == {"vendor": "opaque value", "tenant@system": "1"}
    assert trace_context.well_formed_tracestate([tracestate])


def test_a_callers_baggage_is_not_read_nor_logged() -> None:
    hostile = ",".join(["bad entry " + "x" * 1000] * 7)
    with _opentelemetry_log() as lines:
        for sent in (hostile, "tenant=acme"):
            context = propagate.extract({"traceparent": VALID, "baggage": sent})
            assert baggage.get_all(context) == {}
    assert lines == []


@given(
    tracestate=st.text(max_size=600) | st.none(),
    sent_baggage=st.text(max_size=600) | st.none(),
)
def test_no_trace_headers_write_to_the_log(
    tracestate: str | None, sent_baggage: str | None
) -> None:
    carrier = {"traceparent": VALID, "tracestate": tracestate, "baggage": sent_baggage}
    with _opentelemetry_log() as lines:
        _read({name: value for name, value in carrier.items() if value is not None})
    assert lines == []
