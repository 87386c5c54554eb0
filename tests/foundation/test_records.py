"""Reading a Kafka record as an event: anything in key, value or headers is either a
checked event or a BadRecord with a reason; never another exception."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest
from google.protobuf.wrappers_pb2 import StringValue
from hypothesis import given
from hypothesis import strategies as st

from servicekit import envelope
from servicekit.records import BadRecord, Delivery, read_delivery

AGGREGATE = "agg-1"


def _envelope(event_id: str | None = None, event_type: str | None = None) -> bytes:
    wrapped = envelope.wrap(StringValue(value="x"), AGGREGATE, "test", {}, uuid.uuid4())
    if event_id is not None:
        wrapped.event_id = event_id
    if event_type is not None:
        wrapped.event_type = event_type
    return wrapped.SerializeToString()


def _delivery(
    value: bytes,
    headers: Sequence[tuple[str, bytes | None]] | None = None,
    key: bytes | None = AGGREGATE.encode(),
) -> Delivery:
    return Delivery("t.events", 2, 7, value, tuple(headers or ()), key)


def test_a_well_formed_record_is_read_with_its_generation_and_trace() -> None:
    traceparent = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    headers = [("dispatch-generation", b"3"), ("traceparent", traceparent)]
    incoming = read_delivery(_delivery(_envelope(), headers))
    assert incoming.generation == 3
    assert incoming.trace_context == {"traceparent": traceparent.decode()}
    assert isinstance(incoming.payload(), StringValue)


@pytest.mark.parametrize(
    "delivery, reason",
    [
        (_delivery(b"\xff\xfe\xfd"), "not an event envelope"),
        (_delivery(_envelope(event_id="urn:uuid:" + str(uuid.uuid4()))), "canonical UUID"),
        (_delivery(_envelope(event_id=str(uuid.uuid4()).upper())), "canonical UUID"),
        (_delivery(_envelope(event_type="liftfit.nope.v1.Unknown")), "unknown event type"),
        (_delivery(_envelope(event_type="no spaces allowed")), "not a message name"),
        (_delivery(_envelope(event_type="google.protobuf.Int32Value")), "payload is not"),
        (_delivery(_envelope(), [("dispatch-generation", b"-1")]), "dispatch-generation"),
        (_delivery(_envelope(), [("dispatch-generation", b"9" * 5000)]), "dispatch-generation"),
        (_delivery(_envelope(), [("traceparent", b"\xff\xfe\xfd")]), "traceparent"),
        (_delivery(_envelope(), [("tracestate", b"a" * 5000)]), "tracestate"),
        (_delivery(_envelope(), [("event-id", b"another")]), "event-id header"),
        (_delivery(_envelope(), [("X-A", b"1"), ("x-a", b"2")]), "appears twice"),
        (_delivery(_envelope(), key=b"another aggregate"), "record key"),
        (_delivery(_envelope(), key=None), "record key"),
    ],
)
def test_each_kind_of_bad_record_is_refused_with_its_reason(
    delivery: Delivery, reason: str
) -> None:
    with pytest.raises(BadRecord) as refused:
        read_delivery(delivery)
    assert reason in refused.value.reason
    assert len(refused.value.reason) < 200  # never echoes unbounded input


@given(
    value=st.binary(max_size=300),
    key=st.none() | st.binary(max_size=50),
    headers=st.lists(
        st.tuples(st.text(max_size=20), st.none() | st.binary(max_size=80)), max_size=6
    ),
)
def test_any_bytes_are_an_event_or_a_bad_record_never_a_crash(
    value: bytes, key: bytes | None, headers: list[tuple[str, bytes | None]]
) -> None:
    try:
        read_delivery(Delivery("t.events", 0, 0, value, tuple(headers), key))
    except BadRecord as bad:
        assert bad.reason and "\x00" not in bad.reason


@given(generation=st.text(max_size=30), traceparent=st.binary(max_size=100))
def test_any_header_values_on_a_valid_envelope_are_read_or_refused(
    generation: str, traceparent: bytes
) -> None:
    headers: list[tuple[str, bytes | None]] = [
        ("dispatch-generation", generation.encode("utf-8", "surrogatepass")),
        ("traceparent", traceparent),
    ]
    try:
        incoming = read_delivery(_delivery(_envelope(), headers))
    except BadRecord:
        return
    assert 0 <= incoming.generation < 10**9


def test_a_payload_that_does_not_parse_as_its_type_is_a_bad_record() -> None:
    wrapped = envelope.wrap(StringValue(value="x"), AGGREGATE, "test", {}, uuid.uuid4())
    wrapped.payload.value = b"\x0a\xff"  # a length beyond the end: protobuf raises, not False
    with pytest.raises(BadRecord, match="payload is not"):
        read_delivery(_delivery(wrapped.SerializeToString()))
