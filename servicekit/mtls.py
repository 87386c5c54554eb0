"""Mutual TLS on every gRPC port, with certificates re-read when their files change.

A process is pointed at one folder (`<SERVICE>_TLS_DIR`) holding its key pair and the
authorities it trusts, laid out as cert-manager lays out a Secret: `tls.crt`, `tls.key`,
`ca.crt` (servicekit.certificates issues them locally). A server asks every client for a
certificate from those authorities; a client checks the server's the same way.

Rotation needs no restart. The server side is gRPC's own: its credentials ask
`Identity.changed` at every new connection, and a changed folder is read again. A
client's credentials are fixed when its channel is made, so `RotatingChannel` makes a new
channel when the files change and lets calls already on the old one finish.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

log = logging.getLogger(__name__)

CERTIFICATE, KEY, AUTHORITY = "tls.crt", "tls.key", "ca.crt"
CHECK_EVERY_S = 1.0  # how often a client looks at its files (a stat of three files)
OLD_CHANNEL_GRACE_S = 30.0  # calls still on a replaced channel may finish within this


@dataclass(frozen=True)
class KeyPair:
    certificate: bytes
    key: bytes
    authorities: bytes


@dataclass
class Identity:
    """A process's certificate folder, and what of it was read last."""

    folder: Path
    _seen: tuple[tuple[int, int], ...] | None = field(default=None, repr=False)

    def read(self) -> KeyPair:
        """The files as they are now; remembered as seen."""
        self._seen = self._signature()
        return KeyPair(
            (self.folder / CERTIFICATE).read_bytes(),
            (self.folder / KEY).read_bytes(),
            (self.folder / AUTHORITY).read_bytes(),
        )

    def changed(self) -> bool:
        """The files differ from those read last (a missing file is no change: a rotation
        that is half written is read when it is whole)."""
        try:
            return self._signature() != self._seen
        except OSError:
            return False

    def _signature(self) -> tuple[tuple[int, int], ...]:
        stats = [(self.folder / name).stat() for name in (CERTIFICATE, KEY, AUTHORITY)]
        return tuple((stat.st_mtime_ns, stat.st_ino) for stat in stats)


def server_credentials(identity: Identity) -> grpc.ServerCredentials:
    """Credentials that require a client certificate and follow the folder's changes."""

    def configuration(pair: KeyPair) -> Any:
        return grpc.ssl_server_certificate_configuration(
            [(pair.key, pair.certificate)], root_certificates=pair.authorities
        )

    def fetch() -> Any:
        # gRPC asks at every new connection; None keeps what it has.
        if not identity.changed():
            return None
        try:
            pair = identity.read()
        except OSError as error:
            log.warning("certificates in %s unreadable, keeping the last: %s", identity, error)
            return None
        log.info("certificates in %s read again for new connections", identity.folder)
        return configuration(pair)

    return grpc.dynamic_ssl_server_credentials(
        configuration(identity.read()), fetch, require_client_authentication=True
    )


def channel_credentials(pair: KeyPair) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=pair.authorities, private_key=pair.key, certificate_chain=pair.certificate
    )


ChannelFactory = Callable[[grpc.ChannelCredentials], grpc.aio.Channel]


class RotatingChannel(grpc.aio.Channel):
    """A channel whose certificate follows its folder: stubs made on it keep working
    across a rotation, new calls go over a channel with the new certificate, and calls on
    the old one finish (it is closed OLD_CHANNEL_GRACE_S later)."""

    def __init__(self, identity: Identity, make: ChannelFactory) -> None:
        self._identity = identity
        self._make = make
        self._current = make(channel_credentials(identity.read()))
        self._checked = time.monotonic()
        # Old channels draining their calls, each with the task that closes it.
        self._retiring: dict[asyncio.Task[None], grpc.aio.Channel] = {}

    def current(self) -> grpc.aio.Channel:
        now = time.monotonic()
        if now - self._checked >= CHECK_EVERY_S:
            self._checked = now
            if self._identity.changed():
                self._rotate()
        return self._current

    def _rotate(self) -> None:
        try:
            pair = self._identity.read()
        except OSError as error:
            log.warning("certificates in %s unreadable, keeping the last: %s", self, error)
            return
        old, self._current = self._current, self._make(channel_credentials(pair))
        log.info("certificates in %s read again: new calls use them", self._identity.folder)
        try:
            task = asyncio.get_running_loop().create_task(old.close(OLD_CHANNEL_GRACE_S))
        except RuntimeError:
            return  # no loop (a synchronous caller): the old channel is left to the collector
        self._retiring[task] = old
        task.add_done_callback(lambda done: self._retiring.pop(done, None))

    # The channel's interface, as stubs use it.
    def unary_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _Method(self, "unary_unary", method, args, kwargs)

    def unary_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _Method(self, "unary_stream", method, args, kwargs)

    def stream_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _Method(self, "stream_unary", method, args, kwargs)

    def stream_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _Method(self, "stream_stream", method, args, kwargs)

    async def channel_ready(self) -> None:
        await self.current().channel_ready()

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return self.current().get_state(try_to_connect)

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity) -> None:
        await self.current().wait_for_state_change(last_observed_state)

    async def close(self, grace: float | None = None) -> None:
        """Closes every channel, the draining ones with the same grace as the current."""
        draining = list(self._retiring.items())
        for task, _ in draining:
            task.cancel()
        await asyncio.gather(self._current.close(grace), *(old.close(grace) for _, old in draining))

    async def __aenter__(self) -> RotatingChannel:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close(None)


class _Method:
    """One method of a RotatingChannel: made again on each new underlying channel."""

    def __init__(
        self,
        rotating: RotatingChannel,
        kind: str,
        method: str,
        args: Sequence[Any],
        kwargs: dict[str, Any],
    ) -> None:
        self._rotating = rotating
        self._kind, self._method, self._args, self._kwargs = kind, method, args, kwargs
        self._made: tuple[grpc.aio.Channel, Any] | None = None

    @property
    def full_name(self) -> str:
        """The method's path, "/package.Service/Method"."""
        return self._method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        channel = self._rotating.current()
        made = self._made
        if made is None or made[0] is not channel:
            callable_ = getattr(channel, self._kind)(self._method, *self._args, **self._kwargs)
            made = self._made = (channel, callable_)
        return made[1](*args, **kwargs)
