"""The soak's injectors on a platform of this test's own (scripts/platform.sh with its own
databases, topics, ports and state folder; the shared one is not disturbed): booking killed
stops answering its health check and serves again once `platform.sh up` restarted it;
notify stopped does not answer until it is continued; the mail sandbox refuses a mail with
a 4xx while its fault is on and takes it once healed. Then everything is healed, every
action is in the journal, and the platform comes to rest: outboxes empty, no consumer
behind, no timer due."""

from __future__ import annotations

import smtplib
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from chaos.faults import Chaos, settings_of
from chaos.journal import Journal
from chaos.quiescence import Quiescence
from chaos.schedule import MAIL_SANDBOX, FaultKind, PlannedFault
from tests.sandboxes.test_mail import access_mail, recipient, send
from tests.support import tls
from tests.support.health import FAST_RECONNECT
from tests.support.infrastructure import Infrastructure
from tests.support.platform import Platform, started_platform
from tests.support.sandboxes import MailSandbox
from tests.support.waiting import eventually

CHECK_TIMEOUT_S = 2.0
REFUSED = {"refuse_next": 1000, "refuse_code": 451, "refuse_at": "data"}  # whatever notify sends
QUIESCENT_WITHIN_S = 180.0


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


def mail_sandbox(platform: Platform) -> MailSandbox:
    return MailSandbox(
        platform.url("MAIL_SANDBOX_HTTP_PORT"), "127.0.0.1", int(platform.env["MAIL_SMTP_PORT"])
    )


@pytest.mark.timeout(900)
async def test_killed_stopped_and_sandbox_faults_are_seen_then_healed_and_the_platform_rests(
    infra: Infrastructure, tmp_path: Path
) -> None:
    async with started_platform(infra, tmp_path / "state") as platform:
        journal = Journal(tmp_path / "faults.jsonl")
        chaos = Chaos(platform, journal)

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

        assert await chaos.heal_everything(), journal.lines()
        done = [(line["kind"], line["target"], line["action"]) for line in journal.lines()]
        assert done[:6] == [
            (FaultKind.PROCESS_KILL, "booking", "apply"),
            (FaultKind.PROCESS_KILL, "booking", "heal"),
            (FaultKind.CONSUMER_PAUSE, "notify", "apply"),
            (FaultKind.CONSUMER_PAUSE, "notify", "heal"),
            (FaultKind.MAIL_REFUSED_4XX, MAIL_SANDBOX, "apply"),
            (FaultKind.MAIL_REFUSED_4XX, MAIL_SANDBOX, "heal"),
        ]
        assert {target for kind, target, _ in done[6:]} >= {"postgres", "kafka", "processes"}

        quiescence = Quiescence(settings_of(platform))
        try:
            rest = await quiescence.wait(QUIESCENT_WITHIN_S)
        finally:
            await quiescence.close()
        assert rest.quiet
        assert (
            set(rest.outbox) == set(rest.due_timers) == {"booking", "payment", "access", "notify"}
        )
