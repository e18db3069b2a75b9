"""One client session over a :class:`~._wire.Wire`: requests, answers, server requests, eras.

Theory of operation
-------------------
:func:`open_client_session` starts one reader task that takes everything the wire brings, in
order:

* a *response* goes to the request waiting for that id (:meth:`ClientSession.request_raw`); one
  nobody waits for (late, duplicate, unknown) goes to ``on_unmatched``. A malformed response
  that names a request of ours fails it with the error it earned; a request the transport
  could not carry (:class:`~._wire.Undeliverable`) fails with the transport's reason.
* a *server request* (``elicitation/create``, ``sampling/createMessage``, ``roots/list``,
  ``ping``…) goes to ``handler``. A plain function is called by the reader; an awaitable it
  returns (any coroutine function's) is awaited in a task of its own, so an elicitation may
  wait minutes for a human while the reader keeps serving. The handler returns the result, or
  ``None`` to leave the request for :meth:`ClientSession.respond`, from any task; it raises
  :class:`~erlmcp_py.mcp.errors.ClientRequestError` to answer that JSON-RPC error. Anything
  else it raises is a bug: it ends the session (and leaves its block). Without a handler,
  ``ping`` is answered ``{}`` and anything else ``-32601``.
* a *notification* goes to ``on_notification`` as it arrives; ``notifications/cancelled`` first
  cancels the handler task of the request it names (nothing is sent back), and
  ``notifications/progress`` for a token of ours goes to that request's ``on_progress``.

A caller that stops waiting (its task is cancelled) withdraws its request with
``notifications/cancelled``; the answer, if it still comes, is unmatched. When the wire ends,
the reader stops or the session closes, every waiting request fails with
:class:`~._wire.ConnectionLost` at once, and every later one too: nothing waits forever.

*Both eras.* With a session version (2025-06-18, 2025-11-25), :meth:`ClientSession.initialize`
declares the capabilities (and the locale, in ``_meta``) and the server's info, capabilities
and instructions are kept. With 2026-07-28 there is no ``initialize``: every request made with
:meth:`ClientSession.request` carries ``_meta`` (protocol version, client capabilities, client
info, and the locale and log level when set; members the caller put in ``_meta`` win), and
:meth:`ClientSession.call_tool` and :meth:`ClientSession.get_prompt` answer each
``InputRequiredResult`` through the same handler and retry with ``inputResponses`` and the
exact ``requestState`` (:func:`~._rounds.call_until_complete`). There a handler's refusal
(``None`` or :class:`~erlmcp_py.mcp.errors.ClientRequestError`) leaves the input request out
(the server asks again); ``input_handler`` replaces that rule when given.

*A gateway's upstream.* :meth:`ClientSession.request_raw` passes any request through, params
as given, and returns the answer as data (result or error); a handler may return ``None`` and
the answer come later from another task through :meth:`ClientSession.respond`; notifications
are seen as they arrive; the server's ``serverInfo``, capabilities and instructions stay on the
session. It decides nothing else.
"""

from __future__ import annotations

import copy
import inspect
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any, Final, TypedDict

import structlog
import trio
from typing_extensions import Unpack

from erlmcp_py.client._rounds import call_until_complete, with_request_meta
from erlmcp_py.client._wire import ConnectionLost, Inbound, Refused, Undeliverable, Wire
from erlmcp_py.core.i18n import LOCALE_META_KEY
from erlmcp_py.core.versions import LATEST_SESSION_VERSION, STATELESS_VERSIONS
from erlmcp_py.mcp.errors import ClientRequestError
from erlmcp_py.mcp.jsonrpc import (
    METHOD_NOT_FOUND,
    ErrorResponse,
    Notification,
    Request,
    RequestId,
    Response,
)
from erlmcp_py.mcp.meta import LOG_LEVEL, SERVER_INFO

__all__ = [
    "CLIENT_INFO",
    "DEFAULT_CAPABILITIES",
    "MAX_ROUNDS",
    "ClientSession",
    "Handler",
    "InputHandler",
    "OnNotification",
    "OnProgress",
    "OnUnmatched",
    "ServerRequest",
    "SessionOptions",
    "open_client_session",
]

log = structlog.get_logger("erlmcp.client")

#: What a session declares unless told otherwise: form elicitation.
DEFAULT_CAPABILITIES: Final[Mapping[str, Any]] = {"elicitation": {"form": {}}}
#: The ``clientInfo`` a session gives unless told otherwise.
CLIENT_INFO: Final[Mapping[str, Any]] = {"name": "erlmcp-py", "version": "0.1.0"}
#: Most rounds a 2026-07-28 ``call_tool``/``get_prompt`` sends before it gives up (default).
MAX_ROUNDS: Final = 16


