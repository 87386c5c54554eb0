"""The services' mutual TLS in tests: the local authority `make up` uses (.local/tls,
servicekit.certificates), a key pair per principal of the boundary table, and channels
as one of them. The tests' own gRPC clients call as the gateway, the one principal that
may call every method and name a user; the security tests choose others.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import grpc

from servicekit import certificates, grpc_server
from servicekit.config import Endpoint
from servicekit.mtls import Identity, channel_credentials

ROOT = Path(__file__).resolve().parents[2] / ".local" / "tls"
PRINCIPALS = ("booking", "payment", "access", "notify", "gateway", "operator-tools")
_issued = threading.Event()


def folder(principal: str) -> str:
    """The certificate folder of `principal` (issued on first use)."""
    if not _issued.is_set():
        certificates.ensure(ROOT, PRINCIPALS)
        _issued.set()
    return str(ROOT / principal)


def channel(
    target: str, principal: str = "gateway", options: Sequence[tuple[str, int]] = ()
) -> grpc_server.RotatingChannel:
    return grpc_server.channel(target, folder(principal), options)


def bare_channel(
    target: str, principal: str = "gateway", options: Sequence[tuple[str, int]] = ()
) -> grpc.aio.Channel:
    """A channel with the principal's certificate and nothing else (no trace context)."""
    pair = Identity(Path(folder(principal))).read()
    return grpc.aio.secure_channel(target, channel_credentials(pair), options=list(options))


def endpoint(service: str) -> Endpoint:
    """A server on a free loopback port, as `service` (its name in the boundary table)."""
    return Endpoint(service, "127.0.0.1:0", folder(service))
