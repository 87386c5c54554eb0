"""The log lines of a whole journey, on the platform as `make up` starts it: a member books
by card, pays on the sandbox, is confirmed, sees the PIN and gets the mails. Then every line
that booking, payment, access, notify and the gateway wrote is one JSON object; each of them
wrote lines in the booking's trace; and no line holds the PIN, a secret of the platform's
settings (as the processes got them) or the customer's address."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.gateway.api import Api, Org
from tests.observability.journey import booked_paid_and_active
from tests.support.platform import REPO, Platform
from tests.support.waiting import eventually

WAIT_S = 60
PROCESSES = ("booking", "payment", "access", "notify", "gateway")
FIELDS = ("time", "level", "service", "logger", "message")


@pytest.fixture
async def api(platform: Platform) -> AsyncIterator[Api]:
    async with Api.at(platform.gateway) as client:
        yield client


async def _journey(api: Api, platform: Platform, email: str) -> tuple[dict[str, Any], str]:
    """A booking paid, confirmed and active, its PIN disclosed, its mails sent."""
    studio = await api.studio(1)
    org = await api.org(f"logs-{uuid.uuid4().hex[:6]}", email=email)
    confirmed = await booked_paid_and_active(api, org, studio.slot(0))
    booking_id = confirmed["booking_id"]
    return confirmed, await _pin_and_mails(api, platform, org, booking_id, email)


async def _pin_and_mails(
    api: Api, platform: Platform, org: Org, booking_id: str, email: str
) -> str:
    access = await api.call("GET", f"/v1/orgs/{org.org_id}/bookings/{booking_id}/access", org.owner)
    assert access.status_code == 200, access.text
    pin: str = access.json()["pin"]
    assert pin and pin.isdigit()
    async with httpx.AsyncClient(base_url=platform.url("MAIL_SANDBOX_HTTP_PORT")) as mail:

        async def access_mail() -> bool:
            found = (await mail.get("/messages", params={"to": email})).json()["data"]
            return any(pin in json.dumps(m) for m in found)  # the access mail, with the PIN

        await eventually(access_mail, WAIT_S)
    return pin


def _lines(platform: Platform, name: str) -> list[str]:
    path: Path = platform.state / "log" / f"{name}.log"
    return path.read_text(errors="replace").splitlines()


def _settings(platform: Platform) -> dict[str, str]:
    """The settings the processes got: platform.env's, where the environment has none."""
    settings: dict[str, str] = {}
    for line in (REPO / "deploy/local/platform.env").read_text().splitlines():
        name, equals, value = line.partition("=")
        if equals and not name.startswith("#"):
            settings[name.strip()] = value
    return settings | {k: v for k, v in platform.env.items() if k in settings}


def _secret_values(settings: dict[str, str]) -> set[str]:
    """Webhook secrets, API keys, idempotency secrets, PIN keys, database passwords."""
    found: set[str] = set()
    for name, value in settings.items():
        if re.search(r"SECRET|API_KEY|PIN_KEYS|PASSWORD|TOKEN", name):
            for item in value.split(","):
                found |= {item, item.partition(":")[2]}
        elif name.endswith("DATABASE_URL"):
            url = urlsplit(value)
            if url.password:
                # In a URL's form always; bare unless it is the role's name as well (the
                # local roles' passwords are their names, which a line may name).
                found.add(f":{url.password}@")
                if url.password != url.username:
                    found.add(url.password)
    return {value for value in found if len(value) >= 6}


async def test_a_journeys_log_lines_are_json_carry_its_trace_and_hold_no_pin_secret_or_address(
    api: Api, platform: Platform
) -> None:
    email = f"logs-{uuid.uuid4().hex[:8]}@example.test"
    confirmed, pin = await _journey(api, platform, email)
    trace_id, booking_id = confirmed["trace_id"], confirmed["booking_id"]
    assert trace_id

    def in_trace(name: str) -> list[dict[str, Any]]:
        parsed = [json.loads(line) for line in _lines(platform, name) if line.startswith("{")]
        return [line for line in parsed if line.get("trace_id") == trace_id]

    async def every_process_logged_in_the_trace() -> bool:
        return all(in_trace(name) for name in PROCESSES)

    await eventually(every_process_logged_in_the_trace, WAIT_S)

    secrets = _secret_values(_settings(platform))
    assert secrets, "no secret found in the settings: the search would prove nothing"
    whole_pin = re.compile(rf"(?<![0-9A-Za-z]){pin}(?![0-9A-Za-z])")
    for name in PROCESSES:
        lines = _lines(platform, name)
        assert lines, f"{name} wrote no log line"
        for text in lines:
            line = json.loads(text)  # every line is one JSON object
            assert isinstance(line, dict) and all(line.get(f) for f in FIELDS), text
            assert line["service"] == name, text
            assert not whole_pin.search(text), f"{name} logged the PIN: {text}"
            assert email not in text, f"{name} logged the customer's address: {text}"
            leaked = [secret for secret in secrets if secret in text]
            assert not leaked, f"{name} logged a secret setting's value: {text}"
        traced = in_trace(name)
        assert all(re.fullmatch(r"[0-9a-f]{16}", line["span_id"]) for line in traced), traced
        if name != "gateway":  # its lines are one a request, about the path
            assert any(line.get("booking_id") == booking_id for line in traced), traced
    # The card gateway's jobs are the payment's: their lines name it.
    payment_id = confirmed["payment"]["payment_id"]
    assert any(line.get("payment_id") == payment_id for line in in_trace("payment"))