@dataclass(frozen=True, slots=True)
class ServerRequest:
    """A request the server sent (``elicitation/create``…), or a 2026-07-28 input request.

    Attributes:
        id: The JSON-RPC id; for an input request, its key in ``inputRequests``.
        method: The method.
        params: Its params (``{}`` when it has none).
    """

    id: RequestId
    method: str
    params: Mapping[str, Any]


Handler = Callable[[ServerRequest], Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None]
"""Answers a server request (see the module docstring): the result, ``None`` to leave it
unanswered, or raises :class:`~erlmcp_py.mcp.errors.ClientRequestError`."""

InputHandler = Callable[[ServerRequest], Awaitable[Mapping[str, Any] | None]]
"""Answers a 2026-07-28 input request in the caller's task: the result, or ``None`` to leave it
out (the server asks again); what it raises ends the call."""

OnNotification = Callable[[str, Mapping[str, Any]], None]
"""Sees each server notification ``(method, params)`` as it arrives (called by the reader)."""

OnProgress = Callable[[Mapping[str, Any]], None]
"""Sees the params of each ``notifications/progress`` of one request."""

OnUnmatched = Callable[[Response | ErrorResponse], None]
"""Sees each answer no request waits for (late, duplicate or unknown)."""


class SessionOptions(TypedDict, total=False):
    """The keyword options of :class:`ClientSession` (and of the ``connect_*`` openers)."""

    protocol_version: str
    capabilities: Mapping[str, Any]
    client_info: Mapping[str, Any]
    locale: str | None
    log_level: str | None
    handler: Handler | None
    input_handler: InputHandler | None
    on_notification: OnNotification | None
    on_unmatched: OnUnmatched | None
    max_rounds: int | None
    cancel_timeout: float


class _Waiter:
    """Where the answer to one request lands."""

    __slots__ = ("answer", "arrived", "error")

    def __init__(self) -> None:
        self.arrived = trio.Event()
        self.answer: Response | ErrorResponse | None = None
        self.error: ConnectionLost | None = None

    def deliver(self, answer: Response | ErrorResponse) -> None:
        self.answer = answer
        self.arrived.set()

    def fail(self, error: ConnectionLost) -> None:
        self.error = error
        self.arrived.set()


def _key(id: object) -> str:
    """An id as a dictionary key that keeps ``1`` and ``"1"`` apart."""
    return f"{type(id).__name__}:{id}"


def _result(answer: Response | ErrorResponse) -> dict[str, Any]:
    """The result of an answer, or its error raised."""
    if isinstance(answer, ErrorResponse):
        raise ClientRequestError(answer.code, answer.message, answer.data)
    return answer.result


def _with_progress_token(params: Mapping[str, Any] | None, token: str | None) -> Any:
    """``params`` with ``progressToken`` added to its ``_meta`` (as they are without one)."""
    if token is None:
        return params
    out = dict(params or {})
    out["_meta"] = {**(out.get("_meta") or {}), "progressToken": token}
    return out


