"""The sandbox control API under ``/_sandbox``: the door, fault injection, inspection.

For tests and operators of the sandbox, never part of the provider API the access
service's adapter is written against. Fault injection, the clock, devices and the list of
every code (PINs included) answer only to the control token (LOCK_PROVIDER_CONTROL_TOKEN),
not to the account's API key. The door stays open: it stands for the keypad at the studio,
which anyone standing there may try, and it tells only whether a PIN opens it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header
from fastapi.responses import JSONResponse

from sandboxes.bearer import presents
from sandboxes.refusals import Refusal

from .runtime import ProviderDep
from .schemas import ClockOffset, DoorAttempt, FaultsPatch, NewDevice
from .state import iso


async def require_control_token(
    provider: ProviderDep, authorization: Annotated[str | None, Header()] = None
) -> None:
    if not presents(authorization, provider.settings.control_token):
        raise Refusal(401, "unauthorized")


door = APIRouter(prefix="/_sandbox")
router = APIRouter(prefix="/_sandbox", dependencies=[Depends(require_control_token)])


@door.post("/door")
async def try_the_door(body: DoorAttempt, provider: ProviderDep) -> dict[str, object]:
    code = provider.state.door(body.device_id, body.pin, body.at)
    return {"opens": code is not None, "access_code_id": code.id if code else None}


@router.get("/faults")
async def get_faults(provider: ProviderDep) -> dict[str, object]:
    return provider.state.faults.to_api()


@router.post("/faults")
async def merge_faults(body: FaultsPatch, provider: ProviderDep) -> dict[str, object]:
    provider.state.faults.merge(body.model_dump(exclude_none=True))
    return provider.state.faults.to_api()


@router.delete("/faults")
async def clear_faults(provider: ProviderDep) -> dict[str, object]:
    provider.state.faults.clear()
    return provider.state.faults.to_api()


@router.get("/access_codes")
async def every_access_code(provider: ProviderDep) -> dict[str, object]:
    now = provider.state.now()
    rows = [
        {**code.to_api(now), "status_history": code.history(now)}
        for code in provider.state.codes.values()
    ]
    return {"data": rows}


@router.get("/door_log")
async def door_log(provider: ProviderDep) -> dict[str, object]:
    """Every try at a door, oldest first (PINs included, hence the control token)."""
    return {"data": [entry.to_api() for entry in provider.state.door_log]}


@router.get("/devices")
async def list_devices(provider: ProviderDep) -> dict[str, object]:
    return {"devices": sorted(provider.state.devices)}


@router.post("/devices")
async def add_device(body: NewDevice, provider: ProviderDep) -> JSONResponse:
    created = provider.state.add_device(body.device_id)
    return JSONResponse({"device_id": body.device_id}, status_code=201 if created else 200)


@router.get("/clock")
async def get_clock(provider: ProviderDep) -> dict[str, object]:
    return _clock(provider)


@router.post("/clock")
async def set_clock(body: ClockOffset, provider: ProviderDep) -> dict[str, object]:
    provider.state.set_clock_offset(body.offset_seconds)
    return _clock(provider)


@router.post("/reset")
async def reset(provider: ProviderDep) -> dict[str, object]:
    provider.state.reset()
    return {"reset": True}


def _clock(provider: ProviderDep) -> dict[str, object]:
    offset = provider.state.clock_offset.total_seconds()
    return {"now": iso(provider.state.now()), "offset_seconds": offset}
