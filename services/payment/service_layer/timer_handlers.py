"""The jobs that talk to the gateway, and the sweep that finds payments to reconcile.

No transaction, row lock or database connection is held while the gateway is called.
Every gateway job is an outbound job of the timer runner, in three steps: it reads what it
needs in one short transaction and commits; it calls the gateway, bounded by the client's
timeouts, with nothing open; then it applies the answer in a new transaction that locks
the payment and changes it only if it is still where the job expects it. Retries and
incidents are written in that second transaction. A slow or hanging gateway therefore
delays only its own job: other payments' notifications, events and jobs go on.

A crash between the call and the second commit repeats the call, which the provider key
makes harmless: one key for every try of a payment attempt, one refund key per payment.
The reconciliation sweep touches only the database: it stays a transactional handler,
committed together with its timer.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping

from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.recurring import RecurringJob
from servicekit.timers import DueTimer, OutboundJob, tries_of
from services.payment.adapters.card_gateway import GatewayRefused, GatewayUnavailable
from services.payment.domain import payment_states as states
from services.payment.domain.payment import Payment, RemotePayment
from services.payment.service_layer import jobs
from services.payment.service_layer.dependencies import PaymentDeps
from services.payment.service_layer.transitions import apply_remote, move_payment
from services.payment.service_layer.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)
GatewayJob = Callable[[PaymentDeps, DueTimer], Awaitable[None]]


async def create_at_gateway(deps: PaymentDeps, timer: DueTimer) -> None:
    async with deps.uows.transaction() as uow:
        payment = await _unsent(uow, timer)
    if payment is None:
        return
    try:
        remote = await deps.gateway.create_payment(
            payment.provider_key,
            payment.amount,
            payment.reference,
            _returning_to(deps.return_url, str(payment.payment_id)),
        )
    except GatewayUnavailable as error:
        await _retry_or_report(deps, timer, "gateway_create_unconfirmed", error)
    except GatewayRefused as error:
        await _report(deps, "gateway_refused_create", timer.aggregate_id, str(error))
    else:
        await _apply(deps, payment, remote)


def _returning_to(return_url: str, payment_id: str) -> str:
    """Where the customer's browser comes back to, naming the payment so the page can show
    its state (the page only reads it)."""
    if not return_url:
        return ""
    joiner = "&" if "?" in return_url else "?"
    return f"{return_url}{joiner}payment_id={payment_id}"


async def _unsent(uow: UnitOfWork, timer: DueTimer) -> Payment | None:
    """The payment this try must send; None when there is nothing (left) to send."""
    payment = await uow.payments.get(uuid.UUID(timer.aggregate_id))
    if payment is None or payment.provider_payment_id is not None:
        return None
    if payment.state == states.PENDING and payment.attempt == timer.expected.get("attempt"):
        return payment
    if tries_of(timer) > 1:  # an earlier try may have reached the gateway
        await jobs.schedule_reconciliation(uow, payment.payment_id)
    return None


async def cancel_at_gateway(deps: PaymentDeps, timer: DueTimer) -> None:
    payment = await _payment_in(deps, timer, states.CANCELLED)
    if payment is None or payment.provider_payment_id is None:
        return
    try:
        remote = await deps.gateway.cancel_payment(payment.provider_payment_id)
    except GatewayUnavailable as error:
        await _retry_or_report(deps, timer, "gateway_cancel_unconfirmed", error)
        return
    except GatewayRefused as error:
        # Not cancellable: it settled, failed or expired first. Its state says which.
        if error.remote is None:
            await _report(deps, "gateway_refused_cancel", timer.aggregate_id, str(error))
            return
        remote = error.remote
    await _apply(deps, payment, remote)


async def refund_at_gateway(deps: PaymentDeps, timer: DueTimer) -> None:
    payment = await _payment_in(deps, timer, states.REFUND_PENDING)
    if payment is None or payment.provider_payment_id is None:
        return
    try:
        await deps.gateway.refund(payment.provider_payment_id, payment.refund_key, payment.amount)
    except GatewayUnavailable as error:
        await _refund_unconfirmed(deps, timer, payment, error)
    except GatewayRefused as error:
        await _refund_refused(deps, payment, error)
    else:
        await _settle(deps, payment, states.REFUNDED)


async def _refund_unconfirmed(
    deps: PaymentDeps, timer: DueTimer, payment: Payment, error: Exception
) -> None:
    async with deps.uows.transaction() as uow:
        if not await jobs.retry_later(uow, timer, deps.policy):
            log.warning("refund of %s unconfirmed after retries: %s", payment.payment_id, error)
            await _move(uow, payment, states.REFUND_FAILED)


async def _refund_refused(deps: PaymentDeps, payment: Payment, error: GatewayRefused) -> None:
    done = error.remote is not None and error.remote.state == "refunded"
    async with deps.uows.transaction() as uow:
        if not done:
            await uow.incidents.open("refund_refused", str(payment.payment_id), str(error))
        await _move(uow, payment, states.REFUNDED if done else states.REFUND_FAILED)


async def reconcile_payment(deps: PaymentDeps, timer: DueTimer) -> None:
    """Asks the gateway for the truth about one payment whose notifications may be lost."""
    async with deps.uows.transaction() as uow:
        payment = await uow.payments.get(uuid.UUID(timer.aggregate_id))
        if payment is not None:
            await uow.payments.mark_reconciled(payment.payment_id)
    if payment is None:
        return
    try:
        found = await _remote_views(deps, payment)
    except GatewayUnavailable:
        return  # the adapter logs the outage; the next sweep tries again
    except GatewayRefused as error:
        log.warning("reconciling %s: %s; the next sweep tries again", payment.payment_id, error)
        return
    async with deps.uows.transaction() as uow:
        locked = await uow.payments.get(payment.payment_id, lock=True)
        if locked is not None:
            await _reconcile(uow, locked, found)


async def _remote_views(deps: PaymentDeps, payment: Payment) -> list[RemotePayment]:
    if payment.provider_payment_id is not None:
        return [await deps.gateway.get_payment(payment.provider_payment_id)]
    return await deps.gateway.find_by_reference(payment.reference)


async def _reconcile(uow: UnitOfWork, payment: Payment, found: list[RemotePayment]) -> None:
    if len(found) > 1:
        detail = ", ".join(r.provider_payment_id for r in found)
        await uow.incidents.open("second_remote_payment", str(payment.payment_id), detail)
    elif not found:
        await _resume_creation(uow, payment)
    else:
        current = await apply_remote(uow, payment, found[0])
        await _resume_refund(uow, current, found[0])


async def _resume_creation(uow: UnitOfWork, payment: Payment) -> None:
    """The gateway never got the payment: send it again, under the same attempt's key."""
    unsent = payment.state == states.PENDING and payment.provider_payment_id is None
    if unsent and not await uow.has_pending(jobs.CREATE_AT_GATEWAY, str(payment.payment_id)):
        await jobs.schedule_creation(uow, payment.payment_id, payment.attempt)


