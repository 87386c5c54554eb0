"""Commands from the gRPC API: orders, the catalogue, notifications, and read models."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass

from servicekit.contacts import Contact
from servicekit.idempotency import Claim
from servicekit.incidents import Incident
from servicekit.refusals import IdempotencyConflict, NotFound
from services.payment.adapters.card_gateway import GatewayRefused, GatewayUnavailable
from services.payment.domain import payment_states as states
from services.payment.domain.errors import (
    GatewayUnreachable,
    OrderExists,
    PlanVersionExists,
    UnknownPlan,
)
from services.payment.domain.notification import read_hint
from services.payment.domain.orders import (
    ORDER_PENDING,
    SUBSCRIPTION,
    CreateOrder,
    Order,
    Plan,
    normalise_plan_code,
)
from services.payment.domain.payment import Payment, RemotePayment
from services.payment.domain.signature import Signature, read_signature, verify_body
from services.payment.service_layer import jobs
from services.payment.service_layer.dependencies import PaymentDeps
from services.payment.service_layer.hints import worth_retrying
from services.payment.service_layer.transitions import apply_remote
from services.payment.service_layer.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)
CREATE_ORDER = "create_order"  # the operation an order's Idempotency-Key is scoped to


@dataclass(frozen=True)
class OrderView:
    order: Order
    payment: Payment | None
    replayed: bool = False


# --- orders -----------------------------------------------------------------------------


async def create_order(deps: PaymentDeps, command: CreateOrder) -> OrderView:
    """One Idempotency-Key, one order: a replay returns it, a changed request is refused."""
    fingerprint = command.fingerprint()
    async with deps.uows.transaction() as uow:
        await uow.orders.lock_organisation(command.org_id)
        order_id = uuid.uuid4()
        claim = await uow.idempotency.claim(
            command.org_id, CREATE_ORDER, command.idempotency_key, fingerprint, str(order_id)
        )
        if not claim.is_new:
            return await _replay(uow, claim, fingerprint)
        order = await _new_order(uow, command, order_id)
        payment = await _open_order_payment(uow, order, command.contact)
        return OrderView(order, await uow.payments.get(payment.payment_id))


async def _replay(uow: UnitOfWork, claim: Claim, fingerprint: bytes) -> OrderView:
    if not claim.matches(fingerprint):
        raise IdempotencyConflict("the key was used for another order")
    order_id = uuid.UUID(claim.resource_id)
    order = await uow.orders.get(order_id)
    payment = await uow.payments.for_order(order_id)
    if order is None or payment is None:
        raise RuntimeError(f"order {order_id} of a claimed key is missing")
    await _resume_creation(uow, payment)
    return OrderView(order, payment, replayed=True)


async def _resume_creation(uow: UnitOfWork, payment: Payment) -> None:
    """A repeated command resumes sending a payment the gateway has not confirmed yet."""
    unsent = payment.state == states.PENDING and payment.provider_payment_id is None
    if unsent and not await uow.has_pending(jobs.CREATE_AT_GATEWAY, str(payment.payment_id)):
        await jobs.schedule_creation(uow, payment.payment_id, payment.attempt)


async def _new_order(uow: UnitOfWork, command: CreateOrder, order_id: uuid.UUID) -> Order:
    code = normalise_plan_code(command.plan_code)
    plan = await uow.orders.plan(code, command.plan_version)
    if plan is None:
        raise UnknownPlan(f"{code} version {command.plan_version}")
    if plan.kind == SUBSCRIPTION:
        blocking = await uow.orders.blocking_subscription(command.org_id)
        if blocking is not None:
            raise OrderExists(str(blocking))
    order = Order(
        order_id=order_id,
        org_id=command.org_id,
        state=ORDER_PENDING,
        plan_code=plan.code,
        plan_version=plan.version,
        kind=plan.kind,
        price=plan.price,  # from the catalogue, never from the client
        entries=plan.entries,
        period_days=plan.period_days,
    )
    return await uow.orders.add(order, command.user)


async def _open_order_payment(uow: UnitOfWork, order: Order, contact: Contact) -> Payment:
    payment = Payment(
        payment_id=uuid.uuid4(),
        state=states.PENDING,
        amount=order.price,
        org_id=order.org_id,
        order_id=order.order_id,
        contact=contact,
    )
    await uow.payments.add(payment)
    await jobs.schedule_creation(uow, payment.payment_id, payment.attempt)
    return payment


async def get_order(deps: PaymentDeps, org_id: str, order_id: str) -> OrderView:
    async with deps.uows.transaction() as uow:
        order = await uow.orders.get(_uuid(order_id))
        # Another organisation's order is reported as missing: existence is not leaked.
        if order is None or order.org_id != org_id:
            raise NotFound(f"order {order_id}")
        return OrderView(order, await uow.payments.for_order(order.order_id))


# --- catalogue --------------------------------------------------------------------------


async def create_plan(deps: PaymentDeps, plan: Plan) -> Plan:
    plan = plan.validated()
    async with deps.uows.transaction() as uow:
        if not await uow.orders.add_plan(plan):
            raise PlanVersionExists(f"{plan.code} version {plan.version}")
    return plan


async def list_plans(deps: PaymentDeps) -> list[Plan]:
    async with deps.uows.transaction() as uow:
        return await uow.orders.plans()


# --- notifications ----------------------------------------------------------------------


async def handle_notification(
    deps: PaymentDeps, raw_body: bytes, signature: Signature | str, now: int | None = None
) -> None:
    """Verifies the signature, then treats the body only as a hint of which payment to read.

    `signature` is the raw header, or one the caller already read and checked for time.
    """
    if isinstance(signature, str):
        now = int(time.time()) if now is None else now
        signature = read_signature(signature, now)
    verify_body(signature, raw_body, deps.webhook_secrets)
    hint = read_hint(raw_body)
    try:
        await apply_hint(deps, hint.provider_payment_id)
    except Exception as error:
        if worth_retrying(error):  # the gateway stops resending soon: we try again ourselves
            deps.hints.remember(hint.provider_payment_id)
        if isinstance(error, GatewayUnavailable):
            raise GatewayUnreachable("the card gateway did not answer; send it again") from None
        raise
    deps.hints.forget(hint.provider_payment_id)


async def apply_hint(deps: PaymentDeps, provider_payment_id: str) -> None:
    """Reads the named payment from the gateway and applies its truth; an id the gateway
    does not know changes nothing."""
    try:
        remote = await deps.gateway.get_payment(provider_payment_id)
    except GatewayRefused as error:
        log.warning("a notification names no gateway payment %s: %s", provider_payment_id, error)
        return
    async with deps.uows.transaction() as uow:
        await reconcile_with(uow, remote)


async def reconcile_with(uow: UnitOfWork, remote: RemotePayment) -> None:
    payment = await uow.payments.by_provider_id(remote.provider_payment_id, lock=True)
    if payment is None:  # the create reply was lost: the reference names our payment
        payment_id = _uuid_or_none(remote.reference)
        payment = await uow.payments.get(payment_id, lock=True) if payment_id else None
    if payment is None:
        detail = f"reference {remote.reference}"
        await uow.incidents.open("unknown_gateway_payment", remote.provider_payment_id, detail)
        return
    await apply_remote(uow, payment, remote)


# --- read models ------------------------------------------------------------------------


async def get_payment(deps: PaymentDeps, payment_id: str) -> Payment:
    async with deps.uows.transaction() as uow:
        payment = await uow.payments.get(_uuid(payment_id))
    if payment is None:
        raise NotFound(f"payment {payment_id}")
    return payment


async def get_payment_for_booking(deps: PaymentDeps, booking_id: str) -> Payment:
    # One read, consistent by itself: on the driver, with no ORM session around it.
    async with deps.uows.transaction_on_driver() as uow:
        payment = await uow.payments.for_booking(booking_id)
    if payment is None:
        raise NotFound(f"payment of booking {booking_id}")
    return payment


async def list_payments(deps: PaymentDeps, state: str) -> list[Payment]:
    async with deps.uows.transaction() as uow:
        return await uow.payments.listed(state or None)


async def list_incidents(deps: PaymentDeps, state: str) -> list[Incident]:
    async with deps.uows.transaction() as uow:
        return await uow.incidents.listed(state or None)


def _uuid(value: str) -> uuid.UUID:
    found = _uuid_or_none(value)
    if found is None:
        raise NotFound(value)
    return found


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
