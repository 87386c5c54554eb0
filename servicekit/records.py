"""Reading a Kafka record as an event, trusting none of it.

Anyone who can write to a topic can put any bytes in a record's key, value and headers.
`read_delivery` either returns an event every check has passed, or raises `BadRecord`
with a reason an operator can read; nothing here raises anything else, whatever the
bytes. The reason never echoes more than a few dozen characters of the input.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import ConsumerRecord
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message
from liftfit.events.v1.envelope_pb2 import EventEnvelope

_EVENT_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")
_GENERATION = re.compile(r"[0-9]{1,9}")
_MAX_AGGREGATE_ID = 200
_TRACE_HEADERS = ("traceparent", "tracestate")
_MAX_TRACE_HEADER = 512


class BadRecord(ValueError):
    """A record no handler can be given; `reason` says what is wrong with it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Delivery:
    """One Kafka record as it arrived: raw bytes, nothing decoded yet."""

    topic: str
    partition: int
    offset: int
    value: bytes
    headers: Sequence[tuple[str, bytes | None]] = ()
    key: bytes | None = None

    @classmethod
    def of(cls, record: ConsumerRecord[Any, Any]) -> Delivery:
        return cls(
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            value=_as_bytes(record.value),
            headers=tuple(record.headers or ()),
            key=_as_bytes(record.key) if record.key is not None else None,
        )

    @property
    def placeholder_id(self) -> str:
        """An inbox id for a record whose own event id cannot be read."""
        return f"unreadable:{self.topic}:{self.partition}:{self.offset}"

    def raw_headers(self) -> list[tuple[str, bytes]]:
        return [(name, value or b"") for name, value in self.headers]


@dataclass(frozen=True)
class Incoming:
    """An event whose envelope, identity, type and headers passed every check."""

    envelope: EventEnvelope
    generation: int
    trace_context: Mapping[str, str] = field(default_factory=dict)

    @property
    def event_id(self) -> str:
        return self.envelope.event_id

    @property
    def event_type(self) -> str:
        return self.envelope.event_type

    def payload(self) -> Message:
        message = _message_class(self.event_type)()
        try:
            unpacked = self.envelope.payload.Unpack(message)
        except (DecodeError, RuntimeError, ValueError):
            unpacked = False  # the bytes do not parse as that message
        if not unpacked:
            raise BadRecord(f"payload is not a {self.event_type}")
        return message


def read_delivery(delivery: Delivery) -> Incoming:
    headers = _headers_by_name(delivery.headers)
    event = _envelope(delivery.value)
    _check_identity(event, headers)
    _check_type(event)
    _check_key(event, delivery.key)
    incoming = Incoming(event, _generation(headers), _trace_context(headers))
    incoming.payload()  # a payload that does not parse is the record's fault, not the handler's
    return incoming


def _headers_by_name(headers: Sequence[tuple[str, bytes | None]]) -> dict[str, bytes]:
    by_name: dict[str, bytes] = {}
    for name, value in headers:
        if not isinstance(name, str):
            raise BadRecord("a header name is not text")
        lowered = name.lower()
        if lowered in by_name:
            raise BadRecord(f"header {_shown(lowered)} appears twice")
        by_name[lowered] = value or b""
    return by_name


def _envelope(value: bytes) -> EventEnvelope:
    event = EventEnvelope()
    try:
        event.ParseFromString(value)
    except (DecodeError, RuntimeError, ValueError):
        raise BadRecord("value is not an event envelope") from None
    return event


def _check_identity(event: EventEnvelope, headers: Mapping[str, bytes]) -> None:
    if not _is_canonical_uuid(event.event_id):
        raise BadRecord(f"event_id {_shown(event.event_id)} is not a canonical UUID")
    if "event-id" in headers and headers["event-id"] != event.event_id.encode():
        raise BadRecord("the event-id header differs from the envelope's event_id")


def _check_type(event: EventEnvelope) -> None:
    if not _EVENT_TYPE.fullmatch(event.event_type) or len(event.event_type) > 200:
        raise BadRecord(f"event_type {_shown(event.event_type)} is not a message name")
    try:
        _message_class(event.event_type)
    except KeyError:
        raise BadRecord(f"unknown event type {_shown(event.event_type)}") from None
    if event.payload.TypeName() != event.event_type:
        raise BadRecord(f"the payload is not a {event.event_type}")


def _check_key(event: EventEnvelope, key: bytes | None) -> None:
    aggregate = event.aggregate_id
    if not aggregate or len(aggregate) > _MAX_AGGREGATE_ID or not aggregate.isprintable():
        raise BadRecord(f"aggregate_id {_shown(aggregate)} is empty, too long or not printable")
    # The key is the aggregate: it is what keeps one aggregate's events in one partition.
    if key != aggregate.encode():
        raise BadRecord("the record key is not the envelope's aggregate_id")


def _generation(headers: Mapping[str, bytes]) -> int:
    raw = headers.get("dispatch-generation", b"0")
    text = raw.decode("ascii", errors="replace")
    if not _GENERATION.fullmatch(text):
        raise BadRecord(f"dispatch-generation {_shown(text)} is not a small whole number")
    return int(text)


def _trace_context(headers: Mapping[str, bytes]) -> dict[str, str]:
    carrier: dict[str, str] = {}
    for name in _TRACE_HEADERS:
        if name not in headers:
            continue
        value = headers[name]
        try:
            text = value.decode("ascii")
        except UnicodeDecodeError:
            raise BadRecord(f"header {name} is not ASCII") from None
        if len(text) > _MAX_TRACE_HEADER or not text.isprintable():
            raise BadRecord(f"header {name} is too long or not printable")
        carrier[name] = text
    return carrier


def _message_class(event_type: str) -> type[Message]:
    descriptor = descriptor_pool.Default().FindMessageTypeByName(event_type)
    return message_factory.GetMessageClass(descriptor)


def _is_canonical_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def _as_bytes(value: Any) -> bytes:
    return bytes(value) if isinstance(value, bytes | bytearray | memoryview) else b""


def _shown(value: str, limit: int = 40) -> str:
    """A bounded, printable rendering of untrusted text for a reason or a log line."""
    clipped = value[:limit]
    return repr(clipped) + ("..." if len(value) > limit else "")
