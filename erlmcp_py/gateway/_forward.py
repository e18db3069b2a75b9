"""A 2026-07-28 retry forwarded to the gateway replica that holds its call.

A gateway never replays a call (its upstream would run the tool's side effects twice): the
upstream request of a bridged call is held by one process, in the continuation registry of one
endpoint, and its ``requestState`` names that *holder* (``<replica>/<endpoint>``, see
:attr:`~erlmcp_py.mcp.mrtr.ContinuationRegistry.holder`). A retry that reaches another
endpoint -- another replica behind a balancer, sharing the store -- is sent to the holder through
the runtime (:meth:`~erlmcp_py.actors.runtime.Runtime.forward_request`: over the shared
store's channels to another replica, directly to an endpoint of this process), which takes it
exactly as if it had arrived there (:meth:`GatewayEndpoint.take_forwarded`: the state opened
and checked again, the answers delivered, validated and re-prompted) and sends back its answer.

:class:`ForwardedRetry` is that retry on the replica it reached: what
:meth:`~erlmcp_py.gateway._endpoint.GatewayEndpoint.accept` returns in place of an
:class:`~erlmcp_py.mcp.mrtr.Attached` request. When the holder cannot be reached (it stopped,
crashed, or no longer shares the store) or does not answer in time, the call ends with
``-32603`` (``data.reason: "holder_gone"``): nothing is run again. A forwarded retry its
client abandons (it closes its HTTP request, or sends ``notifications/cancelled``) is cancelled
on the holder too -- the store sends it a cancel naming the forwarded request -- and ends there
as a retry cancelled at the holder would: its call is cancelled, and the upstream request with
it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any, Final

import outcome
import structlog
import trio

from erlmcp_py.core.errors import StoreUnavailable
from erlmcp_py.mcp.jsonrpc import INTERNAL_ERROR, JsonRpcError, internal_error
from erlmcp_py.mcp.mrtr import Waiter

__all__ = ["FORWARD_KIND", "ForwardedRetry", "error_answer", "holder_gone"]

log = structlog.get_logger("erlmcp.gateway.forward")

#: The kind of request a gateway's runtime takes from other replicas.
FORWARD_KIND: Final = "gateway.retry"


def holder_gone(why: str) -> JsonRpcError:
    """The error of a retry whose holder cannot answer."""
    return JsonRpcError(
        INTERNAL_ERROR,
        "The gateway process holding this call's upstream request is gone or unreachable "
        f"({why}); the call is not run again, since the upstream's tool must not run twice: "
        "call the tool again",
        {"reason": "holder_gone"},
    )


def error_answer(exc: JsonRpcError) -> dict[str, Any]:
    """A JSON-RPC error as the holder's answer."""
    return {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}


class ForwardedRetry:
    """A retry sent to the holder of its call (see the module docstring): await it, or
    :meth:`answer` it with a :class:`~erlmcp_py.mcp.mrtr.Waiter`, for the holder's answer.

    Args:
        send: Sends the retry to the holder; its answer (``{"result": …}`` or
            ``{"error": …}``).
    """

    __slots__ = ("_scope", "_send")

    def __init__(self, send: Callable[[], Awaitable[Mapping[str, Any]]]) -> None:
        self._send = send
        self._scope = trio.CancelScope()

    def __await__(self) -> Generator[Any, None, dict[str, Any]]:
        return self._run(None).__await__()

    async def answer(self, waiter: Waiter) -> dict[str, Any]:
        """The holder's answer, waiting in ``waiter`` (what its ``park`` raises ends the
        wait)."""
        return await self._run(waiter)

    def cancel(self) -> None:
        """Stop waiting for the holder's answer: the holder's retry is cancelled with it, as a
        retry cancelled there is (its call and the upstream request end)."""
        self._scope.cancel()

    async def _run(self, waiter: Waiter | None) -> dict[str, Any]:
        reply: Mapping[str, Any] | None = None
        with self._scope:
            try:
                reply = await (self._send() if waiter is None else _waiting(self._send, waiter))
            except StoreUnavailable as exc:
                log.warning("retry_holder_gone", why=str(exc)[:200])
                raise holder_gone(str(exc)) from None
        if reply is None:
            raise internal_error("The tool call was cancelled", {"reason": "cancelled"})
        error = reply.get("error")
        if isinstance(error, Mapping):
            code = error.get("code")
            raise JsonRpcError(
                code if type(code) is int else INTERNAL_ERROR,
                str(error.get("message", ""))[:2000],
                error.get("data"),
            )
        result = reply.get("result")
        if not isinstance(result, Mapping):
            raise holder_gone("its answer was not a result")
        return dict(result)


async def _waiting(
    send: Callable[[], Awaitable[Mapping[str, Any]]], waiter: Waiter
) -> Mapping[str, Any]:
    """``await send()``, parked in ``waiter`` meanwhile (what ``park`` raises cancels it)."""
    done: list[outcome.Outcome[Mapping[str, Any]]] = []
    left: Exception | None = None

    async def go() -> None:
        try:
            done.append(await outcome.acapture(send))
        finally:
            waiter.wake()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(go)
        try:
            while not done:
                await waiter.park()
        except Exception as exc:  # raised as it is, not in the nursery's group
            left = exc
            nursery.cancel_scope.cancel()
        except BaseException:
            nursery.cancel_scope.cancel()
            raise
    if left is not None:
        raise left
    return done[0].unwrap()
