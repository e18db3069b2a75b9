"""Tasks: a ``tools/call`` answered with a durable handle the client polls (the
``io.modelcontextprotocol/tasks`` extension of 2026-07-28, SEP-2663).

Theory of operation
-------------------
A tool registered with ``task=True`` (or ``task="required"``) runs as a *task* for a
2026-07-28 request whose client declared the extension in its per-request capabilities: the
request is answered with a ``CreateTaskResult`` (``resultType: "task"``) once the task is
recorded in the runtime's store, and the tool runs on in this registry's nursery. The client
then polls ``tasks/get``, answers the task's questions with ``tasks/update`` and may
``tasks/cancel`` it. A client that did not declare the extension gets the tool as an ordinary
call (``task=True``) or ``-32021`` naming the extension (``"required"``). The state of a task
is :class:`~erlmcp_py.core.tasks.TaskState` (pure); this module is its shell.

*Questions are the runtime's questions.* The tool asks with the same ``ctx.elicit`` (and its
helpers, ``ctx.sample``, ``ctx.list_roots``) as any call. Its ``Context`` asks through a
:class:`TaskPeer`, the :class:`~erlmcp_py.mcp.call_peer.CallPeer` of a task: the runtime
creates each elicitation as a child of its own (limits per principal, strict validation,
re-prompts, URL checks, secrets to the hosted page, audit logs) under the *task policy*'s
deadlines (hours: :attr:`~erlmcp_py.core.policy.Policy.task_lifecycle`), and
:meth:`TaskPeer.send_request` records the request as an input request of the task instead of
writing it anywhere. ``tasks/get`` shows it in ``inputRequests``; ``tasks/update`` hands each
answer to the runtime's ``on_response`` of the request it answers, exactly as a retry's
``inputResponses`` are handed in a round (:mod:`~erlmcp_py.mcp.mrtr`): an invalid answer is
re-prompted by the runtime, which shows up as a new input request (under a new key: a key is
never reused in a task) whose message lists the errors. A subset of the outstanding keys may
be answered at once; keys that are not outstanding are ignored. The runtime's deadline
warning of a question becomes the task's ``statusMessage``; progress and log messages of the
tool have no channel in a task and are dropped (counted). Where the hosted page is served, a
question may also carry a link to it in its ``_meta`` (the ``Context`` opens it:
:mod:`~erlmcp_py.mcp.context`); an answer given there completes the elicitation through the
runtime, and the question leaves ``inputRequests`` (a later answer to its key is ignored).
:meth:`TaskRegistry.page_links`
reads a task's links for the application.

*When it becomes a task.* ``task_start="call"`` (the default): before the tool runs.
``task_start="tool"``: the tool runs as an ordinary call (its first questions go out in the
call's own rounds, ``InputRequiredResult``) until it calls ``await ctx.start_task()``; then
the request being answered gets the ``CreateTaskResult`` and the tool goes on as the task
(SEP-2663: MRTR exchanges are resolved before the task is created). Either way the tool runs
in this registry's nursery (:meth:`TaskRegistry.run_call`), so that it outlives the request
that started it; until it is a task, the request's cancellation cancels it.

*Ends.* The tool's result ends the task ``completed`` (an ``isError`` result too); a
JSON-RPC error it raises ends it ``failed`` with that error (anything else it raises is a bug:
``failed`` with ``-32603``); ``tasks/cancel`` answers each of its open questions ``cancel``
(they end ``Cancelled``, as if the user dismissed them) and cancels the tool: ``cancelled``,
unless it finished first. Past the task's TTL (``task_ttl_s`` from its creation) a task still
running is cancelled the same way and every task is forgotten: ``tasks/get`` then answers as
for an unknown id.

*Isolation.* Task ids are 128 random bits (``secrets``), and a task is bound to the principal
of the request that created it (the token's subject, or the client's address: what binds a
``requestState``). Every ``tasks/*`` request names its principal; another principal's task
reads, updates and cancels exactly as an unknown id does (``-32602``), and there is no
``tasks/list``. A request that did not declare the extension gets ``-32021`` before any task
is looked up.

*Bounds.* A principal holds at most ``max_tasks_per_client`` tasks, running or ended and kept,
and all together at most ``max_tasks``; at a cap the ended task used least recently (created,
polled, answered; of the principal, or of the principal holding the most) is forgotten for
the new one, and with none ended the new one is refused (``-32603``, ``data.reason``
:data:`TASKS_PRINCIPAL_BUSY` or :data:`TASKS_BUSY`; HTTP answers 429 and 503).

*The store.* A task's record (:class:`~erlmcp_py.core.store_wire.SharedTask`) is written to the
runtime's store before its ``CreateTaskResult`` is answered (a ``tasks/get`` right after it
resolves on any replica sharing the store), then after each change (written in the
background, in order, the latest state winning), and deleted when the task is forgotten.
``tasks/get`` answers from the task this process runs when it runs it, else from the store.
The embedded store (``memory``) keeps records in this process, so tasks do not outlive it; a
shared store (``redis://``) lets any replica read them. A ``tasks/update`` or ``tasks/cancel``
for a task another replica runs is refused (``data.reason`` ``task_elsewhere``): route
``tasks/*`` requests by their ``Mcp-Name`` header (the task id) to the replica that created the
task.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import pydantic_core
import structlog
import trio

from erlmcp_py.actors.pages import PAGE_URL_META
from erlmcp_py.actors.peer import PeerGone, PeerResponse
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.core.errors import StoreUnavailable
from erlmcp_py.core.policy import TaskPolicy
from erlmcp_py.core.shares import Refuse, Shares, Shed
from erlmcp_py.core.store_wire import SharedTask
from erlmcp_py.core.tasks import TASKS_EXTENSION, TaskState
from erlmcp_py.mcp.call_peer import CallPeer, TaskStarter
from erlmcp_py.mcp.jsonrpc import (
    INVALID_PARAMS,
    EncodeError,
    JsonRpcError,
    RequestId,
    dumps,
    internal_error,
)
from erlmcp_py.mcp.meta import missing_capability
from erlmcp_py.mcp.mrtr import Handoff, MrtrPeer, response_problem
from erlmcp_py.mcp.versions import ClientCapabilities

__all__ = [
    "TASKS_BUSY",
    "TASKS_PRINCIPAL_BUSY",
    "TASK_METHODS",
    "TaskCall",
    "TaskPeer",
    "TaskRegistry",
    "open_tasks",
    "tasks_required",
]

log = structlog.get_logger("erlmcp.tasks")

#: The methods of the extension (``tasks/result`` and ``tasks/list`` do not exist in it).
TASK_METHODS: Final = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})

#: ``data.reason`` of a task refused because its principal holds its share of tasks, all
#: running (HTTP 429).
TASKS_PRINCIPAL_BUSY: Final = "tasks_principal_busy"
#: ``data.reason`` of a task refused because the server holds all the tasks it may, all
#: running (HTTP 503).
TASKS_BUSY: Final = "tasks_busy"

#: Seconds between tries of a store write that failed (the store is down).
_RETRY_WRITE_S: Final = 1.0


def tasks_required(id: RequestId | None = None) -> JsonRpcError:
    """The ``-32021`` error of a request that needs the extension and did not declare it."""
    return missing_capability({"extensions": {TASKS_EXTENSION: {}}}, id)


def _not_found() -> JsonRpcError:
    """The one answer for an id that names no task this principal may see (unknown, expired,
    forgotten, another principal's)."""
    return JsonRpcError(INVALID_PARAMS, "Failed to retrieve task: Task not found")


def _elsewhere() -> JsonRpcError:
    return internal_error(
        "This task runs on another server instance: send its tasks/update and tasks/cancel "
        "with the Mcp-Name header (the task id) so that they reach it",
        {"reason": "task_elsewhere"},
    )


def _bad_responses(detail: str) -> JsonRpcError:
    return JsonRpcError(
        INVALID_PARAMS,
        f"Invalid inputResponses: {detail}",
        {"reason": "bad_input_responses"},
    )


def _error_object(error: JsonRpcError) -> dict[str, Any]:
    """The ``error`` of a failed task: the JSON-RPC error object the call would have had."""
    out: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        out["data"] = error.data
    return out


@dataclass(frozen=True, slots=True)
class TaskCall:
    """A ``tools/call`` that runs as a task, or may become one.

    Attributes:
        tool: The tool's name (for logs).
        principal: Whom the task is bound to.
        client_id: The runtime's rate-limit key of its questions.
        protocol_version: The request's protocol version.
        capabilities: What the request's client declared.
        required: The tool runs only as a task.
        run: Runs the tool with the peer its ``Context`` asks through and, when the tool
            starts its task itself, the :class:`~erlmcp_py.mcp.call_peer.TaskStarter`;
            returns its ``CallToolResult`` or raises its :class:`JsonRpcError`.
    """

    tool: str
    principal: str
    client_id: str
    protocol_version: str
    capabilities: ClientCapabilities
    required: bool
    run: Callable[[CallPeer, TaskStarter | None], Awaitable[Mapping[str, Any]]]


class _Asking:
    """``with peer.asking:`` around each question of a task: counted, for nothing but the
    gauge (a task has no rounds to end)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def __enter__(self) -> None:
        self.count += 1

    def __exit__(self, *exc: object) -> None:
        self.count -= 1


@dataclass(slots=True)
class _Delivery:
    """Where the answer to one outstanding input request goes."""

    rid: str
    on_response: Callable[[PeerResponse], None]


class _Task:
    """One task this process runs (or ran and keeps): its state and its shell."""

    __slots__ = (
        "asking",
        "capabilities",
        "client_id",
        "deliveries",
        "forgotten",
        "principal",
        "protocol_version",
        "run",
        "state",
        "tool",
    )

    def __init__(
        self, state: TaskState, call: TaskCall, capabilities: ClientCapabilities, run: _Run
    ) -> None:
        self.state = state
        self.tool = call.tool
        self.principal = call.principal
        self.client_id = call.client_id
        self.protocol_version = call.protocol_version
        self.capabilities = capabilities  # as declared on the latest request about it
        self.run = run
        self.deliveries: dict[str, _Delivery] = {}  # by input request key
        self.asking = _Asking()
        self.forgotten = False  # past its TTL, or shed for a newer one: nothing more is written


class _Run:
    """One run of a tool in the registry's nursery: a call until it is a task."""

    __slots__ = ("decided", "error", "result", "scope", "task")

    def __init__(self) -> None:
        self.scope = trio.CancelScope()
        self.task: _Task | None = None
        self.decided = trio.Event()  # it finished as a call, or became a task
        self.result: Mapping[str, Any] | None = None
        self.error: JsonRpcError | None = None


class TaskPeer:
    """The :class:`~erlmcp_py.mcp.call_peer.CallPeer` of a call that runs as a task.

    ``send_request`` records the request as an input request of the task (under this peer's
    key, when it has one: :meth:`with_key`); the client reads it with ``tasks/get`` and
    answers it with ``tasks/update``. ``forget_request`` takes it out of ``inputRequests``
    (its deadline passed, or its asker stopped waiting). The runtime's deadline warning of a
    question becomes the task's ``statusMessage``; nothing else is sent anywhere.
    """

    __slots__ = ("_key", "_registry", "_task", "asking")

    #: The task stays in this process while it asks (the hosted page may answer it).
    keeps_call: Final = True
    #: A task has no request to report progress to.
    progress_token: Final = None

    def __init__(self, task: _Task, registry: TaskRegistry, key: str | None = None) -> None:
        self._task = task
        self._registry = registry
        self._key = key
        self.asking = task.asking

    @property
    def task_id(self) -> str:
        """The task's id."""
        return self._task.state.task_id

    @property
    def peer_id(self) -> str:
        """The runtime's rate-limit key of the task's questions (its principal's)."""
        return self._task.client_id

    @property
    def protocol_version(self) -> str:
        """The protocol version of the request that created the task."""
        return self._task.protocol_version

    @property
    def capabilities(self) -> ClientCapabilities:
        """The client's capabilities, as declared on the latest request about the task."""
        return self._task.capabilities

    def supports(self, mode: str) -> bool:
        """Whether the client declared elicitation in ``mode``."""
        return self._task.capabilities.supports(mode)

    def count_question(self) -> bool:
        """Every question of a task is asked once: always charged."""
        return True

    def with_key(self, key: str) -> TaskPeer:
        """This peer, recording its requests under ``key`` in ``inputRequests`` (a key
        already issued in this task gets ``<key>-<n>``: a task never reuses a key)."""
        return TaskPeer(self._task, self._registry, key)

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        request_id: str,
        on_response: Callable[[PeerResponse], None],
    ) -> None:
        """Record the request as an input request of the task (default key: ``<method
        prefix>`` then ``<prefix>-<n>``, e.g. ``elicitation``, ``elicitation-1``).

        Raises:
            PeerGone: the task has ended or its client asked to cancel it: nobody will answer.
        """
        await trio.lowlevel.checkpoint()
        task = self._task
        state = task.state
        if state.terminal or state.cancel_requested or task.forgotten:
            raise PeerGone("the task has ended or is being cancelled")
        body = dict(params)
        if method == "elicitation/create" and "requestedSchema" in body:
            body.setdefault("mode", "form")
        hint = self._key or method.rpartition("/")[0] or "input"
        key = state.ask(hint, method, body, self._registry.now())
        task.deliveries[key] = _Delivery(request_id, on_response)
        self._registry.changed(task)

    def forget_request(self, request_id: str) -> None:
        """Take an input request the runtime no longer waits for out of the task."""
        task = self._task
        for key, delivery in list(task.deliveries.items()):
            if delivery.rid == request_id:
                del task.deliveries[key]
                if task.state.withdraw(key, self._registry.now()):
                    self._registry.changed(task)

    async def send_notification(self, method: str, params: Mapping[str, Any]) -> None:
        """The runtime's notifications about the task's questions: a deadline warning
        (``notifications/message``) becomes the task's ``statusMessage`` until the question
        leaves ``inputRequests``; ``notifications/cancelled`` and
        ``notifications/elicitation/complete`` name requests a task's client never got as
        requests: nothing is sent."""
        await trio.lowlevel.checkpoint()
        if method != "notifications/message" or params.get("level") != "warning":
            return
        data = params.get("data")
        if not isinstance(data, Mapping) or not isinstance(data.get("message"), str):
            return
        task = self._task
        key = _key_of_elicitation(task, data.get("elicitationId"))
        task.state.warn(key, data["message"], self._registry.now())
        self._registry.changed(task)

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """The tool's progress and log messages: a task has no request to send them on
        (SEP-2663), so they are dropped and counted."""
        await trio.lowlevel.checkpoint()
        self._registry.counters["notifications_dropped"] += 1
        log.debug("task_notification_dropped", method=method[:80], task=self.task_id[:8])


