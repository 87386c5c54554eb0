"""The sandbox lock provider, tested as its clients see it: a real process over HTTP.

The provider runs as ``python -m sandboxes.lock_provider`` on a free port and is reset
before every test; each test names its codes with random aliases.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.sandboxes import (
    CONTROL_TOKEN,
    SandboxAuth,
    free_port,
    killable_sandbox,
    running_lock_provider,
    sandbox_env,
)
from tests.support.waiting import eventually

API_KEY = "seam_test_sandbox"
DOOR = "studio-a-door"
OTHER_DOOR = "studio-b-door"
MB = 1024 * 1024
T0 = datetime(2030, 1, 1, 10, 0, tzinfo=UTC)
LEFT_OUT = object()  # a field a test body does not send


@pytest.fixture(scope="module")
def provider_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log_dir = tmp_path_factory.mktemp("lock_provider")
    with running_lock_provider(log_dir, API_KEY, [DOOR, OTHER_DOOR]) as url:
        yield url


@pytest.fixture
async def api(provider_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """An authenticated client against a freshly reset provider."""
    auth = SandboxAuth(API_KEY)
    async with httpx.AsyncClient(base_url=provider_url, auth=auth, timeout=5) as client:
        (await client.post("/_sandbox/reset")).raise_for_status()
        yield client


@pytest.fixture(scope="module")
def blocking_api(provider_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=provider_url, auth=SandboxAuth(API_KEY), timeout=5) as client:
        client.post("/_sandbox/reset").raise_for_status()
        yield client


# --- helpers --------------------------------------------------------------------------


def alias() -> str:
    return f"booking-{uuid.uuid4().hex[:12]}"


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def code_body(name: str, **fields: Any) -> dict[str, Any]:
    body = {"device_id": DOOR, "name": name, "starts_at": iso(T0)}
    return body | {"ends_at": iso(T0 + timedelta(hours=1))} | fields


async def create(api: httpx.AsyncClient, name: str, **fields: Any) -> dict[str, Any]:
    response = await api.post("/access_codes/create", json=code_body(name, **fields))
    assert response.status_code == 201, response.text
    code: dict[str, Any] = response.json()["access_code"]
    return code


async def listed(api: httpx.AsyncClient, **filters: str) -> list[dict[str, Any]]:
    codes: list[dict[str, Any]] = (await api.post("/access_codes/list", json=filters)).json()[
        "access_codes"
    ]
    return codes


async def every_code(api: httpx.AsyncClient) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = (await api.get("/_sandbox/access_codes")).json()["data"]
    return rows


async def opens(
    api: httpx.AsyncClient, pin: str, at: datetime | None = None, device_id: str = DOOR
) -> bool:
    body: dict[str, Any] = {"device_id": device_id, "pin": pin}
    if at is not None:
        body["at"] = iso(at)
    answer = (await api.post("/_sandbox/door", json=body)).json()
    return bool(answer["opens"])


async def set_faults(api: httpx.AsyncClient, **faults: Any) -> None:
    (await api.post("/_sandbox/faults", json=faults)).raise_for_status()


async def status_of(api: httpx.AsyncClient, code_id: str) -> str:
    [row] = [row for row in await every_code(api) if row["access_code_id"] == code_id]
    status: str = row["status"]
    return status


INSIDE = T0 + timedelta(minutes=30)


# --- the provider API ---------------------------------------------------------------------


async def test_create_makes_a_set_six_digit_code_on_the_device(api: httpx.AsyncClient) -> None:
    name = alias()
    response = await api.post("/access_codes/create", json=code_body(name))

    assert response.status_code == 201
    code = response.json()["access_code"]
    assert code["access_code_id"]
    assert (code["device_id"], code["name"], code["status"]) == (DOOR, name, "set")
    assert len(code["code"]) == 6 and code["code"].isdigit()
    assert (code["starts_at"], code["ends_at"]) == ("2030-01-01T10:00:00Z", "2030-01-01T11:00:00Z")
    assert code["created_at"].endswith("Z")


async def test_times_with_an_offset_are_reported_in_utc(api: httpx.AsyncClient) -> None:
    code = await create(
        api, alias(), starts_at="2030-01-01T11:00:00+01:00", ends_at="2030-01-01T12:30:00.5+01:00"
    )

    assert (code["starts_at"], code["ends_at"]) == (
        "2030-01-01T10:00:00Z",
        "2030-01-01T11:30:00.500000Z",
    )


async def test_a_given_pin_is_used_and_a_pin_live_on_the_device_is_refused(
    api: httpx.AsyncClient,
) -> None:
    code = await create(api, alias(), code="4321")

    taken = await api.post("/access_codes/create", json=code_body(alias(), code="4321"))
    elsewhere = await create(api, alias(), code="4321", device_id=OTHER_DOOR)

    assert code["code"] == "4321"
    assert taken.status_code == 409
    assert taken.json() == {"error": "code_in_use"}
    assert elsewhere["code"] == "4321"


async def test_list_finds_codes_by_device_and_by_name(api: httpx.AsyncClient) -> None:
    wanted, other = alias(), alias()
    first = await create(api, wanted)
    second = await create(api, other)
    third = await create(api, wanted, device_id=OTHER_DOOR)

    by_name = await listed(api, name=wanted)
    on_door = await listed(api, device_id=DOOR)
    both = await listed(api, device_id=DOOR, name=wanted)
    everything = (await api.post("/access_codes/list")).json()["access_codes"]

    assert {c["access_code_id"] for c in by_name} == {
        first["access_code_id"],
        third["access_code_id"],
    }
    assert {c["access_code_id"] for c in on_door} == {
        first["access_code_id"],
        second["access_code_id"],
    }
    assert [c["access_code_id"] for c in both] == [first["access_code_id"]]
    assert len(everything) == 3


async def test_get_returns_the_code(api: httpx.AsyncClient) -> None:
    code = await create(api, alias())

    response = await api.post("/access_codes/get", json={"access_code_id": code["access_code_id"]})

    assert response.status_code == 200
    assert response.json() == {"access_code": code}


async def test_delete_removes_the_code_at_once_without_a_removing_delay(
    api: httpx.AsyncClient,
) -> None:
    code = await create(api, alias())
    ref = {"access_code_id": code["access_code_id"]}

    deleted = await api.post("/access_codes/delete", json=ref)
    got = await api.post("/access_codes/get", json=ref)
    again = await api.post("/access_codes/delete", json=ref)

    assert deleted.status_code == 200
    assert deleted.json()["access_code"]["status"] == "removed"
    assert got.status_code == 404
    assert got.json() == {"error": "access_code_not_found"}
    assert again.status_code == 404
    assert await listed(api) == []
    [row] = await every_code(api)
    history = [change["status"] for change in row["status_history"]]
    assert history == ["setting", "set", "removing", "removed"]


async def test_unknown_code_is_not_found(api: httpx.AsyncClient) -> None:
    ref = {"access_code_id": str(uuid.uuid4())}

    for call in ("get", "delete"):
        response = await api.post(f"/access_codes/{call}", json=ref)
        assert response.status_code == 404


# --- the door ---------------------------------------------------------------------------


async def test_a_pin_opens_the_door_only_inside_its_window(api: httpx.AsyncClient) -> None:
    pin = (await create(api, alias()))["code"]
    ends = T0 + timedelta(hours=1)
    just = timedelta(microseconds=1)

    assert not await opens(api, pin, T0 - just)
    assert await opens(api, pin, T0)
    assert await opens(api, pin, ends - just)
    assert not await opens(api, pin, ends)
    assert not await opens(api, pin, INSIDE, device_id=OTHER_DOOR)
    wrong = "000000" if pin != "000000" else "111111"
    assert not await opens(api, wrong, INSIDE)


async def test_the_door_answers_with_the_code_that_opened_it(api: httpx.AsyncClient) -> None:
    code = await create(api, alias())

    answer = await api.post(
        "/_sandbox/door", json={"device_id": DOOR, "pin": code["code"], "at": iso(INSIDE)}
    )
    refused = await api.post("/_sandbox/door", json={"device_id": DOOR, "pin": code["code"]})

    assert answer.json() == {"opens": True, "access_code_id": code["access_code_id"]}
    assert refused.json() == {"opens": False, "access_code_id": None}  # now is before 2030


async def test_every_try_at_the_door_is_in_the_door_log(api: httpx.AsyncClient) -> None:
    code = await create(api, alias())
    wrong = "000000" if code["code"] != "000000" else "111111"

    await opens(api, code["code"], INSIDE)
    await opens(api, wrong, INSIDE, device_id=OTHER_DOOR)
    log = (await api.get("/_sandbox/door_log")).json()["data"]

    assert [(e["device_id"], e["pin"], e["at"], e["opens"], e["access_code_id"]) for e in log] == [
        (DOOR, code["code"], iso(INSIDE), True, code["access_code_id"]),
        (OTHER_DOOR, wrong, iso(INSIDE), False, None),
    ]
    assert all(datetime.fromisoformat(e["wall"]) <= datetime.now(UTC) for e in log)


async def test_without_a_time_the_door_is_tried_now(api: httpx.AsyncClient) -> None:
    now = datetime.now(UTC)
    current = await create(
        api,
        alias(),
        starts_at=iso(now - timedelta(minutes=5)),
        ends_at=iso(now + timedelta(hours=1)),
    )

    assert await opens(api, current["code"])


async def test_a_removed_code_never_opens_the_door(api: httpx.AsyncClient) -> None:
    code = await create(api, alias())
    await api.post("/access_codes/delete", json={"access_code_id": code["access_code_id"]})

    assert not await opens(api, code["code"], INSIDE)
    assert not await opens(api, code["code"], T0)


async def test_a_code_being_removed_opens_until_the_removal_is_confirmed(
    api: httpx.AsyncClient,
) -> None:
    code = await create(api, alias())
    await set_faults(api, removing_delay_ms=700)

    deleted = await api.post(
        "/access_codes/delete", json={"access_code_id": code["access_code_id"]}
    )

    assert deleted.json()["access_code"]["status"] == "removing"
    assert [c["status"] for c in await listed(api)] == ["removing"]
    assert await opens(api, code["code"], INSIDE)

    async def removed() -> bool:
        return await status_of(api, code["access_code_id"]) == "removed"

    await eventually(removed, within=5)
    assert not await opens(api, code["code"], INSIDE)
    assert await listed(api) == []


async def test_a_code_being_set_does_not_open_until_it_is_set(api: httpx.AsyncClient) -> None:
    await set_faults(api, setting_delay_ms=700)

    code = await create(api, alias())

    assert code["status"] == "setting"
    assert not await opens(api, code["code"], INSIDE)

    async def set_at_last() -> bool:
        return await status_of(api, code["access_code_id"]) == "set"

    await eventually(set_at_last, within=5)
    assert await opens(api, code["code"], INSIDE)
    [row] = await every_code(api)
    assert [change["status"] for change in row["status_history"]] == ["setting", "set"]


async def test_a_code_deleted_while_being_set_is_never_set(api: httpx.AsyncClient) -> None:
    await set_faults(api, setting_delay_ms=60_000)
    code = await create(api, alias())

    await api.post("/access_codes/delete", json={"access_code_id": code["access_code_id"]})

    [row] = await every_code(api)
    assert [change["status"] for change in row["status_history"]] == [
        "setting",
        "removing",
        "removed",
    ]


# --- faults -------------------------------------------------------------------------------


async def test_a_timed_out_create_made_the_code_which_is_found_by_its_name(
    api: httpx.AsyncClient,
) -> None:
    name = alias()
    await set_faults(api, timeout_next_creates=1, hang_seconds=3)

    with pytest.raises(httpx.ReadTimeout):
        await api.post("/access_codes/create", json=code_body(name), timeout=0.5)
    [found] = await listed(api, device_id=DOOR, name=name)

    assert found["status"] == "set"
    assert await opens(api, found["code"], INSIDE)
    # The fault is used up: the next create answers at once.
    await create(api, alias())


async def test_a_timed_out_delete_removed_the_code(api: httpx.AsyncClient) -> None:
    code = await create(api, alias())
    ref = {"access_code_id": code["access_code_id"]}
    await set_faults(api, timeout_next_deletes=1, hang_seconds=3)

    with pytest.raises(httpx.ReadTimeout):
        await api.post("/access_codes/delete", json=ref, timeout=0.5)

    assert (await api.post("/access_codes/get", json=ref)).status_code == 404
    assert not await opens(api, code["code"], INSIDE)


async def test_a_duplicated_create_makes_two_codes_with_one_name(api: httpx.AsyncClient) -> None:
    name = alias()
    await set_faults(api, duplicate_next_creates=1)

    answered = await create(api, name)
    twins = await listed(api, name=name)
    single = await create(api, alias())

    assert len(twins) == 2
    assert answered["access_code_id"] in {c["access_code_id"] for c in twins}
    assert len({c["access_code_id"] for c in twins}) == 2
    assert len({c["code"] for c in twins}) == 2
    assert [c["status"] for c in twins] == ["set", "set"]
    for twin in twins:
        assert await opens(api, twin["code"], INSIDE)
    assert len(await listed(api, name=single["name"])) == 1


async def test_fail_next_calls_answers_503_and_does_nothing(
    api: httpx.AsyncClient, provider_url: str
) -> None:
    await set_faults(api, fail_next_calls=2)
    name = alias()

    async with httpx.AsyncClient(base_url=provider_url) as stranger:
        unauthenticated = await stranger.post("/access_codes/create", json=code_body(name))
    outages = [
        await api.post("/access_codes/create", json=code_body(name)),
        await api.post("/access_codes/list", json={}),
    ]
    recovered = await api.post("/access_codes/create", json=code_body(name))

    assert unauthenticated.status_code == 401  # does not use the fault up
    assert [r.status_code for r in outages] == [503, 503]
    assert outages[0].json() == {"error": "service_unavailable"}
    assert recovered.status_code == 201
    assert len(await every_code(api)) == 1


async def test_faults_are_shown_merged_and_cleared(api: httpx.AsyncClient) -> None:
    await set_faults(api, fail_next_calls=3)
    await set_faults(api, setting_delay_ms=100)

    merged = (await api.get("/_sandbox/faults")).json()
    cleared = (await api.delete("/_sandbox/faults")).json()

    assert (merged["fail_next_calls"], merged["setting_delay_ms"]) == (3, 100)
    assert merged["hang_seconds"] == 30
    assert (cleared["fail_next_calls"], cleared["setting_delay_ms"]) == (0, 0)


@pytest.mark.parametrize(
    "patch",
    [{"fail_next_calls": -1}, {"fail_next_calls": "1"}, {"explode": True}, {"hang_seconds": 1e9}],
    ids=["negative", "string", "unknown", "too-long-hang"],
)
async def test_invalid_faults_are_refused(api: httpx.AsyncClient, patch: dict[str, Any]) -> None:
    response = await api.post("/_sandbox/faults", json=patch)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


# --- authentication and validation ----------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [None, f"Bearer {API_KEY}x", f"Basic {API_KEY}", "Bearer"],
    ids=["missing", "wrong-token", "wrong-scheme", "no-token"],
)
async def test_calls_without_the_api_key_are_unauthorized(
    api: httpx.AsyncClient, provider_url: str, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}

    async with httpx.AsyncClient(base_url=provider_url, headers=headers) as stranger:
        created = await stranger.post("/access_codes/create", json=code_body(alias()))
        listing = await stranger.post("/access_codes/list", json={})

    assert (created.status_code, listing.status_code) == (401, 401)
    assert created.json() == {"error": "unauthorized"}
    assert created.headers["www-authenticate"] == "Bearer"
    assert await every_code(api) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": LEFT_OUT}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": "x" * 10_000}, "name"),
        ({"name": "booking\x00"}, "name"),
        ({"name": 42}, "name"),
        ({"device_id": 7}, "device_id"),
        ({"device_id": "door\x00"}, "device_id"),
        ({"device_id": "d" * 50_000}, "device_id"),
        ({"starts_at": "2030-01-01T10:00:00"}, "starts_at"),
        ({"starts_at": "2030-01-01"}, "starts_at"),
        ({"starts_at": 1893492000}, "starts_at"),
        ({"starts_at": "2030-02-30T10:00:00Z"}, "starts_at"),
        ({"starts_at": "0001-01-01T00:00:00+01:00"}, "starts_at"),
        ({"ends_at": "2030-01-01T10:00:00Z"}, None),
        ({"code": "12ab"}, "code"),
        ({"code": 1234}, "code"),
        ({"code": "123"}, "code"),
        ({"pin_type": "permanent"}, "pin_type"),
    ],
    ids=[
        "no-name",
        "empty-name",
        "name-201",
        "name-10000",
        "name-nul",
        "name-number",
        "device-number",
        "device-nul",
        "device-50000",
        "time-without-offset",
        "date-only",
        "unix-time",
        "no-such-day",
        "before-year-1-in-utc",
        "empty-window",
        "code-letters",
        "code-number",
        "code-short",
        "unknown-field",
    ],
)
async def test_invalid_create_bodies_are_refused_with_details(
    api: httpx.AsyncClient, body: dict[str, Any], field: str | None
) -> None:
    sent = {
        key: value for key, value in (code_body(alias()) | body).items() if value is not LEFT_OUT
    }

    response = await api.post("/access_codes/create", json=sent)

    assert response.status_code == 400
    refusal = response.json()
    assert refusal["error"] == "invalid_request"
    locations = [error["loc"] for error in refusal["detail"]]
    assert (["body", field] if field else ["body"]) in locations
    assert all(len(error["msg"]) < 200 for error in refusal["detail"])
    assert await every_code(api) == []


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1, 2]",
        b'{"device_id": "studio-a-door", "name": "\\ud800", "starts_at": "2030-01-01T10:00:00Z"}',
        b'{"\\ud800": 1}',
        b"[" * 50_000,
        b'{"name": "\xff\xfe"}',
    ],
    ids=["not-json", "array", "lone-surrogate", "surrogate-field", "deep-nesting", "not-utf8"],
)
async def test_malformed_bodies_are_refused_not_failed(api: httpx.AsyncClient, raw: bytes) -> None:
    response = await api.post(
        "/access_codes/create", content=raw, headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


async def test_an_unknown_device_is_not_found(api: httpx.AsyncClient) -> None:
    body = code_body(alias(), device_id="no-such-door")

    created = await api.post("/access_codes/create", json=body)
    listing = await api.post("/access_codes/list", json={"device_id": "no-such-door"})
    door = await api.post("/_sandbox/door", json={"device_id": "no-such-door", "pin": "1234"})

    assert [r.status_code for r in (created, listing, door)] == [404, 404, 404]
    assert created.json() == {"error": "device_not_found"}


async def _status_without_sending_the_body(url: str, length: int) -> bytes:
    """Sends only the request head, announcing a body that never comes; the status line."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        head = [
            f"POST {parts.path} HTTP/1.1",
            f"Host: {parts.netloc}",
            f"Authorization: Bearer {API_KEY}",
            "Content-Type: application/json",
            f"Content-Length: {length}",
        ]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        await writer.drain()
        # A provider that waited for the body would still be waiting when this gives up.
        answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
        return answer.split(b"\r\n", 1)[0]
    finally:
        writer.close()


