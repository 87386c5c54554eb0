"""Every refusal of every service travels the same way: its kind's one status code, and an
ErrorInfo with its reason and the service's error domain."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from types import ModuleType

import grpc
import pytest
from google.protobuf.descriptor import EnumDescriptor
from google.rpc import error_details_pb2, status_pb2
from liftfit.access.v1 import access_pb2
from liftfit.booking.v1 import booking_pb2
from liftfit.notify.v1 import notify_pb2
from liftfit.ops.v1 import operations_pb2
from liftfit.payment.v1 import payment_pb2

from servicekit import operations, refusals
from servicekit.errors import INTERCEPTOR_REASONS, STATUS_OF_KIND, status_for
from servicekit.operations import requests as ops_requests
from servicekit.operations.servicer import ERROR_DOMAIN as OPS_DOMAIN
from servicekit.refusals import IdempotencyConflict, Refusal
from services.access import bootstrap as access
from services.access.domain import errors as access_errors
from services.booking import bootstrap as booking
from services.booking.domain import errors as booking_errors
from services.notify import bootstrap as notify
from services.notify.domain import errors as notify_errors
from services.payment import bootstrap as payment
from services.payment.domain import errors as payment_errors

SERVICES: dict[str, tuple[ModuleType, str]] = {
    "access": (access_errors, access.ERROR_DOMAIN),
    "booking": (booking_errors, booking.ERROR_DOMAIN),
    "payment": (payment_errors, payment.ERROR_DOMAIN),
    "notify": (notify_errors, notify.ERROR_DOMAIN),
}
# Where each service's proto declares the reasons its refusals may carry.
DECLARED: dict[str, EnumDescriptor] = {
    "access": access_pb2.DESCRIPTOR.enum_types_by_name["AccessRefusal"],
    "booking": booking_pb2.DESCRIPTOR.enum_types_by_name["BookingRefusal"],
    "payment": payment_pb2.DESCRIPTOR.enum_types_by_name["PaymentRefusal"],
    "notify": notify_pb2.DESCRIPTOR.enum_types_by_name["NotifyRefusal"],
}
# The operators' view, served by every service beside its own API, gives only shared refusals.
OPS_REFUSALS = sorted(ops_requests.REFUSALS, key=lambda kind: kind.__qualname__)
OPS_DECLARED = operations_pb2.DESCRIPTOR.enum_types_by_name["OpsRefusal"]


def declared_reasons(enum: EnumDescriptor) -> set[str]:
    """BOOKING_REFUSAL_SLOT_UNAVAILABLE declares "slot_unavailable"."""
    prefix = enum.values[0].name.removesuffix("UNSPECIFIED")
    return {value.name.removeprefix(prefix).lower() for value in enum.values[1:]}


def undeclared(service: str, kinds: list[type[Refusal]], declared: set[str]) -> list[str]:
    """What the gateway could not map: a reason the service can give but its proto omits."""
    given = {kind.reason for kind in kinds} | set(INTERCEPTOR_REASONS)
    return [f"{service} can refuse with {reason!r}, undeclared" for reason in given - declared]


def refusals_of(module: ModuleType) -> list[type[Refusal]]:
    """Every refusal a service can raise: its own, and the ones every service shares."""
    found = {
        value
        for source in (module, refusals)
        for value in vars(source).values()
        if inspect.isclass(value) and issubclass(value, Refusal) and value is not Refusal
    }
    return sorted(found, key=lambda kind: kind.__qualname__)


def an_instance(kind: type[Refusal]) -> Refusal:
    return kind("an example id")


def _info(status: grpc.Status) -> error_details_pb2.ErrorInfo:
    [(key, value)] = status.trailing_metadata
    assert key == "grpc-status-details-bin"
    details = status_pb2.Status.FromString(value)
    assert details.code == status.code.value[0] and details.message == status.details
    info = error_details_pb2.ErrorInfo()
    [packed] = details.details
    assert packed.Unpack(info)
    return info


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_refusal_maps_to_its_kinds_status_with_its_reason_and_domain(service: str) -> None:
    module, domain = SERVICES[service]
    kinds = refusals_of(module)
    # The module is the service's whole list: the shared refusals and at least one of its own.
    assert len(kinds) > len(refusals_of(refusals)), kinds
    for kind in kinds:
        refusal = an_instance(kind)
        status = status_for(refusal, domain)
        assert status.code == STATUS_OF_KIND[kind.kind], kind
        info = _info(status)
        assert (info.reason, info.domain) == (kind.reason, domain), kind
        assert info.reason and info.reason != Refusal.reason, f"{kind} declares no reason"
        assert dict(info.metadata) == refusal.metadata


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_reason_a_service_can_give_is_declared_in_its_proto(service: str) -> None:
    module, _ = SERVICES[service]
    assert undeclared(service, refusals_of(module), declared_reasons(DECLARED[service])) == []


def test_a_refusal_whose_reason_the_proto_does_not_declare_fails_the_contract() -> None:
    class Invented(Refusal, reason="an_invented_reason"):
        """A refusal added to the code and forgotten in the proto."""

    kinds = [*refusals_of(booking_errors), Invented]
    found = undeclared("booking", kinds, declared_reasons(DECLARED["booking"]))
    assert found == ["booking can refuse with 'an_invented_reason', undeclared"]


def test_an_idempotency_conflict_has_one_status_code_in_every_service() -> None:
    codes = {
        status_for(kind("k"), domain).code
        for module, domain in SERVICES.values()
        for kind in refusals_of(module)
        if issubclass(kind, IdempotencyConflict)
    }
    assert codes == {grpc.StatusCode.ALREADY_EXISTS}


def test_a_refusal_of_a_kind_without_a_status_cannot_exist() -> None:
    assert {kind for kind in STATUS_OF_KIND} == set(type(next(iter(STATUS_OF_KIND))))


def test_every_refusal_of_the_operators_view_maps_to_its_status_in_the_ops_domain() -> None:
    for kind in OPS_REFUSALS:
        refusal = an_instance(kind)
        status = status_for(refusal, OPS_DOMAIN)
        assert status.code == STATUS_OF_KIND[kind.kind], kind
        assert (_info(status).reason, _info(status).domain) == (kind.reason, "liftfit.ops")


def test_every_reason_the_operators_view_can_give_is_declared_in_its_proto() -> None:
    assert undeclared("ops", OPS_REFUSALS, declared_reasons(OPS_DECLARED)) == []


def test_a_refusal_the_operators_view_gives_but_its_proto_omits_fails_the_contract() -> None:
    kinds = [*OPS_REFUSALS, refusals.IdempotencyConflict]
    found = undeclared("ops", kinds, declared_reasons(OPS_DECLARED))
    assert found == ["ops can refuse with 'idempotency_conflict', undeclared"]


def raised_refusals(package: ModuleType) -> set[type[Refusal]]:
    """The refusals the modules of a package raise by name (`raise NotFound(...)`)."""
    found = set()
    for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                kind = getattr(module, getattr(node.exc.func, "id", ""), None)
                if inspect.isclass(kind) and issubclass(kind, Refusal):
                    found.add(kind)
    return found


def test_the_operators_view_lists_every_refusal_its_modules_raise() -> None:
    raised = raised_refusals(operations)
    assert refusals.NotFound in raised  # the scan sees the servicer's own raises
    assert raised <= set(OPS_REFUSALS)
