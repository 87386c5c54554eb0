"""Trace context is read from carriers that anyone can write: a carrier that cannot be read
is no trace context, and reading it never fails."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import propagate, trace
from opentelemetry.instrumentation.aiokafka.utils import _aiokafka_getter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from servicekit import tracing

VALID = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_an_undecodable_kafka_trace_header_is_no_trace_context() -> None:
    headers = [("traceparent", b"\xff\xfe\xfd")]
    # aiokafka's instrumentation reads headers as UTF-8 before any of our code sees them:
    with pytest.raises(UnicodeDecodeError):
        TraceContextTextMapPropagator().extract(headers, getter=_aiokafka_getter)
    assert isinstance(propagate.get_global_textmap(), tracing.GuardedPropagator)
    context = propagate.extract(headers, getter=_aiokafka_getter)
    assert not trace.get_current_span(context).get_span_context().is_valid


def test_a_readable_kafka_trace_header_is_the_trace_it_names() -> None:
    context = propagate.extract([("traceparent", VALID.encode())], getter=_aiokafka_getter)
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
    headers: list[tuple[str, bytes | None]],
) -> None:
    propagate.extract(headers, getter=_aiokafka_getter)