async def _curl(url: str, body: Path, *headers: str) -> int:
    """POSTs the file's bytes as they are read; returns the HTTP status."""
    args = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30"]
    for header in ("Content-Type: application/json", "Expect:", *headers):
        args += ["-H", header]
    process = await asyncio.create_subprocess_exec(
        *args, "--data-binary", f"@{body}", url, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    return int(out or b"0")


async def test_a_ten_megabyte_body_is_refused_quickly_with_413(
    api: httpx.AsyncClient, provider_url: str, tmp_path: Path
) -> None:
    url = f"{provider_url}/access_codes/create"
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * (10 * MB))

    announced = await _status_without_sending_the_body(url, 10 * MB)
    started = time.monotonic()
    declared = await _curl(url, big, f"Authorization: Bearer {API_KEY}")
    streamed = await _curl(
        url, big, f"Authorization: Bearer {API_KEY}", "Transfer-Encoding: chunked"
    )
    elapsed = time.monotonic() - started

    assert announced == b"HTTP/1.1 413 Request Entity Too Large"
    assert (declared, streamed) == (413, 413)
    assert elapsed < 5
    assert await every_code(api) == []


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    path=st.sampled_from(
        [
            "/access_codes/create",
            "/access_codes/list",
            "/access_codes/get",
            "/access_codes/delete",
            "/_sandbox/door",
            "/_sandbox/devices",
        ]
    ),
    body=st.dictionaries(
        st.sampled_from(
            ["device_id", "name", "starts_at", "ends_at", "code", "access_code_id", "pin", "at"]
        )
        | st.text(max_size=20),
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=300)
        | st.sampled_from([DOOR, "2030-01-01T10:00:00Z", "9999-12-31T23:59:59-01:00", "1234"])
        | st.lists(st.integers(), max_size=3),
        max_size=6,
    ),
)
def test_no_body_gets_a_server_error(
    blocking_api: httpx.Client, path: str, body: dict[str, Any]
) -> None:
    response = blocking_api.post(path, json=body)

    assert response.status_code < 500, response.text
    assert "error" in response.json() or response.status_code in (200, 201)


