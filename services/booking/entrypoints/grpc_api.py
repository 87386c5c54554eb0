"""The BookingService gRPC servicer: requests in, one unit of work each, replies out.

Domain errors are mapped here, once, to a status code and the contract's reason, which the
gateway turns into its problem details.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from liftfit.booking.v1 import booking_pb2 as pb
from liftfit.booking.v1 import booking_pb2_grpc

from servicekit.grpc_server import abort_with_reason
from services.booking.domain import errors
from services.booking.domain.commands import (
    CancelBooking,
    Checkout,
    CreateSpace,
    RescheduleBooking,
    identifier,
)
from services.booking.entrypoints import protobuf as pbx
from services.booking.service_layer import handlers, operations
from services.booking.service_layer.unit_of_work import UnitOfWorkFactory

Context = grpc.aio.ServicerContext[Any, Any]
Request = TypeVar("Request")
Reply = TypeVar("Reply")
Method = Callable[[Any, Request, Context], Awaitable[Reply]]

STATUS_OF: dict[type[errors.DomainError], grpc.StatusCode] = {
    errors.SlotUnavailable: grpc.StatusCode.FAILED_PRECONDITION,
    errors.IdempotencyConflict: grpc.StatusCode.ALREADY_EXISTS,
    errors.InsufficientPassBalance: grpc.StatusCode.FAILED_PRECONDITION,
    errors.BookingNotCancellable: grpc.StatusCode.FAILED_PRECONDITION,
    errors.BookingNotReschedulable: grpc.StatusCode.FAILED_PRECONDITION,
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
}


def domain_errors_as_status(method: Method[Request, Reply]) -> Method[Request, Reply]:
    @functools.wraps(method)
    async def mapped(self: Any, request: Request, context: Context) -> Reply:
        try:
            return await method(self, request, context)
        except errors.InvalidRequest as error:
            # The field goes back too, so the gateway can name it in its problem details.
            named = {"field": error.field} if error.field else {}
            await abort_with_reason(
                context, grpc.StatusCode.INVALID_ARGUMENT, error.reason, str(error), metadata=named
            )
            raise AssertionError("abort always raises") from error
        except errors.DomainError as error:
            status = STATUS_OF.get(type(error), grpc.StatusCode.FAILED_PRECONDITION)
            await abort_with_reason(context, status, error.reason, str(error))
            raise AssertionError("abort always raises") from error

    return mapped


class BookingServicer(booking_pb2_grpc.BookingServiceServicer):
    def __init__(self, uows: UnitOfWorkFactory) -> None:
        self._uows = uows

    @domain_errors_as_status
    async def Checkout(self, request: pb.CheckoutRequest, context: Context) -> pb.BookingReply:
        command = Checkout.of(
            request.org_id,
            request.user,
            request.idempotency_key,
            request.slot_id,
            request.party_size,
            request.payment_mode,
        )
        async with self._uows.transaction() as uow:
            return pbx.reply(await handlers.checkout(uow, command))

    @domain_errors_as_status
    async def CancelBooking(
        self, request: pb.CancelBookingRequest, context: Context
    ) -> pb.BookingReply:
        command = CancelBooking(
            request.org_id, request.user, request.idempotency_key, request.booking_id
        )
        async with self._uows.transaction() as uow:
            return pbx.reply(await handlers.cancel_booking(uow, command))

    @domain_errors_as_status
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

    @domain_errors_as_status
    async def GetBooking(self, request: pb.GetBookingRequest, context: Context) -> pb.Booking:
        org_id = identifier("org_id", request.org_id)
        booking_id = identifier("booking_id", request.booking_id)
        async with self._uows.transaction() as uow:
            booking = await uow.bookings.get_in_org(org_id, booking_id)
            return pbx.booking_message(booking)

    @domain_errors_as_status
    async def ListBookings(
        self, request: pb.ListBookingsRequest, context: Context
    ) -> pb.ListBookingsResponse:
        org_id = identifier("org_id", request.org_id)
        async with self._uows.transaction() as uow:
            found = await uow.bookings.of_org(org_id)
            return pb.ListBookingsResponse(bookings=[pbx.booking_message(b) for b in found])

    @domain_errors_as_status
    async def GetPassBalance(
        self, request: pb.GetPassBalanceRequest, context: Context
    ) -> pb.PassBalance:
        org_id = identifier("org_id", request.org_id)
        async with self._uows.transaction() as uow:
            balance = await uow.passes.balance(org_id)
            ledger = await uow.passes.ledger(org_id)
            return pbx.pass_balance_message(org_id, balance, ledger)

    @domain_errors_as_status
    async def ListSpaces(
        self, request: pb.ListSpacesRequest, context: Context
    ) -> pb.ListSpacesResponse:
        async with self._uows.transaction() as uow:
            found = await uow.spaces.all()
            return pb.ListSpacesResponse(spaces=[pbx.space_message(s) for s in found])

    @domain_errors_as_status
    async def ListSlots(
        self, request: pb.ListSlotsRequest, context: Context
    ) -> pb.ListSlotsResponse:
        query = pbx.slot_query(request)
        async with self._uows.transaction() as uow:
            found = await uow.slots.in_space(query.space_id, query.since, query.until)
            return pb.ListSlotsResponse(slots=[pbx.slot_message(s) for s in found])

    @domain_errors_as_status
    async def CreateSpace(self, request: pb.CreateSpaceRequest, context: Context) -> pb.Space:
        command = CreateSpace(request.name, request.timezone)
        async with self._uows.transaction() as uow:
            return pbx.space_message(await operations.create_space(uow, command))

    @domain_errors_as_status
    async def CreateSlots(
        self, request: pb.CreateSlotsRequest, context: Context
    ) -> pb.CreateSlotsResponse:
        space_id, new_slots = pbx.new_slots_of(request)
        async with self._uows.transaction() as uow:
            created = await operations.create_slots(uow, space_id, new_slots)
            return pb.CreateSlotsResponse(slots=[pbx.slot_message(s) for s in created])

    @domain_errors_as_status
    async def CloseSlot(self, request: pb.CloseSlotRequest, context: Context) -> pb.Slot:
        slot_id = identifier("slot_id", request.slot_id)
        async with self._uows.transaction() as uow:
            return pbx.slot_message(await operations.close_slot(uow, slot_id))

    @domain_errors_as_status
    async def SetSlotPrice(self, request: pb.SetSlotPriceRequest, context: Context) -> pb.Slot:
        slot_id = identifier("slot_id", request.slot_id)
        price = pbx.price_of(request.price)
        async with self._uows.transaction() as uow:
            return pbx.slot_message(await operations.set_slot_price(uow, slot_id, price))


def registration(servicer: BookingServicer) -> Callable[[grpc.aio.Server], None]:
    def register(server: grpc.aio.Server) -> None:
        booking_pb2_grpc.add_BookingServiceServicer_to_server(servicer, server)

    return register
