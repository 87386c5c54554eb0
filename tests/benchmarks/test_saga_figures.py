"""The pure logic of make bench-saga: its statistics, its loops' scheduling, the audit's
matching of sagas to the lock's codes, and the JSON line. No platform, no timing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from benchmarks import customers as loops
from benchmarks.customers import (
    Customer,
    Pace,
    Saga,
    Sandboxes,
    Slot,
    SlotSupply,
    Verdict,
    arrivals,
    audit,
    codes_by_window,
    set_at,
    slot_window,
)
from benchmarks.saga import Load, figures, summary
from tests.gateway.api import Api, Org

SLOT = Slot("slot-1", "door-1", "2030-01-01T10:00:00Z", "2030-01-01T10:01:00Z")


def _customer() -> Customer:
    return Customer(Api(httpx.AsyncClient()), Org("org", "owner"), "a@example.test")


def _saga(due: float, ended: float = 0.0, failed: str = "", slot: Slot = SLOT) -> Saga:
    saga = Saga(0, slot, due=due, posted=due, ended=ended, failed_step=failed)
    saga.pin_seen = ended
    return saga


def test_arrivals_are_due_every_one_over_the_rate_seconds_for_the_duration() -> None:
    assert arrivals(2.0, 3.0) == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
    assert arrivals(0.3, 10.0) == pytest.approx([0.0, 10 / 3, 20 / 3])
    assert arrivals(0.0, 10.0) == []
    assert arrivals(5.0, 0.0) == []


async def test_the_open_loop_starts_each_saga_without_waiting_for_the_earlier_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No saga ends until all four have started: a loop that waited would never finish."""
    started: list[Saga] = []
    all_started = asyncio.Event()

    async def saga_that_waits(_c: Customer, _s: Sandboxes, saga: Saga, _p: Pace) -> Saga:
        started.append(saga)
        if len(started) == 4:
            all_started.set()
        await all_started.wait()
        saga.ended = saga.due + 1
        return saga

    monkeypatch.setattr(loops, "run_saga", saga_that_waits)
    slots = SlotSupply([SLOT] * 10)
    who = [_customer(), _customer(), _customer()]
    done = await asyncio.wait_for(
        loops.open_loop(who, _sandboxes(), slots, rate=40.0, seconds=0.1, pace=Pace()), 10
    )
    assert len(done.sagas) == 4
    assert [s.customer for s in done.sagas] == [0, 1, 2, 0]
    dues = [s.due - done.sagas[0].due for s in done.sagas]
    assert dues == pytest.approx([0.0, 0.025, 0.05, 0.075], abs=1e-6)
    assert len(slots) == 6


async def test_the_closed_loop_runs_one_saga_per_customer_at_a_time_until_the_slots_run_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running, most = 0, 0

    async def one_saga(_c: Customer, _s: Sandboxes, saga: Saga, _p: Pace) -> Saga:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0)
        running -= 1
        return saga

    monkeypatch.setattr(loops, "run_saga", one_saga)
    slots = SlotSupply([SLOT] * 7)
    sagas = await loops.closed_loop(
        [_customer(), _customer()], _sandboxes(), slots, seconds=3600, pace=Pace()
    )
    assert len(sagas) == 7
    assert most == 2
    assert slots.ran_out


def test_a_lock_code_matches_its_slot_by_device_and_window_whatever_the_time_format() -> None:
    code = {
        "device_id": "door-1",
        "starts_at": "2030-01-01T10:00:00+00:00",
        "ends_at": "2030-01-01T10:01:00.000Z",
        "status": "set",
        "status_history": [
            {"status": "setting", "at": "2030-01-01T08:00:00Z"},
            {"status": "set", "at": "2030-01-01T08:00:01.5Z"},
        ],
    }
    hostile = {"device_id": "door-1", "starts_at": 5, "ends_at": None}
    other_door = {**code, "device_id": "door-2"}
    found = codes_by_window([code, hostile, other_door])
    assert found[slot_window(SLOT)] == [code]
    assert set_at(code) == pytest.approx(1893484801.5)
    assert set_at({"status_history": [{"status": "set", "at": "not a time"}]}) is None
    assert set_at({"status_history": "garbage"}) is None


def _load(sagas: list[Saga], window_s: float = 10.0) -> Load:
    return Load(
        sagas=sagas,
        window_s=window_s,
        transactions={
            "booking": 40.0,
            "payment": 30.0,
            "access": 20.0,
            "notify": 10.0,
            "gateway": 4.0,
        },
        idle_transactions={"booking": 4.0, "payment": 3.0, "access": 2.0, "notify": 1.0},
        records=36,
        cpu_ms={"booking": 2.0},
        machine_ms=10.0,
        busy_share=0.5,
    )


