"""The provider API under ``/access_codes``: what the access service's adapter talks to.

Shaped like Seam's access codes: POST with a JSON body for every call, a bearer API key,
and a ``name`` the client uses as its own alias for a code. There is no idempotency key,
as with the real providers: a create sent twice makes two codes.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header

from sandboxes.bearer import presents
from sandboxes.refusals import Refusal

from .runtime import ProviderDep
from .schemas import AccessCodeRef, CreateAccessCode, ListAccessCodes


async def require_api_key(
    provider: ProviderDep, authorization: Annotated[str | None, Header()] = None
) -> None:
    if not presents(authorization, provider.settings.api_key):
        raise Refusal(401, "unauthorized")


async def injected_outage(provider: ProviderDep) -> None:
    # Runs after authentication so a misconfigured client cannot use up the fault.
    if provider.state.faults.take("fail_next_calls"):
        raise Refusal(503, "service_unavailable")


router = APIRouter(
    prefix="/access_codes", dependencies=[Depends(require_api_key), Depends(injected_outage)]
)


@router.post("/create", status_code=201)
async def create_access_code(body: CreateAccessCode, provider: ProviderDep) -> dict[str, object]:
    code = provider.state.create(body.to_request())
    # The code exists before the hang: a client that timed out must look it up by name.
    if provider.state.faults.take("timeout_next_creates"):
        await provider.hang()
    return provider.describe(code)


@router.post("/list")
async def list_access_codes(
    provider: ProviderDep, body: ListAccessCodes | None = None
) -> dict[str, object]:
    wanted = body or ListAccessCodes()
    now = provider.state.now()
    found = provider.state.find(wanted.device_id, wanted.name)
    return {"access_codes": [code.to_api(now) for code in found]}


@router.post("/get")
async def get_access_code(body: AccessCodeRef, provider: ProviderDep) -> dict[str, object]:
    return provider.describe(provider.state.get(body.access_code_id))


@router.post("/delete")
async def delete_access_code(body: AccessCodeRef, provider: ProviderDep) -> dict[str, object]:
    code = provider.state.delete(body.access_code_id)
    if provider.state.faults.take("timeout_next_deletes"):
        await provider.hang()
    return provider.describe(code)
