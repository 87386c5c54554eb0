"""The BookingService gRPC servicer: requests in, one unit of work each, replies out.

A refusal raised anywhere below reaches the caller as its rich status through the server's
interceptor (servicekit.errors), the same way in every service.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from liftfit.booking.v1 import booking_pb2 as pb
from liftfit.booking.v1 import booking_pb2_grpc

from servicekit.contacts import Contact
from services.booking.domain.commands import (
    CancelBooking,
    Checkout,
    CreateSpace,
    RescheduleBooking,
    identifier,
)
from services.booking.entrypoints import protobuf as pbx
from services.booking.service_layer import handlers, operations
from services.booking.service_layer.unit_of_work import (
    UnitOfWorkFactory,
    checkout_transaction,
)

Context = grpc.aio.ServicerContext[Any, Any]


class BookingServicer(booking_pb2_grpc.BookingServiceServicer):
    def __init__(self, uows: UnitOfWorkFactory) -> None:
        self._uows = uows

    async def Checkout(self, request: pb.CheckoutRequest, context: Context) -> pb.BookingReply:
        command = Checkout.of(
            request.org_id,
            request.user,
            request.idempotency_key,
            request.slot_id,
            request.party_size,
            request.payment_mode,
            Contact.checked(request.contact),
        )
        async with checkout_transaction(self._uows, command.payment_mode) as uow:
            return pbx.reply(await handlers.checkout(uow, command))

    async def CancelBooking(
        self, request: pb.CancelBookingRequest, context: Context
    ) -> pb.BookingReply:
        command = CancelBooking(
            request.org_id, request.user, request.idempotency_key, request.booking_id
        )
        async with self._uows.transaction() as uow:
            return pbx.reply(await handlers.cancel_booking(uow, command))

    async def RescheduleBooking(
        self, request: pb.RescheduleBookingRequest, context: Context
    ) -> pb.BookingReply:
        command = RescheduleBooking(
            request.org_id,
            request.user,
            request.idempotency_key,
            request.booking_id,
            request.new_slot_id,
        )
        async with self._uows.transaction() as uow:
            return pbx.reply(await handlers.reschedule_booking(uow, command))

    async def GetBooking(self, request: pb.GetBookingRequest, context: Context) -> pb.Booking:
        org_id = identifier("org_id", request.org_id)
        booking_id = identifier("booking_id", request.booking_id)
        # One statement, consistent by itself: it needs neither a transaction nor an ORM
        # session, which cost more than the read (1.55 ms of CPU per call with them).
        async with self._uows.transaction_on_driver() as uow:
            booking = await uow.bookings.get_in_org(org_id, booking_id)
            return pbx.booking_message(booking)

    async def ListBookings(
        self, request: pb.ListBookingsRequest, context: Context
    ) -> pb.ListBookingsResponse:
        org_id = identifier("org_id", request.org_id)
        async with self._uows.transaction() as uow:
            found = await uow.bookings.of_org(org_id)
            return pb.ListBookingsResponse(bookings=[pbx.booking_message(b) for b in found])

    async def GetPassBalance(
        self, request: pb.GetPassBalanceRequest, context: Context
    ) -> pb.PassBalance:
        org_id = identifier("org_id", request.org_id)
        async with self._uows.transaction() as uow:
            balance = await uow.passes.balance(org_id)
            ledger = await uow.passes.ledger(org_id)
            return pbx.pass_balance_message(org_id, balance, ledger)

    async def ListSpaces(
        self, request: pb.ListSpacesRequest, context: Context
    ) -> pb.ListSpacesResponse:
        async with self._uows.transaction() as uow:
            found = await uow.spaces.all()
            return pb.ListSpacesResponse(spaces=[pbx.space_message(s) for s in found])

    async def ListSlots(
        self, request: pb.ListSlotsRequest, context: Context
    ) -> pb.ListSlotsResponse:
        query = pbx.slot_query(request)
        async with self._uows.transaction() as uow:
            found = await uow.slots.in_space(query.space_id, query.since, query.until)
            return pb.ListSlotsResponse(slots=[pbx.slot_message(s) for s in found])

    async def CreateSpace(self, request: pb.CreateSpaceRequest, context: Context) -> pb.Space:
        command = CreateSpace(request.name, request.timezone)
        async with self._uows.transaction() as uow:
            return pbx.space_message(await operations.create_space(uow, command))

    async def CreateSlots(
        self, request: pb.CreateSlotsRequest, context: Context
    ) -> pb.CreateSlotsResponse:
        space_id, new_slots = pbx.new_slots_of(request)
        async with self._uows.transaction() as uow:
            created = await operations.create_slots(uow, space_id, new_slots)
            return pb.CreateSlotsResponse(slots=[pbx.slot_message(s) for s in created])

    async def CloseSlot(self, request: pb.CloseSlotRequest, context: Context) -> pb.Slot:
        slot_id = identifier("slot_id", request.slot_id)
        async with self._uows.transaction() as uow:
            return pbx.slot_message(await operations.close_slot(uow, slot_id))

    async def SetSlotPrice(self, request: pb.SetSlotPriceRequest, context: Context) -> pb.Slot:
        slot_id = identifier("slot_id", request.slot_id)
        price = pbx.price_of(request.price)
        async with self._uows.transaction() as uow:
            return pbx.slot_message(await operations.set_slot_price(uow, slot_id, price))


def registration(servicer: BookingServicer) -> Callable[[grpc.aio.Server], None]:
    def register(server: grpc.aio.Server) -> None:
        booking_pb2_grpc.add_BookingServiceServicer_to_server(servicer, server)

    return register