def test_the_figures_count_sagas_completed_in_the_window_and_time_pin_active_from_the_lock() -> (
    None
):
    in_time = _saga(100.0, ended=105.0)
    late = _saga(101.0, ended=111.0)  # the window (10 s from the first due) ends at 110
    failed = _saga(102.0, failed="payment link")
    expired = _saga(103.0, failed="payment page")
    verdicts = {
        id(in_time): Verdict(in_time, "confirmed", pin_active_at=100.25),
        id(late): Verdict(late, "confirmed", pin_active_at=102.0),
        id(failed): Verdict(failed, "lost", "pending"),
        id(expired): Verdict(expired, "expired"),
    }
    got = figures(_load([in_time, late, failed, expired]), verdicts)
    assert got.started == 4
    assert got.completed_in_window == 1
    assert got.sagas_per_s == pytest.approx(0.1)
    assert (got.pin_active_p50_ms, got.pin_active_p99_ms) == pytest.approx((250.0, 1000.0))
    assert got.lost == 1
    assert got.tx_per_saga == pytest.approx(25.0)  # the gateway's database apart
    assert got.gateway_tx_per_saga == pytest.approx(1.0)
    assert got.tx_per_saga_over_idle == pytest.approx(22.5)
    assert got.records_per_saga == pytest.approx(9.0)


def test_the_json_line_carries_the_figures_the_issue_asks_for_and_every_lost_saga() -> None:
    saga = _saga(0.0, ended=1.0)
    closed = figures(_load([saga]), {id(saga): Verdict(saga, "confirmed", pin_active_at=0.5)})
    lost = _saga(0.0, failed="checkout")
    half = figures(_load([lost]), {id(lost): Verdict(lost, "lost", "no booking")})
    line = json.loads(json.dumps(summary(closed, half, (900.0, 1100.0), lost_elsewhere=2)))
    wanted = {
        "sagas_per_s",
        "ratio",
        "pin_active_p50_ms",
        "pin_active_p99_ms",
        "tx_per_saga",
        "lost",
    }
    assert wanted <= set(line)
    assert {"half_rate_pin_active_p50_ms", "half_rate_pin_active_p99_ms"} <= set(line)
    assert line["lost"] == 3
    # sagas/s over (tps / transactions per saga): 0.1 / (1000 / 100)
    assert line["ratio"] == pytest.approx(0.01)
    assert line["pgbench_tps"] == pytest.approx(1000.0)  # the mean of before and after
    assert line["pgbench_tps_runs"] == [900.0, 1100.0]
    assert line["configuration"] == "make up"


async def test_the_audit_loses_a_confirmed_saga_whose_code_is_not_at_the_lock() -> None:
    other = Slot("slot-2", "door-1", "2030-01-01T10:01:00Z", "2030-01-01T10:02:00Z")
    code = {
        "device_id": "door-1",
        "starts_at": SLOT.starts_at,
        "ends_at": SLOT.ends_at,
        "status": "set",
        "status_history": [{"status": "set", "at": "2030-01-01T08:00:00Z"}],
    }
    with_code, without = _saga(1.0, ended=2.0), _saga(1.0, ended=2.0, slot=other)
    verdicts = await audit([with_code, without], [_customer()], _sandboxes([code]), Pace())
    assert [v.outcome for v in verdicts] == ["confirmed", "lost"]
    assert verdicts[0].pin_active_at == pytest.approx(1893484800.0)
    assert "0 live codes" in verdicts[1].detail


