"""The soak's injectors on a platform of this test's own (scripts/platform.sh with its own
databases, topics, ports and state folder; the shared one is not disturbed): booking killed
stops answering its health check and serves again once `platform.sh up` restarted it;
notify stopped does not answer until it is continued; the mail sandbox refuses a mail with
a 4xx while its fault is on and takes it once healed. Faults left applied, as a crashed run
would leave them (notify stopped, the mail sandbox killed, the card gateway dropping
notifications), end when everything is healed; every action is in the journal, and the
platform comes to rest: outboxes empty, no consumer behind, no timer due."""

from __future__ import annotations

import random
import smtplib
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from chaos.driver import inject
from chaos.faults import HEALING, Chaos, settings_of
from chaos.journal import Journal
from chaos.quiescence import Quiescence
from chaos.schedule import (
    CARD_GATEWAY,
    LOCK_PROVIDER,
    MAIL_SANDBOX,
    FaultKind,
    PlannedFault,
    plan,
)
from tests.gateway.api import Api
from tests.sandboxes.test_mail import access_mail, recipient, send
from tests.support import tls
from tests.support.health import FAST_RECONNECT
from tests.support.infrastructure import Infrastructure
from tests.support.platform import Platform, started_platform
from tests.support.sandboxes import MailSandbox
from tests.support.waiting import eventually

CHECK_TIMEOUT_S = 2.0
DROPPED = {"drop_notifications": True}
REFUSED = {"refuse_next": 1000, "refuse_code": 451, "refuse_at": "data"}  # whatever notify sends
QUIESCENT_WITHIN_S = 180.0
SHORTENED_S = 3.0


async def serving(platform: Platform, service: str) -> bool:
    """The service's health check answers SERVING in time (as an orchestrator's probe)."""
    target = platform.address(f"{service.upper()}_GRPC_ADDRESS")
    async with tls.bare_channel(target, options=FAST_RECONNECT) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=CHECK_TIMEOUT_S)
        except grpc.aio.AioRpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


async def notify_behind(quiescence: Quiescence, platform: Platform) -> bool:
    pending = await quiescence.read()
    return pending.lag.get(f"{platform.env['TOPIC_PREFIX']}notify", 0) > 0


async def comes_to_rest(quiescence: Quiescence) -> None:
    """Waits, with a bound, for every outbox, group and timer table of the platform."""
    try:
        rest = await quiescence.wait(QUIESCENT_WITHIN_S)
    finally:
        await quiescence.close()
    assert rest.quiet
    assert set(rest.outbox) == set(rest.due_timers) == {"booking", "payment", "access", "notify"}


def mail_sandbox(platform: Platform) -> MailSandbox:
    return MailSandbox(
        platform.url("MAIL_SANDBOX_HTTP_PORT"), "127.0.0.1", int(platform.env["MAIL_SMTP_PORT"])
    )


