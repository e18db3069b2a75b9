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
runtime (on the replica holding it, wherever the page is served), which hands it, once
valid, to the :class:`TaskPeer` before the elicitation ends with it
(:meth:`TaskPeer.record_answer`): it is journaled as a ``tasks/update`` answer is, and the
question leaves ``inputRequests`` (a later answer to its key is ignored; the first answer to
a key wins).
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

*The store.* A task's record (:class:`~erlmcp_py.core.store_wire.StoreTask`) is written to the
runtime's store before its ``CreateTaskResult`` is answered (a ``tasks/get`` right after it
resolves on any replica sharing the store), then after each change (written in the
background, in order, the latest state winning: one writer), and deleted when the task is
forgotten. ``tasks/get`` answers from the task this process runs when it runs it, else from
the store. The embedded store (``memory``) keeps records in this process, so tasks do not
outlive it; a shared store (``redis://``) lets any replica serve them.

*Any replica.* A ``tasks/update`` or ``tasks/cancel`` for a task another replica holds is
forwarded to it through the store (:meth:`~erlmcp_py.store.Store.forward_task`), which runs
it as its own and sends back its answer; while the holder cannot be reached, the request is
refused as retryable (``data.reason`` :data:`TASK_MOVING`). Every write of a record is
*fenced*: it is taken only while this replica holds the task, so a replica that was cut off
and whose tasks were taken over learns it at its next write and stops its copy
(:meth:`TaskRegistry._lost`).

*Durable by replay.* Every answer ``tasks/update`` takes, or a link gives, is added to the
task's *journal* in the store before the tool gets it (an answer acknowledged is an answer
recorded; a store that cannot record it refuses the update, or the page's answer, nothing
delivered), under the *question*
it answers (:func:`~erlmcp_py.mcp.mrtr.question_of`: what a 2026-07-28 replay recognizes a
request by), as a replayable ``requestState`` seals them. The record of a *durable* task
(a registry opened with ``durable=True``: the HTTP transport's) also carries what running it
again takes (:class:`~erlmcp_py.core.store_wire.TaskReplay`). When a replica dies, the store's
heartbeat finds it gone and makes its running durable tasks *orphans*; the next heartbeat of
a live replica with room takes some over (one atomic step in the store: exactly one replica
becomes the holder) and hands them to this registry (:meth:`TaskRegistry.tasks_claimed`),
which runs each tool again from the start (:meth:`TaskRegistry._resume`): each request it
makes whose question has an answer in the journal is answered at once from it, in order,
through the runtime (validated again; re-prompted answers replay as re-prompts); a request
that was outstanding when the holder died is asked again under the same key, so the answer
its client sends (even before the tool gets there) completes it; its link is the new
holder's (the dead replica's links are closed: they answer "expired or used"). The questions charged
before are not charged again. A task that cannot be run again ends ``failed`` with
``data.reason`` :data:`TASK_NOT_RESUMABLE` and the cause: ``url_elicitation`` (it asked a
question in URL mode, which only the dead replica could receive) or ``replay_disabled``
(``mrtr="suspend"``); one whose client asked to cancel it ends ``cancelled``. A registry
that closes (a graceful stop) leaves its tasks as they are in the store for another replica
to take over.
"""

from __future__ import annotations

import heapq
import itertools
import secrets
import time
from collections import Counter, defaultdict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any, Final

import pydantic_core
import structlog
import trio

from erlmcp_py.actors.pages import PAGE_URL_META
from erlmcp_py.actors.peer import PeerGone, PeerResponse, Recorded
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.core.errors import AnswerInFlight, StoreUnavailable
from erlmcp_py.core.policy import TaskPolicy
from erlmcp_py.core.shares import Refuse, Shares, Shed
from erlmcp_py.core.store_wire import StoreTask, TaskAnswer, TaskOp, TaskReplay
from erlmcp_py.core.tasks import TASKS_EXTENSION, TaskState
from erlmcp_py.mcp.call_peer import CallPeer, TaskStarter
from erlmcp_py.mcp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    EncodeError,
    JsonRpcError,
    RequestId,
    dumps,
    internal_error,
)
from erlmcp_py.mcp.meta import missing_capability
from erlmcp_py.mcp.mrtr import Handoff, MrtrPeer, question_of, response_problem
from erlmcp_py.mcp.versions import ClientCapabilities

__all__ = [
    "TASKS_BUSY",
    "TASKS_PRINCIPAL_BUSY",
    "TASK_METHODS",
    "TASK_MOVING",
    "TASK_NOT_RESUMABLE",
    "RunTool",
    "TaskCall",
    "TaskPeer",
    "TaskRegistry",
    "ToolOfTask",
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

#: ``data.reason`` of a ``tasks/update`` or ``tasks/cancel`` whose task's holder cannot be
#: reached now: it may have stopped, and another replica takes the task over within seconds
#: (HTTP 503, ``Retry-After``).
TASK_MOVING: Final = "task_moving"
#: ``data.reason`` of a task that failed because the replica running it is gone and the task
#: cannot be run again (``data.cause`` says why).
TASK_NOT_RESUMABLE: Final = "task_not_resumable"

#: Seconds between tries of a store write that failed (the store is down).
_RETRY_WRITE_S: Final = 1.0
#: Longest wait of a ``tasks/cancel`` for its record to be written (its answer comes anyway).
_WRITTEN_WAIT_S: Final = 2.0
#: Longest wait of a closing registry for the writes of its last changes.
_FLUSH_S: Final = 2.0
#: Reads of a task's record a forwarded call makes as the task moves between replicas.
_FORWARD_TRIES: Final = 3

_CAUSES: Final[Mapping[str, str]] = {
    "url_elicitation": "it asked a question in URL mode, which only that instance could receive",
    "replay_disabled": "this server does not run calls again (--mrtr suspend)",
}

RunTool = Callable[[CallPeer, TaskStarter | None], Awaitable[Mapping[str, Any]]]
"""Runs a task's tool with the peer its ``Context`` asks through and, when the tool starts
its task itself, the :class:`~erlmcp_py.mcp.call_peer.TaskStarter`; returns its
``CallToolResult`` or raises its :class:`JsonRpcError`."""

ToolOfTask = Callable[[Mapping[str, Any]], RunTool]
"""What runs a task's tool again from the JSON its call left in the record
(:attr:`TaskCall.resume`): the endpoint's (:meth:`TaskRegistry.resume_with`).

