"""Wrapping domain events in the EventEnvelope contract and reading them back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import cast

from google.protobuf import any_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from liftfit.events.v1.envelope_pb2 import EventEnvelope

from servicekit.protobuf import timestamp


def wrap(
    event: Message,
    aggregate_id: str,
    producer: str,
    trace_context: dict[str, str],
    event_id: uuid.UUID,
) -> EventEnvelope:
    payload = any_pb2.Any()
    payload.Pack(event)
    occurred_at = timestamp(datetime.now(UTC))
    return EventEnvelope(
        event_id=str(event_id),
        event_type=event.DESCRIPTOR.full_name,
        aggregate_id=aggregate_id,
        occurred_at=occurred_at,
        trace_context=trace_context,
        payload=payload,
        producer=producer,
    )


def unfinished(
    event: Message,
    missing: str,
    aggregate_id: str,
    producer: str,
    trace_context: dict[str, str],
    event_id: uuid.UUID,
) -> list[bytes]:
    """An envelope in parts, for an event that lacks one message field only the database
    knows when it writes the row (a card checkout's price): the envelope without its
    payload, the payload's key, the Any without its value, the value's key, the event
    without the field, the field's key. The database's `finished_envelope` (the booking
    service's migrations) joins them around the field's bytes; protobuf reads fields in
    any order, so the result parses as `wrap` would have built it."""
    if event.HasField(missing):
        raise ValueError(f"{missing} is to be added by the database, not set here")
    whole = wrap(event, aggregate_id, producer, trace_context, event_id)
    head = EventEnvelope()
    head.CopyFrom(whole)
    head.ClearField("payload")
    any_head = any_pb2.Any(type_url=whole.payload.type_url)
    return [
        head.SerializeToString(),
        field_key(EventEnvelope.DESCRIPTOR.fields_by_name["payload"]),
        any_head.SerializeToString(),
        field_key(any_pb2.Any.DESCRIPTOR.fields_by_name["value"]),
        whole.payload.value,  # the event's bytes, as wrap packed them
        field_key(cast(FieldDescriptor, event.DESCRIPTOR.fields_by_name[missing])),
    ]


_LENGTH_DELIMITED = (
    FieldDescriptor.TYPE_MESSAGE,
    FieldDescriptor.TYPE_STRING,
    FieldDescriptor.TYPE_BYTES,
)
_VARINT = (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_UINT64)


def field_key(field: FieldDescriptor) -> bytes:
    """A field's key as protobuf writes it before the field's value: its number and its
    wire type (0 for an integer, 2 for a message, a string or bytes)."""
    if field.type in _LENGTH_DELIMITED:
        wire = 2
    elif field.type in _VARINT:
        wire = 0
    else:
        raise ValueError(f"{field.full_name}: only integers, strings, bytes and messages")
    return varint(field.number << 3 | wire)


def varint(n: int) -> bytes:
    """An unsigned integer as protobuf's varint: 7 bits a byte, least significant first."""
    if n < 0:
        raise ValueError("a varint here is never negative")
    encoded = bytearray()
    while n >= 0x80:
        encoded.append(n & 0x7F | 0x80)
        n >>= 7
    encoded.append(n)
    return bytes(encoded)


def parse(raw: bytes) -> EventEnvelope:
    envelope = EventEnvelope()
    envelope.ParseFromString(raw)
    if not envelope.event_id or not envelope.event_type:
        raise ValueError("not an event envelope: event_id or event_type missing")
    return envelope


def unpack(envelope: EventEnvelope) -> Message:
    """The typed payload; its message class must be imported somewhere in the process."""
    descriptor = descriptor_pool.Default().FindMessageTypeByName(envelope.event_type)
    message: Message = message_factory.GetMessageClass(descriptor)()
    if not envelope.payload.Unpack(message):
        raise ValueError(f"payload is not a {envelope.event_type}")
    return message