async def _resume_refund(uow: UnitOfWork, payment: Payment, remote: RemotePayment) -> None:
    """A refund is owed and the money is still with us, but no job will ask for it (its
    job ended failed): ask again, under the payment's one refund key."""
    owed = payment.state == states.REFUND_PENDING and remote.state == states.PAID
    if owed and not await uow.has_pending(jobs.REFUND_AT_GATEWAY, str(payment.payment_id)):
        log.warning("payment %s: refund owed but not requested; requesting it", payment.payment_id)
        await jobs.schedule_refund(uow, payment.payment_id)


async def reconcile_sweep(deps: PaymentDeps, uow: UnitOfWork) -> None:
    """Schedules a reconciliation for each payment left unsettled past the threshold."""
    unsettled = (states.PENDING, states.REFUND_PENDING, states.REFUND_FAILED)
    for payment in await uow.payments.stale(unsettled, deps.policy.reconcile_after_s, 200):
        await jobs.schedule_reconciliation(uow, payment.payment_id)


# --- the short transactions around a call ------------------------------------------------


async def _payment_in(deps: PaymentDeps, timer: DueTimer, state: str) -> Payment | None:
    async with deps.uows.transaction() as uow:
        payment = await uow.payments.get(uuid.UUID(timer.aggregate_id))
    return payment if payment is not None and payment.state == state else None


async def _apply(deps: PaymentDeps, payment: Payment, remote: RemotePayment) -> None:
    async with deps.uows.transaction() as uow:
        locked = await uow.payments.get(payment.payment_id, lock=True)
        if locked is not None:
            await apply_remote(uow, locked, remote)


async def _settle(deps: PaymentDeps, payment: Payment, target: str) -> None:
    async with deps.uows.transaction() as uow:
        await _move(uow, payment, target)


async def _move(uow: UnitOfWork, payment: Payment, target: str) -> None:
    locked = await uow.payments.get(payment.payment_id, lock=True)
    if locked is not None:
        await move_payment(uow, locked, target)


async def _retry_or_report(deps: PaymentDeps, timer: DueTimer, kind: str, error: Exception) -> None:
    async with deps.uows.transaction() as uow:
        if not await jobs.retry_later(uow, timer, deps.policy):
            await uow.incidents.open(kind, timer.aggregate_id, f"no answer after retries: {error}")


async def _report(deps: PaymentDeps, kind: str, subject_id: str, detail: str) -> None:
    async with deps.uows.transaction() as uow:
        await uow.incidents.open(kind, subject_id, detail)


# --- in the shapes servicekit's TimerRunner calls ------------------------------------------

GATEWAY_JOBS: Mapping[str, GatewayJob] = {
    jobs.CREATE_AT_GATEWAY: create_at_gateway,
    jobs.CANCEL_AT_GATEWAY: cancel_at_gateway,
    jobs.REFUND_AT_GATEWAY: refund_at_gateway,
    jobs.RECONCILE_PAYMENT: reconcile_payment,
}


def outbound_jobs(deps: PaymentDeps) -> dict[str, OutboundJob]:
    """The gateway jobs: they open their own transactions around the call."""

    def bound(job: GatewayJob) -> OutboundJob:
        async def run(timer: DueTimer) -> None:
            await job(deps, timer)

        return run

    return {kind: bound(job) for kind, job in GATEWAY_JOBS.items()}


def recurring_jobs(deps: PaymentDeps) -> list[RecurringJob]:
    """The reconciliation sweep: it only touches the database, and runs every interval."""

    async def sweep(session: AsyncSession) -> None:
        await reconcile_sweep(deps, deps.uows.joining(session))

    return [RecurringJob(jobs.RECONCILE_SWEEP, deps.policy.reconcile_every_s, sweep)]