Raises:
    JsonRpcError: the tool cannot be run here (an unknown tool).
"""


def tasks_required(id: RequestId | None = None) -> JsonRpcError:
    """The ``-32021`` error of a request that needs the extension and did not declare it."""
    return missing_capability({"extensions": {TASKS_EXTENSION: {}}}, id)


def _not_found() -> JsonRpcError:
    """The one answer for an id that names no task this principal may see (unknown, expired,
    forgotten, another principal's)."""
    return JsonRpcError(INVALID_PARAMS, "Failed to retrieve task: Task not found")


def _moving() -> JsonRpcError:
    return internal_error(
        "The server instance running this task is not answering (if it stopped, another "
        "takes the task over within seconds); retry shortly",
        {"reason": TASK_MOVING},
    )


def _not_resumable(cause: str) -> dict[str, Any]:
    """The ``error`` of a task whose holder is gone and which cannot be run again."""
    return {
        "code": INTERNAL_ERROR,
        "message": "The server instance running this task stopped, and the task cannot be "
        f"resumed elsewhere: {_CAUSES.get(cause, cause)}",
        "data": {"reason": TASK_NOT_RESUMABLE, "cause": cause},
    }


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
        run: Runs the tool (see :data:`RunTool`).
        resume: What runs the tool again on another replica (JSON, given back to the
            registry's :data:`ToolOfTask`), or ``None``: the task is never run again.
    """

    tool: str
    principal: str
    client_id: str
    protocol_version: str
    capabilities: ClientCapabilities
    required: bool
    run: RunTool
    resume: Mapping[str, Any] | None = None


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
        "answering",
        "asking",
        "blocked",
        "capabilities",
        "charged",
        "client_id",
        "deliveries",
        "forgotten",
        "principal",
        "protocol_version",
        "questions",
        "replay",
        "required",
        "resume",
        "run",
        "state",
        "tool",
        "version",
        "written",
    )

    def __init__(
        self, state: TaskState, call: TaskCall, capabilities: ClientCapabilities, run: _Run
    ) -> None:
        self.state = state
        self.tool = call.tool
        self.principal = call.principal
        self.client_id = call.client_id
        self.protocol_version = call.protocol_version
        self.required = call.required
        self.resume = call.resume
        self.capabilities = capabilities  # as declared on the latest request about it
        self.run = run
        self.deliveries: dict[str, _Delivery] = {}  # by input request key
        self.asking = _Asking()
        self.forgotten = False  # past its TTL, shed, or held elsewhere: nothing more is written
        self.replay: _Replay | None = None  # a task taken over, until its tool caught up
        self.answering: frozenset[str] = frozenset()  # keys whose answers are being journaled
        self.questions = 0  # elicitations of the tool so far (a replay's too)
        self.charged = 0  # elicitations charged before (a replay's first are free)
        self.blocked: str | None = None  # why it cannot be replayed (url_elicitation)
        self.version = 0  # its changes so far
        self.written = 0  # the change its latest record written shows


class _Replay:
    """What a task taken over gives its tool again: the journal's answers not given again
    yet, per question, in order; and the requests that were outstanding when its holder
    died, by key, with their questions (asked again, they keep their key)."""

    __slots__ = ("answers", "restored")

    def __init__(self) -> None:
        self.answers: defaultdict[str, deque[Mapping[str, Any]]] = defaultdict(deque)
        self.restored: dict[str, str] = {}

    def asked(self, question: str, method: str, state: TaskState) -> Mapping[str, Any] | str | None:
        """The tool asks ``question``: the journal's next answer to it (taken), else the key
        of the request restored for it (taken), else ``None`` (a question to ask)."""
        queued = self.answers.get(question)
        if queued:
            response = queued.popleft()
            if not queued:
                del self.answers[question]
            return response
        for key, asked in self.restored.items():
            request = state.requests.get(key)
            if asked == question and request is not None and request.method == method:
                del self.restored[key]
                return key
        return None


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
        """Count one new elicitation of the tool; whether its client is charged a rate token
        for it: a task run again asks its earlier questions again, charged already."""
        task = self._task
        task.questions += 1
        return task.questions > task.charged

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

        In a task run again (its holder gone), a request whose question has an answer in
        the journal is answered with it at once, and one that was outstanding when the
        holder died is outstanding again under its key.

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
        replay = task.replay
        if replay is not None:
            answered = replay.asked(question_of(method, body), method, state)
            if not (replay.answers or replay.restored):
                task.replay = None  # its tool caught up
            if isinstance(answered, str):  # outstanding again, under the key it had
                task.deliveries[answered] = _Delivery(request_id, on_response)
                if state.reask(answered, body, self._registry.now()):  # its new link
                    self._registry.changed(task)
                return
            if answered is not None:  # answered before its holder died: that answer, at once
                on_response(Recorded(answered))
                return
        if body.get("mode") == "url" and task.blocked is None:
            task.blocked = "url_elicitation"  # its answer reaches only this process
        hint = self._key or method.rpartition("/")[0] or "input"
        key = state.ask(hint, method, body, self._registry.now())
        task.deliveries[key] = _Delivery(request_id, on_response)
        self._registry.changed(task)

    async def record_answer(self, request_id: str, response: Mapping[str, Any]) -> None:
        """An answer given on the question's link (the hosted page completed or dismissed
        its elicitation): journaled as a ``tasks/update`` answer is, before the tool gets it;
        the request is answered (its key leaves ``inputRequests``; a later answer to it is
        ignored). See :class:`~erlmcp_py.actors.peer.RecordsAnswers`.

        Raises:
            StoreUnavailable: the journal cannot take it now (or another replica holds the
                task): nothing is delivered.
            AnswerInFlight: the request is being answered by a ``tasks/update`` (or is not
                outstanding).
        """
        await self._registry.answered_on_page(self._task, request_id, response)

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
        answers: list[tuple[str, Mapping[str, Any]]] = []
        charged, url_asked = 0, False
        if isinstance(peer, MrtrPeer):  # what its rounds answered: a replay answers it again
            answers, charged, url_asked = peer.handover()
        task = await self._registry.open(
            self._call,
            capabilities,
            self._run,
            journal=answers,
            charged=charged,
            blocked="url_elicitation" if url_asked else None,
        )
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
        durable: Its tasks outlive this replica: their records carry what running them again
            takes, another replica takes them over when this one is gone, and this one serves
            the task calls other replicas forward and takes over theirs (:func:`open_tasks`
            makes it the store's :class:`~erlmcp_py.store.TaskHost`). A stdio connection's
            tasks are not: they end with it.
        replay: Whether a task taken over is run again (``False``, as ``mrtr="suspend"``:
            it ends ``failed``, :data:`TASK_NOT_RESUMABLE`).
    """

    def __init__(
        self,
        nursery: trio.Nursery,
        runtime: Runtime,
        *,
        policy: TaskPolicy | None = None,
        durable: bool = False,
        replay: bool = True,
    ) -> None:
        self._nursery = nursery
        self.runtime = runtime
        self.policy = policy or runtime.policy.tasks
        self.durable = durable
        self.replay = replay
        self._tool_of: ToolOfTask | None = None
        self._tasks: Shares[str, _Task] = Shares(
            self.policy.max_per_client, self.policy.max_total, shed_own=True
        )
        # When each task held falls due: task id -> (due, serial, task), and the same as a heap
        # of (due, serial, task id) the timer reads from its top. A task forgotten leaves the
        # dict at once and the heap at its due (or when the heap is rebuilt: it never holds
        # more than twice what is held), so neither outgrows what is held.
        self._expiry: dict[str, tuple[float, int, _Task]] = {}
        self._due: list[tuple[float, int, str]] = []
        self._serials = itertools.count()
        self._timer_kick = trio.Event()
        self._dirty: dict[str, _Task] = {}  # tasks whose record is to be written
        self._deleted: dict[str, None] = {}  # records to delete
        self._write_due = trio.Event()
        self._wrote = trio.Event()  # set after each batch of writes
        self._arriving: dict[str, trio.Event] = {}  # tasks being taken over: set when done
        self._closing = False
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
        ``completed``, ``failed``, ``cancelled``, ``expired``, ``shed``, ``taken_over``,
        ``lost``, ``forwarded``, ``refused.<reason>``, ``notifications_dropped``…)."""
        running = [t for t in self._tasks.values() if not t.state.terminal]
        return {
            "held": len(self._tasks),
            "running": len(running),
            "questions": sum(len(t.state.requests) for t in running),
            **self.counters,
        }

    def resume_with(self, tool_of: ToolOfTask) -> None:
        """Run the tools of tasks taken over with what ``tool_of`` makes of the JSON their
        calls left (:attr:`TaskCall.resume`): the endpoint's, set once it exists."""
        self._tool_of = tool_of

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

    async def open(
        self,
        call: TaskCall,
        capabilities: ClientCapabilities,
        run: _Run,
        *,
        journal: Sequence[tuple[str, Mapping[str, Any]]] = (),
        charged: int = 0,
        blocked: str | None = None,
    ) -> _Task:
        """Admit a new task of ``call`` and record it in the store (before anyone hears of it).

        A call that becomes a task after rounds of its own brings what a replay needs of
        them: their answers (``journal``, ``(question, response)`` in order), how many of
        its questions were charged, and why it cannot be replayed (``blocked``), if so.

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
        task.charged = task.questions = charged
        task.blocked = blocked
        self._tasks.add(call.principal, state.task_id, task)
        answers: list[TaskAnswer] = [(None, question, response) for question, response in journal]
        try:
            # False: an id another replica holds, which 128 random bits make never happen
            written = await self.runtime.store.put_task(
                self._shared(task), self.policy.ttl_s, create=True, journal=answers
            )
        except StoreUnavailable:
            written = False
        except BaseException:
            self._tasks.remove(state.task_id)
            raise
        if not written:
            self._tasks.remove(state.task_id)
            self.counters["refused.store_unavailable"] += 1
            log.warning("task_not_recorded", tool=call.tool[:80], why="store unavailable")
            raise internal_error(
                "The task could not be recorded (the shared store is unavailable); retry later",
                {"reason": "store_unavailable"},
            )
        run.task = task
        self._due_at(task)
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

    def _shared(self, task: _Task) -> StoreTask:
        state = task.state
        replay = None
        if self.durable and task.resume is not None:
            replay = TaskReplay(
                tool=task.tool,
                call=task.resume,
                client_id=task.client_id,
                protocol_version=task.protocol_version,
                capabilities=dict(task.capabilities.raw),
                required=task.required,
                issued=state.issued_keys,
                cancel_requested=state.cancel_requested,
                message_key=state.message_key,
                charged=max(task.charged, task.questions),
                blocked=task.blocked,
            )
        return StoreTask(
            state.task_id, state.detailed(), task.principal, self.runtime.store.replica, replay
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
        """The task's tool is done: its end, recorded once. A tool cancelled because this
        registry closes has not ended its task: its record stays for another replica."""
        if self._closing:
            return
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
        self._count_end(task)
        self.changed(task)

    def _count_end(self, task: _Task) -> None:
        status = str(task.state.status)
        self.counters[status] += 1
        log.info("task_ended", task=task.state.task_id[:8], status=status)

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
        request is added to the task's journal, then goes to the runtime (validated there,
        re-prompted when invalid); keys that are not outstanding are ignored; nothing is
        delivered when one of the answers is no answer at all (its shape). A task another
        replica holds gets the update there (forwarded through the store). A durable task's
        answer waits (a little) for its record to show the answered keys gone.

        Raises:
            JsonRpcError: ``-32602`` unknown id, or ``inputResponses`` not an object or an
                entry of the wrong shape (``bad_input_responses``); ``-32603`` the store
                cannot record the answers (``store_unavailable``), or the task's holder
                cannot be reached (:data:`TASK_MOVING`).
        """
        task = self._visible(task_id, principal)
        if task is None:
            argument = {"responses": responses, "capabilities": dict(capabilities.raw)}
            await self._not_held("update", task_id, principal, argument)
            return
        await self._update_held(task, responses, capabilities)

    async def _update_held(
        self, task: _Task, responses: object, capabilities: ClientCapabilities
    ) -> None:
        if not isinstance(responses, Mapping):
            raise _bad_responses("inputResponses must be an object")
        state = task.state
        keys = [k for k in state.outstanding(str(k) for k in responses) if k not in task.answering]
        for key in keys:
            problem = response_problem(state.requests[key].method, responses[key])
            if problem is not None:
                self.counters["refused.bad_input_responses"] += 1
                raise _bad_responses(f"inputResponses.{key[:64]}{problem}")
        task.capabilities = capabilities
        questions = {key: _question(state, key) for key in keys}
        if keys:  # journaled before applied: an answer acknowledged survives this process
            task.answering = task.answering.union(keys)  # no other update answers them now
            try:
                answers = [(key, questions[key], responses[key]) for key in keys]
                kept = await self.runtime.store.append_task_answers(state.task_id, answers)
            except StoreUnavailable:
                self.counters["refused.store_unavailable"] += 1
                raise internal_error(
                    "The answers could not be recorded (the shared store is unavailable); "
                    "retry later",
                    {"reason": "store_unavailable"},
                ) from None
            finally:
                task.answering = task.answering.difference(keys)
            if not kept:
                self._lost(task)
                raise _moving()
        taken = state.take_answers({key: responses[key] for key in keys}, self.now())
        for key, response in taken.items():
            delivery = task.deliveries.pop(key, None)
            if delivery is not None:
                delivery.on_response(response)
            elif task.replay is not None and task.replay.restored.pop(key, None) is not None:
                task.replay.answers[questions[key]].append(response)  # not asked again yet
        self.counters["answers"] += len(taken)
        log.info(
            "task_updated",
            task=state.task_id[:8],
            answered=len(taken),
            ignored=len(responses) - len(taken),
        )
        if taken:
            self.changed(task)
            if self.durable:  # a tasks/get on any replica after the ack never shows them
                await self._until_written(task)
        await trio.lowlevel.checkpoint()

    async def answered_on_page(
        self, task: _Task, request_id: str, response: Mapping[str, Any]
    ) -> None:
        """Journal an answer given on an input request's link, then take its key, as
        :meth:`update` does for one answer (the runtime ends the elicitation with it itself:
        nothing goes through the request's ``on_response``). The first answer to a key wins:
        one that a ``tasks/update`` is journaling or has delivered refuses this one, and a
        ``tasks/update`` ignores a key this one is journaling. A question in URL mode (a
        secret) is not journaled: its answer never goes to the store (and such a task is
        never run again).

        Raises:
            StoreUnavailable, AnswerInFlight: as :meth:`TaskPeer.record_answer`.
        """
        state = task.state
        key = next((k for k, d in task.deliveries.items() if d.rid == request_id), None)
        if key is None or key in task.answering or task.forgotten or key not in state.requests:
            raise AnswerInFlight(request_id.partition(".")[0])
        if state.requests[key].params.get("mode") == "url":
            await trio.lowlevel.checkpoint()
            return
        task.answering = task.answering.union((key,))  # tasks/update ignores it meanwhile
        try:
            kept = await self.runtime.store.append_task_answers(
                state.task_id, [(key, _question(state, key), response)]
            )
        except StoreUnavailable:
            self.counters["refused.store_unavailable"] += 1
            log.warning("task_answer_not_recorded", task=state.task_id[:8], why="store unavailable")
            raise
        finally:
            task.answering = task.answering.difference((key,))
        if not kept:
            self._lost(task)
            raise StoreUnavailable("task_answer")  # its holder now answers the page
        if not state.take_answers({key: response}, self.now()):
            return  # it ended meanwhile (its deadline): the runtime refuses the answer
        task.deliveries.pop(key, None)
        self.counters["answers"] += 1
        self.counters["page_answers"] += 1
        log.info("task_answered_on_page", task=state.task_id[:8], action=response.get("action"))
        self.changed(task)

    async def cancel(self, task_id: str, principal: str) -> None:
        """``tasks/cancel``: its open questions are answered ``cancel`` (they end
        ``Cancelled``) and its tool is cancelled; the task ends ``cancelled``, unless it
        finished first. A task that has ended is left as it is (the ack is the same). The
        answer waits (a little) for the cancel to be in the task's record. A task another
        replica holds is cancelled there (forwarded through the store).

        Raises:
            JsonRpcError: ``-32602`` unknown id; :data:`TASK_MOVING`.
        """
        task = self._visible(task_id, principal)
        if task is None:
            await self._not_held("cancel", task_id, principal, None)
            return
        await self._cancel_held(task)

    async def _cancel_held(self, task: _Task) -> None:
        if not task.state.request_cancel(self.now()):
            await trio.lowlevel.checkpoint()
            return
        log.info("task_cancel_requested", task=task.state.task_id[:8])
        self._stop(task)
        self.changed(task)
        await self._until_written(task)

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

    async def _stored(self, task_id: str, principal: str) -> StoreTask | None:
        try:
            return await self.runtime.store.get_task(task_id, principal)
        except StoreUnavailable:
            raise internal_error(
                "The task cannot be read now (the shared store is unavailable); retry later",
                {"reason": "store_unavailable"},
            ) from None

    async def _not_held(self, op: TaskOp, task_id: str, principal: str, argument: Any) -> None:
        """A ``tasks/update`` or ``tasks/cancel`` for a task this process does not hold: an
        ended one (in the store) takes it as a no-op; a running one gets it on its holder,
        forwarded through the store (read again when it moved meanwhile); one being taken
        over here gets it once it has arrived.

        Raises:
            JsonRpcError: unknown (``-32602``), the holder's answer, or :data:`TASK_MOVING`.
        """
        store = self.runtime.store
        for _ in range(_FORWARD_TRIES):
            shared = await self._stored(task_id, principal)
            if shared is None:
                raise _not_found()
            if shared.terminal:
                return
            if shared.replica == store.replica:  # ours in the store: arriving here?
                task = await self._arrived(task_id, principal)
                if task is None:
                    break
                await self._run_here(task, op, argument)
                return
            try:
                reply = await store.forward_task(shared.replica, op, task_id, principal, argument)
            except StoreUnavailable:
                break  # its holder does not answer: it may be gone
            if reply.get("held") is False:
                continue  # it moved (or was forgotten) meanwhile: read it again
            self.counters["forwarded"] += 1
            error = reply.get("error")
            if isinstance(error, Mapping):
                raise JsonRpcError(int(error["code"]), str(error["message"]), error.get("data"))
            return
        self.counters[f"refused.{TASK_MOVING}"] += 1
        raise _moving()

    async def _run_here(self, task: _Task, op: TaskOp, argument: Any) -> None:
        """A task call for a task held here (forwarded, or arrived meanwhile)."""
        if op == "cancel":
            await self._cancel_held(task)
            return
        given = argument if isinstance(argument, Mapping) else {}
        declared = given.get("capabilities")
        capabilities = ClientCapabilities.parse(
            declared if isinstance(declared, Mapping) else None, task.protocol_version
        )
        await self._update_held(task, given.get("responses"), capabilities)

    async def _arrived(self, task_id: str, principal: str) -> _Task | None:
        """The task held here once its takeover (if one is under way) is done."""
        arriving = self._arriving.get(task_id)
        if arriving is not None:
            with trio.move_on_after(_WRITTEN_WAIT_S):
                await arriving.wait()
        return self._visible(task_id, principal)

    # -- the store's task host: forwarded calls, tasks taken over ---------------------------------

    async def task_forwarded(
        self, op: TaskOp, task_id: str, principal: str, argument: Any
    ) -> Mapping[str, Any]:
        """Run a ``tasks/update`` or ``tasks/cancel`` another replica forwarded here: its
        reply, ``{"held": False}`` when this process does not hold the task, else
        ``{"held": True}`` with the JSON-RPC ``error`` it answers, if any."""
        task = await self._arrived(task_id, principal)
        if task is None:
            return {"held": False}
        try:
            await self._run_here(task, op, argument)
        except JsonRpcError as exc:
            return {"held": True, "error": _error_object(exc)}
        return {"held": True}

    def claim_room(self) -> int:
        """How many dead replicas' tasks this registry may take over now."""
        if not self.durable or self._closing or self._tool_of is None:
            return 0
        return max(0, self.policy.max_total - len(self._tasks) - len(self._arriving))

    def tasks_claimed(self, task_ids: Sequence[str]) -> None:
        """The store made this replica the holder of tasks whose holder is gone: each is
        loaded and run again (or ended, when it cannot be), in the background."""
        for task_id in task_ids:
            if task_id in self._tasks or task_id in self._arriving:
                continue  # held here already (this replica's own, claimed back)
            self._arriving[task_id] = trio.Event()
            self._nursery.start_soon(self._take_over, task_id)

    def tasks_rejoined(self) -> None:
        """The store lost this replica's registration: every durable task it runs is
        written again, fenced, so that one another replica took over meanwhile is dropped
        here (and the others count among this replica's again)."""
        for task in self._tasks.values():
            if not task.state.terminal:
                self.changed(task)

    async def _take_over(self, task_id: str) -> None:
        arrived = self._arriving[task_id]
        try:
            while True:
                try:
                    loaded = await self.runtime.store.load_task(task_id)
                    break
                except StoreUnavailable:
                    await trio.sleep(_RETRY_WRITE_S)
            if loaded is None:
                return
            shared, journal = loaded
            if shared.replica != self.runtime.store.replica or shared.terminal:
                return
            if shared.replay is None:  # never durable: not in any replica's set
                return
            await self._resume(shared, shared.replay, journal)
        except Exception as exc:  # a bug: this task only, never the registry
            log.exception("task_takeover_failed", task=task_id[:8], error=type(exc).__name__)
        finally:
            del self._arriving[task_id]
            arrived.set()

    async def _resume(
        self, shared: StoreTask, facts: TaskReplay, journal: Sequence[TaskAnswer]
    ) -> None:
        """Hold a task taken over: run its tool again with the journal's answers, or end it
        (cancelled when its client asked; failed when it cannot be run again)."""
        task_id = shared.task_id
        try:
            state = TaskState.restore(
                shared.detailed,
                issued=facts.issued,
                cancel_requested=facts.cancel_requested,
                message_key=facts.message_key,
            )
        except (ValueError, TypeError, KeyError):
            log.warning("task_record_unreadable", task=task_id[:8])
            return
        # A task taken over is no new work: its principal's share does not bound it, only
        # the total (claim_room keeps room for it, but new tasks may have taken it since).
        admission = self._tasks.admit(shared.principal, _ended)
        if isinstance(admission, Shed):
            self._shed(admission)
        elif len(self._tasks) >= self.policy.max_total:  # no room: another replica takes it
            self.counters["takeover_refused"] += 1
            log.warning("task_takeover_refused", task=task_id[:8], why="max_tasks")
            with suppress(StoreUnavailable):
                await self.runtime.store.release_task(task_id)
            return
        capabilities = ClientCapabilities.parse(facts.capabilities, facts.protocol_version)
        cause = facts.blocked or (None if self.replay else "replay_disabled")
        error: dict[str, Any] | None = None if cause is None else _not_resumable(cause)
        run_tool: RunTool | None = None
        if error is None and not state.cancel_requested:
            try:
                run_tool = self._tool_of_task(facts)
            except JsonRpcError as exc:
                error = _error_object(exc)
        run = _Run()
        call = TaskCall(
            tool=facts.tool,
            principal=shared.principal,
            client_id=facts.client_id,
            protocol_version=facts.protocol_version,
            capabilities=capabilities,
            required=facts.required,
            run=run_tool or _not_run,
            resume=facts.call,
        )
        task = _Task(state, call, capabilities, run)
        task.charged, task.blocked = facts.charged, facts.blocked
        run.task = task
        self._tasks.add(shared.principal, task_id, task, within_share=False)
        self._due_at(task)
        self.counters["taken_over"] += 1
        now = self.now()
        # The links of its open questions name elicitations of the replica that is gone:
        # closed (they answer "expired or used"), and each question asked again gets one.
        links = {key: _without_link(request.params) for key, request in state.requests.items()}
        dead_links = [link for _, link in links.values() if link is not None]
        if dead_links:
            self._nursery.start_soon(self._close_links, dead_links)
        if state.cancel_requested:
            state.cancel(now)
        elif error is not None:
            state.fail(error, now)
        if state.terminal:
            self._count_end(task)
            self.changed(task)
            return
        replay = task.replay = _Replay()
        answered = {key for key, _, _ in journal if key is not None}
        for _, question, response in journal:
            replay.answers[question].append(response)
        for key, (params, _) in links.items():
            if key in answered:  # its answer is in the journal: the record lagged behind
                state.withdraw(key, now)
            else:
                state.reask(key, params, now)  # without its dead link until asked again
                replay.restored[key] = _question(state, key)
        log.info("task_resumed", task=task_id[:8], tool=facts.tool[:80], answers=len(journal))
        self.changed(task)
        self._nursery.start_soon(self._run_tool, run, call, TaskPeer(task, self), None)

    async def _close_links(self, links: Sequence[str]) -> None:
        for link in links:
            await self.runtime.pages.close_link(link)

    def _tool_of_task(self, facts: TaskReplay) -> RunTool:
        if self._tool_of is None:
            raise internal_error("No endpoint runs this registry's tools")
        try:
            return self._tool_of(facts.call)
        except JsonRpcError:
            raise
        except Exception as exc:  # a record this release cannot read
            log.warning("task_call_unreadable", tool=facts.tool[:80], error=type(exc).__name__)
            raise internal_error("The task's call could not be read again") from None

    def _lost(self, task: _Task) -> None:
        """Another replica holds the task now (it took the task over while this one was cut
        off from the store): this copy stops, and nothing of it is written or deleted."""
        if task.forgotten:
            return
        task.forgotten = True
        task.run.scope.cancel()
        task_id = task.state.task_id
        self._not_due(task_id)
        if self._tasks.get(task_id) is task:
            self._tasks.remove(task_id)
        self._dirty.pop(task_id, None)
        self.counters["lost"] += 1
        log.warning("task_held_elsewhere", task=task_id[:8])

    # -- forgetting -------------------------------------------------------------------------------

    def _shed(self, shed: Shed[str, _Task]) -> None:
        """Forget an ended task to make room at a cap (its record goes too)."""
        self.counters["shed"] += 1
        log.info("task_forgotten", task=shed.key[:8], why=f"max_tasks ({shed.scope})")
        self._forget(shed.value)

    def _forget(self, task: _Task) -> None:
        task.forgotten = True
        task_id = task.state.task_id
        self._not_due(task_id)
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
        if task.forgotten or self._closing:
            return
        task.version += 1
        self._dirty[task.state.task_id] = task
        self._write_due.set()

    async def _until_written(self, task: _Task) -> None:
        """Wait, at most :data:`_WRITTEN_WAIT_S`, until the task's latest change is in its
        record."""
        version = task.version
        with trio.move_on_after(_WRITTEN_WAIT_S):
            while task.written < version and not task.forgotten:
                await self._wrote.wait()

    async def run_writer(self) -> None:
        """Write changed records and delete forgotten ones, in the background, until
        cancelled; a failed write is tried again a moment later."""
        while True:
            await self._write_due.wait()
            self._write_due = trio.Event()
            try:
                await self._write_due_records()
            except StoreUnavailable:
                self.counters["store_errors"] += 1
                await trio.sleep(_RETRY_WRITE_S)
                self._write_due.set()
            finally:
                self._wrote.set()
                self._wrote = trio.Event()

    async def _write_due_records(self) -> None:
        """Delete and write what is due, one by one; what is not done (the store failed, or
        this registry closes) stays due."""
        store = self.runtime.store
        deleted, self._deleted = self._deleted, {}
        dirty, self._dirty = self._dirty, {}
        try:
            while deleted:
                task_id = next(iter(deleted))
                await store.delete_task(task_id)
                del deleted[task_id]
            while dirty:
                task_id, task = next(iter(dirty.items()))
                left = task.state.expires_at() - self.now()
                if not task.forgotten and left > 0:
                    await self._put(task, left)
                del dirty[task_id]
        finally:
            for task_id in deleted:
                self._deleted.setdefault(task_id, None)
            for task_id, task in dirty.items():
                self._dirty.setdefault(task_id, task)

    async def _put(self, task: _Task, ttl_s: float) -> None:
        """Write one task's record; a write that fails for any reason but the store's
        availability is a bug, logged, and costs that write only (the writer goes on). A
        write refused because another replica holds the task drops this copy."""
        version = task.version
        try:
            written = await self.runtime.store.put_task(self._shared(task), ttl_s)
        except StoreUnavailable:
            raise
        except Exception as exc:
            self.counters["write_errors"] += 1
            log.exception(
                "task_write_failed", task=task.state.task_id[:8], error=type(exc).__name__
            )
            return
        if written:
            task.written = max(task.written, version)
        else:
            self._lost(task)

    def _due_at(self, task: _Task) -> None:
        """Make the TTL timer forget ``task`` when its life ends."""
        task_id = task.state.task_id
        due = task.state.expires_at() - self._wall_offset  # on the trio clock
        serial = next(self._serials)
        self._expiry[task_id] = (due, serial, task)
        heapq.heappush(self._due, (due, serial, task_id))
        if self._due[0][2] == task_id:
            self._timer_kick.set()  # sooner than the timer sleeps (a task taken over)

    def _not_due(self, task_id: str) -> None:
        self._expiry.pop(task_id, None)
        if len(self._due) > 2 * len(self._expiry) + 64:  # mostly forgotten: rebuild it
            self._due = [(due, serial, key) for key, (due, serial, _) in self._expiry.items()]
            heapq.heapify(self._due)

    async def run_timer(self) -> None:
        """Forget tasks past their TTL, until cancelled (:func:`open_tasks` runs it)."""
        while True:
            now = trio.current_time()
            while self._due and self._due[0][0] <= now:
                _, serial, task_id = heapq.heappop(self._due)
                entry = self._expiry.get(task_id)
                if entry is not None and entry[1] == serial:
                    self._expire(entry[2])  # forgets it: it leaves ``_expiry``
            wake = self._due[0][0] if self._due else now + self.policy.ttl_s
            self._timer_kick = trio.Event()
            with trio.move_on_at(wake):
                await self._timer_kick.wait()

    def close(self) -> None:
        """End every task this process runs (their tools are cancelled); their records stay
        as they are, for another replica to take them over."""
        self._closing = True
        self._nursery.cancel_scope.cancel()

    async def flush(self) -> None:
        """Write what changed before :meth:`close` (a task that ended just before is
        recorded ended, not replayed elsewhere), as far as the store takes it now."""
        try:
            await self._write_due_records()
        except StoreUnavailable:
            log.warning("tasks_not_flushed", tasks=len(self._dirty), deleted=len(self._deleted))


