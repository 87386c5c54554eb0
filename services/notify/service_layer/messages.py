"""The notify events of the contract (protos/liftfit/notify/v1/events.proto). None of them
carries a mail's content."""

from __future__ import annotations

from liftfit.notify.v1 import events_pb2 as ev

from services.notify.domain.model import Delivery, DeliveryState


def delivery_recorded(delivery: Delivery, state: DeliveryState) -> ev.EmailDeliveryRecorded:
    return ev.EmailDeliveryRecorded(
        delivery_key=delivery.delivery_key,
        state=state.value,
        template=delivery.template.value,
        booking_id=delivery.booking_id or "",
        order_id=delivery.order_id or "",
    )
