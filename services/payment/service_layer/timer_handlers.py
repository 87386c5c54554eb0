"""The jobs that talk to the gateway, fired by the durable timer runner.

Each handler runs inside the runner's transaction, which holds only the timer row's lock.
The gateway is called inside that transaction, with the client's explicit timeout, and
never while holding the payment row: the payment is read, the call is made, then the
payment is locked and changed conditionally. This keeps one job's intent, call and
outcome in one place; a crash between the call and the commit repeats the call, which
the provider key (the same for every try of an attempt) makes harmless.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping

from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.timers import DueTimer
from services.payment.adapters.card_gateway import GatewayRefused, GatewayUnavailable
from services.payment.domain import payment_states as states
from services.payment.domain.payment import Payment, RemotePayment
from services.payment.service_layer import jobs
from services.payment.service_layer.dependencies import PaymentDeps
from services.payment.service_layer.transitions import apply_remote, move_payment
from services.payment.service_layer.unit_of_work import PaymentTransaction

log = logging.getLogger(__name__)
Job = Callable[[PaymentDeps, PaymentTransaction, DueTimer], Awaitable[None]]


async def create_at_gateway(deps: PaymentDeps, tx: PaymentTransaction, timer: DueTimer) -> None:
    payment = await tx.payments.get(uuid.UUID(timer.aggregate_id))
    if payment is None or payment.provider_payment_id is not None:
        return
    if payment.state != states.PENDING or payment.attempt != timer.expected.get("attempt"):
        if jobs.tries_of(timer) > 1:  # an earlier try may have reached the gateway
            await jobs.schedule_reconciliation(tx, payment.payment_id)
        return
    try:
        remote = await deps.gateway.create_payment(
            payment.provider_key, payment.amount, payment.reference, deps.return_url
        )
    except GatewayUnavailable as error:
        await _retry_or_report(deps, tx, timer, "gateway_create_unconfirmed", error)
        return
    except GatewayRefused as error:
        await tx.incidents.open("gateway_refused_create", timer.aggregate_id, str(error))
        return
    await _apply(tx, payment, remote)


async def cancel_at_gateway(deps: PaymentDeps, tx: PaymentTransaction, timer: DueTimer) -> None:
    payment = await tx.payments.get(uuid.UUID(timer.aggregate_id))
    if payment is None or payment.state != states.CANCELLED or not payment.provider_payment_id:
        return
    try:
        remote = await deps.gateway.cancel_payment(payment.provider_payment_id)
    except GatewayUnavailable as error:
        await _retry_or_report(deps, tx, timer, "gateway_cancel_unconfirmed", error)
        return
    except GatewayRefused as error:
        # Not cancellable: it settled, failed or expired first. Its state says which.
        if error.remote is None:
            await tx.incidents.open("gateway_refused_cancel", timer.aggregate_id, str(error))
            return
        remote = error.remote
    await _apply(tx, payment, remote)


async def refund_at_gateway(deps: PaymentDeps, tx: PaymentTransaction, timer: DueTimer) -> None:
    payment = await tx.payments.get(uuid.UUID(timer.aggregate_id))
    if payment is None or payment.state != states.REFUND_PENDING or not payment.provider_payment_id:
        return
    try:
        await deps.gateway.refund(payment.provider_payment_id, payment.refund_key, payment.amount)
    except GatewayUnavailable as error:
        if not await jobs.retry_later(tx, timer, deps.policy):
            log.warning("refund of %s unconfirmed after retries: %s", payment.payment_id, error)
            await _settle_refund(tx, payment, states.REFUND_FAILED)
        return
    except GatewayRefused as error:
        done = error.remote is not None and error.remote.state == "refunded"
        if not done:
            await tx.incidents.open("refund_refused", timer.aggregate_id, str(error))
        await _settle_refund(tx, payment, states.REFUNDED if done else states.REFUND_FAILED)
        return
    await _settle_refund(tx, payment, states.REFUNDED)


async def reconcile_payment(deps: PaymentDeps, tx: PaymentTransaction, timer: DueTimer) -> None:
    """Asks the gateway for the truth about one payment whose notifications may be lost."""
    payment = await tx.payments.get(uuid.UUID(timer.aggregate_id))
    if payment is None:
        return
    await tx.payments.mark_reconciled(payment.payment_id)
    try:
        remote = await _find_remote(deps, tx, payment)
    except (GatewayUnavailable, GatewayRefused) as error:
        log.warning("reconciling %s: %s; the next sweep tries again", payment.payment_id, error)
        return
    if remote is not None:
        await _apply(tx, payment, remote)


async def reconcile_sweep(deps: PaymentDeps, tx: PaymentTransaction, timer: DueTimer) -> None:
    """Schedules a reconciliation for each payment left unsettled past the threshold."""
    unsettled = (states.PENDING, states.REFUND_PENDING, states.REFUND_FAILED)
    for payment in await tx.payments.stale(unsettled, deps.policy.reconcile_after_s, 200):
        await jobs.schedule_reconciliation(tx, payment.payment_id)
    await tx.schedule(jobs.RECONCILE_SWEEP, jobs.SWEEP_ID, {}, deps.policy.reconcile_every_s)


async def _find_remote(
    deps: PaymentDeps, tx: PaymentTransaction, payment: Payment
) -> RemotePayment | None:
    if payment.provider_payment_id is not None:
        return await deps.gateway.get_payment(payment.provider_payment_id)
    found = await deps.gateway.find_by_reference(payment.reference)
    if len(found) > 1:
        detail = ", ".join(r.provider_payment_id for r in found)
        await tx.incidents.open("second_remote_payment", str(payment.payment_id), detail)
        return None
    if not found:
        await _resume_creation(tx, payment)
        return None
    return found[0]


async def _resume_creation(tx: PaymentTransaction, payment: Payment) -> None:
    """The gateway never got the payment: send it again, under the same attempt's key."""
    pending_create = await tx.jobs.has_pending(jobs.CREATE_AT_GATEWAY, str(payment.payment_id))
    if payment.state == states.PENDING and not pending_create:
        await jobs.schedule_creation(tx, payment.payment_id, payment.attempt)


