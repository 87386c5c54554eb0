"""An `unknown` delivery settled by the provider's log: the recovery outbound job.

1. A short transaction reads the delivery; only an `unknown` one is asked about, and
   the audit log says whether the recovery already sent it again once.
2. With no transaction held: the provider's lookup of its Message-ID.
3. A transaction applies the step, conditional on the delivery still being `unknown`
   (an operator may have decided meanwhile): `sent`, or `queued` for one more try under
   the same Message-ID, each audited and its incident resolved as an operator's decision
   would be; or the question is asked again later, a bounded number of times, after which
   the delivery stays `unknown` with its incident for a person.
"""

from __future__ import annotations

import logging

from servicekit.timers import DueTimer
from services.notify.domain.model import Delivery, DeliveryState
from services.notify.domain.recovery import LookupAnswer, Step, next_step
from services.notify.service_layer import jobs, messages
from services.notify.service_layer.dependencies import NotifyDeps
from services.notify.service_layer.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)

ACTOR = "notify:provider-lookup"  # who the audit log and the incident name for its steps
UNKNOWN = DeliveryState.UNKNOWN


async def recover_delivery(deps: NotifyDeps, timer: DueTimer) -> None:
    lookup, key = deps.mail_lookup, timer.aggregate_id
    if lookup is None:
        return  # configured away since the job was scheduled: a person decides
    async with deps.uows.transaction() as uow:
        delivery = await uow.deliveries.get(key)
        if delivery is None or delivery.state is not UNKNOWN:
            return
        resent = await _resent_once(uow, key)
    answer = await lookup.find(delivery.message_id)
    async with deps.uows.transaction() as uow:
        current = await uow.deliveries.get(key, lock=True)
        if current is None:
            return
        step = next_step(current, answer, resent)
        log.info("delivery %s: the provider's log: %s, %s", key, answer.detail, step.value)
        if step is Step.MARK_SENT:
            await _settle(uow, current, DeliveryState.SENT, answer)
        elif step is Step.SEND_AGAIN:
            await _settle(uow, current, DeliveryState.QUEUED, answer)
            await jobs.schedule_send(uow, key)
        elif step is Step.ASK_LATER:
            assert deps.policy.lookups is not None
            if not await uow.retry_later(timer, deps.policy.lookups):
                log.warning("delivery %s: the provider could not tell; left to a person", key)


async def _resent_once(uow: UnitOfWork, key: str) -> bool:
    entries = await uow.audit.of_subject(key)
    return any(e["actor"] == ACTOR and e["action"] == _action(Step.SEND_AGAIN) for e in entries)


async def _settle(
    uow: UnitOfWork, delivery: Delivery, target: DeliveryState, answer: LookupAnswer
) -> None:
    key = delivery.delivery_key
    step = Step.MARK_SENT if target is DeliveryState.SENT else Step.SEND_AGAIN
    if not await uow.deliveries.move(key, UNKNOWN, target, error=f"provider: {answer.detail}"):
        return
    detail = {"from": UNKNOWN.value, "to": target.value, "note": answer.detail}
    await uow.audit.record(ACTOR, _action(step), key, detail)
    await uow.incidents.resolve(key, ACTOR, step.value, answer.detail)
    if target is DeliveryState.SENT:
        await uow.publish(key, messages.delivery_recorded(delivery, target))


def _action(step: Step) -> str:
    return f"delivery.{step.value}"
