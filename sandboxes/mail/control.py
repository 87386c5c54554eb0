"""The sandbox control API under ``/_sandbox``: fault injection and reset.

For tests and operators of the sandbox: it answers only to the control token
(MAIL_SANDBOX_CONTROL_TOKEN). Reading the mails (/messages) and the delivery log
(/v1/lookup) stays open: the developer's browser reads them, on loopback by default.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from sandboxes.bearer import presents
from sandboxes.refusals import Refusal

from .runtime import SandboxDep

Count = Annotated[StrictInt, Field(ge=0, le=1_000_000)]
Milliseconds = Annotated[StrictInt, Field(ge=0, le=3_600_000)]


async def require_control_token(
    sandbox: SandboxDep, authorization: Annotated[str | None, Header()] = None
) -> None:
    if not presents(authorization, sandbox.settings.control_token):
        raise Refusal(401, "unauthorized")


router = APIRouter(prefix="/_sandbox", dependencies=[Depends(require_control_token)])


class FaultsPatch(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    drop_after_data: Count | None = None
    lose_after_data: Count | None = None
    refuse_next: Count | None = None
    refuse_code: Annotated[StrictInt, Field(ge=400, le=599)] | None = None
    # One line of printable ASCII: it is sent as is in an SMTP reply.
    refuse_message: Annotated[str, Field(pattern=r"^[\x20-\x7e]{0,200}$")] | None = None
    refuse_at: Literal["data", "rcpt"] | None = None
    slow_next: Count | None = None
    slow_ms: Milliseconds | None = None
    offline_for_ms: Milliseconds | None = None


@router.get("/faults")
async def get_faults(sandbox: SandboxDep) -> dict[str, object]:
    return sandbox.faults_json()


@router.post("/faults")
async def merge_faults(body: FaultsPatch, sandbox: SandboxDep) -> dict[str, object]:
    changes = body.model_dump(exclude_none=True)
    offline_for_ms = changes.pop("offline_for_ms", None)
    sandbox.state.faults.merge(changes)
    if offline_for_ms is not None:
        sandbox.state.go_offline(offline_for_ms)
    return sandbox.faults_json()


@router.delete("/faults")
async def clear_faults(sandbox: SandboxDep) -> dict[str, object]:
    sandbox.state.clear_faults()
    return sandbox.faults_json()


@router.post("/reset")
async def reset(sandbox: SandboxDep) -> dict[str, object]:
    sandbox.state.reset()
    return {"reset": True}
