"""A booking across the four services, told for an operator: each service's side as it
answered, and what follows from them together: which services still have work pending for
it (the truth is theirs to settle next), which failed effects may be replayed safely (an
outbox row: consumers de-duplicate on its effect id), what needs a human (open incidents),
and the trace that follows the booking, with whether every service names the same one."""

from __future__ import annotations

from typing import Any

from gateway_bff.settings import SERVICES

SAGA_ORDER = SERVICES  # booking, payment, access, notify: the order the saga runs in


def told(
    booking_id: str, sides: dict[str, dict[str, Any]], unavailable: list[str]
) -> dict[str, Any]:
    known = {name: side for name, side in sides.items() if side.get("known")}
    traces = {name: side["trace_id"] for name, side in known.items() if side.get("trace_id")}
    trace_id = traces.get("booking") or next(iter(traces.values()), None)
    waiting_on = [name for name in SAGA_ORDER if known.get(name, {}).get("pending_effects")]
    return {
        "booking_id": booking_id,
        "trace_id": trace_id,
        "one_trace": len(set(traces.values())) <= 1,
        "settled": not waiting_on and not _needs_human(known) and not _failed(known),
        "waiting_on": waiting_on,
        "retry_safe": _retry_safe(known),
        "needs_human": _needs_human(known),
        "services": {name: sides[name] for name in SAGA_ORDER if name in sides},
        "unavailable": unavailable,
    }


def _failed(known: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"service": name, **effect}
        for name, side in known.items()
        for effect in side.get("failed_effects", [])
    ]


def _retry_safe(known: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "service": effect["service"],
            "effect_id": effect["effect_id"],
            "name": effect.get("name", ""),
            "replay": f"/v1/ops/outbox/{effect['service']}/{effect['effect_id']}/replay",
        }
        for effect in _failed(known)
        if effect.get("source") == "outbox"
    ]


def _needs_human(known: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    decisions = [
        {"service": name, **incident}
        for name, side in known.items()
        for incident in side.get("open_incidents", [])
    ]
    # A failed timer is a job whose bounded tries ran out: it has opened an incident, or a
    # human must look at it; replaying it blindly could act twice on a provider.
    decisions += [
        {
            "service": effect["service"],
            "kind": "failed_job",
            "detail": effect.get("last_error", ""),
            "effect_id": effect["effect_id"],
            "name": effect.get("name", ""),
        }
        for effect in _failed(known)
        if effect.get("source") == "timer"
    ]
    return decisions
