"""Reading W3C trace context from carriers that anyone can write.

Every carrier comes from outside: a browser's HTTP headers at the gateway, gRPC metadata,
Kafka headers, a stored outbox row. The instrumentation packages read them before any of
this code sees them, so the process-wide propagator is where they are checked:

- a carrier that cannot be read is no trace context: a getter that fails on it (one that
  decodes header bytes as UTF-8, say) would otherwise fail the request or the poll that
  carries it, over and over. A Kafka record's trace headers are checked before they get
  here (servicekit.records: ASCII and printable, or the record is parked);
- a `tracestate` is read only when it is well formed and within the 512 characters the
  W3C asks vendors to carry; otherwise the trace goes on without it. OpenTelemetry's
  parser logs a malformed member whole, so one request could write 8 KiB into the log;
- `baggage` is not read: nothing in this system uses it, a stranger's would only be carried
  into every service, and its parser logs each malformed entry whole too.
"""

from __future__ import annotations

import re
from typing import Any

from opentelemetry.context import Context
from opentelemetry.propagators.textmap import (
    CarrierT,
    Getter,
    Setter,
    TextMapPropagator,
    default_getter,
    default_setter,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACESTATE = "tracestate"
MAX_TRACESTATE = 512
MAX_TRACESTATE_MEMBERS = 32
# A list member as the W3C Trace Context defines it: key=value.
_KEY = r"[a-z][_0-9a-z\-\*\/]{0,255}|[a-z0-9][_0-9a-z\-\*\/]{0,240}@[a-z][_0-9a-z\-\*\/]{0,13}"
_VALUE = r"[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]"
_MEMBER = re.compile(f"(?:{_KEY})=(?:{_VALUE})")


def well_formed_tracestate(values: list[str]) -> bool:
    """Whether a tracestate (its header lines) is one OpenTelemetry reads without a word."""
    if not all(isinstance(value, str) for value in values):
        return False
    joined = ",".join(values)
    if len(joined) > MAX_TRACESTATE:
        return False
    members = [member.strip(" \t") for member in joined.split(",")]
    present = [member for member in members if member]
    keys = [member.split("=", 1)[0] for member in present]
    return (
        len(present) <= MAX_TRACESTATE_MEMBERS
        and len(set(keys)) == len(keys)
        and all(_MEMBER.fullmatch(member) for member in present)
    )


class _CheckedGetter(Getter[Any]):
    """The carrier as its own getter reads it, with an unfit tracestate left out."""

    def __init__(self, inner: Getter[Any]) -> None:
        self._inner = inner

    def get(self, carrier: Any, key: str) -> list[str] | None:
        values = self._inner.get(carrier, key)
        if key == TRACESTATE and values is not None and not well_formed_tracestate(values):
            return None
        return values

    def keys(self, carrier: Any) -> list[str]:
        return self._inner.keys(carrier)


class GuardedPropagator(TextMapPropagator):
    """W3C trace context, read so that a carrier can never fail its reader or flood the
    log (see the module's docstring)."""

    def __init__(self) -> None:
        self._inner = TraceContextTextMapPropagator()

    def extract(
        self,
        carrier: CarrierT,
        context: Context | None = None,
        getter: Getter[CarrierT] = default_getter,
    ) -> Context:
        try:
            return self._inner.extract(carrier, context, _CheckedGetter(getter))
        except Exception:
            return context if context is not None else Context()

    def inject(
        self,
        carrier: CarrierT,
        context: Context | None = None,
        setter: Setter[CarrierT] = default_setter,
    ) -> None:
        self._inner.inject(carrier, context, setter)

    @property
    def fields(self) -> set[str]:
        return set(self._inner.fields)
