"""The pure parts of make bench-gateway's open-loop loads: the schedule, latencies counted
from the due time, the driver not waiting for answers, what the gateway
adds, and the lean HTTP client against a local server. No platform; no figures asserted."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.gateway_open import LOADS, HttpClient, open_summary
from benchmarks.open_loop import Answer, OpenLoopRun, open_loop, schedule


def test_the_schedule_is_one_request_every_one_over_the_rate_seconds() -> None:
    assert schedule(20.0, 1.0) == pytest.approx([i * 0.05 for i in range(20)])
    assert schedule(2.0, 1.6) == [0.0, 0.5, 1.0, 1.5]
    assert len(schedule(20.0, 20.0)) == 400
    assert schedule(0.0, 10.0) == []
    assert schedule(20.0, 0.0) == []


def test_latency_counts_from_the_due_time_not_from_the_late_send() -> None:
    answer = Answer(due=10.0, sent=10.030, answered=10.050, ok=True)
    assert answer.latency_ms == pytest.approx(50.0)


def test_a_run_leaves_failed_answers_out_of_its_latencies_and_says_how_late_it_sent() -> None:
    run = OpenLoopRun(
        20.0,
        [
            Answer(0.0, 0.001, 0.004, True),
            Answer(0.05, 0.08, 0.09, True),
            Answer(0.10, 0.10, 0.50, False),
        ],
    )
    assert run.latencies_ms == pytest.approx([4.0, 40.0])
    assert run.failed == 1
    assert run.p50_ms == pytest.approx(4.0)
    assert run.p99_ms == pytest.approx(40.0)
    assert run.latest_send_ms == pytest.approx(30.0)
    assert OpenLoopRun(20.0, run.answers, driver_cpu_s=0.006).driver_cpu_ms == pytest.approx(2.0)


async def test_the_driver_sends_each_request_at_its_time_without_waiting_for_earlier_ones() -> None:
    # The first request is answered only once the fourth has been sent: a closed loop
    # would never send the fourth, and the stall counts in the first one's latency.
    fourth_sent = asyncio.Event()
    sent: list[int] = []

    async def send(number: int) -> bool:
        sent.append(number)
        if number == 3:
            fourth_sent.set()
        if number == 0:
            await fourth_sent.wait()
        return True

    run = await asyncio.wait_for(open_loop(send, rate=100.0, seconds=0.05), timeout=5)
    assert sorted(sent) == [0, 1, 2, 3, 4]
    assert [answer.ok for answer in run.answers] == [True] * 5
    assert run.answers[0].latency_ms >= 29.9  # the fourth was due 30 ms after the first
    assert [a.due - run.answers[0].due for a in run.answers] == pytest.approx(
        [0.0, 0.01, 0.02, 0.03, 0.04]
    )


async def test_a_request_that_raises_is_a_failed_answer_not_the_end_of_the_run() -> None:
    async def send(number: int) -> bool:
        if number == 1:
            raise ConnectionError("refused")
        return number != 2

    run = await open_loop(send, rate=200.0, seconds=0.02)
    assert [answer.ok for answer in run.answers] == [True, False, False, True]
    assert run.failed == 2


def _run(latency_ms: float) -> OpenLoopRun:
    return OpenLoopRun(20.0, [Answer(0.0, 0.0, latency_ms / 1000, True)])


def test_what_the_gateway_adds_is_its_median_over_the_rounds_less_the_direct_calls() -> None:
    rounds = [
        {
            "gateway_get": _run(g),
            "floor_get": _run(f),
            "direct_get": _run(d),
            "gateway_post": _run(p),
            "floor_post": _run(fp),
            "direct_post": _run(dp),
        }
        for g, f, d, p, fp, dp in [
            (9.0, 4.0, 3.0, 20.0, 16.0, 15.0),
            (5.0, 2.5, 2.0, 12.0, 12.0, 10.0),
            (6.0, 5.0, 4.0, 30.0, 13.0, 11.0),
        ]
    ]
    assert set(rounds[0]) == set(LOADS)
    figures = open_summary(rounds, 20.0)
    assert figures["gateway_get_p50_ms_at_20rps"] == 6.0
    assert figures["direct_get_p50_ms_at_20rps"] == 3.0
    assert figures["get_added_p50_ms_at_20rps"] == 3.0
    assert figures["get_added_p99_ms_at_20rps"] == 3.0
    assert figures["post_added_p50_ms_at_20rps"] == 9.0
    assert figures["get_floor_added_p50_ms_at_20rps"] == 1.0
    assert figures["post_floor_added_p50_ms_at_20rps"] == 2.0
    assert figures["gateway_post_not_ok_at_20rps"] == 0


async def test_the_http_client_keeps_its_connection_and_reads_each_answer_to_its_end() -> None:
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = [
                int(line.split(b":")[1])
                for line in head.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            ]
            body = await reader.readexactly(length[0]) if length else b""
            status = b"201 Created" if body else b"200 OK"
            answer = b'{"answer": "' + body.replace(b'"', b"") + b'"}'
            writer.write(
                b"HTTP/1.1 "
                + status
                + b"\r\nContent-Length: "
                + str(len(answer)).encode()
                + b"\r\n\r\n"
                + answer
            )
            await writer.drain()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = HttpClient("127.0.0.1", port, connections=1)
    await client.open()
    try:
        assert await client.request("GET", "/a", []) == 200
        assert await client.request("POST", "/b", [("Idempotency-Key", "k")], b'{"x": 1}') == 201
        assert await client.request("GET", "/c", []) == 200
        assert connections == 1
    finally:
        await client.close()
        server.close()
