"""The table of who may do what (deploy/boundary.yaml) as servicekit.boundary reads it: the
rules the broker gets, and a table that cannot be meant refused by name."""

from __future__ import annotations

import pytest

from servicekit.boundary import BoundaryError, KafkaRule, principals


def test_a_service_may_write_its_topic_read_its_inputs_in_its_group_and_park_dead_letters() -> None:
    booking = principals()["booking"]
    assert booking.kafka_rules("t1.") == [
        KafkaRule("topic", "t1.booking.events", ("Write", "Describe")),
        KafkaRule("cluster", "kafka-cluster", ("IdempotentWrite",)),
        KafkaRule("topic", "t1.payment.events", ("Read", "Describe")),
        KafkaRule("topic", "t1.payment.events.dlq", ("Write", "Describe")),
        KafkaRule("topic", "t1.access.events", ("Read", "Describe")),
        KafkaRule("topic", "t1.access.events.dlq", ("Write", "Describe")),
        KafkaRule("group", "t1.booking", ("Read", "Describe")),
    ]


def test_the_lag_reader_describes_and_does_nothing_more() -> None:
    rules = principals()["lag-reader"].kafka_rules()
    assert {rule.operations for rule in rules} == {("Describe",)}


def test_no_principal_but_the_writer_may_write_a_services_topic() -> None:
    writers = {
        principal.name
        for principal in principals().values()
        for rule in principal.kafka_rules()
        if rule.name == "payment.events" and "Write" in rule.operations
    }
    assert writers == {"payment"}


def test_notify_may_call_only_access_disclose_pin() -> None:
    assert principals()["notify"].grpc == {"access": ("AccessService/DisclosePin",)}


@pytest.mark.parametrize(
    ("principal", "server", "method", "allowed"),
    [
        ("notify", "access", "/liftfit.access.v1.AccessService/DisclosePin", True),
        ("notify", "access", "/liftfit.access.v1.AccessService/CreateSpace", False),
        ("notify", "access", "/liftfit.ops.v1.OperationsService/ReplayEffect", False),
        ("notify", "booking", "/liftfit.booking.v1.BookingService/GetBooking", False),
        ("booking", "access", "/liftfit.access.v1.AccessService/DisclosePin", False),
        ("booking", "access", "/grpc.health.v1.Health/Check", True),
        ("operator-tools", "payment", "/liftfit.ops.v1.OperationsService/ListOutbox", True),
        ("operator-tools", "payment", "/liftfit.payment.v1.PaymentService/GetPayment", False),
        ("gateway", "notify", "/liftfit.notify.v1.NotifyService/ListMessages", True),
    ],
)
def test_the_table_names_who_may_call_which_method(
    principal: str, server: str, method: str, allowed: bool
) -> None:
    assert principals()[principal].may_call(server, method) is allowed


def test_only_the_gateway_may_speak_for_users() -> None:
    assert [p.name for p in principals().values() if p.speaks_for_users] == ["gateway"]


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ("principals: {x: {kafka: {reads: [a]}}}", "x.kafka: reads topics but names no group"),
        ("principals: {x: {kafak: {}}}", "x: unknown keys ['kafak']"),
        ("principals: {x: {kafka: {writes: [a], owns: [b]}}}", "x.kafka: unknown keys ['owns']"),
        ("principals: [x]", "principals: expected a mapping"),
        ("principals: {x: {grpc: {access: [DisclosePin]}}}", "is not Service/Method"),
    ],
)
def test_a_table_that_cannot_be_meant_is_refused_by_name(table: str, named: str) -> None:
    with pytest.raises(BoundaryError, match=named.replace("[", r"\[").replace("]", r"\]")):
        principals(table)


def test_the_gateway_follows_the_events_about_bookings_reading_only() -> None:
    """No group, no dead letters, no write: what its booking cache needs, nothing more."""
    assert principals()["gateway"].kafka_rules("t1.") == [
        KafkaRule("topic", "t1.booking.events", ("Read", "Describe")),
        KafkaRule("topic", "t1.payment.events", ("Read", "Describe")),
        KafkaRule("topic", "t1.access.events", ("Read", "Describe")),
        KafkaRule("topic", "*", ("Describe",)),
        KafkaRule("group", "*", ("Describe",)),
    ]
