"""``/messages``: what the sandbox accepted, for tests and for a developer's browser."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from sandboxes.refusals import Refusal

from .runtime import SandboxDep

# A mail's HTML is whatever the sender wrote; shown from this origin it must not run
# scripts, submit forms or load anything but inline styles and images.
HTML_POLICY = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"

router = APIRouter(prefix="/messages")


@router.get("")
async def list_messages(
    sandbox: SandboxDep, message_id: str | None = None, to: str | None = None
) -> dict[str, object]:
    found = sandbox.state.find(message_id, to)
    return {"data": [message.to_api() for message in found]}


@router.get("/{stored_id}")
async def get_message(stored_id: str, sandbox: SandboxDep) -> dict[str, object]:
    return sandbox.state.get(stored_id).to_api()


@router.get("/{stored_id}/html")
async def message_html(stored_id: str, sandbox: SandboxDep) -> HTMLResponse:
    html = sandbox.state.get(stored_id).content.html
    if html is None:
        raise Refusal(404, "no_html_part")
    return HTMLResponse(html, headers={"Content-Security-Policy": HTML_POLICY})


@router.get("/{stored_id}/raw")
async def message_raw(stored_id: str, sandbox: SandboxDep) -> Response:
    return Response(sandbox.state.get(stored_id).raw, media_type="message/rfc822")
