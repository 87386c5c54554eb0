"""A server interceptor that wraps each unary method's behaviour once.

gRPC asks the interceptors for a method's handler at every call; building the wrapper at
every call would cost a closure and a handler each time. This base builds it once per
method (again only if the server's handler for it changes) and keeps the method's
(de)serializers, so a subclass says only how a call is wrapped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc

Behaviour = Callable[[Any, "grpc.aio.ServicerContext[Any, Any]"], Awaitable[Any]]


class UnaryWrapper(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    def __init__(self) -> None:
        self._wrapped: dict[str, tuple[Any, Any]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(details)
        if handler is None:
            return None
        if handler.unary_unary is None:
            return self.wrap_streams(details.method, handler)
        built = self._wrapped.get(details.method)
        if built is None or built[0] is not handler:
            wrapped = grpc.unary_unary_rpc_method_handler(
                self.wrap(details.method, handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
            built = self._wrapped[details.method] = (handler, wrapped)
        return built[1]

    def wrap(self, method: str, inner: Behaviour) -> Behaviour:
        """The method's behaviour around `inner`, the next one's."""
        raise NotImplementedError

    def wrap_streams(self, method: str, handler: Any) -> Any:
        """A streaming method's handler (health's Watch, reflection): as it is, unless a
        layer must see those calls too (servicekit.callers). Made at every call."""
        return handler


class Layers(UnaryWrapper):
    """Several wrappers as one interceptor, the first outermost.

    gRPC runs every interceptor's `intercept_service` at every call, a coroutine each;
    one interceptor whose wrapper holds the others runs one.
    """

    def __init__(self, *layers: UnaryWrapper) -> None:
        super().__init__()
        self._layers = layers

    def wrap(self, method: str, inner: Behaviour) -> Behaviour:
        for layer in reversed(self._layers):
            inner = layer.wrap(method, inner)
        return inner

    def wrap_streams(self, method: str, handler: Any) -> Any:
        for layer in reversed(self._layers):
            handler = layer.wrap_streams(method, handler)
        return handler
