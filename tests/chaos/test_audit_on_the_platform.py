"""The auditor on the whole platform: real journeys over the public HTTP API audit clean;
then stored state broken on purpose, through a database's owner or a sandbox's own API, is
named with its invariant and ids.

The platform is this module's own (its databases, topics and sandboxes), not the shared
one: the audit reads every store whole, and another suite's deliberate breakage would be
its findings.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from chaos.audit import AuditReport, audit, with_local_defaults
from chaos.auditor.findings import Violation
from chaos.history import HistoryWriter, Kind, Operation
from tests.gateway.api import Api, Org, new_key
from tests.support.infrastructure import Infrastructure
from tests.support.platform import Platform, database, started_platform
from tests.support.sandboxes import SandboxAuth
from tests.support.waiting import eventually

SETTLED_WITHIN_S = 120.0
QUIET = timedelta(seconds=10)  # the bound of the clean audit: work older than this is late


@pytest.fixture(scope="module")
async def platform(
    infra: Infrastructure, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Platform]:
    state = tmp_path_factory.mktemp("chaos_platform") / "state"
    async with started_platform(infra, state) as started:
        yield started


@dataclass
class Customer:
    api: Api
    card: httpx.AsyncClient
    lock: httpx.AsyncClient
    org: Org
    history: HistoryWriter

    def record(self, kind: Kind, answer: httpx.Response | None, **ids: str) -> None:
        status = answer.status_code if answer is not None else 200
        operation = Operation(
            datetime.now(UTC), self.org.owner, kind, status, org_id=self.org.org_id, **ids
        )
        self.history.write(operation)

    async def booking(self, booking_id: str) -> dict[str, Any]:
        path = f"/v1/orgs/{self.org.org_id}/bookings/{booking_id}"
        found: dict[str, Any] = (await self.api.call("GET", path, self.org.owner)).json()
        return found

    async def paid_booking(self, slot_id: str) -> str:
        key = new_key()
        answer = await self.api.book(self.org, slot_id, key=key)
        assert answer.status_code == 201, answer.text
        booking_id = str(answer.json()["booking_id"])
        self.record(Kind.CHECKOUT_CARD, answer, key=key, booking_id=booking_id, slot_id=slot_id)

        async def link() -> str | None:
            payment = (await self.booking(booking_id)).get("payment") or {}
            return payment.get("checkout_url")

        charge_id = str(await eventually(link, SETTLED_WITHIN_S, every=0.5)).rsplit("/", 1)[1]
        paid = await self.card.post(
            f"/_sandbox/payments/{charge_id}/settle", json={"outcome": "succeed"}
        )
        assert paid.status_code == 200, paid.text
        self.record(Kind.PAY, paid, payment_id=charge_id, booking_id=booking_id)
        await eventually(
            lambda: self._in_state(booking_id, "confirmed"), SETTLED_WITHIN_S, every=0.5
        )
        return booking_id

    async def read_pin(self, booking_id: str) -> str:
        path = f"/v1/orgs/{self.org.org_id}/bookings/{booking_id}/access"

        async def pin() -> str | None:
            answer = await self.api.call("GET", path, self.org.owner)
            return answer.json().get("pin") if answer.status_code == 200 else None

        found = str(await eventually(pin, SETTLED_WITHIN_S, every=0.5))
        self.record(Kind.READ_PIN, None, booking_id=booking_id)
        return found

    async def cancel(self, booking_id: str) -> None:
        key = new_key()
        path = f"/v1/orgs/{self.org.org_id}/bookings/{booking_id}/cancel"
        answer = await self.api.call("POST", path, self.org.owner, {}, key)
        assert answer.status_code == 200, answer.text
        self.record(Kind.CANCEL, answer, key=key, booking_id=booking_id)

    async def _in_state(self, booking_id: str, state: str) -> bool:
        return bool((await self.booking(booking_id))["state"] == state)


@pytest.fixture(scope="module")
async def journeys(
    platform: Platform, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Customer, list[str], Path]]:
    """Two card bookings paid on the card sandbox, the first one's PIN read and tried at the
    door, the second cancelled (its money refunded): what the audit reads."""
    history = tmp_path_factory.mktemp("chaos_history") / "history.jsonl"
    control = SandboxAuth()
    env = with_local_defaults(platform.env)
    async with (
        Api.at(platform.gateway) as api,
        httpx.AsyncClient(base_url=env["CARD_GATEWAY_URL"], auth=control, timeout=15) as card,
        httpx.AsyncClient(base_url=env["LOCK_PROVIDER_URL"], auth=control, timeout=15) as lock,
    ):
        studio = await api.studio(slots=2, hours_ahead=1, name=f"Chaos {uuid.uuid4().hex[:6]}")
        org = await api.org(email=f"chaos-{uuid.uuid4().hex[:8]}@example.test")
        with HistoryWriter(history) as writer:
            customer = Customer(api, card, lock, org, writer)
            kept = await customer.paid_booking(studio.slot(0))
            pin = await customer.read_pin(kept)
            opened = await lock.post(
                "/_sandbox/door", json={"device_id": env["ACCESS_DEFAULT_DEVICE"], "pin": pin}
            )
            customer.record(Kind.TRY_DOOR, opened, booking_id=kept)
            cancelled = await customer.paid_booking(studio.slot(1))
            await customer.cancel(cancelled)
            yield customer, [kept, cancelled], history


async def _clean_audit(platform: Platform, history: Path) -> AuditReport | None:
    report = await audit(platform.env, history, bound=QUIET)
    checked = report.checked.get("confirmed_booking_in_window_has_one_code", 0)
    return report if report.clean and checked >= 1 else None


async def test_real_journeys_audit_clean(
    platform: Platform, journeys: tuple[Customer, list[str], Path]
) -> None:
    _, _, history = journeys

    try:
        report = await eventually(
            lambda: _clean_audit(platform, history), SETTLED_WITHIN_S, every=2
        )
    except AssertionError:
        last = await audit(platform.env, history, bound=QUIET)
        raise AssertionError([v.line() for v in last.violations]) from None

    assert report.checks_run > 20
    assert report.to_json()["violations_found"] == 0
    assert {"charge_owned_by_exactly_one", "accepted_operation_reflected_in_the_stores"} <= set(
        report.checked
    )


async def test_stored_state_broken_on_purpose_is_named_with_its_ids(
    platform: Platform, journeys: tuple[Customer, list[str], Path]
) -> None:
    customer, [kept, _], history = journeys
    await eventually(lambda: _clean_audit(platform, history), SETTLED_WITHIN_S, every=2)
    env = with_local_defaults(platform.env)
    async with database(platform, "access") as access:
        grant_id, provision_id, valid_from, valid_to = await (
            await access.execute(
                "SELECT grant_id, provision_id, valid_from, valid_to FROM grants"
                " WHERE booking_id = %s AND state = 'active'",
                (kept,),
            )
        ).fetchone()  # type: ignore[misc]
    # A second code at the lock under the booking's provision, as a provider that applied
    # one create twice would hold it.
    async with httpx.AsyncClient(
        base_url=env["LOCK_PROVIDER_URL"],
        auth=SandboxAuth(env["LOCK_PROVIDER_API_KEY"]),
        timeout=15,
    ) as lock:
        second = await lock.post(
            "/access_codes/create",
            json={
                "device_id": env["ACCESS_DEFAULT_DEVICE"],
                "name": f"{env.get('ACCESS_ALIAS_PREFIX', 'liftfit')}-{provision_id}",
                "starts_at": valid_from.isoformat(),
                "ends_at": valid_to.isoformat(),
            },
        )
        assert second.status_code == 201, second.text
    second_code = second.json()["access_code"]["access_code_id"]

    two_codes = await audit(platform.env, history, bound=timedelta(0))

    [one_code] = _named(two_codes, "confirmed_booking_in_window_has_one_code")
    assert one_code.ids["booking_id"] == kept
    assert second_code in one_code.ids["code_ids"].split(",")
    assert len(one_code.ids["code_ids"].split(",")) == 2

    async with database(platform, "booking") as booking:
        await booking.execute(
            "INSERT INTO pass_ledger (org_id, delta, reason, reference)"
            " VALUES (%s, 3, 'pass_order_paid', %s)",
            (customer.org.org_id, f"order:{uuid.uuid4()}"),
        )
        await booking.execute(
            "UPDATE bookings SET state = 'cancelled' WHERE booking_id = %s", (kept,)
        )
    lost = str(uuid.uuid4())
    customer.record(Kind.CHECKOUT_PASS, None, key=new_key(), booking_id=lost)

    broken = await audit(platform.env, history, bound=timedelta(0))

    live_codes = _named(broken, "no_code_for_a_booking_ended_or_moved")
    assert {(v.ids["booking_id"], v.ids["grant_id"]) for v in live_codes} == {(kept, str(grant_id))}
    assert len({v.ids["code_id"] for v in live_codes}) == 2
    says = live_codes[0].what_each_store_says
    assert says["booking"].startswith("cancelled") and says["access"].startswith("grant active")
    [ledger] = _named(broken, "pass_balance_equals_its_ledger")
    assert ledger.ids == {"org_id": customer.org.org_id}
    assert kept in {v.ids.get("owner") for v in _named(broken, "charge_owned_by_exactly_one")}
    [lost_booking] = _named(broken, "accepted_operation_reflected_in_the_stores")
    assert lost_booking.ids["booking_id"] == lost


def _named(report: AuditReport, invariant: str) -> list[Violation]:
    return [v for v in report.violations if v.invariant == invariant]
