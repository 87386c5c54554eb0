"""The gateway's memory of bookings it read lately (gateway_bff.booking_cache): how long an
answer is kept, and that no read which overlapped a change is kept."""

from __future__ import annotations

import uuid

from gateway_bff.booking_cache import BookingCache


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _read(cache: BookingCache, org: str, booking: str, body: bytes) -> None:
    cache.finish_reading(cache.start_reading(booking), org, body)


def test_an_answer_is_kept_for_its_time_to_live_and_no_longer() -> None:
    clock, booking = Clock(), str(uuid.uuid4())
    cache = BookingCache(ttl_s=1.0, clock=clock)
    _read(cache, "org-a", booking, b"confirmed")
    clock.now += 0.999
    kept = cache.get("org-a", booking)
    assert kept is not None and kept.body == b"confirmed"
    assert round(kept.age_s(clock.now), 3) == 0.999
    clock.now += 0.001
    assert cache.get("org-a", booking) is None
    assert len(cache) == 0


def test_another_organisation_is_never_answered_from_memory() -> None:
    booking = str(uuid.uuid4())
    cache = BookingCache(ttl_s=60.0, clock=Clock())
    _read(cache, "org-a", booking, b"a's booking")
    assert cache.get("org-b", booking) is None
    assert cache.get("org-a", booking) is not None


def test_a_change_heard_forgets_the_answer() -> None:
    booking = str(uuid.uuid4())
    cache = BookingCache(ttl_s=60.0, clock=Clock())
    _read(cache, "org-a", booking, b"pending")
    cache.forget(booking)
    assert cache.get("org-a", booking) is None


def test_a_read_that_overlapped_a_change_is_not_kept() -> None:
    """It may have read the state before the change, whose event has gone by."""
    booking = str(uuid.uuid4())
    cache = BookingCache(ttl_s=60.0, clock=Clock())
    before, unrelated = cache.start_reading(booking), cache.start_reading(str(uuid.uuid4()))
    cache.forget(booking)
    after = cache.start_reading(booking)
    cache.finish_reading(before, "org-a", b"pending")
    assert cache.get("org-a", booking) is None
    cache.finish_reading(after, "org-a", b"confirmed")
    kept = cache.get("org-a", booking)
    assert kept is not None and kept.body == b"confirmed"
    cache.finish_reading(unrelated, "org-a", b"other")
    assert len(cache) == 2


def test_forgetting_everything_reaches_reads_under_way() -> None:
    booking = str(uuid.uuid4())
    cache = BookingCache(ttl_s=60.0, clock=Clock())
    _read(cache, "org-a", str(uuid.uuid4()), b"kept")
    under_way = cache.start_reading(booking)
    cache.forget_all()
    cache.finish_reading(under_way, "org-a", b"pending")
    assert len(cache) == 0


def test_a_failed_read_keeps_nothing_and_the_oldest_answer_goes_first() -> None:
    cache = BookingCache(ttl_s=60.0, max_entries=2, clock=Clock())
    first, second, third = (str(uuid.uuid4()) for _ in range(3))
    cache.finish_reading(cache.start_reading(first), None, None)
    assert len(cache) == 0
    for booking in (first, second, third):
        _read(cache, "org-a", booking, booking.encode())
    assert cache.get("org-a", first) is None
    assert cache.get("org-a", second) is not None and cache.get("org-a", third) is not None


def test_a_time_to_live_of_zero_keeps_nothing() -> None:
    booking = str(uuid.uuid4())
    cache = BookingCache(ttl_s=0, clock=Clock())
    _read(cache, "org-a", booking, b"pending")
    assert not cache.enabled and cache.get("org-a", booking) is None
