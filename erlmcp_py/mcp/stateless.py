"""Serving 2026-07-28 (stateless) requests: ``server/discover``, the lists, ``tools/call``,
``prompts/get``.

Theory of operation
-------------------
A stateless request (see :func:`~erlmcp_py.mcp.meta.request_meta`) is self-contained: its
``_meta`` names the protocol version and the client's capabilities, so no ``initialize`` is
needed and nothing is remembered about the connection. :class:`StatelessEndpoint` answers one
such request with a result (always carrying ``resultType``, and ``_meta.serverInfo``) or a
JSON-RPC error:

* ``server/discover`` → supported versions (2026-07-28 first), capabilities, server info;
* ``tools/list`` → the tools (a cacheable result: ``ttlMs``, ``cacheScope``);
* ``resources/list``, ``resources/templates/list``, ``resources/read``, ``prompts/list``,
  ``completion/complete`` → as in the session era (:mod:`features`; the lists and
  ``resources/read`` are cacheable too), except that an unknown resource is ``-32602`` (with
  ``data.uri``); ``resources/subscribe`` needs a connection and is not served here;
* ``tools/call`` and ``prompts/get`` (:data:`INPUT_METHODS`: their functions may ask the
  client) → through the :class:`~erlmcp_py.mcp.mrtr.ContinuationRegistry`, on one path: a
  call without ``requestState`` starts the tool or prompt function; a retry with one resumes
  it where it is suspended (``await ctx.elicit(...)`` returns the answer) or replays it, so
  the result is either ``complete`` (a ``CallToolResult`` or ``GetPromptResult``) or an
  ``InputRequiredResult``;
* ``tasks/get``, ``tasks/update``, ``tasks/cancel`` (the ``io.modelcontextprotocol/tasks``
  extension, when the endpoint has a :class:`~erlmcp_py.mcp.tasks.TaskRegistry`) → the task
  registry, for the request's principal; ``-32021`` naming the extension when the request did
  not declare it. A ``tools/call`` of a tool registered with ``task=True`` (or
  ``"required"``) from a request that declared the extension runs as a task (its answer a
  ``CreateTaskResult``; see :mod:`~erlmcp_py.mcp.tasks`); ``server/discover`` offers the
  extension;
* anything else (``ping``, ``logging/setLevel``, ``tasks/result``, ``tasks/list``… are not in
  2026-07-28) → ``-32601``.

Transports: Streamable HTTP answers each POST (with the authenticated principal and tenant)
with :meth:`StatelessEndpoint.handle`, or, for a ``tools/call`` or ``prompts/get``, with
:meth:`StatelessEndpoint.accept` and :meth:`StatelessEndpoint.answer` given the POST's own
wait as the :class:`~erlmcp_py.mcp.mrtr.Waiter`. On a byte stream (stdio), the session era's
``ServerSession`` hands stateless requests to a :class:`SessionStateless` (see
:func:`open_for_session`), which takes each ``tools/call`` and ``prompts/get`` where it reads
it (:meth:`StatelessEndpoint.accept`: the call started, or the retry's answers delivered) and
awaits its answer in a task of its own, honours ``notifications/cancelled``, and ends
everything when the connection closes.

Notifications of a tool or prompt (progress, log messages) relate to the request being
answered —
the first call, then each retry — and travel on that request's channel, before its response.
The transport says how with the ``notify`` sink it passes to :meth:`StatelessEndpoint.handle`
(one per request; see :data:`~erlmcp_py.mcp.mrtr.NotificationSink`); the request's
``_meta.progressToken`` and ``io.modelcontextprotocol/logLevel`` decide what is sent (see
:mod:`~erlmcp_py.mcp.mrtr`). Without a sink they are dropped (and counted). On a byte stream the
sink writes the notification frame on the connection (:class:`SessionStateless`); on Streamable
HTTP it belongs on the POST's SSE stream, so that answer must be an SSE stream once anything is
sent before the response.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, cast

import structlog
import trio

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.actors.peer import PeerGone
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.core.i18n import LOCALE_META_KEY, client_locale
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.tasks import TASKS_EXTENSION
from erlmcp_py.core.versions import SUPPORTED_VERSIONS
from erlmcp_py.mcp import _features as features, jsonrpc
from erlmcp_py.mcp._tools import ToolSpec, text_result
from erlmcp_py.mcp.call_peer import CallPeer, TaskStarter
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.errors import UrlElicitationRequired
from erlmcp_py.mcp.jsonrpc import INVALID_PARAMS, JsonRpcError, Request, RequestId
from erlmcp_py.mcp.meta import (
    SERVER_INFO,
    RequestMeta,
    parse_request_meta,
)
from erlmcp_py.mcp.mrtr import (
    Attachment,
    ContinuationRegistry,
    Handoff,
    MrtrPeer,
    NotificationSink,
    RunCall,
    Waiter,
)
from erlmcp_py.mcp.params import (
    CallToolParams,
    ListToolsParams,
    TaskParams,
    UpdateTaskParams,
    parse_params,
)
from erlmcp_py.mcp.resources import RESOURCE_NOT_FOUND
from erlmcp_py.mcp.stopwatch import ToolClock, run_tool
from erlmcp_py.mcp.tasks import (
    TASK_METHODS,
    RunTool,
    TaskCall,
    TaskRegistry,
    open_tasks,
    tasks_required,
)

if TYPE_CHECKING:
    from erlmcp_py.mcp.server import Server

__all__ = [
    "INPUT_METHODS",
    "Caller",
    "SessionStateless",
    "StatelessEndpoint",
    "open_for_session",
    "state_ttl_for",
]

log = structlog.get_logger("erlmcp.stateless")

Send = Callable[[bytes], Awaitable[None]]

#: The requests whose function may ask the client (``ctx.elicit``, ``ctx.sample``,
#: ``ctx.list_roots``), answered through the continuation registry: a ``complete`` result or
#: an ``InputRequiredResult``.
INPUT_METHODS: Final = frozenset({"tools/call", "prompts/get"})


class StatelessEndpoint:
    """Answers 2026-07-28 requests for one server.

    Args:
        server: The server whose tools are served.
        runtime: Its elicitation runtime.
        registry: Where suspended tool calls wait between rounds.
        principal: Default principal the request states are bound to (a transport with
            authentication passes the authenticated one per request).
        tenant: Default tenant scope of the runtime calls.
        client_id: Default rate-limit key of the runtime.
        tasks: Where tools run as tasks (the ``io.modelcontextprotocol/tasks`` extension);
            ``None``: this endpoint offers no tasks (a tool registered with ``task=True``
            runs as a call, one with ``task="required"`` cannot run).
    """

    #: Whether a retry whose call this process does not hold may be *replayed* (its
    #: function run again from the start, its earlier answers taken from the state; see
    #: docs/mrtr.md). An endpoint whose calls must never run twice says ``False``: such a
    #: retry is refused (``unknown_continuation``) unless the endpoint forwards it.
    replays: ClassVar[bool] = True

    def __init__(
        self,
        server: Server,
        runtime: Runtime,
        registry: ContinuationRegistry,
        *,
        principal: str = "local",
        tenant: Tenant | None = None,
        client_id: str = "stateless",
        tasks: TaskRegistry | None = None,
    ) -> None:
        self.server = server
        self.runtime = runtime
        self.registry = registry
        self.principal = principal
        self.tenant = tenant or Tenant(user=principal)
        self.client_id = client_id
        self.tasks = tasks
        if tasks is not None:
            tasks.resume_with(self._tool_of_task)

    # -- public ---------------------------------------------------------------------------------

    async def handle(
        self,
        request: Request,
        *,
        meta: RequestMeta | None = None,
        principal: str | None = None,
        tenant: Tenant | None = None,
        client_id: str | None = None,
        notify: NotificationSink | None = None,
        accept_language: str | None = None,
    ) -> dict[str, Any]:
        """Answer one 2026-07-28 request.

        Args:
            request: The request.
            meta: Its metadata, when the caller has read it already
                (:func:`~erlmcp_py.mcp.meta.request_meta`); else ``_meta`` is read and checked
                here.
            principal: The authenticated principal (default: the endpoint's).
            tenant: The tenant scope (default: the endpoint's).
            client_id: The rate-limit key (default: the endpoint's).
            notify: Sends one notification related to this request on its channel (awaited
                before the answer is returned, never after). The progress and log messages
                of a ``tools/call`` or ``prompts/get`` go there while this request is the one
                the function works for; without it they are dropped.
            accept_language: The HTTP request's ``Accept-Language``, if any: the locale of a
                ``tools/call`` or ``prompts/get`` whose ``_meta`` declares none under
                :data:`~erlmcp_py.core.i18n.LOCALE_META_KEY`.

        Returns:
            The result object (with ``resultType`` and ``_meta.serverInfo``).

        Raises:
            JsonRpcError: the answer is an error (``-32602`` bad ``_meta`` or refused state,
                ``-32022`` unsupported version, ``-32601`` unknown method…).
        """
        if meta is None:
            meta = parse_request_meta(request)
        method = request.method
        if method in INPUT_METHODS:
            attached = self.accept(
                request,
                meta=meta,
                principal=principal,
                tenant=tenant,
                client_id=client_id,
                notify=notify,
                accept_language=accept_language,
            )
            return await self.answer(attached)
        if method == "server/discover":
            result = self.discover_result()
        elif method == "tools/list":
            parse_params(ListToolsParams, request.params, request.id)
            result = {
                "resultType": "complete",
                "tools": self.server.tool_definitions(),
                "ttlMs": 0,
                "cacheScope": "public",
            }
        elif method in features.METHODS:  # those that never ask the client
            result = {"resultType": "complete", **await _feature_answer(self.server, request)}
            if method in _CACHEABLE:
                result.update(ttlMs=0, cacheScope="public")
        elif method in TASK_METHODS and self.tasks is not None:
            result = await self._task_request(self.tasks, request, meta, principal)
        else:
            raise jsonrpc.method_not_found(method, request.id)
        return self._with_server_info(result)

    def accept(
        self,
        request: Request,
        *,
        meta: RequestMeta | None = None,
        principal: str | None = None,
        tenant: Tenant | None = None,
        client_id: str | None = None,
        notify: NotificationSink | None = None,
        accept_language: str | None = None,
    ) -> Attachment:
        """Take a ``tools/call`` or ``prompts/get`` (:data:`INPUT_METHODS`) on arrival: its
        ``_meta`` checked, and its call started, or the state of its retry opened and its
        answers delivered (the suspended function resumes at once) or its replay started.

        For these requests :meth:`handle` is ``await endpoint.answer(endpoint.accept(...))``;
        a transport that reads several requests from one stream calls this where it reads
        them, so the function goes on while :meth:`answer` is awaited elsewhere. The
        arguments are those of :meth:`handle`.

        Returns:
            The request attached to its call (see :class:`~erlmcp_py.mcp.mrtr.Attached`):
            pass it to :meth:`answer`, once; :meth:`Attached.cancel` cancels the call.

        Raises:
            JsonRpcError: refused at once (``-32602`` bad ``_meta``, params or ``requestState``,
                ``-32022`` unsupported version, ``-32603`` busy…).
        """
        if meta is None:
            meta = parse_request_meta(request)
        attached = self._input_call(
            request,
            meta,
            principal or self.principal,
            tenant or self.tenant,
            client_id or self.client_id,
            notify,
            accept_language,
        )
        return attached

    async def answer(self, attached: Attachment, waiter: Waiter | None = None) -> dict[str, Any]:
        """The result of the request :meth:`accept` took (with ``_meta.serverInfo``), once the
        call decided it; cancelling the wait cancels the call.

        Args:
            attached: What :meth:`accept` returned.
            waiter: Where to wait for the call (see :class:`~erlmcp_py.mcp.mrtr.Waiter`: a
                transport's own wait for the request's channel); by default a sleep.

        Raises:
            JsonRpcError: the call's own error (see :class:`~erlmcp_py.mcp.mrtr.Attached`).
        """
        result = await (attached if waiter is None else attached.answer(waiter))
        return self._with_server_info(result)

    async def respond(self, request: Request, **kwargs: Any) -> bytes:
        """Like :meth:`handle`, but returns the encoded response frame (result or error).

        Never raises for one request's sake: an unexpected exception (a bug) is logged and
        answered ``-32603``, so the connection keeps serving its other requests.
        """
        return await _frame(request, self.handle(request, **kwargs))

    def discover_result(self) -> dict[str, Any]:
        """The ``server/discover`` result."""
        result: dict[str, Any] = {
            "resultType": "complete",
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": self._capabilities(),
            "ttlMs": 0,
            "cacheScope": "public",
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    def _capabilities(self) -> dict[str, Any]:
        offered = self.server.capabilities()
        caps: dict[str, Any] = {"tools": {"listChanged": False}}
        if "resources" in offered:
            caps["resources"] = {"listChanged": False}  # no subscriptions without a connection
        for name in ("prompts", "completions"):
            if name in offered:
                caps[name] = offered[name]
        if self.tasks is not None:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        return caps

    # -- tasks/get, tasks/update, tasks/cancel ---------------------------------------------------

    async def _task_request(
        self, tasks: TaskRegistry, request: Request, meta: RequestMeta, principal: str | None
    ) -> dict[str, Any]:
        """A request of the tasks extension, for ``principal``'s tasks only."""
        if not meta.capabilities.declares_extension(TASKS_EXTENSION):
            raise tasks_required(request.id)  # before any task is looked up
        who = principal or self.principal
        if request.method == "tasks/update":
            update = parse_params(UpdateTaskParams, request.params, request.id)
            await tasks.update(update.taskId, who, update.inputResponses, meta.capabilities)
            return {"resultType": "complete"}
        params = parse_params(TaskParams, request.params, request.id)
        if request.method == "tasks/cancel":
            await tasks.cancel(params.taskId, who)
            return {"resultType": "complete"}
        return {"resultType": "complete", **await tasks.get(params.taskId, who)}

    # -- tools/call, prompts/get -----------------------------------------------------------------

    def server_info(self) -> dict[str, Any]:
        """The ``serverInfo`` every result carries in its ``_meta``: the server's."""
        info: dict[str, Any] = {"name": self.server.name, "version": self.server.version}
        if self.server.title:
            info["title"] = self.server.title
        return info

    def _with_server_info(self, result: dict[str, Any]) -> dict[str, Any]:
        info = self.server_info()
        existing = result.get("_meta")
        meta = dict(existing) if isinstance(existing, Mapping) else {}
        meta[SERVER_INFO] = info
        result["_meta"] = meta
        return result

    def _input_call(
        self,
        request: Request,
        meta: RequestMeta,
        principal: str,
        tenant: Tenant,
        client_id: str,
        notify: NotificationSink | None,
        accept_language: str | None,
    ) -> Attachment:
        """A request that may ask the client (:data:`INPUT_METHODS`), through the registry:
        a first call starts it, a retry with ``requestState`` resumes or replays it."""
        params = cast(Mapping[str, Any], request.params)

        def prepare() -> RunCall:
            """Check the request; what runs its function (a first call, a replay)."""
            declared = params["_meta"].get(LOCALE_META_KEY)  # ``meta`` was read from it
            locale = client_locale(declared, accept_language)
            return self.call_runner(request, Caller(principal, tenant, client_id, meta, locale))

        if "requestState" in params:
            return self.registry.resume(
                principal=principal,
                method=request.method,
                params=params,
                capabilities=meta.capabilities,
                sink=notify,
                progress_token=meta.progress_token,
                log_level=meta.log_level,
                prepare=prepare if self.replays else None,
                protocol_version=meta.protocol_version,
                client_id=client_id,
            )
        return self.registry.start(
            principal=principal,
            method=request.method,
            params=params,
            capabilities=meta.capabilities,
            protocol_version=meta.protocol_version,
            client_id=client_id,
            run=prepare(),
            sink=notify,
            progress_token=meta.progress_token,
            log_level=meta.log_level,
        )

    def _context(
        self,
        peer: CallPeer,
        request_id: RequestId,
        name: str,
        clock: ToolClock,
        tenant: Tenant,
        locale: str | None,
        task_starter: TaskStarter | None = None,
    ) -> Context:
        server = self.server
        return Context(
            peer=peer,
            runtime=self.runtime,
            url_policy=server.url_policy,
            server=server,
            tenant=tenant,
            request_id=request_id,
            tool_name=name,
            clock=clock,
            locale=locale,
            task_starter=task_starter,
        )

    def call_runner(self, request: Request, caller: Caller) -> RunCall:
        """Check a ``tools/call`` or ``prompts/get``; what runs its function with a given
        peer (the server's tool or prompt). A first call runs it; a replay runs it again.

        Raises:
            JsonRpcError: the request is refused (unknown tool, bad params…).
        """
        if request.method == "tools/call":
            return self._tool_runner(request, caller, caller.locale)
        return self._prompt_runner(request, caller.tenant, caller.locale)

    def _tool_runner(self, request: Request, caller: Caller, locale: str | None) -> RunCall:
        """Check a ``tools/call``; what runs its tool with a given peer: as a call, or as a
        task (the tool registered to run as one, and the request declared the extension)."""
        params = parse_params(CallToolParams, request.params, request.id)
        spec = self.server.tools.get(params.name)
        if spec is None:
            raise jsonrpc.invalid_params(
                f"Unknown tool: {params.name[:200]}", {"name": params.name[:200]}, request.id
            )
        as_task = self._runs_as_task(spec, caller.meta, request.id)
        run_tool_with = self._tool_with(spec, params.arguments, request.id, caller.tenant, locale)

        async def run(peer: MrtrPeer) -> Mapping[str, Any] | Handoff:
            if not as_task or self.tasks is None:
                return await run_tool_with(peer, None)
            # What runs it again on another replica, should that replica take the task over
            # (JSON: it is kept in the task's record).
            resume = {
                "tool": spec.name,
                "arguments": params.arguments,
                "id": request.id,
                "tenant": [caller.tenant.user, caller.tenant.workspace, caller.tenant.conversation],
                "locale": locale,
            }
            call = TaskCall(
                tool=spec.name,
                principal=caller.principal,
                client_id=caller.client_id,
                protocol_version=caller.meta.protocol_version,
                capabilities=caller.meta.capabilities,
                required=spec.task == "required",
                run=run_tool_with,
                resume=resume,
            )
            if spec.task_start == "call":
                return await self.tasks.run_call(call)
            return await self.tasks.run_call(call, peer)

        return run

    def _tool_with(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any] | None,
        request_id: RequestId,
        tenant: Tenant,
        locale: str | None,
    ) -> RunTool:
        """What runs ``spec`` with ``arguments`` through a given peer (and task starter)."""

        async def run_tool_with(peer: CallPeer, starter: TaskStarter | None) -> Mapping[str, Any]:
            def context(clock: ToolClock) -> Context:
                return self._context(peer, request_id, spec.name, clock, tenant, locale, starter)

            try:
                return await run_tool(spec, arguments, context, log)
            except UrlElicitationRequired as exc:  # -32042 does not exist in 2026-07-28
                urls = ", ".join(e["url"] for e in exc.elicitations)
                return text_result(f"{exc.message} Complete it first: {urls}", is_error=True)

        return run_tool_with

    def _tool_of_task(self, resume: Mapping[str, Any]) -> RunTool:
        """What runs a task's tool again, from the JSON its call left in the task's record
        (a task taken over from a replica that is gone).

        Raises:
            JsonRpcError: this server has no such tool (``-32602``).
            KeyError, TypeError, ValueError: not what :meth:`_tool_runner` wrote.
        """
        name = str(resume["tool"])
        spec = self.server.tools.get(name)
        if spec is None:
            raise jsonrpc.invalid_params(f"Unknown tool: {name[:200]}", {"name": name[:200]})
        arguments = resume["arguments"]
        if arguments is not None and not isinstance(arguments, dict):
            raise TypeError("a task's arguments are an object")
        user, workspace, conversation = resume["tenant"]
        locale = resume["locale"]
        return self._tool_with(
            spec,
            arguments,
            resume["id"],
            Tenant(user, workspace, conversation),
            None if locale is None else str(locale),
        )

    def _runs_as_task(self, spec: ToolSpec, meta: RequestMeta, request_id: RequestId) -> bool:
        """Whether a call of ``spec`` runs as a task (or may become one, ``task_start="tool"``).

        Raises:
            JsonRpcError: the tool runs only as a task and the request did not declare the
                extension (``-32021``), or this endpoint runs no tasks.
        """
        if spec.task == "never":
            return False
        declared = meta.capabilities.declares_extension(TASKS_EXTENSION)
        if spec.task == "required":
            if not declared:
                raise tasks_required(request_id)
            if self.tasks is None:
                raise jsonrpc.internal_error(
                    "This tool runs only as a task, and this endpoint runs no tasks",
                    {"reason": "no_tasks"},
                    request_id,
                )
        return declared and self.tasks is not None

    def _prompt_runner(self, request: Request, tenant: Tenant, locale: str | None) -> RunCall:
        """Check a ``prompts/get``; what renders its prompt with a given peer."""
        features.check_prompt(self.server, request)

        async def run(peer: MrtrPeer) -> Mapping[str, Any]:
            def context(name: str) -> Context:
                clock = ToolClock(trio.CancelScope(), None)  # a prompt has no time budget
                return self._context(peer, request.id, name, clock, tenant, locale)

            return await features.answer(self.server, request, context)

        return run


@dataclass(frozen=True, slots=True)
class Caller:
    """Who made a ``tools/call`` or ``prompts/get``: what its call (or a task made of it) is
    bound to and charged to, and the language to ask in.

    Attributes:
        principal: The principal its ``requestState`` is bound to.
        tenant: The tenant scope of its questions.
        client_id: The runtime's rate-limit key.
        meta: The request's checked ``_meta``.
        locale: The user's language (the ``_meta`` locale, else ``Accept-Language``).
    """

    principal: str
    tenant: Tenant
    client_id: str
    meta: RequestMeta
    locale: str | None = None


#: Results of 2026-07-28 that extend ``CacheableResult`` (besides ``tools/list`` and
#: ``server/discover``): they carry ``ttlMs`` and ``cacheScope``.
_CACHEABLE: Final = frozenset(
    {"resources/list", "resources/templates/list", "resources/read", "prompts/list"}
)


async def _feature_answer(server: Server, request: Request) -> dict[str, Any]:
    """:func:`features.answer`, with 2026-07-28's error for an unknown resource: ``-32602``
    (``data.uri`` names it) where the session era answers ``-32002``."""
    try:
        return await features.answer(server, request)
    except JsonRpcError as exc:
        if exc.code != RESOURCE_NOT_FOUND:
            raise
        raise JsonRpcError(INVALID_PARAMS, exc.message, exc.data, exc.id) from None


async def _frame(request: Request, answer: Awaitable[dict[str, Any]]) -> bytes:
    """The response frame of ``request``: the result ``answer`` gives, encoded, or the error
    it raises (see :func:`_error_frame`)."""
    try:
        return jsonrpc.encode_response(request.id, await answer)
    except Exception as exc:
        return _error_frame(request, exc)


def _error_frame(request: Request, exc: Exception) -> bytes:
    """The error frame answering ``request`` that raised ``exc`` (called where it is caught):
    a :class:`JsonRpcError` as it is; anything else (a bug, a result that does not encode) is
    logged and answered ``-32603``, so the connection keeps serving its other requests."""
    if isinstance(exc, JsonRpcError):
        return exc.with_id(request.id).encode()
    if isinstance(exc, jsonrpc.EncodeError):
        log.warning("result_unencodable", method=request.method[:80])
        return jsonrpc.internal_error("Result could not be encoded", None, request.id).encode()
    log.exception("request_failed", method=request.method[:80], error=type(exc).__name__)
    return jsonrpc.internal_error("Internal error", None, request.id).encode()


class _InFlight:
    """A ``tools/call`` or ``prompts/get`` of a byte stream, until its answer is written."""

    __slots__ = ("attached", "cancelled")

    def __init__(self, attached: Attachment) -> None:
        self.attached = attached
        self.cancelled = False  # by the client: the answer is not sent


class SessionStateless:
    """2026-07-28 requests arriving on a session-era byte stream (stdio): one task per call.

    A call's progress and log messages are written on the connection while the call (or the
    retry resuming it) is in progress, before its answer. A request's cancellation
    (``notifications/cancelled``) cancels its call; the request ends with the call, and its
    answer is not sent.

    Create with :func:`open_for_session`.
    """

    def __init__(
        self,
        endpoint: StatelessEndpoint,
        nursery: trio.Nursery,
        send: Send,
        on_call_end: Callable[[], None] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self._nursery = nursery
        self._send = send
        self._on_call_end = on_call_end
        self._calls: dict[RequestId, _InFlight] = {}

    @property
    def calls_in_progress(self) -> int:
        """``tools/call`` and ``prompts/get`` requests whose answer is not yet written."""
        return len(self._calls)

    async def dispatch(self, request: Request, meta: RequestMeta) -> None:
        """Answer ``request``, whose metadata ``meta`` the connection has read
        (:func:`~erlmcp_py.mcp.meta.request_meta`). A ``tools/call`` or ``prompts/get`` is
        taken here (its call started, or its retry's answers delivered: see
        :meth:`StatelessEndpoint.accept`), and its answer is awaited and written by a task of
        its own (this returns at once)."""
        if request.method not in INPUT_METHODS:
            await self._write(await self.endpoint.respond(request, meta=meta))
            return
        if request.id in self._calls:
            error = jsonrpc.invalid_request("a request with this id is already in progress")
            await self._write(error.with_id(request.id).encode())
            return
        try:
            attached = self.endpoint.accept(request, meta=meta, notify=self._notify)
        except Exception as exc:
            await self._write(_error_frame(request, exc))
            return
        call = self._calls[request.id] = _InFlight(attached)
        self._nursery.start_soon(self._serve_call, request, call)

    def cancel(self, request_id: RequestId) -> bool:
        """Cancel an in-flight ``tools/call`` or ``prompts/get``: its call is cancelled, and
        no answer is sent; False if unknown."""
        call = self._calls.get(request_id)
        if call is None:
            return False
        call.cancelled = True
        call.attached.cancel()
        return True

    def close(self) -> None:
        """End every call, continuation and task of this connection (the tasks awaiting their
        answers run in the registry's nursery, which this cancels, and with it the tasks
        registry). Idempotent."""
        self.endpoint.registry.close()

    async def _serve_call(self, request: Request, call: _InFlight) -> None:
        try:
            frame = await _frame(request, self.endpoint.answer(call.attached))
            if call.cancelled:
                log.info("call_cancelled", id=str(request.id)[:80])
                return
            await self._write(frame)
        finally:
            self._calls.pop(request.id, None)
            if self._on_call_end is not None:
                self._on_call_end()

    async def _write(self, frame: bytes) -> None:
        try:
            await self._send(frame)
        except PeerGone:
            log.info("answer_dropped", why="client gone")

    async def _notify(self, method: str, params: Mapping[str, Any]) -> None:
        """The sink of every call on this connection: one frame on the connection (it raises
        when the client is gone or the params do not encode; the notification is dropped)."""
        await self._send(jsonrpc.encode_notification(method, dict(params)))


def state_ttl_for(config: RuntimeConfig) -> float:
    """A ``requestState`` lifetime that outlives any first deadline of the runtime.

    The longest default deadline (form or URL mode) plus a minute for the retry to arrive.
    An elicitation extended past that is answered too late: its state has expired.

    Args:
        config: The runtime's :class:`~erlmcp_py.actors.api.RuntimeConfig`.
    """
    return max(float(config.form_deadline_s), float(config.url_deadline_s)) + 60.0


async def open_for_session(
    server: Server,
    runtime: Runtime,
    *,
    nursery: trio.Nursery,
    send: Send,
    tenant: Tenant,
    peer_id: str,
    on_call_end: Callable[[], None] | None = None,
    **registry_options: Any,
) -> SessionStateless:
    """Start the stateless side of one byte-stream connection.

    Its continuations and its tasks (:mod:`~erlmcp_py.mcp.tasks`: a connection's tasks are
    its own, bound to its tenant's user) run in nurseries of their own inside ``nursery``,
    under a task that runs the registry's timer; :meth:`close` ends them (call it when the
    connection closes).

    Args:
        server: The server.
        runtime: Its elicitation runtime.
        nursery: The connection's nursery.
        send: Writes one frame to the client.
        tenant: The connection's tenant scope (its ``user`` is the principal).
        peer_id: The connection id (the runtime's rate-limit key).
        on_call_end: Called when a request's call ends (its answer written, or not sent).
        **registry_options: Keyword arguments of :class:`ContinuationRegistry`; by default
            ``state_ttl`` follows the runtime's deadlines (:func:`state_ttl_for`).
    """
    if "state_ttl" not in registry_options:
        registry_options["state_ttl"] = state_ttl_for(runtime.config)

    async def host(*, task_status: trio.TaskStatus[SessionStateless]) -> None:
        async with trio.open_nursery() as inner, open_tasks(runtime) as tasks:
            registry = ContinuationRegistry(inner, **registry_options)
            endpoint = server.stateless_endpoint(
                runtime,
                registry,
                principal=tenant.user,
                tenant=tenant,
                client_id=peer_id,
                tasks=tasks,
            )
            task_status.started(SessionStateless(endpoint, inner, send, on_call_end))
            await registry.run_timer()  # until the connection closes

    stateless: SessionStateless = await nursery.start(host)
    return stateless
