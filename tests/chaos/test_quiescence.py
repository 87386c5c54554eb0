"""Waiting for quiescence is bounded: when the bound passes, the failure names what is still
pending (outbox rows, a group's lag, due timers, a source that could not be read)."""

from __future__ import annotations

import pytest

from chaos.quiescence import NotQuiescent, Pending, Quiescence

SETTINGS = {
    **{
        f"{service}_DATABASE_URL": "postgresql+psycopg://nobody:nothing@127.0.0.1:9/none"
        for service in ("BOOKING", "PAYMENT", "ACCESS", "NOTIFY")
    },
    "KAFKA_BOOTSTRAP": "127.0.0.1:9",
    "TOPIC_PREFIX": "t1.",
    "LAG_READER_KAFKA_PASSWORD": "secret",
}
BUSY = Pending(
    outbox={"booking": 2, "payment": 0},
    lag={"t1.notify": 5, "t1.access": 0},
    due_timers={"payment": 1},
    unread={"access database": "OperationalError: connection refused"},
)


class Reading(Quiescence):
    """Reads the given readings one after another, the last one for ever."""

    def __init__(self, *readings: Pending) -> None:
        super().__init__(SETTINGS)  # nothing connects until a read
        self.readings = list(readings)

    async def read(self) -> Pending:
        return self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]


def test_only_nothing_pending_and_everything_read_is_quiet() -> None:
    quiet = Pending({"booking": 0}, {"t1.notify": 0}, {"payment": 0}, {})
    assert quiet.quiet and str(quiet) == "quiet"
    assert not BUSY.quiet
    assert not Pending({}, {}, {}, {"broker": "BrokerUnreachable"}).quiet


async def test_the_wait_ends_at_the_first_quiet_reading() -> None:
    quiet = Pending({"booking": 0}, {}, {}, {})
    reading = Reading(BUSY, BUSY, quiet)
    assert await reading.wait(within=30, every=0.01) == quiet
    await reading.close()


async def test_a_wait_past_its_bound_names_what_is_still_pending() -> None:
    reading = Reading(BUSY)
    with pytest.raises(NotQuiescent) as failed:
        await reading.wait(within=0.05, every=0.01)
    await reading.close()
    assert failed.value.pending == BUSY
    assert str(failed.value) == (
        "not quiescent within 0.05 s: booking outbox: 2 pending; group t1.notify: lag 5; "
        "payment timers: 1 due; access database unread: OperationalError: connection refused"
    )
