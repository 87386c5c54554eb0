"""Reading what a message says: its headers and its text and HTML bodies.

Parsing never refuses a message: whatever bytes a client sent were delivered, and are
stored as they came. Text that is not valid UTF-8 (8-bit headers, unknown charsets) is
shown with replacement characters, because the HTTP API answers in JSON, which cannot
carry undecodable bytes.
"""

from __future__ import annotations

import email
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesHeaderParser

MAX_ERROR_LENGTH = 500


@dataclass(frozen=True)
class MessageContent:
    headers: tuple[tuple[str, str], ...]  # every header, in order, repeated ones included
    text: str | None  # the text/plain body, decoded
    html: str | None  # the text/html body, decoded
    parse_error: str | None = None  # why the bodies could not be read, if they could not

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)


def read_message(raw: bytes) -> MessageContent:
    lines = _lines(raw)
    try:
        message = email.message_from_bytes(lines, policy=policy.default)
        assert isinstance(message, EmailMessage)
        return MessageContent(_headers(message), _body(message, "plain"), _body(message, "html"))
    except Exception as error:  # a message the parser chokes on was still delivered
        lenient = email.message_from_bytes(lines, policy=policy.compat32)
        reason = readable(repr(error))[:MAX_ERROR_LENGTH]
        return MessageContent(_headers(lenient), None, None, parse_error=reason)


def message_id_of(raw: bytes) -> str | None:
    """The Message-ID, read from the headers alone as `read_message` reads it: a search or
    a lookup needs only this, and reading the bodies cost most of the sandbox's CPU per
    mail. Only the headers decide which reading applies, so where `read_message` falls
    back because a body or another header fails the strict reading, a folded or encoded
    Message-ID may read differently there."""
    lines = _lines(raw)
    try:
        headers = BytesHeaderParser(policy=policy.default).parsebytes(lines)
        value = headers["Message-ID"]
    except Exception:  # as read_message: the lenient reading when the strict one fails
        value = BytesHeaderParser(policy=policy.compat32).parsebytes(lines)["Message-ID"]
    return None if value is None else readable(str(value)).strip()


def _lines(raw: bytes) -> bytes:
    # SMTP carries CRLF line ends; the parts are shown with the \n of the email package.
    return raw.replace(b"\r\n", b"\n")


def readable(text: str) -> str:
    """``text`` made encodable as UTF-8; raw bytes the parser kept as surrogates are
    decoded as UTF-8 where they are, and replaced where they are not."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _headers(message: Message) -> tuple[tuple[str, str], ...]:
    return tuple((readable(name), readable(str(value)).strip()) for name, value in message.items())


def _body(message: EmailMessage, subtype: str) -> str | None:
    part = message.get_body(preferencelist=(subtype,))
    if part is None:
        return None
    try:
        content = part.get_content()
    except (LookupError, UnicodeError, ValueError):  # an unknown or lying charset
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else None
    return readable(content) if isinstance(content, str) else None