async def _apply(tx: PaymentTransaction, payment: Payment, remote: RemotePayment) -> None:
    locked = await tx.payments.get(payment.payment_id, lock=True)
    if locked is not None:
        await apply_remote(tx, locked, remote)


async def _settle_refund(tx: PaymentTransaction, payment: Payment, target: str) -> None:
    locked = await tx.payments.get(payment.payment_id, lock=True)
    if locked is not None:
        await move_payment(tx, locked, target)


async def _retry_or_report(
    deps: PaymentDeps, tx: PaymentTransaction, timer: DueTimer, kind: str, error: Exception
) -> None:
    if not await jobs.retry_later(tx, timer, deps.policy):
        await tx.incidents.open(kind, timer.aggregate_id, f"no answer after retries: {error}")


JOBS: Mapping[str, Job] = {
    jobs.CREATE_AT_GATEWAY: create_at_gateway,
    jobs.CANCEL_AT_GATEWAY: cancel_at_gateway,
    jobs.REFUND_AT_GATEWAY: refund_at_gateway,
    jobs.RECONCILE_PAYMENT: reconcile_payment,
    jobs.RECONCILE_SWEEP: reconcile_sweep,
}


def timer_handlers(
    deps: PaymentDeps,
) -> dict[str, Callable[[AsyncSession, DueTimer], Awaitable[None]]]:
    """The handlers in the shape servicekit's TimerRunner calls them."""

    def bound(job: Job) -> Callable[[AsyncSession, DueTimer], Awaitable[None]]:
        async def run(session: AsyncSession, timer: DueTimer) -> None:
            await job(deps, deps.uow.within(session), timer)

        return run

    return {kind: bound(job) for kind, job in JOBS.items()}


async def ensure_sweep_scheduled(deps: PaymentDeps) -> None:
    """Every process start makes sure one sweep is scheduled; the sweep reschedules itself."""
    async with deps.uow.begin() as tx:
        await tx.orders.lock_organisation("__reconcile_sweep__")
        if not await tx.jobs.has_pending(jobs.RECONCILE_SWEEP, jobs.SWEEP_ID):
            await tx.schedule(
                jobs.RECONCILE_SWEEP, jobs.SWEEP_ID, {}, deps.policy.reconcile_every_s
            )
