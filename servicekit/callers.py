"""Who may call what: every call on a service's port is authorised by the caller's
certificate (servicekit.mtls) against the boundary table (deploy/boundary.yaml).

The caller is the common name of the certificate it presented, which the server's TLS
checked against the trusted authorities. A method the table does not give that principal
on this server, or a user named by a caller that may not speak for users (only the
gateway authenticates users), is refused as PERMISSION_DENIED with the reason
`caller_not_allowed`, before the service sees the request.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import grpc

from servicekit.boundary import Principal, principals
from servicekit.errors import CALLER_NOT_ALLOWED, abort_with, rich_status
from servicekit.grpc_wrapping import Behaviour, UnaryWrapper

log = logging.getLogger(__name__)
COMMON_NAME = "x509_common_name"
Context = Any  # grpc.aio.ServicerContext
Check = Callable[..., Awaitable[None]]  # (context, request=None)


def caller_of(context: Context) -> str:
    """The principal whose certificate opened the connection ("" without one)."""
    names = context.auth_context().get(COMMON_NAME) or ()
    return names[0].decode("utf-8", "replace") if names else ""


def speakers_for_users(table: Mapping[str, Principal] | None = None) -> frozenset[str]:
    """The principals that authenticate people themselves (the gateway)."""
    found = principals() if table is None else table
    return frozenset(name for name, principal in found.items() if principal.speaks_for_users)


def vouched(context: Context, named: str, speakers: frozenset[str]) -> str:
    """Who an audit entry names for a person a caller named: the name as given when the
    caller authenticated that person (the gateway's operator routes); from any other
    caller, the name beside the caller, since its certificate proves which tool sent the
    name, not who typed it ("alice via operator-tools")."""
    caller = caller_of(context)
    if not caller or caller in speakers:  # no certificate: the plaintext measurement only
        return named
    return f"{named} via {caller}"


class Callers(UnaryWrapper):
    """The authorisation layer of one service's server (`server`: "booking")."""

    def __init__(
        self,
        server: str,
        error_domain: str,
        error_domains: Mapping[str, str] | None = None,
        table: Mapping[str, Principal] | None = None,
    ) -> None:
        super().__init__()
        self._server = server
        self._domain = error_domain
        self._domains = dict(error_domains or {})
        self._table = dict(principals() if table is None else table)
        self._speakers = speakers_for_users(self._table)

    def allowed(self, method: str) -> frozenset[str]:
        return frozenset(
            name
            for name, principal in self._table.items()
            if principal.may_call(self._server, method)
        )

    def wrap(self, method: str, inner: Behaviour) -> Behaviour:
        check = self._check(method)

        async def authorised(request: Any, context: Context) -> Any:
            await check(context, request)
            return await inner(request, context)

        return authorised

    def wrap_streams(self, method: str, handler: Any) -> Any:
        """Streaming methods (health's Watch, reflection): the caller, before the first
        message is read or written."""
        check = self._check(method)
        codec = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                _streaming(check, handler.unary_stream), **codec
            )
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
                _streaming(check, handler.stream_stream), **codec
            )
        return grpc.stream_unary_rpc_method_handler(_single(check, handler.stream_unary), **codec)

    def _check(self, method: str) -> Check:
        """The one rule for every kind of call: the table must give the caller `method`,
        and a user named in the request must be the caller unless it speaks for users."""
        allowed, speakers, domain = self.allowed(method), self._speakers, self._domain_of(method)

        async def check(context: Context, request: Any = None) -> None:
            caller = caller_of(context)
            if caller not in allowed:
                await _refuse(context, domain, f"{caller or 'anonymous'} may not call {method}")
            user = getattr(request, "user", "")
            if user and caller not in speakers and user != caller:
                await _refuse(context, domain, f"{caller} may not name a user ({method})")

        return check

    def _domain_of(self, method: str) -> str:
        # "/liftfit.ops.v1.OperationsService/ListOutbox": the service is between the slashes.
        return self._domains.get(method.split("/")[1] if "/" in method else "", self._domain)


async def _refuse(context: Context, domain: str, detail: str) -> None:
    log.warning("refused: %s", detail)
    code = grpc.StatusCode.PERMISSION_DENIED
    await abort_with(context, rich_status(code, CALLER_NOT_ALLOWED, domain, detail))


def _streaming(check: Check, inner: Callable[..., Any]) -> Callable[..., AsyncIterator[Any]]:
    async def checked(request: Any, context: Context) -> AsyncIterator[Any]:
        await check(context, request)  # a stream of requests names no user itself
        answer = inner(request, context)
        if inspect.isawaitable(answer):
            await answer  # a handler that writes with context.write
            return
        async for item in answer:
            yield item

    return checked


def _single(check: Check, inner: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def checked(requests: Any, context: Context) -> Any:
        await check(context)
        return await inner(requests, context)

    return checked