@pytest.mark.timeout(900)
async def test_faults_are_seen_then_healed_what_a_crashed_run_left_is_healed_and_all_rests(
    infra: Infrastructure, tmp_path: Path
) -> None:
    async with started_platform(infra, tmp_path / "state") as platform:
        journal = Journal(tmp_path / "faults.jsonl")
        chaos = Chaos(platform, journal)
        quiescence = Quiescence(settings_of(platform))

        async def attempt(fault: PlannedFault, action: str) -> None:
            injector = chaos.injectors[fault.kind]
            act = injector.apply(fault) if action == "apply" else injector.heal(fault)
            assert await journal.attempt(fault.kind, fault.target, action, act), journal.lines()

        async def booking_down() -> bool:
            return not await serving(platform, "booking")

        async def notify_down() -> bool:
            return not await serving(platform, "notify")

        kill = PlannedFault(0.0, FaultKind.PROCESS_KILL, "booking", 0.0)
        killed_pid = platform.pid("booking")
        assert await serving(platform, "booking")
        await attempt(kill, "apply")
        await eventually(booking_down, within=10)
        await attempt(kill, "heal")
        assert await eventually(lambda: serving(platform, "booking"), within=30)
        assert platform.pid("booking") != killed_pid

        pause = PlannedFault(0.0, FaultKind.CONSUMER_PAUSE, "notify", 0.0)
        assert await serving(platform, "notify")
        await attempt(pause, "apply")
        await eventually(notify_down, within=10)
        # A SpaceCreated on booking.events, which notify reads: its group falls behind.
        async with Api.at(platform.gateway) as api:
            await api.studio(slots=1)
        await eventually(lambda: notify_behind(quiescence, platform), within=60, every=0.5)
        await attempt(pause, "heal")
        assert await eventually(lambda: serving(platform, "notify"), within=30)

        refusal = PlannedFault(0.0, FaultKind.MAIL_REFUSED_4XX, MAIL_SANDBOX, 0.0, REFUSED)
        mail = mail_sandbox(platform)
        await attempt(refusal, "apply")
        with pytest.raises(smtplib.SMTPDataError) as refused:
            await send(mail, access_mail(recipient()))
        assert refused.value.smtp_code == 451
        await attempt(refusal, "heal")
        await send(mail, access_mail(recipient()))

        # A run that ends without its heals (a crash) leaves these; healing everything ends them.
        left = [
            PlannedFault(0.0, FaultKind.CONSUMER_PAUSE, "notify", 0.0),
            PlannedFault(0.0, FaultKind.PROCESS_KILL, MAIL_SANDBOX, 0.0),
            PlannedFault(0.0, FaultKind.CARD_NOTIFICATIONS_DROPPED, CARD_GATEWAY, 0.0, DROPPED),
        ]
        for fault in left:
            await attempt(fault, "apply")
        await eventually(notify_down, within=10)
        assert await chaos.heal_everything(), journal.lines()
        assert await serving(platform, "notify")
        await send(mail, access_mail(recipient()))  # the mail sandbox was started again
        card_faults = await chaos.sandboxes[CARD_GATEWAY].current()
        assert card_faults["drop_notifications"] is False

        done = [(line["kind"], line["target"], line["action"]) for line in journal.lines()]
        assert done[:9] == [
            (FaultKind.PROCESS_KILL, "booking", "apply"),
            (FaultKind.PROCESS_KILL, "booking", "heal"),
            (FaultKind.CONSUMER_PAUSE, "notify", "apply"),
            (FaultKind.CONSUMER_PAUSE, "notify", "heal"),
            (FaultKind.MAIL_REFUSED_4XX, MAIL_SANDBOX, "apply"),
            (FaultKind.MAIL_REFUSED_4XX, MAIL_SANDBOX, "heal"),
            *((fault.kind, fault.target, "apply") for fault in left),
        ]
        healed = {target for kind, target, _ in done[9:] if kind == HEALING}
        assert healed == {
            "postgres",
            "kafka",
            "processes",
            CARD_GATEWAY,
            LOCK_PROVIDER,
            MAIL_SANDBOX,
        }

        await comes_to_rest(quiescence)


@pytest.mark.timeout(900)
async def test_one_fault_of_every_kind_from_a_seeds_schedule_is_applied_and_healed_in_turn(
    infra: Infrastructure, tmp_path: Path
) -> None:
    """The first fault of each kind of a drawn schedule, one a second and each at most
    SHORTENED_S long, through the driver. Kafka and PostgreSQL are the suite's own, stopped
    and started through infra.sh as tests/faults and tests/e2e stop them, and started again
    whatever happens (the driver heals everything, even when the run fails)."""
    seed = random.randrange(2**32)
    firsts = {fault.kind: fault for fault in reversed(plan(seed, 10))}
    schedule = [
        replace(fault, offset=float(index), duration=min(fault.duration, SHORTENED_S))
        for index, fault in enumerate(firsts.values())
    ]
    async with started_platform(infra, tmp_path / "state") as platform:
        journal = Journal(tmp_path / "faults.jsonl")
        chaos = Chaos(platform, journal)
        await inject(schedule, chaos.injectors, journal, chaos.heal_everything, heal_at=0)
        lines = journal.lines()
        failed = [line for line in lines if line["outcome"] != "ok"]
        assert failed == [], f"seed {seed}: {failed}"
        for index, fault in enumerate(schedule):
            actions = [line["action"] for line in lines if line.get("fault") == index]
            assert actions == ["apply", "heal"], f"seed {seed}: {fault}"
        applied = [line["fault"] for line in lines if line["action"] == "apply"]
        assert applied == list(range(len(schedule))), f"seed {seed}"
        assert sum(line["kind"] == HEALING for line in lines) == 4 + len(chaos.sandboxes)
        await comes_to_rest(Quiescence(settings_of(platform)))
