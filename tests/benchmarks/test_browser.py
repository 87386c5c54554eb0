"""The customers' connections (benchmarks/browser.py) against a local HTTP server: httpx's
API as the customers use it, over aiohttp. No platform; no figures asserted."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from benchmarks.browser import AiohttpTransport

Reply = Callable[[bytes], Awaitable[bytes | None]]  # the request's bytes -> the answer's


async def _serve(reply: Reply) -> tuple[asyncio.Server, str, list[bytes]]:
    """A server reading one request at a time (head and Content-Length body); `reply`
    None closes the connection without an answer."""
    seen: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                request = head + await reader.readexactly(length)
                seen.append(request)
                answer = await reply(request)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}", seen


def _answer(status: str, body: bytes, *extra: bytes) -> bytes:
    head = [f"HTTP/1.1 {status}".encode(), b"Content-Length: %d" % len(body), *extra]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


@pytest.fixture
async def json_server() -> AsyncIterator[tuple[str, list[bytes]]]:
    async def reply(request: bytes) -> bytes:
        if request.startswith(b"POST /checkout/"):
            return _answer("303 See Other", b"", b"Location: /done")
        body = json.dumps({"state": "confirmed", "path": request.split(b" ")[1].decode()})
        return _answer("200 OK", body.encode(), b"Content-Type: application/json")

    server, url, seen = await _serve(reply)
    async with server:
        yield url, seen


async def test_answers_come_back_as_httpx_responses_over_one_kept_connection(
    json_server: tuple[str, list[bytes]],
) -> None:
    url, seen = json_server
    hooked: list[str] = []

    async def count(request: httpx.Request) -> None:
        hooked.append(request.url.path)

    async with httpx.AsyncClient(
        base_url=url, transport=AiohttpTransport(), event_hooks={"request": [count]}
    ) as client:
        first = await client.get("/v1/bookings/b1", headers={"X-Dev-User": "ana"})
        second = await client.get("/v1/bookings/b2", params={"message_id": "<m@x>"})

    assert first.status_code == 200
    assert first.json() == {"state": "confirmed", "path": "/v1/bookings/b1"}
    assert first.headers["content-type"] == "application/json"
    assert second.json()["path"] == "/v1/bookings/b2?message_id=%3Cm%40x%3E"
    assert hooked == ["/v1/bookings/b1", "/v1/bookings/b2"]
    assert b"x-dev-user: ana" in seen[0].lower()
    assert b"accept-encoding" not in seen[0].lower()  # answers come uncompressed
    assert len(seen) == 2


async def test_a_form_is_posted_as_httpx_encodes_it_and_a_redirect_is_not_followed(
    json_server: tuple[str, list[bytes]],
) -> None:
    url, seen = json_server
    async with httpx.AsyncClient(base_url=url, transport=AiohttpTransport()) as client:
        paid = await client.post("/checkout/pay_1", data={"outcome": "succeed"})
    assert paid.status_code == 303
    assert paid.headers["location"] == "/done"
    assert seen[0].endswith(b"\r\n\r\noutcome=succeed")
    assert b"content-type: application/x-www-form-urlencoded" in seen[0].lower()
    assert len(seen) == 1


async def test_no_answer_to_a_post_is_an_httpx_transport_error_and_the_next_is_answered() -> None:
    # A POST is sent once; aiohttp sends a GET once more when its kept connection closes
    # before an answer, as browsers do.
    answered = 0

    async def reply(_request: bytes) -> bytes | None:
        nonlocal answered
        answered += 1
        return None if answered == 1 else _answer("200 OK", b"{}")

    server, url, _ = await _serve(reply)
    async with server, httpx.AsyncClient(base_url=url, transport=AiohttpTransport()) as client:
        with pytest.raises(httpx.TransportError):
            await client.post("/v1/lost", json={"slot_id": "s1"})
        assert (await client.get("/v1/again")).status_code == 200
    assert answered == 2


async def test_a_late_answer_is_an_httpx_timeout() -> None:
    async def reply(_request: bytes) -> bytes:
        await asyncio.sleep(5)
        return _answer("200 OK", b"{}")

    server, url, _ = await _serve(reply)
    async with (
        server,
        httpx.AsyncClient(base_url=url, transport=AiohttpTransport(), timeout=0.2) as client,
    ):
        with pytest.raises(httpx.TimeoutException):
            await client.get("/v1/slow")
