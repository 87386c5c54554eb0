"""The gateway's app in-process with what stands behind it faked: a directory in memory and
services that answer from a table, so a test of the edge's own rules needs no platform."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from fastapi import FastAPI
from google.protobuf.message import Message
from prometheus_client import CollectorRegistry

from gateway_bff.app import create_app
from gateway_bff.identity import DevAuthenticator
from gateway_bff.limits import Limits
from gateway_bff.parts import Parts
from gateway_bff.settings import SERVICES
from gateway_bff.store.directory import Directory, Member, Org
from gateway_bff.traces import Traces
from gateway_bff.upstream import Services, Upstream
from servicekit.lag import ConsumerLag, LagSettings
from tests.support import tls

NOWHERE = "127.0.0.1:1"  # nothing listens: a service no fake stands in for does not answer
OPERATORS = ("ops", "ops2")


class MemoryDirectory(Directory):
    """Operators and members in memory; every audit entry kept in `audit`."""

    def __init__(self) -> None:
        self.members: dict[tuple[str, str], Member] = {}
        self.audit: list[tuple[str, str, str, dict[str, Any]]] = []

    async def is_operator(self, user: str) -> bool:
        return user in OPERATORS

    async def membership(self, org_id: str, user: str) -> Member | None:
        return self.members.get((org_id, user))

    async def memberships_of(self, user: str) -> list[Member]:
        return [m for (_, who), m in self.members.items() if who == user]

    async def create_org(self, name: str, actor: str) -> Org:
        return Org(str(uuid.uuid4()), name, datetime.now(UTC))

    async def record(self, actor: str, action: str, subject: str, detail: dict[str, Any]) -> None:
        self.audit.append((actor, action, subject, detail))

    def add_member(self, org_id: str, user: str) -> None:
        made = Member(org_id, user, "owner", f"{user}@example.test", "en", datetime.now(UTC))
        self.members[(org_id, user)] = made


Answer = Callable[[Any], Awaitable[Message]]


class TableUpstream(Upstream):
    """A service that answers each request by its type, from `answers`."""

    def __init__(self, name: str, answers: dict[type[Message], Answer]) -> None:
        self.name = name
        self.answers = answers

    async def read(
        self, method: Callable[..., Awaitable[Any]], request: Any, user: str = ""
    ) -> Any:
        return await self.answers[type(request)](request)

    async def write(
        self, method: Callable[..., Awaitable[Any]], request: Any, user: str = ""
    ) -> Any:
        return await self.answers[type(request)](request)

    async def close(self) -> None:
        return None


def make_parts(limits: Limits, directory: Directory, deadline_s: float = 0.5) -> Parts:
    services = Services({name: NOWHERE for name in SERVICES}, tls.folder("gateway"), deadline_s)
    return Parts(
        services=services,
        directory=directory,
        identity=DevAuthenticator(),
        lag=ConsumerLag(LagSettings(NOWHERE, "")),
        metrics=CollectorRegistry(),
        traces=Traces(""),
        limits=limits,
    )


@contextlib.asynccontextmanager
async def client_at(app: FastAPI, address: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client whose requests come from `address` (the ASGI client the gate sees)."""
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway.test") as client:
        yield client


def gateway(parts: Parts) -> FastAPI:
    return create_app(parts)


def request_scope(
    method: str,
    path: str,
    client: tuple[str, int],
    headers: list[tuple[bytes, bytes]],
    query_string: bytes = b"",
) -> dict[str, Any]:
    """An HTTP request's ASGI scope as a server hands it to the app, for what no client
    library would send (a forged header, bytes that are not ASCII)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode("utf-8", "replace"),
        "query_string": query_string,
        "root_path": "",
        "headers": headers,
        "client": client,
        "server": ("gateway.test", 80),
    }