# --- the sandbox's own controls -----------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [None, f"Bearer {API_KEY}", f"Bearer {CONTROL_TOKEN}x"],
    ids=["missing", "the-api-key", "wrong-token"],
)
async def test_the_controls_answer_only_to_the_control_token_but_the_door_to_anyone(
    api: httpx.AsyncClient, provider_url: str, authorization: str | None
) -> None:
    now = datetime.now(UTC)
    code = await create(api, alias(), starts_at=iso(now), ends_at=iso(now + timedelta(hours=1)))
    headers = {"Authorization": authorization} if authorization else {}
    async with httpx.AsyncClient(base_url=provider_url, headers=headers, timeout=5) as stranger:
        refused = [
            await stranger.post("/_sandbox/faults", json={"fail_next_calls": 1}),
            await stranger.post("/_sandbox/clock", json={"offset_seconds": 7200}),
            await stranger.get("/_sandbox/access_codes"),
            await stranger.get("/_sandbox/door_log"),
            await stranger.post("/_sandbox/devices", json={"device_id": "strangers-door"}),
            await stranger.post("/_sandbox/reset"),
        ]
        door = await stranger.post("/_sandbox/door", json={"device_id": DOOR, "pin": code["code"]})
    assert [r.status_code for r in refused] == [401] * 6
    assert refused[0].json() == {"error": "unauthorized"}
    assert door.json()["opens"] is True  # the door is the keypad at the studio: anyone tries it
    # Nothing changed: the next call is served, the clock did not move, the code is there.
    assert (await api.post("/access_codes/list", json={})).status_code == 200
    assert (await api.get("/_sandbox/clock")).json()["offset_seconds"] == 0
    assert [c["access_code_id"] for c in await every_code(api)] == [code["access_code_id"]]