class ClientSession:
    """One session with one server over a :class:`~._wire.Wire` (see the module docstring).
    Open with :func:`open_client_session` or one of the ``connect_*`` openers.

    Attributes:
        wire: The connection.
        protocol_version: The version spoken: the one asked for, after :meth:`initialize` the
            negotiated one.
        capabilities: What the client declares (``initialize`` or every 2026-07-28 ``_meta``).
        client_info: The ``clientInfo`` declared.
        locale: The user's locale (``io.erlmcp/locale`` in ``_meta``), if declared.
        log_level: 2026-07-28: the server log level every request asks for, if any.
        handler: Answers server requests and input requests.
        input_handler: 2026-07-28: answers input requests instead of ``handler``.
        on_notification: Sees each notification as it arrives.
        on_unmatched: Sees each answer no request waits for.
        max_rounds: 2026-07-28: most rounds of one call (``None``: no bound).
        cancel_timeout: Seconds allowed to send ``notifications/cancelled`` for a withdrawn
            request.
        server_info: The server's ``serverInfo`` (after :meth:`initialize` or
            :meth:`discover`; ``{}`` before).
        server_capabilities: The server's capabilities (likewise).
        instructions: The server's instructions, if it gave any.
    """

    def __init__(
        self,
        wire: Wire,
        nursery: trio.Nursery,
        *,
        protocol_version: str = LATEST_SESSION_VERSION,
        capabilities: Mapping[str, Any] = DEFAULT_CAPABILITIES,
        client_info: Mapping[str, Any] = CLIENT_INFO,
        locale: str | None = None,
        log_level: str | None = None,
        handler: Handler | None = None,
        input_handler: InputHandler | None = None,
        on_notification: OnNotification | None = None,
        on_unmatched: OnUnmatched | None = None,
        max_rounds: int | None = MAX_ROUNDS,
        cancel_timeout: float = 5.0,
    ) -> None:
        self.wire = wire
        self.protocol_version = protocol_version
        self.capabilities: dict[str, Any] = dict(capabilities)
        self.client_info: dict[str, Any] = dict(client_info)
        self.locale = locale
        self.log_level = log_level
        self.handler = handler
        self.input_handler = input_handler
        self.on_notification = on_notification
        self.on_unmatched = on_unmatched
        self.max_rounds = max_rounds
        self.cancel_timeout = cancel_timeout
        self.server_info: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        self._nursery = nursery
        self._ids = itertools.count(1)
        self._tokens = itertools.count(1)
        self._waiting: dict[RequestId, _Waiter] = {}
        self._serving: dict[str, trio.CancelScope] = {}
        self._progress: dict[str, OnProgress] = {}
        self._ended: ConnectionLost | None = None
        if self.stateless:
            wire.set_protocol(protocol_version)

    @property
    def stateless(self) -> bool:
        """Whether this session speaks the stateless era (2026-07-28): no ``initialize``."""
        return self.protocol_version in STATELESS_VERSIONS

    @property
    def closed(self) -> bool:
        """Whether no answer can come any more (the wire ended or the session closed)."""
        return self._ended is not None

    def next_id(self) -> int:
        """A fresh request id."""
        return next(self._ids)

    # -- requests -----------------------------------------------------------------------------

    def with_meta(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """``params`` with the 2026-07-28 per-request ``_meta`` of this session added
        (:func:`~._rounds.with_request_meta`, plus the locale and log level when set); members
        already in ``params["_meta"]`` win."""
        out = with_request_meta(
            params,
            protocol_version=self.protocol_version,
            capabilities=self.capabilities,
            client_info=self.client_info,
        )
        meta = out["_meta"]  # a dict of its own, where the caller's members are already
        if self.log_level is not None:
            meta.setdefault(LOG_LEVEL, self.log_level)
        if self.locale is not None:
            meta.setdefault(LOCALE_META_KEY, self.locale)
        return out

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        id: RequestId | None = None,
        on_progress: OnProgress | None = None,
    ) -> dict[str, Any]:
        """Send a request and return its result (2026-07-28: with this session's ``_meta``).

        Args:
            method: The method.
            params: Its params.
            id: The request id; default: a fresh one.
            on_progress: Sees the request's ``notifications/progress`` (a ``progressToken`` is
                added to its ``_meta``).

        Raises:
            ClientRequestError: the server answered with an error.
            ConnectionLost: no answer can come.
        """
        token = self._watch_progress(on_progress)
        try:
            return await self._request(method, _with_progress_token(params, token), id)
        finally:
            self._unwatch_progress(token)

    async def _request(
        self, method: str, params: Mapping[str, Any] | None, id: RequestId | None
    ) -> dict[str, Any]:
        """One request, with this session's ``_meta`` on 2026-07-28; its result."""
        if self.stateless:
            params = self.with_meta(params)
        return _result(await self.request_raw(method, params, id=id))

    async def request_raw(
        self, method: str, params: Mapping[str, Any] | None = None, *, id: RequestId | None = None
    ) -> Response | ErrorResponse:
        """Send a request with ``params`` exactly as given; its answer, result or error.

        If the caller stops waiting, the server is sent ``notifications/cancelled``.

        Raises:
            ConnectionLost: no answer can come.
            ValueError: a request with this ``id`` is already waiting.
        """
        if self._ended is not None:
            raise copy.copy(self._ended)
        rid = self.next_id() if id is None else id
        if rid in self._waiting:
            raise ValueError(f"request id {rid!r} is already waiting for its answer")
        waiter = self._waiting[rid] = _Waiter()
        try:
            await self.wire.send(Request(rid, method, None if params is None else dict(params)))
            await waiter.arrived.wait()
        except trio.Cancelled:
            if self._waiting.get(rid) is waiter and self._ended is None:
                del self._waiting[rid]
                await self._withdraw(rid)
            raise
        finally:
            if self._waiting.get(rid) is waiter:
                del self._waiting[rid]
        if waiter.error is not None:
            raise waiter.error
        assert waiter.answer is not None
        return waiter.answer

    async def _withdraw(self, rid: RequestId) -> None:
        """Tell the server we stopped waiting (briefly: this runs while being cancelled)."""
        cancelled = {"requestId": rid, "reason": "the client stopped waiting"}
        shielded = trio.CancelScope(shield=True)
        with shielded, trio.move_on_after(self.cancel_timeout), suppress(ConnectionLost):
            await self.wire.send(Notification("notifications/cancelled", cancelled))

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification (params as given)."""
        await self.wire.send(Notification(method, None if params is None else dict(params)))

    async def respond(self, id: RequestId, outcome: Mapping[str, Any] | ClientRequestError) -> None:
        """Answer server request ``id`` (from any task): a result, or an error.

        Raises:
            ConnectionLost: the answer cannot be sent.
        """
        if isinstance(outcome, ClientRequestError):
            answer: Response | ErrorResponse = ErrorResponse(
                id, outcome.code, outcome.message, outcome.data
            )
        else:
            answer = Response(id, dict(outcome))
        await self.wire.send(answer)

    def _watch_progress(self, on_progress: OnProgress | None) -> str | None:
        """A fresh progress token whose notifications go to ``on_progress`` (``None``
        without one); the caller unwatches it when its request ends."""
        if on_progress is None:
            return None
        token = f"progress-{next(self._tokens)}"
        self._progress[_key(token)] = on_progress
        return token

    def _unwatch_progress(self, token: str | None) -> None:
        if token is not None:
            del self._progress[_key(token)]

    # -- the eras -----------------------------------------------------------------------------

    async def initialize(
        self, *, capabilities: Mapping[str, Any] | None = None, version: str | None = None
    ) -> dict[str, Any]:
        """``initialize`` then ``notifications/initialized`` (session era only).

        Args:
            capabilities: Declared instead of :attr:`capabilities` (which become these).
            version: Asked for instead of :attr:`protocol_version`.

        Returns:
            The initialize result; :attr:`protocol_version` becomes the negotiated version.

        Raises:
            RuntimeError: this session speaks 2026-07-28, which has no ``initialize``.
        """
        if self.stateless:
            raise RuntimeError(f"{self.protocol_version} has no initialize (stateless)")
        if capabilities is not None:
            self.capabilities = dict(capabilities)
        params: dict[str, Any] = {
            "protocolVersion": version or self.protocol_version,
            "capabilities": dict(self.capabilities),
            "clientInfo": dict(self.client_info),
        }
        if self.locale is not None:
            params["_meta"] = {LOCALE_META_KEY: self.locale}
        result = await self.request("initialize", params)
        negotiated = result.get("protocolVersion")
        if isinstance(negotiated, str):
            self.protocol_version = negotiated
        self._learn(result)
        self.wire.set_protocol(self.protocol_version)
        await self.notify("notifications/initialized")
        return result

    async def discover(self) -> dict[str, Any]:
        """``server/discover`` (2026-07-28): supported versions, capabilities, server info."""
        result = await self.request("server/discover", {})
        self._learn(result)
        return result

    async def handshake(self) -> dict[str, Any]:
        """Start talking: :meth:`initialize` (session era) or :meth:`discover` (2026-07-28)."""
        return await (self.discover() if self.stateless else self.initialize())

    def _learn(self, result: Mapping[str, Any]) -> None:
        """Keep what the server says of itself."""
        meta = result.get("_meta")
        info = result.get("serverInfo")
        if info is None and isinstance(meta, Mapping):
            info = meta.get(SERVER_INFO)
        if isinstance(info, Mapping):
            self.server_info = dict(info)
        capabilities = result.get("capabilities")
        if isinstance(capabilities, Mapping):
            self.server_capabilities = dict(capabilities)
        instructions = result.get("instructions")
        if isinstance(instructions, str):
            self.instructions = instructions

    # -- MCP ----------------------------------------------------------------------------------

    async def ping(self) -> None:
        """``ping``."""
        await self.request("ping")

    async def _list(self, method: str, key: str) -> list[dict[str, Any]]:
        """The ``key`` items of every page of a list method (``nextCursor`` followed)."""
        items: list[dict[str, Any]] = []
        cursor: Any = None
        while True:
            result = await self.request(method, {} if cursor is None else {"cursor": cursor})
            items.extend(x for x in result.get(key) or () if isinstance(x, dict))
            cursor = result.get("nextCursor")
            if not cursor:
                return items

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool (all pages of ``tools/list``)."""
        return await self._list("tools/list", "tools")

    async def list_resources(self) -> list[dict[str, Any]]:
        """Every resource (all pages of ``resources/list``)."""
        return await self._list("resources/list", "resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        """Every resource template (all pages of ``resources/templates/list``)."""
        return await self._list("resources/templates/list", "resourceTemplates")

    async def list_prompts(self) -> list[dict[str, Any]]:
        """Every prompt (all pages of ``prompts/list``)."""
        return await self._list("prompts/list", "prompts")

    async def read_resource(self, uri: str) -> dict[str, Any]:
        """``resources/read``: the ``ReadResourceResult`` (its ``contents``)."""
        return await self.request("resources/read", {"uri": uri})

    async def subscribe(self, uri: str) -> None:
        """``resources/subscribe``: the server then notifies ``notifications/resources/updated``."""
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> None:
        """``resources/unsubscribe``."""
        await self.request("resources/unsubscribe", {"uri": uri})

    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, Any],
        context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``completion/complete``: the result (its ``completion``).

        Args:
            ref: ``{"type": "ref/prompt", "name": …}`` or ``{"type": "ref/resource", "uri": …}``.
            argument: ``{"name": …, "value": …}``.
            context: ``{"arguments": {…}}``: the arguments already given.
        """
        params: dict[str, Any] = {"ref": dict(ref), "argument": dict(argument)}
        if context is not None:
            params["context"] = dict(context)
        return await self.request("completion/complete", params)

    async def set_logging_level(self, level: str) -> None:
        """``logging/setLevel``: the least severe log message the server sends."""
        await self.request("logging/setLevel", {"level": level})

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        id: RequestId | None = None,
        max_rounds: int | None = None,
        on_progress: OnProgress | None = None,
    ) -> dict[str, Any]:
        """``tools/call`` to its end: the ``CallToolResult`` (a tool error is ``isError``).

        In a session the server's requests come to the handler while the call runs; on
        2026-07-28 each ``InputRequiredResult`` is answered and the call retried.

        Args:
            name: The tool.
            arguments: Its arguments.
            id: The id of the (first) request; default: a fresh one.
            max_rounds: 2026-07-28: most rounds; default: :attr:`max_rounds`.
            on_progress: Sees the call's progress notifications.

        Raises:
            ClientRequestError: a JSON-RPC error (unknown tool, ``-32042``…).
            ConnectionLost: no answer can come.
            InputRoundsExhausted: 2026-07-28: still asking after ``max_rounds`` rounds.
        """
        params = {"name": name, "arguments": dict(arguments or {})}
        return await self._until_complete("tools/call", params, id, max_rounds, on_progress)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        max_rounds: int | None = None,
        on_progress: OnProgress | None = None,
    ) -> dict[str, Any]:
        """``prompts/get``: the ``GetPromptResult`` (its ``messages``). A prompt may ask the
        user, as a tool does: as :meth:`call_tool`."""
        params = {"name": name, "arguments": dict(arguments or {})}
        return await self._until_complete("prompts/get", params, None, max_rounds, on_progress)

    async def _until_complete(
        self,
        method: str,
        params: dict[str, Any],
        id: RequestId | None,
        max_rounds: int | None,
        on_progress: OnProgress | None,
    ) -> dict[str, Any]:
        """One request in a session; on 2026-07-28, its input rounds until it is complete."""
        token = self._watch_progress(on_progress)
        try:
            params = _with_progress_token(params, token)
            if not self.stateless:
                return await self._request(method, params, id)
            first = id

            async def send(retry: dict[str, Any]) -> dict[str, Any]:
                nonlocal first  # the first round's id; the retries take fresh ones
                rid, first = first, None
                return await self._request(method, retry, rid)

            rounds = self.max_rounds if max_rounds is None else max_rounds
            return await call_until_complete(send, self._answer_input, params, max_rounds=rounds)
        finally:
            self._unwatch_progress(token)

    async def _answer_input(
        self, key: str, method: str, params: Mapping[str, Any]
    ) -> Mapping[str, Any] | None:
        """One input request's answer, in the caller's task (see the module docstring)."""
        request = ServerRequest(key, method, params)
        if self.input_handler is not None:
            return await self.input_handler(request)
        if self.handler is None:
            return None
        try:
            answer = self.handler(request)
            if inspect.isawaitable(answer):
                answer = await answer
        except ClientRequestError:
            return None
        return answer

    # -- the reader ---------------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            while True:
                try:
                    item = await self.wire.receive()
                except ConnectionLost as exc:
                    self._end(exc)
                    return
                await self._take(item)
        finally:
            self._end(ConnectionLost("the session stopped reading"))

    def _end(self, error: ConnectionLost) -> None:
        """No answer can come any more: every waiting request fails now, later ones at once."""
        if self._ended is not None:
            return
        self._ended = error
        for waiter in self._waiting.values():
            waiter.fail(copy.copy(error))  # one exception object per task that raises it

    async def _take(self, item: Inbound) -> None:
        if isinstance(item, Response | ErrorResponse):
            self._arrived(item)
        elif isinstance(item, Request):
            await self._serve(item)
        elif isinstance(item, Notification):
            self._notified(item)
        elif isinstance(item, Refused):
            error = item.error
            log.warning("server_message_refused", code=error.code, reason=error.message)
            if error.response_id is not None:
                self._arrived(
                    ErrorResponse(error.response_id, error.code, error.message, error.data)
                )
        elif isinstance(item, Undeliverable):
            waiter = self._waiting.pop(item.id, None)
            if waiter is not None:
                waiter.fail(item.error)

    def _arrived(self, answer: Response | ErrorResponse) -> None:
        waiter = self._waiting.pop(answer.id, None) if answer.id is not None else None
        if waiter is not None:
            waiter.deliver(answer)
            return
        log.info("response_ignored", id=str(answer.id)[:80], why="unknown, late or duplicate")
        if self.on_unmatched is not None:
            self.on_unmatched(answer)

    def _notified(self, notification: Notification) -> None:
        params = notification.params if isinstance(notification.params, Mapping) else {}
        if notification.method == "notifications/cancelled":
            scope = self._serving.get(_key(params.get("requestId")))
            if scope is not None:
                scope.cancel()
        elif notification.method == "notifications/progress":
            on_progress = self._progress.get(_key(params.get("progressToken")))
            if on_progress is not None:
                on_progress(params)
                return
        if self.on_notification is not None:
            self.on_notification(notification.method, params)

    async def _serve(self, request: Request) -> None:
        params = request.params if isinstance(request.params, Mapping) else {}
        asked = ServerRequest(request.id, request.method, params)
        handler = self.handler
        if handler is None:
            unanswerable = ClientRequestError(METHOD_NOT_FOUND, "Method not found")
            await self._reply(asked.id, {} if asked.method == "ping" else unanswerable)
            return
        try:
            outcome = handler(asked)
        except ClientRequestError as exc:
            await self._reply(asked.id, exc)
            return
        if inspect.isawaitable(outcome):
            self._nursery.start_soon(self._serve_later, asked, outcome)
        elif outcome is not None:
            await self._reply(asked.id, outcome)

    async def _serve_later(
        self, asked: ServerRequest, pending: Awaitable[Mapping[str, Any] | None]
    ) -> None:
        """Await a handler's answer in a task of its own; the server may cancel it."""
        key = _key(asked.id)
        outcome: Mapping[str, Any] | ClientRequestError | None = None
        with trio.CancelScope() as scope:
            self._serving[key] = scope
            try:
                outcome = await pending
            except ClientRequestError as exc:
                outcome = exc
            finally:
                if self._serving.get(key) is scope:
                    del self._serving[key]
        if outcome is not None:
            await self._reply(asked.id, outcome)

    async def _reply(self, id: RequestId, outcome: Mapping[str, Any] | ClientRequestError) -> None:
        with suppress(ConnectionLost):
            await self.respond(id, outcome)


@asynccontextmanager
async def open_client_session(
    wire: Wire, **options: Unpack[SessionOptions]
) -> AsyncIterator[ClientSession]:
    """A :class:`ClientSession` over ``wire``, its reader running (see the module docstring).

    Nothing is sent: call :meth:`ClientSession.handshake` (or ``initialize``) first. On exit
    every waiting request fails with :class:`~._wire.ConnectionLost` and the handler tasks are
    cancelled; the wire stays open (its opener closes it).
    """
    async with trio.open_nursery() as nursery:
        session = ClientSession(wire, nursery, **options)
        nursery.start_soon(session._read)
        try:
            yield session
        finally:
            session._end(ConnectionLost("the session is closed"))
            nursery.cancel_scope.cancel()
