"""Wrapping domain events in the EventEnvelope contract and reading them back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from google.protobuf import any_pb2, descriptor_pool, message_factory
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