async def test_with_the_control_token_the_fault_applies(api: httpx.AsyncClient) -> None:
    await set_faults(api, fail_next_calls=1)

    assert (await api.post("/access_codes/list", json={})).status_code == 503
    assert (await api.post("/access_codes/list", json={})).status_code == 200


def test_the_health_probe_needs_no_token(provider_url: str) -> None:
    assert httpx.get(f"{provider_url}/healthz").status_code == 200


async def test_an_added_device_takes_codes(api: httpx.AsyncClient) -> None:
    device = f"door-{uuid.uuid4().hex[:8]}"

    added = await api.post("/_sandbox/devices", json={"device_id": device})
    again = await api.post("/_sandbox/devices", json={"device_id": device})
    code = await create(api, alias(), device_id=device)

    assert (added.status_code, again.status_code) == (201, 200)
    assert device in (await api.get("/_sandbox/devices")).json()["devices"]
    assert await opens(api, code["code"], INSIDE, device_id=device)


async def test_reset_forgets_codes_and_faults_but_keeps_devices(api: httpx.AsyncClient) -> None:
    device = f"door-{uuid.uuid4().hex[:8]}"
    await api.post("/_sandbox/devices", json={"device_id": device})
    await create(api, alias(), device_id=device)
    await set_faults(api, fail_next_calls=5)

    await opens(api, "1234", INSIDE, device_id=device)

    await api.post("/_sandbox/reset")

    assert await every_code(api) == []
    assert (await api.get("/_sandbox/door_log")).json()["data"] == []
    assert (await api.get("/_sandbox/faults")).json()["fail_next_calls"] == 0
    assert device in (await api.get("/_sandbox/devices")).json()["devices"]


