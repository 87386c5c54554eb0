"""A mail composed with notify's policy (the SMTP policy, each header's class made once) is
byte for byte the mail the standard SMTP policy composes, and is refused where that one is:
keeping the classes changes the cost, never what a recipient, a subject or a body becomes."""

from __future__ import annotations

import re
from email.message import EmailMessage
from email.policy import SMTP, EmailPolicy

from hypothesis import given, settings
from hypothesis import strategies as st

from services.notify.adapters.mail_server import KEPT_HEADER_CLASSES, SMTP_POLICY, mime_bytes
from services.notify.domain.model import Mail

SENDER = "LIFT & FIT <no-reply@liftfit.local>"
# What differs between two compositions of one mail: the multipart boundary (random) and
# the Date header (the clock).
_VARYING = re.compile(rb"={15}\d+==|Date: [^\r]*\r\n")

_header_text = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=120
)
_addresses = st.one_of(
    st.emails(),
    st.builds("{} <{}>".format, _header_text, st.emails()),
    _header_text,
)


def _composed(mail: Mail, policy: EmailPolicy[EmailMessage]) -> bytes | str:
    """The mail's bytes less what varies, or the name of the error that refused it."""
    try:
        return _VARYING.sub(b"", mime_bytes(mail, SENDER, policy))
    except Exception as error:
        return type(error).__name__


@settings(max_examples=300, deadline=None, database=None)
@given(
    recipient=_addresses,
    subject=_header_text,
    text=st.text(max_size=400),
    html=st.text(max_size=400),
    language=_header_text,
)
def test_a_mail_is_the_one_the_standard_policy_composes(
    recipient: str, subject: str, text: str, html: str, language: str
) -> None:
    mail = Mail(
        message_id="<m1@liftfit.local>",
        recipient=recipient,
        subject=subject,
        text=text,
        html=html,
        headers={"Content-Language": language},
    )
    assert _composed(mail, SMTP_POLICY) == _composed(mail, SMTP)


def test_a_mail_in_czech_composes_with_its_headers_encoded() -> None:
    mail = Mail(
        "<m2@liftfit.local>",
        "Jana Nováková <jana@example.test>",
        "Rezervace potvrzena",
        "Dobrý den",
        "<p>Dobrý den</p>",
    )
    composed = _composed(mail, SMTP_POLICY)
    assert isinstance(composed, bytes)
    assert b"To: Jana =?utf-8?q?Nov=C3=A1kov=C3=A1?= <jana@example.test>\r\n" in composed


def test_each_header_class_is_made_once() -> None:
    assert KEPT_HEADER_CLASSES["To"] is KEPT_HEADER_CLASSES["to"]
    assert KEPT_HEADER_CLASSES["Subject"] is KEPT_HEADER_CLASSES["subject"]
