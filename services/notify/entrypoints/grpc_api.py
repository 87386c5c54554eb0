"""The NotifyService gRPC servicer: requests checked, one unit of work each, replies out.

A refusal raised anywhere below reaches the caller as its rich status through the server's
interceptor (servicekit.errors), the same way in every service.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from liftfit.notify.v1 import notify_pb2 as pb
from liftfit.notify.v1 import notify_pb2_grpc

from servicekit import protobuf
from servicekit.commands import identifier, state_filter
from servicekit.protobuf import timestamp
from services.notify.domain.commands import (
    INCIDENT_STATES,
    UNDECIDED_STATES,
    DecideDelivery,
    DeliveriesOf,
)
from services.notify.domain.model import Delivery
from services.notify.service_layer import handlers
from services.notify.service_layer.unit_of_work import UnitOfWorkFactory

Context = grpc.aio.ServicerContext[Any, Any]


def delivery_message(delivery: Delivery) -> pb.Delivery:
    return pb.Delivery(
        delivery_key=delivery.delivery_key,
        state=delivery.state.value,
        template=delivery.template.value,
        recipient=delivery.recipient,
        locale=delivery.locale,
        booking_id=delivery.booking_id or "",
        order_id=delivery.order_id or "",
        message_id=delivery.message_id,
        tries=delivery.tries,
        last_error=delivery.last_error,
        source=delivery.source,
        created_at=timestamp(delivery.created_at),
        updated_at=timestamp(delivery.updated_at),
        sent_at=timestamp(delivery.sent_at),
    )


def deliveries_message(found: list[Delivery]) -> pb.ListDeliveriesResponse:
    return pb.ListDeliveriesResponse(deliveries=[delivery_message(d) for d in found])


class NotifyServicer(notify_pb2_grpc.NotifyServiceServicer):
    def __init__(self, uows: UnitOfWorkFactory) -> None:
        self._uows = uows

    async def GetDelivery(self, request: pb.GetDeliveryRequest, context: Context) -> pb.Delivery:
        key = identifier("delivery_key", request.delivery_key)
        async with self._uows.transaction() as uow:
            return delivery_message(await handlers.get_delivery(uow, key))

    async def ListDeliveries(
        self, request: pb.ListDeliveriesRequest, context: Context
    ) -> pb.ListDeliveriesResponse:
        query = DeliveriesOf(request.booking_id, request.order_id)
        async with self._uows.transaction() as uow:
            return deliveries_message(await handlers.list_deliveries(uow, query))

    async def ListUndecidedDeliveries(
        self, request: pb.ListUndecidedDeliveriesRequest, context: Context
    ) -> pb.ListDeliveriesResponse:
        state = state_filter(request.state, UNDECIDED_STATES)
        async with self._uows.transaction() as uow:
            return deliveries_message(await handlers.list_undecided(uow, state))

    async def DecideDelivery(
        self, request: pb.DecideDeliveryRequest, context: Context
    ) -> pb.Delivery:
        command = DecideDelivery.of(
            request.delivery_key, request.decision, request.operator, request.note
        )
        async with self._uows.transaction() as uow:
            decided = await handlers.decide_delivery(uow, command)
        return delivery_message(decided)

    async def ListIncidents(
        self, request: pb.ListIncidentsRequest, context: Context
    ) -> pb.ListIncidentsResponse:
        state = state_filter(request.state, INCIDENT_STATES)
        async with self._uows.transaction() as uow:
            found = await handlers.list_incidents(uow, state)
        return pb.ListIncidentsResponse(
            incidents=[protobuf.incident(pb.Incident, i) for i in found]
        )


def registration(servicer: NotifyServicer) -> Callable[[grpc.aio.Server], None]:
    def register(server: grpc.aio.Server) -> None:
        notify_pb2_grpc.add_NotifyServiceServicer_to_server(servicer, server)

    return register
