"""The card gateway's notifications and the page a customer's browser comes back to.

A notification is open to anyone who can reach it, so the gateway spends little on one it
cannot use: a body over 64 KiB is refused as soon as its length is known, and the raw bytes
go with the signature header, untouched, to the payment service, which verifies them and
re-reads the payment from the card gateway before any state changes. At most 64 are handled
at once; beyond that the card gateway is told to send again (503).
The return page only reads: it is the web's page that follows the payment (see web/pages.py).
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from liftfit.payment.v1 import payment_pb2 as ppb
from starlette.requests import ClientDisconnect

from gateway_bff.docs import ANSWERS
from gateway_bff.parts import parts_of
from gateway_bff.problems import Problem
from gateway_bff.web import pages
from gateway_bff.web.rendering import preferred_language

router = APIRouter(prefix="/v1/payments", tags=["payments"])
MAX_BODY = 64 * 1024
SIGNATURE_HEADER = "Gateway-Signature"
MAX_CONCURRENT = 64
_HANDLING = asyncio.Semaphore(MAX_CONCURRENT)
# What the payment service reads from a notification once its signature holds: the card
# gateway's payment id, and nothing else (the payment is then read from the gateway). Any
# other body is refused as not a notification (400 invalid_signature).
_NOTIFICATION = {
    "required": True,
    "description": "The card gateway's notification, as it sent it (the bytes are signed)",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["data"],
                "properties": {
                    "id": {"description": "The gateway's event id"},
                    "data": {
                        "type": "object",
                        "required": ["payment_id"],
                        "properties": {
                            "payment_id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$"}
                        },
                    },
                },
            },
            "example": {
                "id": "evt_1",
                "type": "payment.updated",
                "data": {"payment_id": "pay_1", "reference": "r", "state": "succeeded"},
            },
        }
    },
}
# The form the card gateway writes: its time, then one HMAC per secret it signs with.
SIGNATURE_PATTERN = "^t=[0-9]{1,12}(,v1=[0-9a-f]{64}){1,8}$"


@router.post(
    "/notifications",
    responses=ANSWERS.problems(400, 413),
    operation_id="receivePaymentNotification",
    openapi_extra={
        "requestBody": _NOTIFICATION,
        "parameters": [
            {
                "name": SIGNATURE_HEADER,
                "in": "header",
                "required": True,
                "description": "t=<unix seconds>,v1=<hex HMAC-SHA256 of '<t>.<raw body>'>,"
                " within 300 s of now; missing, stale or not matching: 400 invalid_signature",
                "schema": {"type": "string", "pattern": SIGNATURE_PATTERN},
            }
        ],
    },
)
async def receive_notification(request: Request) -> JSONResponse:
    # A flood of notifications must not take every customer's request down with it.
    if _HANDLING.locked():
        raise Problem(503, "unavailable", "Too many notifications at once; send it again")
    async with _HANDLING:
        body = await _bounded_body(request)
        services = parts_of(request).services
        notice = ppb.HandleNotificationRequest(
            raw_body=body, signature_header=request.headers.get(SIGNATURE_HEADER, "")[:1024]
        )
        await services["payment"].write(services.payment.HandleNotification, notice)
    return JSONResponse({"accepted": True})


@router.get(
    "/return",
    response_class=HTMLResponse,
    operation_id="paymentReturnPage",
    responses={200: {"description": "A page showing the payment's state"}},
)
async def return_page(
    request: Request, payment_id: Annotated[str | None, Query()] = None
) -> Response:
    # The web's own page, in the language the customer's pages last used.
    return await pages.payment_return_page(request, preferred_language(request), payment_id)


async def _bounded_body(request: Request) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise _too_large()
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY:
                raise _too_large()
            chunks.append(chunk)
    except ClientDisconnect:
        raise Problem(400, "malformed_request", "The body did not arrive whole") from None
    return b"".join(chunks)


def _too_large() -> Problem:
    return Problem(413, "payload_too_large", "The body is too large", f"at most {MAX_BODY} bytes")
