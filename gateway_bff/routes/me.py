"""Who the caller is to the platform: their memberships (organisation, role, locale) and
whether they operate it. The pages take the default language from here."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from gateway_bff import resources
from gateway_bff.docs import ANSWERS
from gateway_bff.edge import caller_of
from gateway_bff.parts import parts_of

router = APIRouter(tags=["identity"])


@router.get(
    "/v1/me",
    response_model=resources.Me,
    responses=ANSWERS.problems(401),
    operation_id="getMe",
)
async def me(request: Request) -> JSONResponse:
    user = caller_of(request).user
    directory = parts_of(request).directory
    memberships = await directory.memberships_of(user)
    return JSONResponse(
        {
            "user": user,
            "operator": await directory.is_operator(user),
            "memberships": [resources.member(m) for m in memberships],
        }
    )
