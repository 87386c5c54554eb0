"""``/v1/lookup``: a provider-style delivery log, asked by Message-ID.

Real mail APIs answer "did you take the message with this id?"; a client that lost the
final SMTP reply asks it to learn whether to send again. The answer is `received` (with
the copies taken), `not_received` (certain: the log covers everything since
`records_since`), or `cannot_tell` (the log outgrew what it remembers).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from .runtime import SandboxDep

router = APIRouter(prefix="/v1")

# An SMTP header line is at most 998 characters; a Message-ID is printable ASCII.
MessageId = Annotated[str, Query(min_length=3, max_length=998, pattern=r"^[\x21-\x7e]+$")]


@router.get("/lookup")
async def lookup(message_id: MessageId, sandbox: SandboxDep) -> dict[str, object]:
    return sandbox.state.lookup(message_id)
