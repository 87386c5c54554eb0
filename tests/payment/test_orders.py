"""Acceptance f: seed 001's manual check of idempotent order creation, as tests."""

from __future__ import annotations

import asyncio
import uuid

import grpc
import pytest
from liftfit.payment.v1 import events_pb2, payment_pb2
from sqlalchemy import select

from tests.payment.harness import Harness, eventually, trailing
from tests.support.stored import columns_holding

Reply = payment_pb2.OrderReply


async def _plan(harness: Harness, kind: str, version: int = 1, amount: int = 99000) -> str:
    code = f"{kind}-{uuid.uuid4().hex[:6]}"
    await _add_version(harness, code, kind, version, amount)
    return code


async def _add_version(harness: Harness, code: str, kind: str, version: int, amount: int) -> None:
    plan = payment_pb2.Plan(
        plan_code=code,
        plan_version=version,
        kind=kind,
        name=code,
        price=events_pb2.Money(amount=amount, currency="CZK"),
        entries=10 if kind == "pass" else 0,
        period_days=30 if kind == "subscription" else 0,
    )
    await harness.stub.CreatePlan(payment_pb2.CreatePlanRequest(plan=plan))


async def _order(harness: Harness, org: str, key: str, code: str, version: int = 1) -> Reply:
    request = payment_pb2.CreateOrderRequest(
        org_id=org, user="anna", idempotency_key=key, plan_code=code, plan_version=version
    )
    reply: Reply = await harness.stub.CreateOrder(request)
    return reply


async def _refused(
    harness: Harness, org: str, key: str, code: str, version: int = 1
) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _order(harness, org, key, code, version)
    return refused.value


def _metadata(error: grpc.aio.AioRpcError) -> dict[str, str]:
    return trailing(error)


async def test_the_same_key_three_times_gives_one_order_and_one_amount(harness: Harness) -> None:
    code = await _plan(harness, "subscription")
    org = str(uuid.uuid4())

    replies = [await _order(harness, org, "checkout-team-2026-01", code) for _ in range(3)]

    assert len({r.order.order_id for r in replies}) == 1
    assert {r.order.price.amount for r in replies} == {99000}
    assert [r.replayed for r in replies] == [False, True, True]
    assert len({r.order.payment.payment_id for r in replies}) == 1
    # The first answer too carries the time the order was stored, as every replay does.
    assert all(r.order.HasField("created_at") for r in replies)
    assert len({r.order.created_at.ToDatetime() for r in replies}) == 1


async def test_the_same_key_with_another_plan_version_is_a_conflict_and_changes_nothing(
    harness: Harness,
) -> None:
    code = await _plan(harness, "subscription", version=1, amount=99000)
    await _add_version(harness, code, "subscription", 2, 120000)
    org = str(uuid.uuid4())
    original = await _order(harness, org, "checkout-team", code, version=1)

    conflict = await _refused(harness, org, "checkout-team", code, version=2)

    assert conflict.code() == grpc.StatusCode.ALREADY_EXISTS  # one code for it in every service
    assert _metadata(conflict)["reason"] == "idempotency_conflict"
    request = payment_pb2.GetOrderRequest(org_id=org, order_id=original.order.order_id)
    unchanged = await harness.stub.GetOrder(request)
    assert (unchanged.plan_version, unchanged.price.amount) == (1, 99000)


async def test_key_order_and_case_of_the_plan_code_do_not_change_the_intent(
    harness: Harness,
) -> None:
    code = await _plan(harness, "pass")
    org = str(uuid.uuid4())
    first = await _order(harness, org, "k1", code)

    again = await _order(harness, org, "k1", f"  {code.upper()} ")

    assert again.replayed and again.order.order_id == first.order.order_id


async def test_a_new_key_for_a_deliberate_second_pass_purchase_is_a_new_order(
    harness: Harness,
) -> None:
    code = await _plan(harness, "pass")
    org = str(uuid.uuid4())

    first = await _order(harness, org, "pass-1", code)
    second = await _order(harness, org, "pass-2", code)

    assert first.order.order_id != second.order.order_id
    assert not second.replayed


async def test_the_same_key_in_another_organisation_is_an_unrelated_order(harness: Harness) -> None:
    code = await _plan(harness, "pass")

    north = await _order(harness, str(uuid.uuid4()), "same-key", code)
    south = await _order(harness, str(uuid.uuid4()), "same-key", code)

    assert north.order.order_id != south.order.order_id


