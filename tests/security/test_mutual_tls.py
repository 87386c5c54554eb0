"""Mutual TLS and the callers' authorisation, on a server as every service starts it
(servicekit.grpc_server), serving access's API with a stand-in servicer: who may connect,
who may call which method, who may name a user, and certificates rotated on disk.

The certificates are the local authority's (tests/support/tls.py); a stranger's come from
an authority of their own, and the rotations from copies of the folders in tmp_path.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography import x509
from grpc_health.v1 import health_pb2, health_pb2_grpc
from liftfit.access.v1 import access_pb2, access_pb2_grpc
from liftfit.ops.v1 import operations_pb2, operations_pb2_grpc

from servicekit import certificates, grpc_server, mtls
from servicekit.callers import caller_of
from servicekit.config import Endpoint
from servicekit.errors import reason_of
from tests.support import tls
from tests.support.waiting import eventually

ACCESS = access_pb2.DESCRIPTOR.services_by_name["AccessService"].full_name
OPS = operations_pb2.DESCRIPTOR.services_by_name["OperationsService"].full_name


class Desk(access_pb2_grpc.AccessServiceServicer):
    """Answers DisclosePin and notes who called, as the server saw the caller."""

    def __init__(self) -> None:
        self.callers: list[str] = []
        self.client_serials: list[int] = []

    # Only DisclosePin is asked for; the rest of the contract answers UNIMPLEMENTED.
    GetAccess = ListGrants = ListIncidents = ListDriftFindings = None  # type: ignore[assignment]

    async def DisclosePin(self, request: Any, context: Any) -> access_pb2.Access:
        self.callers.append(caller_of(context))
        pem = context.auth_context()["x509_pem_cert"][0]
        self.client_serials.append(x509.load_pem_x509_certificate(pem).serial_number)
        return access_pb2.Access(booking_id=request.booking_id, pin="1234")


class Ops(operations_pb2_grpc.OperationsServiceServicer):
    """Only ListOutbox; the rest answers UNIMPLEMENTED (the generated base's own)."""

    async def ListOutbox(self, request: Any, context: Any) -> Any:
        return operations_pb2.ListOutboxResponse()


@pytest.fixture
def access_folder(tmp_path: Path) -> Path:
    """A copy of access's certificate folder, which a test may rotate."""
    return Path(shutil.copytree(tls.folder("access"), tmp_path / "access"))


@pytest.fixture
async def server(access_folder: Path) -> AsyncIterator[tuple[str, Desk]]:
    desk = Desk()

    def register(server: grpc.aio.Server) -> None:
        access_pb2_grpc.add_AccessServiceServicer_to_server(desk, server)
        operations_pb2_grpc.add_OperationsServiceServicer_to_server(Ops(), server)  # type: ignore[abstract]

    endpoint = Endpoint("access", "127.0.0.1:0", str(access_folder))
    served, port, _ = await grpc_server.start_server(
        endpoint, [register], [ACCESS, OPS], "liftfit.access", {OPS: "liftfit.ops"}
    )
    yield f"127.0.0.1:{port}", desk
    await served.stop(None)


def _disclose(user: str = "notify") -> access_pb2.DisclosePinRequest:
    return access_pb2.DisclosePinRequest(
        org_id="org", booking_id="b-1", user=user, purpose="access_email"
    )


async def _refusal(call: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call
    return refused.value.code(), reason_of(refused.value)


async def test_a_client_without_a_certificate_cannot_connect(
    server: tuple[str, Desk],
) -> None:
    target, desk = server
    authority = Path(tls.folder("access")) / "ca.crt"
    no_certificate = grpc.ssl_channel_credentials(authority.read_bytes())
    async with grpc.aio.secure_channel(target, no_certificate) as anonymous:
        stub = access_pb2_grpc.AccessServiceStub(anonymous)
        code, _ = await _refusal(stub.DisclosePin(_disclose(), timeout=5))
    async with grpc.aio.insecure_channel(target) as plaintext:
        health = health_pb2_grpc.HealthStub(plaintext)
        plain_code, _ = await _refusal(health.Check(health_pb2.HealthCheckRequest(), timeout=5))
    assert (code, plain_code) == (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE)
    assert desk.callers == []


async def test_a_certificate_from_another_authority_cannot_connect(
    server: tuple[str, Desk], tmp_path: Path
) -> None:
    target, desk = server
    certificates.ensure(tmp_path / "stranger", ["gateway"])  # named like ours, not ours
    async with grpc_server.channel(target, tmp_path / "stranger" / "gateway") as channel:
        stub = access_pb2_grpc.AccessServiceStub(channel)
        code, _ = await _refusal(stub.DisclosePin(_disclose("gateway"), timeout=5))
    assert code == grpc.StatusCode.UNAVAILABLE
    assert desk.callers == []


@pytest.mark.parametrize(
    ("principal", "method"),
    [("booking", "DisclosePin"), ("notify", "ListOutbox"), ("payment", "ListOutbox")],
)
async def test_a_method_the_table_does_not_give_the_caller_is_refused(
    server: tuple[str, Desk], principal: str, method: str
) -> None:
    target, desk = server
    async with tls.channel(target, principal) as channel:
        if method == "DisclosePin":
            stub = access_pb2_grpc.AccessServiceStub(channel)
            refused = await _refusal(stub.DisclosePin(_disclose(principal)))
        else:
            ops = operations_pb2_grpc.OperationsServiceStub(channel)
            refused = await _refusal(ops.ListOutbox(operations_pb2.ListOutboxRequest()))
    assert refused == (grpc.StatusCode.PERMISSION_DENIED, "caller_not_allowed")
    assert desk.callers == []


async def test_a_user_named_by_any_caller_but_the_gateway_is_refused(
    server: tuple[str, Desk],
) -> None:
    target, desk = server
    async with tls.channel(target, "notify") as notify:
        stub = access_pb2_grpc.AccessServiceStub(notify)
        refused = await _refusal(stub.DisclosePin(_disclose(user="alice"), timeout=5))
        own = await stub.DisclosePin(_disclose(user="notify"), timeout=5)
    async with tls.channel(target, "gateway") as gateway:
        for_alice = await access_pb2_grpc.AccessServiceStub(gateway).DisclosePin(
            _disclose(user="alice"), timeout=5
        )
    assert refused == (grpc.StatusCode.PERMISSION_DENIED, "caller_not_allowed")
    assert (own.pin, for_alice.pin) == ("1234", "1234")
    assert desk.callers == ["notify", "gateway"]


async def test_operator_tools_may_call_operations_and_read_health(
    server: tuple[str, Desk],
) -> None:
    target, _ = server
    async with tls.channel(target, "operator-tools") as channel:
        ops = operations_pb2_grpc.OperationsServiceStub(channel)
        await ops.ListOutbox(operations_pb2.ListOutboxRequest(), timeout=5)
        health = health_pb2_grpc.HealthStub(channel)
        answer = await health.Check(health_pb2.HealthCheckRequest(), timeout=5)
        refused = await _refusal(
            access_pb2_grpc.AccessServiceStub(channel).DisclosePin(_disclose("ops"), timeout=5)
        )
    assert answer.status == health_pb2.HealthCheckResponse.SERVING
    assert refused == (grpc.StatusCode.PERMISSION_DENIED, "caller_not_allowed")


def _reissue(folder: Path, principal: str) -> int:
    """A new key pair for `principal` in `folder`, from the same authority: its serial."""
    authority, key = certificates.load_authority(tls.ROOT)
    certificates.issue(folder, principal, authority, key)
    pem = (folder / certificates.CERTIFICATE).read_bytes()
    return x509.load_pem_x509_certificate(pem).serial_number


def _serial_served(target: str, client: Path) -> int:
    """The serial of the certificate the server shows a new connection."""
    context = ssl.create_default_context(cafile=str(client / "ca.crt"))
    context.load_cert_chain(client / "tls.crt", client / "tls.key")
    host, port = target.rsplit(":", 1)
    with (
        socket.create_connection((host, int(port)), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=host) as wrapped,
    ):
        der = wrapped.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


async def test_rotated_certificates_are_used_by_new_connections_with_no_failed_call(
    server: tuple[str, Desk], access_folder: Path, tmp_path: Path
) -> None:
    target, desk = server
    notify_folder = Path(shutil.copytree(tls.folder("notify"), tmp_path / "notify"))
    failures: list[BaseException] = []
    calls = 0

    async def keep_calling(channel: grpc.aio.Channel, stop: asyncio.Event) -> None:
        nonlocal calls
        stub = access_pb2_grpc.AccessServiceStub(channel)
        while not stop.is_set():
            try:
                await stub.DisclosePin(_disclose(), timeout=5)
                calls += 1
            except grpc.aio.AioRpcError as error:
                failures.append(error)
            await asyncio.sleep(0.01)

    async def made_calls(count: int) -> bool:
        return calls > count

    async with grpc_server.channel(target, notify_folder) as channel:
        stop = asyncio.Event()
        caller = asyncio.create_task(keep_calling(channel, stop))
        await eventually(lambda: made_calls(5), within=20)
        new_server_serial = _reissue(access_folder, "access")
        new_client_serial = _reissue(notify_folder, "notify")

        async def server_shows_the_new_one() -> bool:
            return await asyncio.to_thread(_serial_served, target, notify_folder) == (
                new_server_serial
            )

        async def client_presents_the_new_one() -> bool:
            return new_client_serial in desk.client_serials

        await eventually(server_shows_the_new_one, within=20)
        await eventually(client_presents_the_new_one, within=20)
        settled = calls
        await eventually(lambda: made_calls(settled + 5), within=20)
        stop.set()
        await caller
    assert failures == []


async def test_closing_a_rotated_channel_closes_the_draining_ones_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mtls, "CHECK_EVERY_S", 0.0)  # look at the files on every call
    folder = Path(shutil.copytree(tls.folder("notify"), tmp_path / "notify"))
    made: list[grpc.aio.Channel] = []

    def make(credentials: grpc.ChannelCredentials) -> grpc.aio.Channel:
        made.append(grpc.aio.secure_channel("127.0.0.1:9", credentials))
        return made[-1]

    rotating = mtls.RotatingChannel(mtls.Identity(folder), make)
    _reissue(folder, "notify")
    rotating.current()  # sees the new files: the first channel starts draining
    await rotating.close(0)
    assert len(made) == 2
    for channel in made:
        with pytest.raises(grpc.aio.UsageError):
            await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=1
            )