def _sandboxes(codes: list[dict[str, Any]] | None = None) -> Sandboxes:
    def lock(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/_sandbox/access_codes"
        return httpx.Response(200, json={"data": codes or []})

    def nothing(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"unexpected call {request.url}")

    lock_client = httpx.AsyncClient(base_url="http://lock", transport=httpx.MockTransport(lock))
    other = httpx.AsyncClient(base_url="http://other", transport=httpx.MockTransport(nothing))
    return Sandboxes(other, "http://other", lock_client, other)


async def test_the_audit_finds_a_lost_answer_s_booking_and_judges_expired_and_stuck_ones() -> None:
    """A checkout whose answer was lost is found by its slot; expired without a code is an
    end, expired with a live code or still pending after the wait is lost."""
    slots = [
        Slot(f"slot-{n}", "door-1", f"2030-01-01T10:0{n}:00Z", f"2030-01-01T10:0{n + 1}:00Z")
        for n in range(3)
    ]
    states = {"b-0": "expired", "b-1": "expired", "b-2": "pending"}

    def gateway(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/orgs/org/bookings":
            return httpx.Response(200, json=[_booking("b-0", slots[0])])
        booking_id = request.url.path.rsplit("/", 1)[1]
        return httpx.Response(200, json=_booking(booking_id, slots[int(booking_id[-1])]))

    def _booking(booking_id: str, slot: Slot) -> dict[str, Any]:
        return {
            "booking_id": booking_id,
            "state": states[booking_id],
            "slot": {"slot_id": slot.slot_id},
        }

    live = {"device_id": "door-1", "starts_at": slots[1].starts_at, "ends_at": slots[1].ends_at}
    customer = Customer(
        Api(httpx.AsyncClient(base_url="http://gw", transport=httpx.MockTransport(gateway))),
        Org("org", "owner"),
        "a@example.test",
    )
    lost_answer = Saga(0, slots[0], due=1.0, failed_step="checkout", failure="no answer")
    expired_with_code = Saga(0, slots[1], due=1.0, booking_id="b-1", failed_step="payment page")
    pending = Saga(0, slots[2], due=1.0, booking_id="b-2", failed_step="payment link")
    verdicts = await audit(
        [lost_answer, expired_with_code, pending],
        [customer],
        _sandboxes([{**live, "status": "set"}]),
        Pace(poll_s=0.0, within_s=0.0),
    )
    assert [(v.outcome, v.saga.booking_id) for v in verdicts] == [
        ("expired", "b-0"),
        ("lost", "b-1"),
        ("lost", "b-2"),
    ]
    assert "1 live codes" in verdicts[1].detail
    assert verdicts[2].detail.startswith("pending") and "payment link" in verdicts[2].detail


@pytest.mark.parametrize(
    ("broken", "step"),
    [
        ("checkout_url", "payment page"),
        ("door", "door"),
        ("mail", "confirmation mail"),
        ("nothing but a 503 and a lost answer", ""),
    ],
)
async def test_a_saga_stops_at_a_hostile_or_lost_answer_and_names_the_step(
    broken: str, step: str
) -> None:
    """A payment link off the card sandbox is never opened; a door answering a list is no
    answer; a mail sandbox that does not answer ends the saga at the mail step. A booking
    read answered 503 (try again) or not at all is asked again, as a customer would."""
    link = "http://evil.example/checkout/pay_1" if broken == "checkout_url" else None
    reads = 0
    booking = {
        "booking_id": "b-1",
        "state": "confirmed",
        "slot": {"slot_id": SLOT.slot_id},
        "payment": {"checkout_url": link or "http://card/checkout/pay_1"},
        "access": {"state": "active"},
    }

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal reads
        host, path = request.url.host, request.url.path
        if host == "gw" and request.method == "GET" and not path.endswith("/access"):
            reads += 1
            if reads == 1 and broken.startswith("nothing"):
                return httpx.Response(503, json={"code": "service_unavailable"})
            if reads == 2 and broken.startswith("nothing"):
                raise httpx.ReadTimeout("no answer in time", request=request)
        if host == "gw" and request.method == "POST":
            return httpx.Response(201, json=booking)
        if host == "gw" and path.endswith("/access"):
            return httpx.Response(200, json={"state": "active", "pin": "123456"})
        if host == "gw":
            return httpx.Response(200, json=booking)
        if host == "card" and request.method == "GET":
            return httpx.Response(200, text='<form action="/checkout/pay_1">')
        if host == "card":
            return httpx.Response(303, headers={"location": "http://gw/v1/payments/return"})
        if host == "lock":
            return httpx.Response(200, json=[] if broken == "door" else {"opens": True})
        if broken == "mail":
            raise httpx.ConnectError("the mail sandbox is down", request=request)
        confirmation = {"rcpt_tos": ["a@example.test"], "text": "Booking: b-1"}
        return httpx.Response(200, json={"data": [confirmation]})

    def client(base: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=base, transport=httpx.MockTransport(answer))

    sandboxes = Sandboxes(
        client("http://card"), "http://card", client("http://lock"), client("http://mail")
    )
    customer = Customer(Api(client("http://gw")), Org("org", "owner"), "a@example.test")
    saga = await loops.run_saga(customer, sandboxes, Saga(0, SLOT, due=1.0), Pace(0.0, 5.0))
    assert (saga.failed_step, saga.completed, saga.booking_id) == (step, not step, "b-1")
