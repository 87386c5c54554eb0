"""One try at sending a delivery: the outbound job of the timer runner.

1. A short transaction reads the delivery; only a `queued` one is sent. One found
   `sending` was being sent by a try that never reported back (the process stopped): the
   server may have the mail, so it becomes `unknown`, never sent again by code.
2. With no transaction held: the access mail's PIN is read from the access service, the
   mail is rendered.
3. A short transaction moves it `queued -> sending`.
4. With no transaction held: the SMTP session.
5. A transaction applies the result, conditional on `sending`: sent; unknown (incident);
   failed (incident); or back to `queued` with the next try after a bounded backoff, and
   `failed` with an incident once the tries are used up.

The PIN exists only in this function's locals and the mail; nothing here logs, stores or
raises it.
"""

from __future__ import annotations

import logging

from servicekit.timers import DueTimer
from services.notify.adapters.access_pins import AccessUnavailable, PinNotActive
from services.notify.adapters.mail_templates import RenderError
from services.notify.domain.model import (
    Delivery,
    DeliveryState,
    Mail,
    Outcome,
    SendResult,
    Template,
)
from services.notify.service_layer import jobs, messages
from services.notify.service_layer.dependencies import NotifyDeps
from services.notify.service_layer.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)

QUEUED, SENDING = DeliveryState.QUEUED, DeliveryState.SENDING
UNKNOWN_INCIDENT = "delivery_unknown"
FAILED_INCIDENT = "delivery_failed"


async def send_delivery(deps: NotifyDeps, timer: DueTimer) -> None:
    key = timer.aggregate_id
    async with deps.uows.transaction() as uow:
        delivery = await uow.deliveries.get(key)
        if delivery is None:
            return
        if delivery.state is SENDING:
            lost = SendResult(Outcome.UNKNOWN, "a try ended without reporting its outcome")
            await _apply(uow, deps, timer, delivery, lost)
            return
        if delivery.state is not QUEUED:
            return
    try:
        mail = await _compose(deps, delivery)
    except PinNotActive as ended:
        await _give_up(deps, delivery, f"no active access for the booking: {ended}", False)
        return
    except RenderError as error:
        await _give_up(deps, delivery, f"template error: {error}", True)
        return
    except AccessUnavailable as error:
        await _try_later(deps, timer, delivery, f"access service: {error}")
        return
    async with deps.uows.transaction() as uow:
        if not await uow.deliveries.move(key, QUEUED, SENDING, tried=True):
            return  # an operator or another try got there first
    result = await deps.mail_server.send(mail)
    async with deps.uows.transaction() as uow:
        await _apply(uow, deps, timer, delivery, result)


async def _compose(deps: NotifyDeps, delivery: Delivery) -> Mail:
    values = dict(delivery.context)
    if delivery.template is Template.ACCESS_DETAILS:
        assert delivery.booking_id is not None
        active = await deps.pins.disclose(delivery.org_id, delivery.booking_id)
        if active.grant_id != values.get("grant_id"):
            raise PinNotActive("the grant of this mail was replaced")
        values |= {
            "pin": active.pin,
            "valid_from": active.valid_from.isoformat(),
            "valid_to": active.valid_to.isoformat(),
        }
    rendered = deps.templates.render(delivery.template, delivery.locale, values)
    return Mail(
        message_id=delivery.message_id,
        recipient=delivery.recipient,
        subject=rendered.subject,
        text=rendered.text,
        html=rendered.html,
        headers={"Content-Language": delivery.locale},
    )


async def _apply(
    uow: UnitOfWork, deps: NotifyDeps, timer: DueTimer, delivery: Delivery, result: SendResult
) -> None:
    key, detail = delivery.delivery_key, result.detail
    if result.outcome is Outcome.SENT:
        await _settle(uow, delivery, DeliveryState.SENT, detail)
    elif result.outcome is Outcome.UNKNOWN:
        if await _settle(uow, delivery, DeliveryState.UNKNOWN, detail):
            why = f"{delivery.template.value} to {delivery.recipient} may have been taken: {detail}"
            await uow.incidents.open(UNKNOWN_INCIDENT, key, why)
            await jobs.schedule_recovery(uow, deps.policy, key)
    elif result.outcome is Outcome.REFUSED:
        if await _settle(uow, delivery, DeliveryState.FAILED, detail):
            await uow.incidents.open(FAILED_INCIDENT, key, f"refused for good: {detail}")
    elif await uow.deliveries.move(key, SENDING, QUEUED, error=detail):
        await _next_try(uow, deps, timer, delivery, detail)


async def _settle(uow: UnitOfWork, delivery: Delivery, target: DeliveryState, detail: str) -> bool:
    moved = await uow.deliveries.move(delivery.delivery_key, SENDING, target, error=detail)
    if moved:
        log.info("delivery %s: %s", delivery.delivery_key, target.value)
        await uow.publish(delivery.delivery_key, messages.delivery_recorded(delivery, target))
    return moved


async def _next_try(
    uow: UnitOfWork, deps: NotifyDeps, timer: DueTimer, delivery: Delivery, detail: str
) -> None:
    if await uow.retry_later(timer, deps.policy.retries):
        return
    key = delivery.delivery_key
    if await uow.deliveries.move(key, QUEUED, DeliveryState.FAILED, error=detail):
        await uow.publish(key, messages.delivery_recorded(delivery, DeliveryState.FAILED))
        await uow.incidents.open(FAILED_INCIDENT, key, f"tries used up: {detail}")


async def _try_later(deps: NotifyDeps, timer: DueTimer, delivery: Delivery, detail: str) -> None:
    async with deps.uows.transaction() as uow:
        current = await uow.deliveries.get(delivery.delivery_key, lock=True)
        if current is not None and current.state is QUEUED:
            await _next_try(uow, deps, timer, delivery, detail)


async def _give_up(deps: NotifyDeps, delivery: Delivery, detail: str, incident: bool) -> None:
    key = delivery.delivery_key
    async with deps.uows.transaction() as uow:
        if not await uow.deliveries.move(key, QUEUED, DeliveryState.FAILED, error=detail):
            return
        await uow.publish(key, messages.delivery_recorded(delivery, DeliveryState.FAILED))
        if incident:
            await uow.incidents.open(FAILED_INCIDENT, key, detail)