def _key_of_elicitation(task: _Task, elicitation_id: object) -> str | None:
    """The input request of an elicitation: the runtime's request ids are
    ``<elicitation id>.<attempt>``."""
    if not isinstance(elicitation_id, str):
        return None
    for key, delivery in task.deliveries.items():
        if delivery.rid.partition(".")[0] == elicitation_id:
            return key
    return None


class _Starter:
    """The :class:`~erlmcp_py.mcp.call_peer.TaskStarter` of a tool that starts its task."""

    __slots__ = ("_call", "_registry", "_run")

    def __init__(self, registry: TaskRegistry, run: _Run, call: TaskCall) -> None:
        self._registry = registry
        self._run = run
        self._call = call

    async def start(self, peer: CallPeer) -> CallPeer | None:
        in_flight = peer.questions_in_flight if isinstance(peer, MrtrPeer) else 0
        if in_flight:
            raise RuntimeError(
                f"start_task() while {in_flight} question(s) of the call are being asked: "
                "start the task between questions"
            )
        capabilities = peer.capabilities
        if not capabilities.declares_extension(TASKS_EXTENSION):
            if self._call.required:
                raise tasks_required()
            await trio.lowlevel.checkpoint()
            return None
        task = await self._registry.open(self._call, capabilities, self._run)
        self._run.decided.set()
        return TaskPeer(task, self._registry)


