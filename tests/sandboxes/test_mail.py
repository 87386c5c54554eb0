"""The mail sandbox, tested as its clients see it: a real process, SMTP in and HTTP out.

The sandbox runs as ``python -m sandboxes.mail`` on free ports and is reset before every
test. Mail is sent with the standard library's smtplib, as the notify service will.
"""

from __future__ import annotations

import asyncio
import smtplib
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from sandboxes.mail import parsing
from sandboxes.mail import state as state_module
from sandboxes.mail.state import MAX_KEPT, MailState
from tests.support.sandboxes import (
    CONTROL_TOKEN,
    MailSandbox,
    SandboxAuth,
    free_port,
    killable_sandbox,
    running_mail_sandbox,
    sandbox_env,
)
from tests.support.waiting import eventually

SENDER = "noreply@liftfit.test"


@pytest.fixture(scope="module")
def mail(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MailSandbox]:
    with running_mail_sandbox(tmp_path_factory.mktemp("mail")) as sandbox:
        yield sandbox


@pytest.fixture
async def http(mail: MailSandbox) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the HTTP API of a freshly reset sandbox."""
    async with httpx.AsyncClient(base_url=mail.url, auth=SandboxAuth(), timeout=5) as client:
        (await client.post("/_sandbox/reset")).raise_for_status()
        yield client


# --- helpers ----------------------------------------------------------------------------


def recipient() -> str:
    return f"customer-{uuid.uuid4().hex[:10]}@example.test"


def access_mail(to: str, html: bool = True) -> EmailMessage:
    message = EmailMessage()
    message["From"] = f"LIFT & FIT <{SENDER}>"
    message["To"] = to
    message["Subject"] = "Váš PIN do studia"
    message["Message-ID"] = make_msgid(domain="liftfit.test")
    message["Date"] = "Tue, 01 Jan 2030 09:00:00 +0000"
    message.set_content("Váš PIN: 482913\n")
    if html:
        message.add_alternative("<p>Váš PIN: <b>482913</b></p>\n", subtype="html")
    return message


def _send(mail: MailSandbox, message: EmailMessage, timeout: float) -> None:
    with smtplib.SMTP(mail.smtp_host, mail.smtp_port, timeout=timeout) as smtp:
        smtp.send_message(message)


async def send(mail: MailSandbox, message: EmailMessage, patience: float = 5) -> None:
    await asyncio.to_thread(_send, mail, message, patience)


async def stored(http: httpx.AsyncClient, **filters: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = (await http.get("/messages", params=filters)).json()["data"]
    return messages


async def set_faults(http: httpx.AsyncClient, **faults: Any) -> dict[str, Any]:
    response = await http.post("/_sandbox/faults", json=faults)
    response.raise_for_status()
    current: dict[str, Any] = response.json()
    return current


def header_names(message: dict[str, Any]) -> list[str]:
    return [header["name"] for header in message["headers"]]


# --- storing and listing ----------------------------------------------------------------------


async def test_a_sent_message_is_listed_with_its_envelope_headers_and_both_parts(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    to = recipient()
    message = access_mail(to)

    await send(mail, message)

    [listed] = await stored(http)
    assert listed["id"].startswith("msg_")
    assert (listed["mail_from"], listed["rcpt_tos"]) == (SENDER, [to])
    assert listed["message_id"] == message["Message-ID"]
    assert listed["subject"] == "Váš PIN do studia"
    assert (listed["from"], listed["to"]) == (f"LIFT & FIT <{SENDER}>", to)
    assert listed["date"] == "Tue, 01 Jan 2030 09:00:00 +0000"
    assert {"Message-ID", "Subject", "From", "To", "Date", "MIME-Version"} <= set(
        header_names(listed)
    )
    assert listed["text"] == "Váš PIN: 482913\n"
    assert listed["html"] == "<p>Váš PIN: <b>482913</b></p>\n"
    assert listed["size"] > 0
    assert listed["received_at"].endswith("Z")
    assert listed["parse_error"] is None


async def test_messages_are_found_by_message_id_and_by_recipient_newest_first(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    anna, ben = recipient(), recipient()
    first, second, third = access_mail(anna), access_mail(ben), access_mail(anna)
    for message in (first, second, third):
        await send(mail, message)

    by_id = await stored(http, message_id=second["Message-ID"])
    to_anna = await stored(http, to=anna)
    both = await stored(http, to=anna, message_id=first["Message-ID"])
    nobody = await stored(http, to=anna.upper())

    assert [m["message_id"] for m in by_id] == [second["Message-ID"]]
    assert [m["message_id"] for m in to_anna] == [third["Message-ID"], first["Message-ID"]]
    assert [m["message_id"] for m in both] == [first["Message-ID"]]
    assert nobody == []  # filters are exact
    assert len(await stored(http)) == 3


async def test_one_message_is_read_by_its_id(mail: MailSandbox, http: httpx.AsyncClient) -> None:
    await send(mail, access_mail(recipient()))
    [listed] = await stored(http)

    one = await http.get(f"/messages/{listed['id']}")
    unknown = await http.get("/messages/msg_unknown")

    assert one.json() == listed
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "message_not_found"}


async def test_the_html_part_opens_in_a_browser_without_running_scripts(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    with_html, text_only = access_mail(recipient()), access_mail(recipient(), html=False)
    await send(mail, with_html)
    await send(mail, text_only)
    [html_id] = [m["id"] for m in await stored(http, message_id=with_html["Message-ID"])]
    [text_id] = [m["id"] for m in await stored(http, message_id=text_only["Message-ID"])]

    page = await http.get(f"/messages/{html_id}/html")
    none = await http.get(f"/messages/{text_id}/html")

    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.text == "<p>Váš PIN: <b>482913</b></p>\n"
    assert page.headers["content-security-policy"].startswith("sandbox;")
    assert none.status_code == 404
    assert none.json() == {"error": "no_html_part"}


async def test_the_raw_message_is_kept_as_it_was_sent(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    message = access_mail(recipient(), html=False)
    message.set_content(
        ".a line that SMTP dot-stuffs\n.\nand one that ends the data if unstuffed\n"
    )

    await send(mail, message)

    [listed] = await stored(http)
    raw = await http.get(f"/messages/{listed['id']}/raw")
    assert raw.headers["content-type"] == "message/rfc822"
    assert (
        message_from_bytes(raw.content, policy=policy.default)["Message-ID"]
        == (message["Message-ID"])
    )
    assert (
        listed["text"]
        == ".a line that SMTP dot-stuffs\n.\nand one that ends the data if unstuffed\n"
    )


async def test_an_undecodable_message_is_stored_and_shown_with_replacement_characters(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    raw = (
        b"Subject: \xff\xfe broken\r\n"
        b"Content-Type: text/plain; charset=no-such-charset\r\n"
        b"\r\n"
        b"body \xff\r\n"
    )

    def send_raw() -> None:
        with smtplib.SMTP(mail.smtp_host, mail.smtp_port, timeout=5) as smtp:
            smtp.sendmail(SENDER, [recipient()], raw)

    await asyncio.to_thread(send_raw)

    [listed] = await stored(http)
    assert listed["subject"] == "\ufffd\ufffd broken"
    assert listed["text"] == "body \ufffd\n"
    assert (await http.get(f"/messages/{listed['id']}/raw")).content == raw


# --- faults -------------------------------------------------------------------------------------


async def test_a_connection_dropped_after_the_data_leaves_the_client_unsure_yet_the_mail_stored(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    await set_faults(http, drop_after_data=1)
    dropped, after = access_mail(recipient()), access_mail(recipient())

    with pytest.raises(smtplib.SMTPServerDisconnected):
        await send(mail, dropped)
    await send(mail, after)

    # Stored before the connection was closed, so there by the time the client knows.
    messages = await stored(http)
    assert [m["message_id"] for m in messages] == [after["Message-ID"], dropped["Message-ID"]]
    assert (await http.get("/_sandbox/faults")).json()["drop_after_data"] == 0


async def lookup(http: httpx.AsyncClient, message_id: str) -> dict[str, Any]:
    answer = await http.get("/v1/lookup", params={"message_id": message_id})
    assert answer.status_code == 200
    return cast(dict[str, Any], answer.json())


async def test_a_connection_dropped_after_losing_the_data_leaves_the_client_unsure_and_nothing(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    await set_faults(http, lose_after_data=1)
    lost = access_mail(recipient())

    with pytest.raises(smtplib.SMTPServerDisconnected):
        await send(mail, lost)

    assert await stored(http) == []
    assert (await lookup(http, lost["Message-ID"]))["status"] == "not_received"
    assert (await http.get("/_sandbox/faults")).json()["lose_after_data"] == 0


async def test_the_lookup_tells_a_message_taken_from_one_never_received(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    taken = access_mail(recipient())
    await set_faults(http, drop_after_data=1)
    with pytest.raises(smtplib.SMTPServerDisconnected):
        await send(mail, taken)
    await send(mail, taken)

    found = await lookup(http, taken["Message-ID"])
    assert (found["status"], found["copies"]) == ("received", 2)
    missing = await lookup(http, make_msgid())
    assert (missing["status"], missing["copies"]) == ("not_received", 0)
    assert missing["records_since"].endswith("Z")


@pytest.mark.parametrize("query", [{}, {"message_id": ""}, {"message_id": "a b"}])
async def test_a_lookup_without_a_valid_message_id_is_refused(
    http: httpx.AsyncClient, query: dict[str, str]
) -> None:
    assert (await http.get("/v1/lookup", params=query)).status_code == 400


def test_the_lookup_cannot_tell_once_its_log_is_full() -> None:
    state = MailState()
    state.received = {f"<{n}@x>": 1 for n in range(100_000)}
    state.store("a@x", ["b@x"], b"Message-ID: <new@x>\r\n\r\nbody\r\n")
    assert state.lookup("<new@x>")["status"] == "cannot_tell"
    assert state.lookup("<1@x>")["status"] == "received"
    state.reset()
    assert state.lookup("<new@x>")["status"] == "not_received"


@pytest.mark.parametrize("code", [451, 550], ids=["temporary", "permanent"])
async def test_a_refusal_at_data_raises_its_code_and_stores_nothing(
    mail: MailSandbox, http: httpx.AsyncClient, code: int
) -> None:
    await set_faults(http, refuse_next=1, refuse_code=code, refuse_message="sandbox says no")
    refused, accepted = access_mail(recipient()), access_mail(recipient())

    with pytest.raises(smtplib.SMTPDataError) as error:
        await send(mail, refused)
    await send(mail, accepted)

    assert error.value.args == (code, b"sandbox says no")
    assert [m["message_id"] for m in await stored(http)] == [accepted["Message-ID"]]


async def test_a_refusal_has_a_standard_text_for_its_kind(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    await set_faults(http, refuse_next=2, refuse_code=451)

    with pytest.raises(smtplib.SMTPDataError) as temporary:
        await send(mail, access_mail(recipient()))
    await set_faults(http, refuse_code=554)
    with pytest.raises(smtplib.SMTPDataError) as permanent:
        await send(mail, access_mail(recipient()))

    # smtplib gives the reply's text as bytes, whatever its annotations say.
    assert cast(bytes, temporary.value.smtp_error).startswith(b"4.3.0 ")
    assert cast(bytes, permanent.value.smtp_error).startswith(b"5.7.1 ")


async def test_a_refusal_at_rcpt_refuses_every_recipient_of_one_message(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    await set_faults(http, refuse_next=1, refuse_code=550, refuse_at="rcpt")
    message = access_mail(recipient())
    del message["To"]
    message["To"] = "a@example.test, b@example.test"
    accepted = access_mail(recipient())

    with pytest.raises(smtplib.SMTPRecipientsRefused) as error:
        await send(mail, message)
    await send(mail, accepted)

    assert {code for code, _ in error.value.recipients.values()} == {550}
    assert set(error.value.recipients) == {"a@example.test", "b@example.test"}
    assert [m["message_id"] for m in await stored(http)] == [accepted["Message-ID"]]


async def test_a_slow_reply_times_out_an_impatient_client_after_the_mail_was_stored(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    await set_faults(http, slow_next=1, slow_ms=3000)
    message = access_mail(recipient())

    with pytest.raises(smtplib.SMTPServerDisconnected, match="timed out"):
        await send(mail, message, patience=0.5)

    assert [m["message_id"] for m in await stored(http)] == [message["Message-ID"]]


async def test_a_slow_reply_comes_after_slow_ms(mail: MailSandbox, http: httpx.AsyncClient) -> None:
    await set_faults(http, slow_next=1, slow_ms=600)

    started = time.monotonic()
    await send(mail, access_mail(recipient()))
    slow = time.monotonic() - started
    await send(mail, access_mail(recipient()))

    assert slow >= 0.6
    assert (await http.get("/_sandbox/faults")).json()["slow_next"] == 0
    assert len(await stored(http)) == 2


async def test_offline_refuses_new_connections_until_the_time_has_passed(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    faults = await set_faults(http, offline_for_ms=1500)
    message = access_mail(recipient())

    with pytest.raises(smtplib.SMTPServerDisconnected):
        await send(mail, message)
    assert 0 < faults["offline_for_ms"] <= 1500

    async def delivered() -> bool:
        try:
            await send(mail, message)
        except smtplib.SMTPServerDisconnected:
            return False
        return True

    await eventually(delivered, within=10)
    assert [m["message_id"] for m in await stored(http)] == [message["Message-ID"]]
    assert (await http.get("/_sandbox/faults")).json()["offline_for_ms"] == 0


@pytest.mark.parametrize(
    "authorization",
    [None, f"Bearer {CONTROL_TOKEN}x", f"Basic {CONTROL_TOKEN}"],
    ids=["missing", "wrong-token", "wrong-scheme"],
)
async def test_the_controls_answer_only_to_the_control_token_but_the_mails_to_anyone(
    mail: MailSandbox, http: httpx.AsyncClient, authorization: str | None
) -> None:
    kept = access_mail(recipient())
    await send(mail, kept)
    headers = {"Authorization": authorization} if authorization else {}
    async with httpx.AsyncClient(base_url=mail.url, headers=headers, timeout=5) as stranger:
        refused = [
            await stranger.post("/_sandbox/faults", json={"refuse_next": 1}),
            await stranger.get("/_sandbox/faults"),
            await stranger.delete("/_sandbox/faults"),
            await stranger.post("/_sandbox/reset"),
        ]
        listed = await stranger.get("/messages", params={"to": kept["To"]})
        looked_up = await stranger.get("/v1/lookup", params={"message_id": kept["Message-ID"]})
    assert [r.status_code for r in refused] == [401] * 4
    assert refused[0].json() == {"error": "unauthorized"}
    assert listed.status_code == 200 and len(listed.json()["data"]) == 1
    assert looked_up.json()["status"] == "received"
    # Nothing changed: the next mail is taken (no refusal was set) and the first is kept.
    second = access_mail(kept["To"])
    await send(mail, second)
    assert len(await stored(http, to=kept["To"])) == 2


async def test_with_the_control_token_the_fault_applies(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    await set_faults(http, refuse_next=1, refuse_code=550)

    with pytest.raises(smtplib.SMTPException):
        await send(mail, access_mail(recipient()))
    await send(mail, access_mail(recipient()))


async def test_the_health_probe_needs_no_token(mail: MailSandbox) -> None:
    async with httpx.AsyncClient(base_url=mail.url, timeout=5) as anyone:
        assert (await anyone.get("/healthz")).status_code == 200


async def test_faults_are_merged_and_cleared(http: httpx.AsyncClient) -> None:
    await set_faults(http, refuse_next=2, refuse_code=550)
    merged = await set_faults(http, slow_next=1, offline_for_ms=60_000)

    cleared = (await http.delete("/_sandbox/faults")).json()

    assert (merged["refuse_next"], merged["refuse_code"], merged["slow_next"]) == (2, 550, 1)
    assert merged["offline_for_ms"] > 0
    assert (cleared["refuse_next"], cleared["refuse_code"], cleared["offline_for_ms"]) == (
        0,
        451,
        0,
    )


@pytest.mark.parametrize(
    "patch",
    [
        {"refuse_message": "no\r\n250 OK"},
        {"refuse_message": "x" * 201},
        {"refuse_code": 250},
        {"refuse_code": "451"},
        {"refuse_at": "mail"},
        {"slow_ms": -1},
        {"drop_after_data": True},
        {"explode": 1},
    ],
    ids=["crlf", "long", "success-code", "string", "stage", "negative", "bool", "unknown"],
)
async def test_invalid_faults_are_refused(http: httpx.AsyncClient, patch: dict[str, Any]) -> None:
    response = await http.post("/_sandbox/faults", json=patch)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


async def test_reset_forgets_messages_and_faults(
    mail: MailSandbox, http: httpx.AsyncClient
) -> None:
    await send(mail, access_mail(recipient()))
    await set_faults(http, refuse_next=3, offline_for_ms=60_000)

    await http.post("/_sandbox/reset")

    assert await stored(http) == []
    faults = (await http.get("/_sandbox/faults")).json()
    assert (faults["refuse_next"], faults["offline_for_ms"]) == (0, 0)
    await send(mail, access_mail(recipient()))


def test_a_mail_is_read_when_first_asked_for_and_found_by_its_message_id_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[bytes] = []

    def counted(raw: bytes) -> parsing.MessageContent:
        reads.append(raw)
        return parsing.read_message(raw)

    monkeypatch.setattr(state_module, "read_message", counted)
    state = MailState()
    folded = b"Subject: folded\r\nMessage-ID:\r\n <folded@liftfit.test>\r\n\r\nbody\r\n"
    for raw in (bytes(access_mail(recipient())), folded):
        state.store(SENDER, ["a@example.test"], raw)

    [found] = state.find("<folded@liftfit.test>", None)
    assert state.lookup("<folded@liftfit.test>")["status"] == "received"
    assert reads == []  # stored, searched and looked up: no body read yet

    assert found.to_api()["message_id"] == found.content.header("Message-ID")
    assert found.to_api()["text"] == "body\n"
    assert reads == [folded]  # read once, when first shown


def test_only_the_newest_messages_are_kept() -> None:
    state = MailState()
    for number in range(MAX_KEPT + 1):
        state.store(SENDER, ["a@example.test"], f"Subject: {number}\r\n\r\n".encode())

    kept = state.find(None, None)

    assert len(kept) == MAX_KEPT
    assert kept[0].content.header("Subject") == str(MAX_KEPT)
    assert kept[-1].content.header("Subject") == "1"


# --- startup configuration ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"MAIL_SANDBOX_SMTP_PORT": "smtp"}, "MAIL_SANDBOX_SMTP_PORT"),
        ({"MAIL_SANDBOX_HTTP_PORT": "0"}, "MAIL_SANDBOX_HTTP_PORT"),
        (
            {"MAIL_SANDBOX_HTTP_PORT": "10025", "MAIL_SANDBOX_SMTP_PORT": "10025"},
            "MAIL_SANDBOX_HTTP_PORT",
        ),
        ({"MAIL_SANDBOX_HOST": "mail host"}, "MAIL_SANDBOX_HOST"),
        ({"MAIL_SANDBOX_CONTROL_TOKEN": ""}, "MAIL_SANDBOX_CONTROL_TOKEN"),
    ],
    ids=["smtp-port", "http-port", "same-port", "host", "control-token"],
)
def test_mail_sandbox_refuses_to_start_naming_the_bad_setting(
    overrides: dict[str, str], named: str
) -> None:
    ports = {"MAIL_SANDBOX_SMTP_PORT": str(free_port()), "MAIL_SANDBOX_HTTP_PORT": str(free_port())}
    result = subprocess.run(
        [sys.executable, "-m", "sandboxes.mail"],
        env=sandbox_env(**(ports | overrides)),
        capture_output=True,
        text=True,
        timeout=20,
    )

    assert result.returncode == 2
    assert named in result.stderr


# --- records across a restart -------------------------------------------------------------


async def test_a_killed_sandbox_comes_back_with_the_messages_it_accepted(tmp_path: Path) -> None:
    env = sandbox_env(MAIL_SANDBOX_STATE_DIR=str(tmp_path / "records"))
    ports = ["MAIL_SANDBOX_HTTP_PORT", "MAIL_SANDBOX_SMTP_PORT"]
    with killable_sandbox("mail", tmp_path, env, ports) as sandbox:
        url = f"http://127.0.0.1:{sandbox.ports['MAIL_SANDBOX_HTTP_PORT']}"
        mail = MailSandbox(url, "127.0.0.1", sandbox.ports["MAIL_SANDBOX_SMTP_PORT"])
        sandbox.start(f"{url}/healthz")
        async with httpx.AsyncClient(base_url=url, auth=SandboxAuth(), timeout=5) as http:
            sent = access_mail(recipient())
            await send(mail, sent)
            await send(mail, sent)  # a second copy, which the lookup counts
            before = await stored(http)
            since = (await lookup(http, sent["Message-ID"]))["records_since"]

            sandbox.kill()
            sandbox.start(f"{url}/healthz")

            assert await stored(http) == before
            found = await lookup(http, sent["Message-ID"])
            assert (found["status"], found["copies"]) == ("received", 2)
            assert found["records_since"] == since  # the log did not start again
            raw = await http.get(f"/messages/{before[0]['id']}/raw")
            assert (
                message_from_bytes(raw.content, policy=policy.default)["Message-ID"]
                == (sent["Message-ID"])
            )
