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

Progress and log messages
-------------------------
While the holder runs a forwarded retry's round, the notifications it would send an attached
request (the upstream's ``notifications/progress`` under the retry's own token, its
``notifications/message`` at or above the retry's log level) are the forwarded request's
*notes* (``{"method": …, "params": …}``): the holder's sink hands each to the runtime's
:data:`~erlmcp_py.store.NoteSink` and returns at once, so relaying never holds up the round or
the upstream. The runtime carries them back -- called directly between two endpoints of one
process, over the store's channels from another replica -- to :class:`ForwardedRetry`, which
queues them (at most :data:`RELAYED_NOTES`; a note past that is dropped, the newest, as a
Streamable HTTP response stream drops what its client does not keep up with) and passes them,
in order, to the retry's own sink (its SSE stream, its connection), each before the answer. A
note that cannot be relayed is dropped -- on the holder when the store is down or the
forwarder gone (:mod:`erlmcp_py.store`), here when the queue is full or the retry's sink
refuses it -- and logged once per retry (``forwarded_notes_dropped``: how many, and why).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any, Final

import outcome
import structlog
import trio

from erlmcp_py.core.errors import StoreUnavailable
from erlmcp_py.mcp.jsonrpc import INTERNAL_ERROR, JsonRpcError, internal_error
from erlmcp_py.mcp.mrtr import NotificationSink, Waiter
from erlmcp_py.store import NoteSink

__all__ = ["FORWARD_KIND", "RELAYED_NOTES", "ForwardedRetry", "error_answer", "holder_gone"]

log = structlog.get_logger("erlmcp.gateway.forward")

#: The kind of request a gateway's runtime takes from other replicas.
FORWARD_KIND: Final = "gateway.retry"

#: The holder's notes one forwarded retry queues at most before its sink takes them.
RELAYED_NOTES: Final = 256

#: What sends a retry to its holder, given where the holder's notes go; its answer.
Send = Callable[[NoteSink], Awaitable[Mapping[str, Any]]]


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
        send: Sends the retry to the holder, with the :data:`~erlmcp_py.store.NoteSink` its
            notes go to; its answer (``{"result": …}`` or ``{"error": …}``).
        notify: The retry's own sink (its response stream): where the holder's progress and
            log messages go, before the answer; ``None``: they are dropped.
        capacity: The notes queued at most.
    """

    __slots__ = ("_dropped", "_notes_in", "_notes_out", "_notify", "_scope", "_send", "_why")

    def __init__(
        self,
        send: Send,
        notify: NotificationSink | None = None,
        capacity: int = RELAYED_NOTES,
    ) -> None:
        self._send = send
        self._notify = notify
        self._scope = trio.CancelScope()
        self._notes_in, self._notes_out = trio.open_memory_channel[Mapping[str, Any]](capacity)
        self._dropped = 0
        self._why: str | None = None

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
                reply = await (
                    self._exchange() if waiter is None else _waiting(self._exchange, waiter)
                )
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

    async def _exchange(self) -> Mapping[str, Any]:
        """The holder's answer, its notes passed on meanwhile: those that came before it
        are all passed before it is returned."""
        failed: Exception | None = None
        reply: Mapping[str, Any] = {}
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._pass_notes)
                try:
                    reply = await self._send(self._noted)
                except Exception as exc:  # raised as it is, not in the nursery's group
                    failed = exc
                finally:
                    self._notes_in.close()  # what is queued is passed, then the pass ends
        finally:
            if self._dropped:
                log.warning("forwarded_notes_dropped", count=self._dropped, why=self._why)
        if failed is not None:
            raise failed
        return reply

    def _noted(self, note: Mapping[str, Any]) -> None:
        """A note of the holder (the runtime's :data:`~erlmcp_py.store.NoteSink`): queued,
        never waited for."""
        try:
            self._notes_in.send_nowait(note)
        except trio.WouldBlock:
            self._drop("the queue is full")
        except trio.ClosedResourceError:
            self._drop("the retry was answered")

    async def _pass_notes(self) -> None:
        async with self._notes_out:
            async for note in self._notes_out:
                method, params = note.get("method"), note.get("params")
                if not (isinstance(method, str) and isinstance(params, Mapping)):
                    self._drop("not a notification")
                elif self._notify is None:
                    self._drop("the retry takes no notifications")
                else:
                    try:
                        await self._notify(method, params)
                    except Exception:  # its stream is full, or gone
                        self._drop("the retry's stream refused it")

    def _drop(self, why: str) -> None:
        self._dropped += 1
        if self._why is None:
            self._why = why


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