class TaskRegistry:
    """The tasks of one server (or of one stdio connection): those it runs, those it ran and
    keeps, and their records in the runtime's store.

    Create with :func:`open_tasks` (its own nursery, writer and timer).

    Args:
        nursery: Where the tools of tasks run; cancelling it ends every task.
        runtime: The runtime whose store records the tasks and whose policy
            (:attr:`~erlmcp_py.core.policy.Policy.tasks`) bounds them.
        policy: Overrides the runtime's task policy (tests).
    """

    def __init__(
        self, nursery: trio.Nursery, runtime: Runtime, *, policy: TaskPolicy | None = None
    ) -> None:
        self._nursery = nursery
        self.runtime = runtime
        self.policy = policy or runtime.policy.tasks
        self._tasks: Shares[str, _Task] = Shares(
            self.policy.max_per_client, self.policy.max_total, shed_own=True
        )
        # When each task held falls due, in creation order (= expiry order: one TTL for all);
        # a task forgotten earlier leaves it, so this never outgrows what is held.
        self._expiry: OrderedDict[str, tuple[float, _Task]] = OrderedDict()
        self._dirty: dict[str, _Task] = {}  # tasks whose record is to be written
        self._deleted: dict[str, None] = {}  # records to delete
        self._write_due = trio.Event()
        self._wall_offset = time.time() - trio.current_time()
        self.counters: Counter[str] = Counter()

    def now(self) -> float:
        """Wall-clock seconds on the trio clock (what task times are written in)."""
        return trio.current_time() + self._wall_offset

    def __len__(self) -> int:
        """Tasks held: running, or ended and kept."""
        return len(self._tasks)

    def snapshot(self) -> dict[str, Any]:
        """Gauges (``held``, ``running``, ``questions``) and counters (``created``,
        ``completed``, ``failed``, ``cancelled``, ``expired``, ``shed``,
        ``refused.<reason>``, ``notifications_dropped``…)."""
        running = [t for t in self._tasks.values() if not t.state.terminal]
        return {
            "held": len(self._tasks),
            "running": len(running),
            "questions": sum(len(t.state.requests) for t in running),
            **self.counters,
        }

    # -- creating ---------------------------------------------------------------------------------

    async def run_call(
        self, call: TaskCall, peer: CallPeer | None = None
    ) -> Mapping[str, Any] | Handoff:
        """Run ``call``'s tool in this registry's nursery.

        Without ``peer`` the call is a task at once: the task is recorded and the
        :class:`~erlmcp_py.mcp.mrtr.Handoff` of its ``CreateTaskResult`` returned, while the
        tool runs on as the task. With ``peer`` (the call's own, for a tool that starts its
        task itself), the tool runs as a call through ``peer`` until it finishes (its result,
        or its error raised) or starts its task (the handoff). Cancelling this wait before
        then cancels the tool.

        Raises:
            JsonRpcError: the tool's own error (while a call); the task cannot be made.
        """
        run = _Run()
        if peer is None:
            task = await self.open(call, call.capabilities, run)
            self._nursery.start_soon(self._run_tool, run, call, TaskPeer(task, self), None)
            return Handoff(self._created(task))
        self._nursery.start_soon(self._run_tool, run, call, peer, _Starter(self, run, call))
        try:
            await run.decided.wait()
        except BaseException:
            if run.task is None:
                run.scope.cancel()  # the request went away: so does the call
            raise
        if run.task is not None:
            return Handoff(self._created(run.task))
        if run.error is not None:
            raise run.error
        if run.result is None:  # cancelled under the request (the registry is closing)
            raise internal_error("The tool call was cancelled", {"reason": "cancelled"})
        return run.result

    async def open(self, call: TaskCall, capabilities: ClientCapabilities, run: _Run) -> _Task:
        """Admit a new task of ``call`` and record it in the store (before anyone hears of it).

        Raises:
            JsonRpcError: refused at a cap (:data:`TASKS_PRINCIPAL_BUSY`, :data:`TASKS_BUSY`),
                or the store cannot record it (``store_unavailable``).
        """
        admission = self._tasks.admit(call.principal, _ended)
        if isinstance(admission, Refuse):
            reason = TASKS_PRINCIPAL_BUSY if admission.scope == "principal" else TASKS_BUSY
            self.counters[f"refused.{reason}"] += 1
            whose = "this client holds" if admission.scope == "principal" else "this server holds"
            raise internal_error(
                f"Too many tasks: {whose} as many running tasks as it may; retry later",
                {"reason": reason},
            )
        if isinstance(admission, Shed):
            self._shed(admission)
        state = TaskState.new(
            # 128 random bits (the id is a bearer handle), in hex: an id never starts with "-",
            # which a command line would read as an option (erlmcp-py connect --task ID)
            secrets.token_hex(16),
            self.now(),
            ttl_s=self.policy.ttl_s,
            poll_interval_s=self.policy.poll_interval_s,
        )
        task = _Task(state, call, capabilities, run)
        self._tasks.add(call.principal, state.task_id, task)
        try:
            await self.runtime.store.put_task(self._shared(task), self.policy.ttl_s)
        except StoreUnavailable:
            self._tasks.remove(state.task_id)
            self.counters["refused.store_unavailable"] += 1
            log.warning("task_not_recorded", tool=call.tool[:80], why="store unavailable")
            raise internal_error(
                "The task could not be recorded (the shared store is unavailable); retry later",
                {"reason": "store_unavailable"},
            ) from None
        except BaseException:
            self._tasks.remove(state.task_id)
            raise
        run.task = task
        self._expiry[state.task_id] = (trio.current_time() + self.policy.ttl_s, task)
        self.counters["created"] += 1
        log.info(
            "task_created",
            task=state.task_id[:8],
            tool=call.tool[:80],
            client=call.client_id[:80],
        )
        return task

    def _created(self, task: _Task) -> dict[str, Any]:
        return {"resultType": "task", **task.state.created()}

    def _shared(self, task: _Task) -> SharedTask:
        return SharedTask(
            task.state.task_id, task.state.detailed(), task.principal, self.runtime.store.replica
        )

    async def _run_tool(
        self, run: _Run, call: TaskCall, peer: CallPeer, starter: TaskStarter | None
    ) -> None:
        result: Mapping[str, Any] | None = None
        error: JsonRpcError | None = None
        try:
            with run.scope:
                try:
                    result = await call.run(peer, starter)
                except JsonRpcError as exc:
                    error = exc
                except Exception as exc:  # run() turns the tool's own errors into results
                    log.exception("task_tool_failed", tool=call.tool[:80], error=type(exc).__name__)
                    error = internal_error("Internal error while running the tool")
        finally:
            task = run.task
            if task is None:  # it finished as a call (or was cancelled as one)
                run.result, run.error = result, error
                run.decided.set()
            else:
                self._ended(task, result, error)

    def _ended(
        self, task: _Task, result: Mapping[str, Any] | None, error: JsonRpcError | None
    ) -> None:
        """The task's tool is done: its end, recorded once."""
        state = task.state
        now = self.now()
        task.deliveries.clear()  # its questions ended with their asker
        result, error = _encodable(task, result, error)
        if result is not None:
            ended = state.complete(result, now)
        elif error is not None:
            ended = state.fail(_error_object(error), now)
        else:
            ended = state.cancel(now)
        if not ended or task.forgotten:
            return
        self.counters[str(state.status)] += 1
        log.info("task_ended", task=state.task_id[:8], status=str(state.status))
        self.changed(task)

    # -- the requests of the extension ------------------------------------------------------------

    async def get(self, task_id: str, principal: str) -> dict[str, Any]:
        """The ``DetailedTask`` of ``tasks/get`` (without ``resultType``).

        Raises:
            JsonRpcError: ``-32602`` for an id this principal cannot see; ``-32603`` when the
                task is not held here and the store cannot say.
        """
        task = self._visible(task_id, principal)
        if task is not None:
            return task.state.detailed()
        shared = await self._stored(task_id, principal)
        if shared is None:
            raise _not_found()
        return dict(shared.detailed)

    async def page_links(self, task_id: str, principal: str) -> dict[str, str]:
        """The link of each open question of a task that the hosted page answers, by key
        (:data:`~erlmcp_py.actors.pages.PAGE_URL_META` of its input request): for an
        application to send to whoever should answer (by mail, say). Anyone holding a link
        may answer that one question, once, until it ends; it shows nothing else. Read from
        the task this process runs, else from the store (any replica's task).

        Raises:
            JsonRpcError: as :meth:`get`.
        """
        detailed = await self.get(task_id, principal)
        links: dict[str, str] = {}
        for key, request in (detailed.get("inputRequests") or {}).items():
            meta = request.get("params", {}).get("_meta")
            url = meta.get(PAGE_URL_META) if isinstance(meta, Mapping) else None
            if isinstance(url, str):
                links[key] = url
        return links

    async def update(
        self,
        task_id: str,
        principal: str,
        responses: object,
        capabilities: ClientCapabilities,
    ) -> None:
        """Deliver ``tasks/update``'s ``inputResponses``: each answer to an outstanding input
        request goes to the runtime (validated there, re-prompted when invalid); keys that
        are not outstanding are ignored; nothing is delivered when one of the answers is no
        answer at all (its shape).

        Raises:
            JsonRpcError: ``-32602`` unknown id, or ``inputResponses`` not an object or an
                entry of the wrong shape (``bad_input_responses``); ``task_elsewhere``.
        """
        task = self._visible(task_id, principal)
        if task is None:
            await self._not_held(task_id, principal)
            return
        if not isinstance(responses, Mapping):
            raise _bad_responses("inputResponses must be an object")
        state = task.state
        for key in state.outstanding(str(k) for k in responses):
            problem = response_problem(state.requests[key].method, responses[key])
            if problem is not None:
                self.counters["refused.bad_input_responses"] += 1
                raise _bad_responses(f"inputResponses.{key[:64]}{problem}")
        task.capabilities = capabilities
        taken = state.take_answers(
            {key: responses[key] for key in state.outstanding(str(k) for k in responses)},
            self.now(),
        )
        for key, response in taken.items():
            delivery = task.deliveries.pop(key, None)
            if delivery is not None:
                delivery.on_response(response)
        self.counters["answers"] += len(taken)
        log.info(
            "task_updated",
            task=task_id[:8],
            answered=len(taken),
            ignored=len(responses) - len(taken),
        )
        if taken:
            self.changed(task)
        await trio.lowlevel.checkpoint()

    async def cancel(self, task_id: str, principal: str) -> None:
        """``tasks/cancel``: its open questions are answered ``cancel`` (they end
        ``Cancelled``) and its tool is cancelled; the task ends ``cancelled``, unless it
        finished first. A task that has ended is left as it is (the ack is the same).

        Raises:
            JsonRpcError: ``-32602`` unknown id; ``task_elsewhere``.
        """
        task = self._visible(task_id, principal)
        if task is None:
            await self._not_held(task_id, principal)
            return
        if task.state.request_cancel(self.now()):
            log.info("task_cancel_requested", task=task_id[:8])
            self._stop(task)
            self.changed(task)
        await trio.lowlevel.checkpoint()

    def _stop(self, task: _Task) -> None:
        """Cancel the task's tool and answer its open elicitations ``cancel`` (as the user's
        dismissal, through the runtime). The tool is cancelled first: the outcomes never
        reach it, so it cannot finish as if it had been answered."""
        task.run.scope.cancel()
        state = task.state
        cancels = {
            key: {"action": "cancel"}
            for key, request in state.requests.items()
            if request.method == "elicitation/create"
        }
        for key, response in state.take_answers(cancels, self.now()).items():
            delivery = task.deliveries.pop(key, None)
            if delivery is not None:
                delivery.on_response(response)

    def _visible(self, task_id: str, principal: str) -> _Task | None:
        task = self._tasks.get(task_id)
        if task is None or task.principal != principal:
            return None
        self._tasks.touch(task_id)
        return task

    async def _stored(self, task_id: str, principal: str) -> SharedTask | None:
        try:
            return await self.runtime.store.get_task(task_id, principal)
        except StoreUnavailable:
            raise internal_error(
                "The task cannot be read now (the shared store is unavailable); retry later",
                {"reason": "store_unavailable"},
            ) from None

    async def _not_held(self, task_id: str, principal: str) -> None:
        """A ``tasks/update`` or ``tasks/cancel`` for a task this process does not run: an
        ended one (in the store) takes it as a no-op; a running one runs elsewhere.

        Raises:
            JsonRpcError: unknown (``-32602``), or running elsewhere (``task_elsewhere``).
        """
        shared = await self._stored(task_id, principal)
        if shared is None:
            raise _not_found()
        if not shared.terminal:
            self.counters["refused.task_elsewhere"] += 1
            raise _elsewhere()

    # -- forgetting -------------------------------------------------------------------------------

    def _shed(self, shed: Shed[str, _Task]) -> None:
        """Forget an ended task to make room at a cap (its record goes too)."""
        self.counters["shed"] += 1
        log.info("task_forgotten", task=shed.key[:8], why=f"max_tasks ({shed.scope})")
        self._forget(shed.value)

    def _forget(self, task: _Task) -> None:
        task.forgotten = True
        task_id = task.state.task_id
        self._expiry.pop(task_id, None)
        if self._tasks.get(task_id) is task:
            self._tasks.remove(task_id)
        self._dirty.pop(task_id, None)
        self._deleted[task_id] = None
        self._write_due.set()

    def _expire(self, task: _Task) -> None:
        """Past its TTL: a running task is stopped (as by ``tasks/cancel``); every task is
        forgotten."""
        if not task.state.terminal:
            task.state.request_cancel(self.now())
            self._stop(task)
        self.counters["expired"] += 1
        log.info("task_expired", task=task.state.task_id[:8], status=str(task.state.status))
        self._forget(task)

    # -- background: the store's writes, the TTL --------------------------------------------------

    def changed(self, task: _Task) -> None:
        """The task changed: its record is written soon (the latest state wins)."""
        if task.forgotten:
            return
        self._dirty[task.state.task_id] = task
        self._write_due.set()

    async def run_writer(self) -> None:
        """Write changed records and delete forgotten ones, in the background, until
        cancelled; a failed write is tried again a moment later."""
        store = self.runtime.store
        while True:
            await self._write_due.wait()
            self._write_due = trio.Event()
            deleted, self._deleted = self._deleted, {}
            dirty, self._dirty = self._dirty, {}
            try:
                for task_id in deleted:
                    await store.delete_task(task_id)
                for task in dirty.values():
                    if task.forgotten:
                        continue
                    left = task.state.expires_at() - self.now()
                    if left > 0:
                        await self._put(task, left)
            except StoreUnavailable:
                self.counters["store_errors"] += 1
                for task_id in deleted:
                    self._deleted.setdefault(task_id, None)
                for task_id, task in dirty.items():
                    self._dirty.setdefault(task_id, task)
                await trio.sleep(_RETRY_WRITE_S)
                self._write_due.set()

    async def _put(self, task: _Task, ttl_s: float) -> None:
        """Write one task's record; a write that fails for any reason but the store's
        availability is a bug, logged, and costs that write only (the writer goes on)."""
        try:
            await self.runtime.store.put_task(self._shared(task), ttl_s)
        except StoreUnavailable:
            raise
        except Exception as exc:
            self.counters["write_errors"] += 1
            log.exception(
                "task_write_failed", task=task.state.task_id[:8], error=type(exc).__name__
            )

    async def run_timer(self) -> None:
        """Forget tasks past their TTL, until cancelled (:func:`open_tasks` runs it). The TTL
        is the same for every task, so they fall due in the order they were created."""
        expiry = self._expiry
        while True:
            now = trio.current_time()
            while expiry:
                due, task = next(iter(expiry.values()))
                if due > now:
                    break
                self._expire(task)  # forgets it: it leaves ``expiry``
            await trio.sleep_until(
                next(iter(expiry.values()))[0] if expiry else now + self.policy.ttl_s
            )

    def close(self) -> None:
        """End every task (their tools are cancelled)."""
        self._nursery.cancel_scope.cancel()


