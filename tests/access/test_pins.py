"""The PIN at rest: sealed under a key the database does not hold, readable across a key
rotation, gone once its grant ends, and never in a log line, an event or a timer."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import select

from services.access.adapters import orm
from services.access.adapters.pin_vault import PinVault, SealBroken, Sealed
from services.access.domain.commands import DisclosePin
from services.access.domain.model import GrantState
from services.access.service_layer import handlers
from tests.access.conftest import HarnessFactory, new_key
from tests.access.harness import AccessHarness, Booking
from tests.support.stored import columns_holding


async def _active(access: AccessHarness) -> tuple[Booking, str]:
    booking = await access.confirm()
    await access.run_jobs()
    grant = await access.grant(booking)
    pin = await access.pin(grant)
    assert grant.state is GrantState.ACTIVE and pin
    return booking, pin


async def _sealed(access: AccessHarness) -> list[tuple[str, bytes]]:
    t = orm.credentials.c
    async with access.app.deps.uows.transaction() as uow:
        rows = await uow.session.execute(select(t.key_id, t.ciphertext))
        return [(row.key_id, bytes(row.ciphertext)) for row in rows]


async def _stored_anywhere(access: AccessHarness, pin: str) -> list[str]:
    async with access.app.deps.uows.transaction() as uow:
        return await columns_holding(uow.session, pin)


async def test_the_pin_is_not_readable_from_the_database_without_its_key(
    access: AccessHarness,
) -> None:
    booking, pin = await _active(access)
    assert await _stored_anywhere(access, pin) == []
    [(key_id, ciphertext)] = await _sealed(access)
    assert key_id == "k1" and pin.encode() not in ciphertext
    grant = await access.grant(booking)
    async with access.app.deps.uows.transaction() as uow:
        row = (await uow.session.execute(select(orm.credentials))).one()
    sealed = Sealed(row.key_id, bytes(row.nonce), bytes(row.ciphertext))
    with pytest.raises(SealBroken):
        PinVault([new_key("k1")]).open(sealed, grant.provision_id)  # the right id, another key
    with pytest.raises(SealBroken):  # the ciphertext is bound to its provision
        PinVault(access.app.settings.pin_keys).open(sealed, booking.booking_id)


async def test_the_pin_survives_a_key_rotation_and_is_resealed_under_the_new_key(
    make_access: HarnessFactory,
) -> None:
    first = await make_access()
    booking, pin = await _active(first)
    database, old = first.app.settings.database_url, first.app.settings.pin_keys[0]
    new = new_key("k2")

    rotating = await make_access(database_url=database, pin_keys=(new, old))
    grant = await rotating.grant(booking)
    assert await rotating.pin(grant) == pin  # the old key still opens
    async with rotating.app.deps.uows.transaction() as uow:
        assert await uow.credentials.reseal_batch(100) == 1
    assert [key_id for key_id, _ in await _sealed(rotating)] == ["k2"]

    rotated = await make_access(database_url=database, pin_keys=(new,))
    assert await rotated.pin(grant) == pin
    retired = await make_access(database_url=database, pin_keys=(old,))
    with pytest.raises(SealBroken):
        await retired.pin(grant)


async def test_the_pin_is_gone_after_revocation_and_never_in_a_log_line_or_an_event(
    access: AccessHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    booking, pin = await _active(access)
    command = DisclosePin.of(booking.org_id, booking.booking_id, "anna", "customer_view")
    async with access.app.deps.uows.transaction() as uow:
        view = await handlers.disclose_pin(uow, command)
    assert view.pin == pin and pin not in repr(view)
    await access.faults(timeout_next_deletes=1, hang_seconds=2)  # a log line or two more
    await access.cancel(booking)
    await access.run_jobs()

    assert (await access.grant(booking)).state is GrantState.REVOKED
    assert await _sealed(access) == []
    assert await _stored_anywhere(access, pin) == []  # outbox, timers, incidents included
    assert pin not in caplog.text
