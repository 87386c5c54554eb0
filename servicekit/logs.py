"""One JSON line per log event, from every process of ours.

Each line holds `time` (RFC 3339, UTC), `level`, `service`, `logger`, `message`, the
`trace_id` and `span_id` of the current OpenTelemetry span when there is one, the
`booking_id`, `payment_id` and `grant_id` bound to the work at hand (`about`: the inbox,
the timer runner and the gRPC server bind those an event, a job or a request carries; a
call may also pass them with `extra=`), and `exception` with the traceback when there is
one. A line is never split: a traceback is a field, not lines of its own, so a log
collector reads each event whole.

What must never be in a line is kept out twice. The log calls name ids, states and error
classes, never a PIN, a secret or a customer's address; and the formatter masks every
e-mail address (`j***@example.com`) and replaces the value of every secret setting of the
process (`*_SECRET(S)`, `*_API_KEY`, `*_KEYS`, `*_PASSWORD`, `*_TOKEN`, a database URL's
password) with `[redacted]`, should an exception's text carry one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from google.protobuf.message import Message
from opentelemetry import trace

from servicekit.validation import CANONICAL_UUID

SUBJECT_IDS = ("booking_id", "payment_id", "grant_id")
REDACTED = "[redacted]"
_NONE: Mapping[str, str] = MappingProxyType({})
_SUBJECT: ContextVar[Mapping[str, str]] = ContextVar("liftfit_log_subject", default=_NONE)
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9!#$%&'*+/=?^_`{|}~.-])([A-Za-z0-9!#$%&'*+/=?^_`{|}~-])"
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]*@(?=[A-Za-z0-9-]+\.[A-Za-z0-9.-]*[A-Za-z0-9])"
)
_SECRET_SETTING = re.compile(r"_(SECRETS?|API_KEY|KEYS|PASSWORD|TOKEN)$")
_SHORTEST_SECRET = 8  # shorter values (a port, a flag) would mask ordinary words


@contextlib.contextmanager
def about(**ids: str) -> Iterator[None]:
    """Every line logged inside carries these ids (those that are canonical UUIDs)."""
    # Only canonical UUIDs are bound: a request's field may hold anything a caller sent.
    fitting = {name: value for name, value in ids.items() if CANONICAL_UUID.fullmatch(value or "")}
    if not fitting:
        yield
        return
    token = _SUBJECT.set({**_SUBJECT.get(), **fitting})
    try:
        yield
    finally:
        _SUBJECT.reset(token)


def ids_in(carrier: Message | Mapping[str, Any]) -> dict[str, str]:
    """The booking, payment and grant ids a protobuf message (its own fields) or a
    mapping (a timer's expectations) carries."""
    if isinstance(carrier, Message):
        fields = carrier.DESCRIPTOR.fields_by_name
        named = {name: getattr(carrier, name) for name in SUBJECT_IDS if name in fields}
    else:
        named = {name: carrier.get(name) for name in SUBJECT_IDS}
    return {name: value for name, value in named.items() if isinstance(value, str) and value}


def mask_emails(text: str) -> str:
    """`jana.novak@example.com` -> `j***@example.com`."""
    return _EMAIL.sub(r"\1***@", text)


def secrets_of(environment: Mapping[str, str]) -> list[str]:
    """The values of the secret settings in an environment, longest first."""
    found: set[str] = set()
    for name, value in environment.items():
        if _SECRET_SETTING.search(name):
            found.update(_parts(value))
        elif name.endswith(("_DATABASE_URL", "_DSN")):
            found.update(_password_forms(value))
    return sorted((s for s in found if len(s) >= _SHORTEST_SECRET), key=len, reverse=True)


def _parts(value: str) -> Iterable[str]:
    """A list setting's items, and each `<key id>:<key>` item's key (ACCESS_PIN_KEYS)."""
    for item in (part.strip() for part in value.split(",")):
        yield item
        yield item.partition(":")[2]


def _password_forms(url: str) -> Iterable[str]:
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return
    if password:
        yield f":{password}@"
        if password != user:  # a local role named as its password would mask its name
            yield password


class JsonLines(logging.Formatter):
    """Formats a record as one JSON object (see the module's docstring)."""

    def __init__(self, service: str, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._service = service
        self._secrets = list(secrets)

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _rfc3339(record.created),
            "level": record.levelname,
            "service": self._service,
            "logger": record.name,
            "message": self._clean(record.getMessage()),
        }
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            line["trace_id"] = format(span.trace_id, "032x")
            line["span_id"] = format(span.span_id, "016x")
        line.update(_SUBJECT.get())
        for name in SUBJECT_IDS:
            value = record.__dict__.get(name)
            if isinstance(value, str) and CANONICAL_UUID.fullmatch(value):
                line[name] = value
        if record.exc_info:
            line["exception"] = self._clean(self.formatException(record.exc_info))
        if record.stack_info:
            line["stack"] = self._clean(self.formatStack(record.stack_info))
        return json.dumps(line, default=str)

    def _clean(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return mask_emails(text)


def _rfc3339(created: float) -> str:
    moment = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")
    return moment.replace("+00:00", "Z")


def configure_logging(service: str) -> None:
    """The process's one handler: JSON lines on stderr at LOG_LEVEL (INFO by default).
    uvicorn's loggers write through it too (the gateway starts uvicorn without a logging
    configuration of its own)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLines(service, secrets_of(os.environ)))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(os.environ.get("LOG_LEVEL", "INFO").upper())
    logging.captureWarnings(True)  # a library's warning is a line like any other
    # aiokafka logs every failed attempt while the broker is away; OutageLog says it once.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