def _question(state: TaskState, key: str) -> str:
    """The question of an outstanding input request (what a replay recognizes it by)."""
    request = state.requests[key]
    return question_of(request.method, request.params)


def _without_link(params: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """An input request's params without its link to the hosted page, and that link."""
    meta = params.get("_meta")
    link = meta.get(PAGE_URL_META) if isinstance(meta, Mapping) else None
    if not isinstance(meta, Mapping) or not isinstance(link, str):
        return dict(params), None
    out = {name: value for name, value in params.items() if name != "_meta"}
    rest = {name: value for name, value in meta.items() if name != PAGE_URL_META}
    if rest:
        out["_meta"] = rest
    return out, link


async def _not_run(peer: CallPeer, starter: TaskStarter | None) -> Mapping[str, Any]:
    """The tool of a task that ended as it was taken over: never called."""
    raise RuntimeError("a task that ended when it was taken over has no tool to run")


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
    registry: TaskRegistry | None = None
    try:
        async with trio.open_nursery() as nursery:
            registry = TaskRegistry(nursery, runtime, **options)
            nursery.start_soon(registry.run_writer)
            nursery.start_soon(registry.run_timer)
            if registry.durable:
                runtime.store.serve_tasks(registry)
            try:
                yield registry
            finally:
                if registry.durable:
                    runtime.store.serve_tasks(None)
                registry.close()
    finally:
        # Once the nursery is done: a write the writer had in flight when it was cancelled
        # is due again only once the writer has unwound, and must not be missed.
        if registry is not None:
            with trio.CancelScope(shield=True), trio.move_on_after(_FLUSH_S):
                await registry.flush()