async def test_the_clock_offset_moves_the_doors_now(api: httpx.AsyncClient) -> None:
    now = datetime.now(UTC)
    code = await create(api, alias(), starts_at=iso(now), ends_at=iso(now + timedelta(hours=1)))
    assert await opens(api, code["code"])

    clock = (await api.post("/_sandbox/clock", json={"offset_seconds": 7200})).json()

    assert clock["offset_seconds"] == 7200
    assert datetime.fromisoformat(clock["now"]) > now + timedelta(hours=1)
    assert not await opens(api, code["code"])


# --- startup configuration ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"LOCK_PROVIDER_API_KEY": ""}, "LOCK_PROVIDER_API_KEY"),
        ({"LOCK_PROVIDER_CONTROL_TOKEN": " "}, "LOCK_PROVIDER_CONTROL_TOKEN"),
        ({"LOCK_PROVIDER_DEVICES": " , "}, "LOCK_PROVIDER_DEVICES"),
        ({"LOCK_PROVIDER_DEVICES": "door one"}, "LOCK_PROVIDER_DEVICES"),
        ({"LOCK_PROVIDER_PORT": "http"}, "LOCK_PROVIDER_PORT"),
        ({"LOCK_PROVIDER_PORT": "70000"}, "LOCK_PROVIDER_PORT"),
        ({"LOCK_PROVIDER_HOST": "local host"}, "LOCK_PROVIDER_HOST"),
    ],
    ids=["api-key", "control-token", "no-devices", "bad-device", "port-word", "port-range", "host"],
)
def test_provider_refuses_to_start_naming_the_bad_setting(
    overrides: dict[str, str], named: str
) -> None:
    settings = {
        "LOCK_PROVIDER_API_KEY": API_KEY,
        "LOCK_PROVIDER_DEVICES": DOOR,
        "LOCK_PROVIDER_PORT": str(free_port()),
    }
    result = subprocess.run(
        [sys.executable, "-m", "sandboxes.lock_provider"],
        env=sandbox_env(**(settings | overrides)),
        capture_output=True,
        text=True,
        timeout=20,
    )

    assert result.returncode == 2
    assert named in result.stderr


