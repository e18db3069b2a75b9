"""The stateless POST of the Streamable HTTP endpoint (2026-07-28): no session, each request
answered by the :class:`~erlmcp_py.mcp.stateless.StatelessEndpoint` (docs/mrtr.md, "Over
Streamable HTTP").

A POST is stateless when :func:`~erlmcp_py.mcp.meta.is_stateless_request` says so, or when it
has no ``Mcp-Session-Id`` and its ``MCP-Protocol-Version`` names a stateless version. A
``tools/call`` or ``prompts/get`` is given a notification sink: its first progress or log
notification switches the answer to an SSE stream (same events as a session's, no ids) whose
last event is the response; once the stream has started, an error response goes out as that
last event under 200 instead of its 4xx. Notifications are queued without blocking the tool
(bounded by ``stream_queue``; past it they are dropped and counted). The POST's task waits as
a session POST does (:class:`StatelessPost`: parked in ``receive()``, woken by a queued
notification, which it writes, or by a change of the call). One continuation registry lives
as long as :meth:`StatelessPosts.run`; its end cancels every suspended tool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import structlog
import trio

from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.versions import STATELESS_VERSIONS
from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.jsonrpc import JsonRpcError, Request
from erlmcp_py.mcp.meta import is_stateless_request
from erlmcp_py.mcp.mrtr import PRINCIPAL_BUSY, ContinuationRegistry, open_continuations
from erlmcp_py.mcp.stateless import INPUT_METHODS, StatelessEndpoint, state_ttl_for
from erlmcp_py.mcp.tasks import (
    TASK_MOVING,
    TASKS_BUSY,
    TASKS_PRINCIPAL_BUSY,
    TaskRegistry,
    open_tasks,
)
from erlmcp_py.transports._http_streams import (
    JSON,
    HttpError,
    Receive,
    Refusals,
    Scope,
    Send,
    Stream,
    header,
    relay,
    send_events,
    send_simple,
    start_sse,
)
from erlmcp_py.transports.http_checks import (
    HEADER_MISMATCH,
    check_stateless_headers,
    http_status_for,
)

if TYPE_CHECKING:
    from erlmcp_py.transports.http import HttpTransport

__all__ = [
    "StatelessPost",
    "StatelessPosts",
    "is_stateless",
    "resumes",
    "stateless_without_session",
]

log = structlog.get_logger("erlmcp.http")

#: ``data.reason`` of a refusal the client retries later (a full continuation registry or
#: share of tasks, a task whose holder does not answer) -> (HTTP status, refusal counted).
_REGISTRY_FULL: Final[Mapping[str, tuple[int, str]]] = {
    PRINCIPAL_BUSY: (429, "principal_suspended"),
    "busy": (503, "suspended"),
    TASKS_PRINCIPAL_BUSY: (429, "principal_tasks"),
    TASKS_BUSY: (503, "tasks"),
    TASK_MOVING: (503, "task_moving"),  # its holder does not answer: retry (elsewhere)
}

#: What the startup log says of the tasks' records, by whether the store is shared.
_TASKS_KEPT: Final = {
    False: "in this process (the embedded store), for the life of the process at most: "
    "a restart loses every task; --store redis://... keeps them across restarts and replicas",
    True: "in the shared store: another replica takes a task over when this one is gone",
}


def stateless_without_session(scope: Scope) -> bool:
    """Whether a request names a stateless version in ``MCP-Protocol-Version`` and no
    session."""
    version = (header(scope, b"mcp-protocol-version") or "").strip()
    return version in STATELESS_VERSIONS and header(scope, b"mcp-session-id") is None


def is_stateless(scope: Scope, message: Request) -> bool:
    """Whether a POSTed request is served statelessly (by its ``_meta`` or its headers)."""
    return is_stateless_request(message) or stateless_without_session(scope)


def resumes(message: Request) -> bool:
    """Whether a request continues a suspended 2026-07-28 call (carries ``requestState``)."""
    params = message.params
    return isinstance(params, Mapping) and "requestState" in params


class _ClientLeft(Exception):
    """The client closed the POST of a 2026-07-28 call (raised out of its wait)."""


class StatelessPost:
    """A 2026-07-28 ``tools/call`` or ``prompts/get`` POST: the notification sink of its call
    and the :class:`~erlmcp_py.mcp.mrtr.Waiter` its answer is awaited in.

    The POST's task waits as a session POST does (:func:`relay`): parked in ``receive()``,
    woken by a notification queued or by a change of the call, writing the notifications
    as they come (the SSE head with the first). The client's disconnect raises
    :class:`_ClientLeft` out of the wait, which cancels the call.
    """

    __slots__ = ("receive", "send", "stream")

    def __init__(self, stream: Stream, receive: Receive, send: Send) -> None:
        self.stream = stream
        self.receive = receive
        self.send = send

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """The call's sink: queue the notification without blocking the tool; past the
        stream's capacity the client does not keep up, and it and every later one are
        dropped (raised: the registry counts them)."""
        frame = jsonrpc.encode_notification(method, params)  # EncodeError: dropped
        stream = self.stream
        if stream.overflowed or len(stream.frames) >= stream.capacity:
            stream.overflowed = True
            raise trio.BrokenResourceError("the POST's notification stream is full")
        stream.push(frame)

    def wake(self) -> None:
        self.stream.wake()

    async def park(self) -> None:
        if not await relay(self.stream, self.receive, self.send, []):
            raise _ClientLeft


class StatelessPosts:
    """The transport's stateless side: the endpoint, its continuation registry and task
    registry while :meth:`run` runs, and the POSTs it answers.

    Args:
        transport: The transport it belongs to (its server, runtime, policy, principals).
        refusals: Where the transport counts its refusals.
        on_call_end: Called when a 2026-07-28 call ends (the transport's drain watches it).
    """

    def __init__(
        self, transport: HttpTransport, refusals: Refusals, on_call_end: Callable[[], None]
    ) -> None:
        self.transport = transport
        self.endpoint: StatelessEndpoint | None = None
        self._refusals = refusals
        self._on_call_end = on_call_end

    @property
    def registry(self) -> ContinuationRegistry | None:
        """The continuation registry while :meth:`run` runs."""
        return self.endpoint.registry if self.endpoint is not None else None

    @property
    def tasks(self) -> TaskRegistry | None:
        """The task registry while :meth:`run` runs."""
        return self.endpoint.tasks if self.endpoint is not None else None

    def close_all(self) -> None:
        """End every suspended call (their tools are cancelled)."""
        if self.endpoint is not None:
            self.endpoint.registry.close()

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the continuation and task registries until cancelled."""
        transport = self.transport
        options = dict(transport.config.continuations)
        config = getattr(transport.runtime, "config", None)
        if "state_ttl" not in options and config is not None:
            options["state_ttl"] = state_ttl_for(config)
        options.setdefault("max_per_principal", transport.config.limits.suspended)
        options["on_call_end"] = self._on_call_end
        # With a shared store, tasks outlive this replica: another takes them over by replay
        # (unless calls are never replayed: then they end failed when it is gone).
        durable = transport.runtime.store.shared
        replay = options.get("mrtr", "auto") != "suspend"
        try:
            async with (
                open_continuations(**options) as registry,
                open_tasks(transport.runtime, durable=durable, replay=replay) as tasks,
            ):
                # Where tasks live decides what a restart loses: the operator is told once.
                log.info("tasks_store", durable=durable, kept=_TASKS_KEPT[durable])
                self.endpoint = transport.server.stateless_endpoint(
                    transport.runtime, registry, tasks=tasks
                )
                task_status.started()
                await trio.sleep_forever()
        finally:
            self.endpoint = None

    async def serve(self, scope: Scope, message: Request, receive: Receive, send: Send) -> None:
        """Answer one 2026-07-28 request statelessly (no session): ``application/json``, or an
        SSE stream once a ``tools/call`` sends a notification before its answer."""
        endpoint = self.endpoint
        if endpoint is None:
            raise HttpError(503, "Service Unavailable: the transport is not running")
        reason = check_stateless_headers(scope.get("headers", ()), message.method, message.params)
        if reason is not None:
            log.info("stateless_header_mismatch", why=reason, method=message.method[:80])
            raise HttpError(400, f"Header mismatch: {reason}", code=HEADER_MISMATCH, id=message.id)
        principal = self.transport.principal_of(scope)
        result: dict[str, Any] | None = None
        error: JsonRpcError | None = None
        # A tools/call's notifications queue on its stream and are written while the POST
        # waits for its answer (the SSE response starts with the first); none sent: the
        # answer stays application/json.
        stream: Stream | None = None
        try:
            if message.method in INPUT_METHODS:  # the ones that notify
                stream = Stream(self.transport.config.stream_queue, sse=True)
                post = StatelessPost(stream, receive, send)
                attached = endpoint.accept(
                    message,
                    principal=principal,
                    tenant=Tenant(user=principal),
                    client_id=principal,
                    notify=post.notify,
                    accept_language=header(scope, b"accept-language"),
                )
                result = await endpoint.answer(attached, post)
            else:
                result = await endpoint.handle(
                    message,
                    principal=principal,
                    tenant=Tenant(user=principal),
                    client_id=principal,
                    accept_language=header(scope, b"accept-language"),
                )
        except _ClientLeft:  # the client closed the POST: the call is cancelled
            log.info("stateless_request_abandoned", method=message.method[:80])
            return
        except JsonRpcError as exc:
            error = exc.with_id(message.id)
        except Exception as exc:  # a bug: answered, and the server keeps serving
            log.exception("request_failed", method=message.method[:80], error=type(exc).__name__)
            error = jsonrpc.internal_error("Internal error", None, message.id)
        if error is None:
            assert result is not None
            try:
                body = jsonrpc.encode_response(message.id, result)
            except jsonrpc.EncodeError:
                log.warning("result_unencodable", method=message.method[:80])
                error = jsonrpc.internal_error("Result could not be encoded", None, message.id)
        extra: list[tuple[bytes, bytes]] = []
        if error is not None:
            body = error.encode()
            status = http_status_for(error.code)
            reason = error.data.get("reason") if isinstance(error.data, Mapping) else None
            # a full registry: one principal's share (429), or the whole of it (503)
            if isinstance(reason, str) and reason in _REGISTRY_FULL:
                status, counted = _REGISTRY_FULL[reason]
                self._refusals.counts[counted] += 1
                extra.append(self._refusals.retry_after)
        else:
            status = 200
        frames = stream.take() if stream is not None else []
        if stream is not None and stream.started:  # the status went out: the answer is an event
            await send_events(send, [*frames, body], more=False)
        elif frames:  # notifications queued: the same, in one write
            await start_sse(send, [], [*frames, body], more=False)
        else:
            await send_simple(send, status, body, JSON, extra)
