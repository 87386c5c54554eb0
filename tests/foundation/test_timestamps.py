"""servicekit.protobuf.timestamp gives exactly what protobuf's FromDatetime gives."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.notify.v1 import notify_pb2 as npb

from servicekit.protobuf import timestamp


def test_a_moment_becomes_the_timestamp_protobuf_makes_of_it_in_any_zone_or_none() -> None:
    chance = random.Random(10)
    for i in range(20_000):
        at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(
            seconds=chance.randint(-2_000_000_000, 4_000_000_000),
            microseconds=chance.randint(0, 999_999),
        )
        if i % 3 == 0:
            at = at.astimezone(timezone(timedelta(minutes=chance.randint(-720, 840))))
        if i % 5 == 0:
            at = at.replace(tzinfo=None)  # naive: taken as UTC by both
        expected = Timestamp()
        expected.FromDatetime(at)
        assert timestamp(at) == expected, at
    assert timestamp(None) is None


def test_a_moment_that_is_not_there_leaves_the_field_unset_not_at_1970() -> None:
    delivery = npb.Delivery(delivery_key="k", sent_at=timestamp(None))
    assert not delivery.HasField("sent_at")
    assert not json_format.MessageToDict(delivery).get("sentAt")
