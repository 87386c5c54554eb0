"""The gRPC API's handlers: reads for everyone, and an operator's decision on a delivery
that waits for one, carried out and audited in one transaction."""

from __future__ import annotations

from servicekit.incidents import Incident
from servicekit.refusals import NotFound
from services.notify.domain.commands import DecideDelivery, DeliveriesOf
from services.notify.domain.model import Delivery, DeliveryState
from services.notify.service_layer import jobs, messages
from services.notify.service_layer.unit_of_work import UnitOfWork


async def get_delivery(uow: UnitOfWork, key: str) -> Delivery:
    delivery = await uow.deliveries.get(key)
    if delivery is None:
        raise NotFound(f"delivery {key} not found")
    return delivery


async def list_deliveries(uow: UnitOfWork, query: DeliveriesOf) -> list[Delivery]:
    return await uow.deliveries.of_subject(query.booking_id, query.order_id)


async def list_undecided(uow: UnitOfWork, state: str) -> list[Delivery]:
    return await uow.deliveries.undecided(state)


async def list_incidents(uow: UnitOfWork, state: str) -> list[Incident]:
    return await uow.incidents.listed(state or None)


async def decide_delivery(uow: UnitOfWork, command: DecideDelivery) -> Delivery:
    """send_again queues it for one more try under the same Message-ID; mark_sent records
    that it arrived and sends nothing. Either way the decision is in the audit log."""
    key = command.delivery_key
    delivery = await uow.deliveries.get(key, lock=True)
    if delivery is None:
        raise NotFound(f"delivery {key} not found")
    target = delivery.decide(command.decision)
    await uow.deliveries.move(key, delivery.state, target, error=f"operator: {command.decision}")
    await uow.audit.record(
        command.operator,
        f"delivery.{command.decision.value}",
        key,
        {"from": delivery.state.value, "to": target.value, "note": command.note},
    )
    await uow.incidents.resolve(key, command.operator, command.decision.value, command.note)
    if target is DeliveryState.QUEUED:
        await jobs.schedule_send(uow, key)
    else:
        await uow.publish(key, messages.delivery_recorded(delivery, target))
    return await get_delivery(uow, key)
