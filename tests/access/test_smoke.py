from __future__ import annotations

from datetime import timedelta

from tests.access.harness import AccessHarness


async def test_smoke(access: AccessHarness) -> None:
    booking = await access.confirm()
    await access.run_jobs()
    grant = await access.grant(booking)
    assert grant.state == "active", await access.timers()
    pin = await access.pin(grant)
    assert pin
    assert await access.opens(pin, booking.window.valid_from + timedelta(minutes=1))
    await access.cancel(booking)
    await access.run_jobs()
    grant = await access.grant(booking)
    assert grant.state == "revoked", await access.timers()
    assert not await access.opens(pin, booking.window.valid_from + timedelta(minutes=1))