# --- records across a restart -------------------------------------------------------------


async def test_a_killed_provider_comes_back_with_its_devices_codes_and_door_log(
    tmp_path: Path,
) -> None:
    env = sandbox_env(
        LOCK_PROVIDER_API_KEY=API_KEY,
        LOCK_PROVIDER_DEVICES=DOOR,
        LOCK_PROVIDER_STATE_DIR=str(tmp_path / "records"),
    )
    with killable_sandbox("lock_provider", tmp_path, env, ["LOCK_PROVIDER_PORT"]) as provider:
        url = f"http://127.0.0.1:{provider.ports['LOCK_PROVIDER_PORT']}"
        provider.start(f"{url}/healthz")
        async with httpx.AsyncClient(base_url=url, auth=SandboxAuth(API_KEY), timeout=5) as api:
            added = await api.post("/_sandbox/devices", json={"device_id": OTHER_DOOR})
            assert added.status_code == 201
            kept = await create(api, alias(), device_id=OTHER_DOOR)
            revoked = await create(api, alias())
            await api.post(
                "/access_codes/delete", json={"access_code_id": revoked["access_code_id"]}
            )
            assert await opens(api, kept["code"], INSIDE, device_id=OTHER_DOOR)
            before = await every_code(api)

            provider.kill()
            provider.start(f"{url}/healthz")

            devices = (await api.get("/_sandbox/devices")).json()["devices"]
            assert devices == sorted([DOOR, OTHER_DOOR])
            assert await every_code(api) == before
            [tried] = (await api.get("/_sandbox/door_log")).json()["data"]
            assert (tried["pin"], tried["access_code_id"]) == (kept["code"], kept["access_code_id"])
            assert await opens(api, kept["code"], INSIDE, device_id=OTHER_DOOR)
            assert not await opens(api, revoked["code"], INSIDE)
            again = code_body(alias(), device_id=OTHER_DOOR, code=kept["code"])
            in_use = await api.post("/access_codes/create", json=again)
            assert in_use.json()["error"] == "code_in_use"
