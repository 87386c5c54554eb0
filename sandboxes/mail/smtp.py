"""The SMTP side: aiosmtpd sessions that store what they accept and inject the faults.

The server runs on the HTTP API's event loop, so both see one state without locks. The
faults are the ambiguous failures of real mail servers: a connection dropped after the
message was taken but before the final reply (the client cannot know it was delivered),
a connection dropped after the data with the message lost (the client cannot know it
was not), temporary and permanent refusals, a slow reply, and an outage.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import NoReturn

from aiosmtpd.smtp import SMTP, Envelope, Session

from .state import MailState

HOSTNAME = "mail-sandbox.local"  # named, so no session waits on a reverse DNS lookup
IDENT = "LIFT & FIT mail sandbox"
MAX_MESSAGE = 10 * 1024 * 1024


class MailHandler:
    """aiosmtpd's hooks: ``handle_RCPT`` and ``handle_DATA`` are called by name."""

    def __init__(self, state: MailState) -> None:
        self._state = state
        # Transactions whose recipients are refused, so a refusal counts once per message.
        self._refused: weakref.WeakSet[Envelope] = weakref.WeakSet()

    async def handle_RCPT(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        rcpt_options: list[str],
    ) -> str:
        first = not envelope.rcpt_tos
        if envelope in self._refused or (first and self._refuses_now("rcpt")):
            self._refused.add(envelope)
            return self._state.faults.refusal_reply()
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        faults = self._state.faults
        if self._refuses_now("data"):
            return faults.refusal_reply()
        if faults.take("lose_after_data"):
            await _hang_up(server)  # a server that failed before it queued the mail
        raw = envelope.original_content or b""
        message = self._state.store(envelope.mail_from or "", envelope.rcpt_tos, raw)
        if faults.take("slow_next"):
            await asyncio.sleep(faults.slow_ms / 1000)
        if faults.take("drop_after_data"):
            await _hang_up(server)
        return f"250 2.0.0 OK: queued as {message.id}"

    def _refuses_now(self, stage: str) -> bool:
        faults = self._state.faults
        return faults.refuse_at == stage and faults.take("refuse_next")


class _Outage(asyncio.Protocol):
    """A server that is down: every new connection is closed before the greeting."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()


async def start_smtp_server(state: MailState, host: str, port: int) -> asyncio.Server:
    loop = asyncio.get_running_loop()
    handler = MailHandler(state)

    def session() -> asyncio.BaseProtocol:
        if state.is_offline():
            return _Outage()
        return SMTP(
            handler,
            hostname=HOSTNAME,
            ident=IDENT,
            data_size_limit=MAX_MESSAGE,
            enable_SMTPUTF8=True,
            loop=loop,
        )

    return await loop.create_server(session, host, port)


async def _hang_up(server: SMTP) -> NoReturn:
    """Close the connection before the final reply: the message is taken, the client
    is left not knowing."""
    assert server.transport is not None
    server.transport.close()
    # connection_lost() then cancels this session's task, which waits here until it does.
    await asyncio.Event().wait()
    raise AssertionError("the session outlived its connection")