async def test_a_second_subscription_while_one_is_open_is_order_exists(harness: Harness) -> None:
    code = await _plan(harness, "subscription")
    org = str(uuid.uuid4())
    open_order = await _order(harness, org, "team-1", code)

    exists = await _refused(harness, org, "team-2", code)

    assert exists.code() == grpc.StatusCode.ALREADY_EXISTS
    assert _metadata(exists) == {
        "reason": "order_exists",
        "existing_order_id": open_order.order.order_id,
    }


async def test_an_active_paid_period_also_blocks_a_second_subscription(harness: Harness) -> None:
    code = await _plan(harness, "subscription")
    org = str(uuid.uuid4())
    order = await _order(harness, org, "team-1", code)
    payment = await _order_payment_with_checkout(harness, org, order.order.order_id)
    await harness.settle(payment.provider_payment_id)
    await _order_in(harness, org, order.order.order_id, "paid")

    exists = await _refused(harness, org, "team-2", code)

    assert _metadata(exists)["existing_order_id"] == order.order.order_id


async def test_an_expired_subscription_order_lets_a_new_key_start_again(harness: Harness) -> None:
    code = await _plan(harness, "subscription")
    org = str(uuid.uuid4())
    first = await _order(harness, org, "team-1", code)
    payment = await _order_payment_with_checkout(harness, org, first.order.order_id)
    await harness.gateway.post(f"/_sandbox/payments/{payment.provider_payment_id}/expire")
    await _order_in(harness, org, first.order.order_id, "cancelled")

    second = await _order(harness, org, "team-2", code)

    assert second.order.order_id != first.order.order_id


async def test_concurrent_replays_of_one_key_are_serialised_into_one_order(
    harness: Harness,
) -> None:
    code = await _plan(harness, "subscription")
    org = str(uuid.uuid4())

    replies = await asyncio.gather(*(_order(harness, org, "racing", code) for _ in range(10)))

    assert len({r.order.order_id for r in replies}) == 1
    assert sorted(r.replayed for r in replies) == [False] + [True] * 9


async def test_a_paid_pass_order_announces_its_entries_once(harness: Harness) -> None:
    code = await _plan(harness, "pass")
    org = str(uuid.uuid4())
    order = await _order(harness, org, "pass-1", code)
    payment = await _order_payment_with_checkout(harness, org, order.order.order_id)
    await harness.faults(duplicate_notifications=4)

    await harness.settle(payment.provider_payment_id)

    await _order_in(harness, org, order.order.order_id, "paid")
    await harness.events.published(events_pb2.PassOrderPaid, order.order.order_id)
    await asyncio.sleep(1.0)  # room for a duplicate announcement to show
    [announced] = harness.events.of(events_pb2.PassOrderPaid, order.order.order_id)
    assert (announced.org_id, announced.entries) == (org, 10)


async def test_an_unknown_plan_or_a_rewritten_plan_version_is_refused(harness: Harness) -> None:
    code = await _plan(harness, "pass")

    unknown = await _refused(harness, str(uuid.uuid4()), "k", code, version=7)
    with pytest.raises(grpc.aio.AioRpcError) as rewritten:
        await _add_version(harness, code, "pass", 1, 1)

    assert _metadata(unknown)["reason"] == "unknown_plan"
    assert _metadata(rewritten.value)["reason"] == "plan_version_exists"


async def _order_payment_with_checkout(
    harness: Harness, org: str, order_id: str
) -> payment_pb2.Payment:
    async def ready() -> payment_pb2.Payment | None:
        order = await harness.stub.GetOrder(
            payment_pb2.GetOrderRequest(org_id=org, order_id=order_id)
        )
        return order.payment if order.payment.checkout_url else None

    return await eventually(ready)


async def _order_in(harness: Harness, org: str, order_id: str, state: str) -> None:
    async def reached() -> bool:
        order = await harness.stub.GetOrder(
            payment_pb2.GetOrderRequest(org_id=org, order_id=order_id)
        )
        return bool(order.state == state)

    await eventually(reached)


async def test_a_replay_is_found_by_the_keys_hash_and_no_table_holds_the_key(
    harness: Harness,
) -> None:
    code = await _plan(harness, "pass")
    org = str(uuid.uuid4())
    key = f"order-{uuid.uuid4().hex}"
    first = await _order(harness, org, key, code)
    replay = await _order(harness, org, key, code)
    assert replay.replayed and replay.order.order_id == first.order.order_id
    keys = harness.app.tables.eventing.idempotency_keys.c
    async with harness.app.sessions() as session:
        stored = (await session.execute(select(keys.key_hash, keys.resource_id))).all()
        assert [row.resource_id for row in stored] == [first.order.order_id]
        assert len(stored[0].key_hash) == 32  # an HMAC-SHA256, not the key
        assert await columns_holding(session, key) == []
        assert "orders.org_id" in await columns_holding(session, org)  # the search finds things