def _encodable(
    task: _Task, result: Mapping[str, Any] | None, error: JsonRpcError | None
) -> tuple[Mapping[str, Any] | None, JsonRpcError | None]:
    """The end a task records: its result or error as plain JSON values (what ``tasks/get``
    and every store carry alike), else ``-32603`` saying the result could not be encoded (as
    a call's answer that does not encode is answered)."""
    try:
        if result is not None:
            return pydantic_core.from_json(dumps(result)), None
        if error is not None:
            data = error.data
            if data is not None:
                data = pydantic_core.from_json(dumps(data))
            return None, JsonRpcError(error.code, error.message, data)
    except EncodeError:
        log.warning("task_result_unencodable", task=task.state.task_id[:8], tool=task.tool[:80])
        return None, internal_error("Result could not be encoded")
    return result, error


def _ended(task: _Task) -> bool:
    """Whether a task may be forgotten for a newer one at a cap: it has ended."""
    return task.state.terminal


@asynccontextmanager
async def open_tasks(runtime: Runtime, **options: Any) -> AsyncIterator[TaskRegistry]:
    """Open a :class:`TaskRegistry` with its own nursery, store writer and TTL timer; closing
    it ends every task.

    Args:
        runtime: The runtime whose store and policy the tasks use.
        **options: Keyword arguments of :class:`TaskRegistry`.
    """
    async with trio.open_nursery() as nursery:
        registry = TaskRegistry(nursery, runtime, **options)
        nursery.start_soon(registry.run_writer)
        nursery.start_soon(registry.run_timer)
        try:
            yield registry
        finally:
            registry.close()
