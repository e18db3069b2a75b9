"""The continuation registry: the 2026-07-28 calls a process holds between their rounds, the
requests attached to them, and the one timer that expires suspended calls and ends the hold of
retries (:mod:`~erlmcp_py.mcp.mrtr` has when a round ends; docs/mrtr.md the refusals of a
state, expiry, the registry's bounds and eviction).

A :class:`Continuation` is one call: its tool's task, the requests its round asks, the
request attached to it (if any) and its journal. A request attaches through
:meth:`ContinuationRegistry.start` or :meth:`~ContinuationRegistry.resume`, and the
:class:`Attached` they return decides its answer: the call's result, or an
``InputRequiredResult`` with the sealed state a retry brings back.
"""

from __future__ import annotations

import heapq
import itertools
import math
import secrets
import time
from collections import Counter, defaultdict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final, NoReturn, Protocol

import structlog
import trio

from erlmcp_py.core.errors import StateTokenError, StateTokenTooLarge
from erlmcp_py.core.shares import Refuse, Shares, Shed
from erlmcp_py.core.state_token import (
    MAX_TOKEN_CHARS,
    KeyRing,
    open_token,
    request_digest,
    seal,
)
from erlmcp_py.mcp._mrtr_peer import (
    Asking,
    InputRequest,
    MrtrPeer,
    NotificationSink,
    response_problem,
)
from erlmcp_py.mcp._replay import ReplayCall, journal_fields, replay_plan
from erlmcp_py.mcp.jsonrpc import INVALID_PARAMS, JsonRpcError, internal_error
from erlmcp_py.mcp.versions import ClientCapabilities

__all__ = [
    "DEFAULT_STATE_TTL_S",
    "MRTR_MODES",
    "PRINCIPAL_BUSY",
    "Attached",
    "Attachment",
    "Continuation",
    "ContinuationElsewhere",
    "ContinuationRegistry",
    "Handoff",
    "RequestStateRefused",
    "RunCall",
    "Waiter",
    "open_continuations",
]

log = structlog.get_logger("erlmcp.mrtr")

#: ``data.reason`` of the refusal of a new call whose principal holds its share of the
#: registry (``max_per_principal``); the registry-wide ``busy`` is the last resort.
PRINCIPAL_BUSY = "principal_busy"

#: Default lifetime of a ``requestState`` (and of a detached continuation): the longest
#: default elicitation deadline (URL mode, 600 s) plus a minute for the retry to arrive.
DEFAULT_STATE_TTL_S: Final = 660.0

#: What a retry whose call this process does not hold gets: ``auto`` resumes a held call and
#: replays any other; ``suspend`` refuses it (``unknown_continuation``); ``replay`` never keeps
#: a call across rounds, so every retry replays.
MRTR_MODES: Final = ("auto", "suspend", "replay")


@dataclass(frozen=True, slots=True)
class Handoff:
    """What a call answers when it became something else than a call: a task (the
    ``io.modelcontextprotocol/tasks`` extension), whose ``CreateTaskResult`` is answered as it
    is, ``resultType: "task"`` included. The call ends there; its function goes on elsewhere.

    Attributes:
        result: The answer, with its own ``resultType``.
    """

    result: Mapping[str, Any]


RunCall = Callable[["MrtrPeer"], Awaitable["Mapping[str, Any] | Handoff"]]
"""Runs the call's function (a tool, a prompt) with the given peer; returns its complete result
(a ``CallToolResult``, a ``GetPromptResult``), or a :class:`Handoff` when the call became a
task, or raises :class:`JsonRpcError` (the answer to the call)."""


class Waiter(Protocol):
    """How the task answering an attached request waits for its call to change.

    :meth:`park` waits until :meth:`wake` is called (a wake while nobody is parked is
    dropped: the registry checks the call before parking) and returns; whatever it raises
    (the request's client went away) ends the wait and cancels the call, as cancelling the
    wait does. A transport whose answering task already waits for its request's channel
    (the client's disconnect, frames to write) parks there, so one wait serves both.
    """

    def wake(self) -> None:
        """Wake the parked task (if any)."""

    async def park(self) -> None:
        """Wait until woken."""


class _Sleeper:
    """The :class:`Waiter` of a request awaited as it is (``await attached``): the task
    sleeps until :meth:`wake` reschedules it (or it is cancelled)."""

    __slots__ = ("_task",)

    def __init__(self) -> None:
        self._task: trio.lowlevel.Task | None = None

    def wake(self) -> None:
        task = self._task
        if task is not None:
            self._task = None
            trio.lowlevel.reschedule(task)

    async def park(self) -> None:
        self._task = trio.lowlevel.current_task()
        await trio.lowlevel.wait_task_rescheduled(self._abort)

    def _abort(self, _: object) -> trio.lowlevel.Abort:
        self._task = None
        return trio.lowlevel.Abort.SUCCEEDED


_MESSAGES: Final[dict[str, str]] = {
    "invalid": "Invalid requestState: it must be the requestState of the latest "
    "InputRequiredResult, echoed unchanged",
    "expired": "requestState has expired: call the tool again without requestState",
    "wrong_principal": "requestState was issued to another principal",
    "request_mismatch": "requestState belongs to a different request (method, tool or "
    "arguments differ from the call that returned it)",
    "unknown_continuation": "requestState refers to no suspended call on this server (it "
    "ended, was cancelled, or the server restarted): call the tool again",
    "superseded": "requestState was already used: a later InputRequiredResult replaced it",
    "in_use": "requestState is being used by another request right now",
    "bad_input_responses": "Invalid inputResponses",
}


class RequestStateRefused(JsonRpcError):
    """A retry was refused (``-32602``); ``reason`` is a stable code, also in ``data.reason``.

    Reasons: ``invalid`` (malformed, unknown key, bad signature, too large — the log has the
    precise one), ``expired``, ``wrong_principal``, ``request_mismatch``,
    ``unknown_continuation``, ``superseded``, ``in_use``, ``bad_input_responses``.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        message = _MESSAGES[reason] + (f": {detail}" if detail else "")
        super().__init__(INVALID_PARAMS, message, {"reason": reason})
        self.reason = reason


class ContinuationElsewhere(RequestStateRefused):
    """A retry whose valid state names another holder (:attr:`ContinuationRegistry.holder`):
    the call is held there, and this registry neither holds nor replays it. Answered as it is,
    it is ``unknown_continuation``; an endpoint that can reach the holder forwards the retry.

    Attributes:
        holder: The holder the state names.
    """

    def __init__(self, holder: str) -> None:
        super().__init__("unknown_continuation", "held by another process")
        self.holder = holder


class Continuation:
    """One tool call that may suspend; owned by the registry."""

    __slots__ = (
        "asked",
        "asking",
        "asking_scope",
        "attached",
        "capabilities",
        "digest",
        "discarded",
        "done",
        "drained",
        "ended",
        "ended_seen",
        "expires_at",
        "final",
        "held",
        "id",
        "journal",
        "keys",
        "life",
        "log_level",
        "offered",
        "outstanding",
        "peer",
        "principal",
        "progress_token",
        "questions",
        "replay",
        "round",
        "sending",
        "sink",
        "url_asked",
        "version",
        "waiter",
    )

    def __init__(self, principal: str, digest: str, capabilities: ClientCapabilities) -> None:
        self.id = secrets.token_urlsafe(16)
        self.principal = principal
        self.digest = digest
        self.capabilities = capabilities  # as declared on the latest request
        self.outstanding: dict[str, InputRequest] = {}
        self.final: Mapping[str, Any] | Handoff | JsonRpcError | None = None
        self.done = False
        self.attached = False
        self.held = False  # the attached retry waited ``hold_s``: it answers with the state
        self.round = 0
        self.version = 0
        self.expires_at = math.inf
        self.life = trio.CancelScope()
        self.waiter: Waiter | None = None  # the attached request's, woken by ``touch``
        self.keys = itertools.count(1)
        self.peer: MrtrPeer
        # The attached request's channel: its sink (None when nobody is attached, or its answer
        # is decided), its log level, and its progress token (kept between rounds).
        self.sink: NotificationSink | None = None
        self.log_level: str | None = None
        self.progress_token: str | int | None = None
        self.sending = 0  # sink calls under way
        self.drained: trio.Event | None = None  # set when ``sending`` drops to 0
        # Replay: the answers a retry's state brought, per question (see question_of),
        # delivered in order as the tool asks again; every answer the tool received, in order
        # (the next state carries it); how many elicitations the client was charged for
        # already, and how many the tool made so far.
        self.replay: defaultdict[str, deque[Mapping[str, Any]]] = defaultdict(deque)
        self.journal: list[tuple[str, Mapping[str, Any]]] = []
        self.asked = 0
        self.questions = 0
        self.url_asked = False  # a question went out in URL mode: no replay can answer it
        self.asking = 0  # questions of the tool between their start and their answer
        self.asking_scope = Asking(self)  # what counts them (MrtrPeer.asking)
        self.ended = 0  # questions of the tool that ended, in all
        self.ended_seen = 0  # ``ended`` when the latest round was decided
        self.discarded = False
        # A first call's own inputResponses, by key: offered to the requests the tool names
        # with that key (``key=``) until its first answer is decided (see ``start``).
        self.offered: dict[str, Mapping[str, Any]] = {}

    def touch(self) -> None:
        self.version += 1
        if self.waiter is not None:
            self.waiter.wake()

    def unsent(self) -> bool:
        """Whether a question of the tool has no request recorded yet (it is on its way
        through the runtime, or being answered from a replay)."""
        return self.asking > len(self.outstanding)

    def parked(self) -> bool:
        """Whether the tool waits on its recorded questions and nothing else: every
        outstanding request is a question being asked, and none ended since the latest round
        was decided (the tool is not reacting to an answer or an error)."""
        return self.asking == len(self.outstanding) and self.ended == self.ended_seen


class Attachment(Protocol):
    """What answers one ``tools/call`` or ``prompts/get`` once its call decides:
    an :class:`Attached` request, or a retry an endpoint forwarded to the process holding its
    call. ``await`` it (or :meth:`answer` it with a :class:`Waiter`) once for the answer;
    :meth:`cancel` cancels the wait and, where it can, the call."""

    def __await__(self) -> Generator[Any, None, dict[str, Any]]:
        """The answer (see :class:`Attached`)."""
        ...

    async def answer(self, waiter: Waiter) -> dict[str, Any]:
        """The answer, waiting in ``waiter``."""
        ...

    def cancel(self) -> None:
        """Cancel the call."""
        ...


class Attached:
    """A request attached to its call (what :meth:`ContinuationRegistry.start` and
    :meth:`~ContinuationRegistry.resume` return): ``await`` it, once, for the request's answer.

    The call's tool runs, and the tool's notifications relate to this request, from the
    moment it is attached until the answer is decided; awaiting it waits for that (the tool
    finished, or asked and the round settled, or the retry's hold ran out). The answer is
    the call's result, ``complete`` or ``input_required``. Cancelling the wait cancels the
    call, and so does :meth:`cancel`. A request is attached on arrival (the retry's answers
    delivered, the tool started) and awaited by whoever answers it: an attachment never
    awaited keeps its call attached. :meth:`answer` awaits it with a :class:`Waiter` of the
    caller's own.

    Raises (when awaited):
        JsonRpcError: the tool's own JSON-RPC error, or ``-32603`` (the call was cancelled
            under the request, its state no longer fits ``max_state_chars``).
    """

    __slots__ = ("_cont", "_registry")

    def __init__(self, registry: ContinuationRegistry, cont: Continuation) -> None:
        self._registry = registry
        self._cont = cont

    def __await__(self) -> Generator[Any, None, dict[str, Any]]:
        return self._registry._answer(self._cont, _Sleeper()).__await__()

    async def answer(self, waiter: Waiter) -> dict[str, Any]:
        """The answer, as ``await``-ing this gives it, waiting in ``waiter`` for the call to
        change; an exception out of ``waiter.park()`` cancels the call and is raised here."""
        return await self._registry._answer(self._cont, waiter)

    def cancel(self) -> None:
        """Cancel the call (its tool), as cancelling the wait does: the wait then ends with
        the call, and its answer belongs to no one (``-32603`` ``cancelled``, or whatever
        the call decided first)."""
        self._cont.life.cancel()


class ContinuationRegistry:
    """The bounded in-memory registry of stateless calls (``tools/call``, ``prompts/get``) and
    their sealed states.

    Create with :func:`open_continuations` (its own nursery), or with a nursery you own and
    then run :meth:`run_timer` (the expiry of suspended calls and the hold of retries) in it.

    Args:
        nursery: Where the tool runners run; cancelling it ends every continuation.
        keyring: Seals states; default: a fresh random key for this process (states do not
            survive a restart). Processes that replay each other's calls share one ring.
        state_ttl: Seconds a state (and a detached continuation) stays valid.
        max_continuations: Live continuations at most. At the cap a new call (a replay too)
            *evicts* a detached one (suspended between rounds, or finished and kept for a
            late retry): the least recently used of the principal holding the most, whose
            tool is cancelled (its elicitations end ``abandoned``) and whose retry is replayed
            (``mrtr="auto"``) or refused ``unknown_continuation`` (``"suspend"``). Only when
            every live call is attached to a request is the new call refused (``busy``).
        max_per_principal: Live continuations of one principal at most (default: no cap
            below ``max_continuations``); its further calls are refused with
            ``data.reason`` :data:`PRINCIPAL_BUSY` (nothing of its own is evicted), others'
            calls still run.
        hold_s: How long a retry waits for the tool to finish or ask again before answering
            a state-only ``InputRequiredResult`` (the client retries after a back-off).
        settle_checkpoints: Checkpoints without a new request that end a round the tool may
            still be reacting in (see :mod:`~erlmcp_py.mcp.mrtr`).
        mrtr: What a retry whose call this process does not hold gets (another replica's
            call, or one from before a restart; see :data:`MRTR_MODES`): ``"auto"`` replays
            it, ``"suspend"`` refuses it, ``"replay"`` replays every retry (no call is kept
            between rounds). Replay needs the issuing process's key ring.
        max_state_chars: Largest ``requestState``; a replayable state carries every answer
            of the call, and a call whose answers outgrow it ends with ``state_too_large``.
        on_call_end: Called each time a call's tool has finished (with a result, an error,
            or cancelled): a transport that waits for its calls to end learns of it here.

    Attributes:
        holder: What names this registry's calls for other processes (``None``: nothing). Set,
            every state it seals names it, and a retry whose valid state names another holder
            raises :class:`ContinuationElsewhere` instead of being replayed or refused.
    """

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        keyring: KeyRing | None = None,
        state_ttl: float = DEFAULT_STATE_TTL_S,
        max_continuations: int = 10_000,
        max_per_principal: int | None = None,
        hold_s: float = 30.0,
        settle_checkpoints: int = 10,
        mrtr: str = "auto",
        max_state_chars: int = MAX_TOKEN_CHARS,
        on_call_end: Callable[[], None] | None = None,
    ) -> None:
        # A state must expire (an infinite ttl would only fail later, in seal, mid-call).
        if not (0 < state_ttl < math.inf) or not hold_s > 0 or max_continuations < 1:
            raise ValueError(
                "state_ttl must be positive and finite, hold_s positive, max_continuations >= 1"
            )
        if mrtr not in MRTR_MODES:
            raise ValueError(f"mrtr must be one of {', '.join(MRTR_MODES)}, got {mrtr!r}")
        if max_state_chars < 256:
            raise ValueError("max_state_chars must be at least 256")
        self.mrtr = mrtr
        self.max_state_chars = max_state_chars
        self._nursery = nursery
        self.keyring = keyring or KeyRing(f"proc-{secrets.token_hex(4)}", secrets.token_bytes(32))
        self.state_ttl = state_ttl
        self.max_continuations = max_continuations
        self.max_per_principal = max_per_principal or max_continuations
        self.hold_s = hold_s
        self.settle_checkpoints = settle_checkpoints
        # Live continuations by id, each principal's within its share, all within the cap.
        self._entries: Shares[str, Continuation] = Shares(
            max_per_principal or None, max_continuations, shed_own=False
        )
        self._finals: list[tuple[float, str]] = []  # heap of (expiry, id) of parked results
        # What the one timer of the registry ends when due (see run_timer): the suspended
        # calls by id, in the order of their expiry (``state_ttl`` after their round ended),
        # and the attached retries by id with the end of their hold (``hold_s`` after they
        # attached), in that order. No call has a deadline of its own.
        self._suspended: dict[str, Continuation] = {}
        self._holding: dict[str, tuple[float, Continuation]] = {}
        self._closed = False
        self._on_call_end = on_call_end
        self.counters: Counter[str] = Counter()
        self.holder: str | None = None

    def __len__(self) -> int:
        """Live continuations (suspended, running, or holding a result for a late retry)."""
        self._evict(trio.current_time())
        return len(self._entries)

    def snapshot(self) -> dict[str, Any]:
        """Gauges and counters: ``live``, ``unfinished`` (tools still running or suspended),
        ``suspended``, and ``started``, ``rounds``, ``completed``, ``expired``,
        ``evicted``, ``refused.<reason>``…"""
        self._evict(trio.current_time())
        unfinished = [c for c in self._entries.values() if not c.done]
        suspended = sum(1 for c in unfinished if not c.attached)
        return {
            "live": len(self._entries),
            "unfinished": len(unfinished),
            "suspended": suspended,
            **self.counters,
        }

    def close(self) -> None:
        """Refuse new calls and end every continuation (their tools are cancelled)."""
        self._closed = True
        for cont in list(self._entries.values()):
            cont.life.cancel()
        self._nursery.cancel_scope.cancel()

    # -- the two entry points -------------------------------------------------------------------

    def start(
        self,
        *,
        principal: str,
        method: str,
        params: Mapping[str, Any],
        capabilities: ClientCapabilities,
        protocol_version: str,
        client_id: str,
        run: RunCall,
        sink: NotificationSink | None = None,
        progress_token: str | int | None = None,
        log_level: str | None = None,
    ) -> Attached:
        """Run a new call: its tool starts at once; ``await`` what this returns for its
        result (``complete`` or ``input_required``).

        ``sink``, ``progress_token`` and ``log_level`` describe this request's channel: the
        tool's notifications go to ``sink`` until the result is decided (none: dropped).

        ``inputResponses`` on a first call (no ``requestState``) answer, under their keys, the
        requests the tool names with the same key (``ctx.elicit(..., key="user_name")``)
        before its first answer is decided; each goes through the runtime like any answer
        (validated, re-prompted, charged). Entries under other keys, or whose shape does
        not fit the request, are ignored: the tool asks, and the answer is an
        ``InputRequiredResult``.

        Raises:
            RequestStateRefused: ``inputResponses`` is not an object (``bad_input_responses``).
            JsonRpcError: the registry is full or closed; awaiting the result: the tool's own
                JSON-RPC error.
        """
        self._evict(trio.current_time())
        offered = self._offered(params.get("inputResponses"))
        digest = request_digest(method, params)
        cont = self._open(principal, digest, capabilities, protocol_version, client_id)
        cont.offered = offered
        self.counters["started"] += 1
        self._nursery.start_soon(self._runner, cont, run)
        return self._attach(cont, math.inf, sink, progress_token, log_level)

    def resume(
        self,
        *,
        principal: str,
        method: str,
        params: Mapping[str, Any],
        capabilities: ClientCapabilities,
        sink: NotificationSink | None = None,
        progress_token: str | int | None = None,
        log_level: str | None = None,
        prepare: Callable[[], RunCall] | None = None,
        protocol_version: str | None = None,
        client_id: str | None = None,
    ) -> Attached:
        """Resume the call a retry's ``requestState`` names: its answers are delivered at
        once; ``await`` what this returns for the call's next result.

        ``sink``, ``progress_token`` and ``log_level`` describe the retry's channel, as for
        :meth:`start`: from now on the tool's notifications relate to the retry.

        When this process does not hold the call (and :attr:`mrtr` is not ``"suspend"``),
        the call is *replayed*: ``prepare()`` checks the request and returns what runs its
        tool (or raises its :class:`JsonRpcError`), which starts again, as :meth:`start` does
        with ``protocol_version`` and ``client_id``, and each request the tool makes is
        answered from the state's answers, in order, until it asks what the state has no
        answer for. A call this process holds was checked when it started, and the state
        binds the retry to that request: ``prepare`` is not called.

        Raises:
            RequestStateRefused: the state or the responses are refused (see its reasons).
            JsonRpcError: the tool's own JSON-RPC error.
        """
        now = trio.current_time()
        self._evict(now)
        state = params.get("requestState")
        if not isinstance(state, str):
            self._refuse("invalid", "not_a_string")
        digest = request_digest(method, params)
        try:
            payload = open_token(
                state,
                principal=principal,
                request_digest=digest,
                now=now + _wall_offset(),
                keyring=self.keyring,
                max_chars=self.max_state_chars,
            )
        except StateTokenError as exc:
            reason = exc.reason if exc.reason in _MESSAGES else "invalid"
            self._refuse(reason, exc.reason)
        cont = self._entries.get(payload.get("c"))  # type: ignore[arg-type]
        if cont is None or cont.principal != principal or cont.digest != digest:
            holder = payload.get("h")
            if isinstance(holder, str) and holder != self.holder:
                self.counters["elsewhere"] += 1
                raise ContinuationElsewhere(holder)
            if self.mrtr == "suspend" or prepare is None or "a" not in payload:
                self._refuse("unknown_continuation", "unknown_continuation")
            assert protocol_version is not None
            assert client_id is not None
            replay = ReplayCall(principal, digest, capabilities, protocol_version, client_id)
            return self._replay(
                payload,
                params.get("inputResponses"),
                replay,
                prepare(),
                sink,
                progress_token,
                log_level,
            )
        if payload.get("r") != cont.round:
            self._refuse("superseded", "superseded")
        if cont.attached:
            self._refuse("in_use", "in_use")
        methods = {key: request.method for key, request in cont.outstanding.items()}
        answers = self._checked_responses(params.get("inputResponses"), methods)
        cont.capabilities = capabilities
        for key, response in answers.items():
            request = cont.outstanding.pop(key)
            cont.journal.append((request.question, response))
            request.on_response(response)
        if answers:
            cont.touch()
        log.debug("resumed", continuation=cont.id[:8], round=cont.round, answers=len(answers))
        return self._attach(cont, self.hold_s, sink, progress_token, log_level)

    # -- internals ------------------------------------------------------------------------------

    def _open(
        self,
        principal: str,
        digest: str,
        capabilities: ClientCapabilities,
        protocol_version: str,
        client_id: str,
    ) -> Continuation:
        """A new registered continuation, for which a detached call may be evicted at the
        registry's cap; ``busy`` when the registry is closed, or full of attached calls;
        :data:`PRINCIPAL_BUSY` when ``principal`` holds its share."""
        admission = self._entries.admit(principal, _detached)
        if self._closed or (isinstance(admission, Refuse) and admission.scope == "total"):
            self.counters["refused.busy"] += 1
            raise internal_error(
                "Too many suspended tool calls on this server; retry later", {"reason": "busy"}
            )
        if isinstance(admission, Refuse):
            self.counters[f"refused.{PRINCIPAL_BUSY}"] += 1
            raise internal_error(
                "Too many suspended tool calls for this client; retry later",
                {"reason": PRINCIPAL_BUSY},
            )
        if isinstance(admission, Shed):
            self._shed(admission)
        cont = Continuation(principal, digest, capabilities)
        cont.peer = MrtrPeer(
            cont, client_id, protocol_version, self.counters, keeps_call=self.mrtr != "replay"
        )
        self._entries.add(principal, cont.id, cont)
        return cont

    def _shed(self, shed: Shed[str, Continuation]) -> None:
        """Evict a detached call to make room at the registry's cap: its tool is cancelled (its
        elicitations end ``abandoned`` through the owner watch) and its entry removed, so its
        retry replays it, or is refused ``unknown_continuation`` (``mrtr="suspend"``)."""
        cont = shed.value
        self.counters["evicted"] += 1
        log.info(
            "continuation_evicted",
            continuation=cont.id[:8],
            round=cont.round,
            finished=cont.done,
            held=self._entries.held(shed.principal),
            why="max_continuations",
        )
        self._discard(cont)

    def _replay(
        self,
        payload: Mapping[str, Any],
        raw_responses: object,
        call: ReplayCall,
        run: RunCall,
        sink: NotificationSink | None,
        progress_token: str | int | None,
        log_level: str | None,
    ) -> Attached:
        """Run the tool again, its requests answered from the state and the retry."""
        try:
            earlier, asked_before, charged, round_ = replay_plan(payload)
        except TypeError as exc:  # sealed by us, so only a bug or a foreign format
            log.warning("replay_state_unusable", error=str(exc)[:200])
            self._refuse("invalid", "replay_payload")
        methods = {key: method for key, (method, _) in asked_before.items()}
        answers = self._checked_responses(raw_responses, methods)
        cont = self._open(
            call.principal, call.digest, call.capabilities, call.protocol_version, call.client_id
        )
        cont.round = round_
        cont.asked = charged
        for question, response in earlier:
            cont.replay[question].append(response)
        for key, (_, question) in asked_before.items():
            if key in answers:
                cont.replay[question].append(answers[key])
        self.counters["replayed"] += 1
        log.debug("replayed", continuation=cont.id[:8], round=round_, answers=len(earlier))
        self._nursery.start_soon(self._runner, cont, run)
        return self._attach(cont, self.hold_s, sink, progress_token, log_level)

    def _offered(self, raw: object) -> dict[str, Mapping[str, Any]]:
        """A first call's ``inputResponses``: the object entries, by key (see :meth:`start`)."""
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            self.counters["refused.bad_input_responses"] += 1
            raise RequestStateRefused("bad_input_responses", "inputResponses must be an object")
        offered = {str(k): v for k, v in raw.items() if isinstance(v, Mapping)}
        self.counters["first_call_answers"] += len(offered)
        return offered

    def _checked_responses(
        self, raw: object, methods: Mapping[str, str]
    ) -> dict[str, Mapping[str, Any]]:
        try:
            return _check_responses(raw, methods)
        except RequestStateRefused as exc:
            self.counters["refused.bad_input_responses"] += 1
            log.info("input_responses_refused", detail=exc.message[:200])
            raise

    def _discard(self, cont: Continuation) -> None:
        """End a call this process will not keep: its tool is cancelled, its entry gone."""
        cont.discarded = True
        cont.life.cancel()
        self._forget(cont.id)

    def _refuse(self, reason: str, log_reason: str) -> NoReturn:
        self.counters[f"refused.{reason}"] += 1
        log.info("request_state_refused", reason=log_reason)
        raise RequestStateRefused(reason)

    async def _runner(self, cont: Continuation, run: RunCall) -> None:
        try:
            with cont.life:
                try:
                    cont.final = await run(cont.peer)
                except JsonRpcError as exc:
                    cont.final = exc
                except Exception as exc:  # run() converts tool errors; this is a bug
                    log.exception("mrtr_runner_failed", error=type(exc).__name__)
                    cont.final = internal_error("Internal error while running the tool")
            if cont.life.cancelled_caught and not cont.attached and not cont.discarded:
                self.counters["expired"] += 1
                log.info("continuation_expired", continuation=cont.id[:8], round=cont.round)
        finally:
            cont.done = True
            if cont.final is None:
                self._forget(cont.id)
            elif not cont.attached and not cont.discarded:
                # Finished between rounds (e.g. after TimedOut): keep the result, not the task.
                heapq.heappush(self._finals, (cont.expires_at, cont.id))
            cont.touch()
            if self._on_call_end is not None:
                self._on_call_end()

    def _attach(
        self,
        cont: Continuation,
        hold: float,
        sink: NotificationSink | None,
        progress_token: str | int | None,
        log_level: str | None,
    ) -> Attached:
        """Attach the request to its call: from now on the tool's notifications go to its
        channel (a tool its answers resumed sends there already), until :meth:`_answer`,
        awaited through the returned :class:`Attached`, decides its answer."""
        cont.attached = True
        cont.held = False
        cont.sink = sink
        cont.progress_token = progress_token
        cont.log_level = log_level
        self._suspended.pop(cont.id, None)  # an attached call does not expire
        self._entries.touch(cont.id)  # the most recently used of its principal's
        if hold != math.inf:
            self._holding[cont.id] = (trio.current_time() + hold, cont)
        return Attached(self, cont)

    async def _answer(self, cont: Continuation, waiter: Waiter) -> dict[str, Any]:
        """Wait in ``waiter`` for the attached call's next yield; detach the request; its
        answer."""
        cont.waiter = waiter
        try:
            await self._until_yield(cont, waiter)
            self._holding.pop(cont.id, None)
            cont.ended_seen = cont.ended
            # The answer is decided: nothing more goes to this request's channel, and what is
            # under way there finishes first (a notification never follows the response).
            cont.sink = None
            cont.offered.clear()  # a first call's own answers serve its first round only
            while cont.sending:
                cont.drained = trio.Event()
                await cont.drained.wait()
            cont.drained = None
            # Decided on the state after the drain (the tool may have finished meanwhile).
            if cont.final is not None:
                self._forget(cont.id)
                self.counters["completed"] += 1
                if isinstance(cont.final, JsonRpcError):
                    raise cont.final
                if isinstance(cont.final, Handoff):  # a task now: its own answer
                    return dict(cont.final.result)
                return {**cont.final, "resultType": "complete"}
            if cont.done:  # cancelled under us (registry closing)
                self._forget(cont.id)
                raise internal_error("The tool call was cancelled", {"reason": "cancelled"})
            result = self._input_required(cont)
            if self.mrtr == "replay" and cont.outstanding:
                self._discard(cont)  # the retry replays it, wherever it lands
                self.counters["discarded"] += 1
            else:  # suspended until the retry, at most until its state expires
                self._suspended[cont.id] = cont
            return result
        except trio.Cancelled:
            cont.life.cancel()  # the request is gone: so is the call
            raise
        finally:
            cont.waiter = None
            self._holding.pop(cont.id, None)
            cont.sink = None
            cont.log_level = None
            cont.drained = None
            cont.attached = False

    async def _until_yield(self, cont: Continuation, waiter: Waiter) -> None:
        """Wait until the tool finished, or asked and the round settled, or the retry's hold
        ran out (parked in ``waiter``, which every change of the call wakes)."""
        while not (cont.done or cont.final is not None or cont.held):
            if cont.outstanding and not cont.unsent():
                if not cont.parked():
                    await self._settle(cont)
                if cont.outstanding or cont.done or cont.final is not None:
                    return
            try:
                await waiter.park()
            except BaseException:
                cont.life.cancel()  # the request is gone (cancelled, its client left)
                raise

    async def _settle(self, cont: Continuation) -> None:
        """Pass checkpoints until ``settle_checkpoints`` in a row saw no new request and no
        question on its way, the tool ended, or ten times that many passed (a tool that keeps
        asking is answered anyway)."""
        quiet = 0
        for _ in range(self.settle_checkpoints * 10):
            before = cont.version
            await trio.lowlevel.checkpoint()
            quiet = quiet + 1 if cont.version == before and not cont.unsent() else 0
            if quiet >= self.settle_checkpoints or cont.done:
                return

    def _input_required(self, cont: Continuation) -> dict[str, Any]:
        now = trio.current_time()
        cont.round += 1
        cont.expires_at = now + self.state_ttl
        payload: dict[str, Any] = {"c": cont.id, "r": cont.round}
        if self.holder is not None:
            payload["h"] = self.holder
        if self.mrtr != "suspend":  # what a replay needs (see replay_plan)
            asked = [(key, r.method, r.question) for key, r in cont.outstanding.items()]
            charged = max(cont.questions, cont.asked)
            payload.update(journal_fields(cont.journal, asked, charged))
        try:
            token = seal(
                payload,
                principal=cont.principal,
                request_digest=cont.digest,
                now=now + _wall_offset(),
                ttl=self.state_ttl,
                keyring=self.keyring,
                max_chars=self.max_state_chars,
            )
        except StateTokenTooLarge as exc:
            self._discard(cont)
            self.counters["refused.state_too_large"] += 1
            log.info("state_too_large", size=exc.size, limit=exc.limit, round=cont.round)
            raise internal_error(
                f"The answers of this call no longer fit in a requestState of "
                f"{self.max_state_chars} characters (a replayable state carries every answer "
                "of the call): ask for less in one call, or serve with --mrtr suspend",
                {"reason": "state_too_large", "limit": self.max_state_chars},
            ) from None
        self.counters["rounds"] += 1
        result: dict[str, Any] = {"resultType": "input_required", "requestState": token}
        if cont.outstanding:
            result["inputRequests"] = {
                key: {"method": r.method, "params": r.params} for key, r in cont.outstanding.items()
            }
        return result

    async def run_timer(self) -> None:
        """Run the registry's timer until it is cancelled (the registry closes).

        It ends what is due: a suspended call whose state expired (its tool is cancelled), a
        retry that waited ``hold_s`` (it answers with the state). Both are kept in the order
        they fall due (``state_ttl`` and ``hold_s`` are constant), so only the first of each
        is looked at; sleeping at most the shorter of the two at a time, the timer never
        sleeps past anything added while it slept. :func:`open_continuations` runs it.
        """
        suspended, holding = self._suspended, self._holding
        longest = min(self.state_ttl, self.hold_s)
        while True:
            now = trio.current_time()
            wake = now + longest
            while suspended:
                cont = next(iter(suspended.values()))
                if cont.expires_at > now:
                    wake = min(wake, cont.expires_at)
                    break
                del suspended[cont.id]
                cont.life.cancel()
            while holding:
                cid, (due, cont) = next(iter(holding.items()))
                if due > now:
                    wake = min(wake, due)
                    break
                del holding[cid]
                cont.held = True
                cont.touch()
            await trio.sleep_until(wake)

    def _evict(self, now: float) -> None:
        finals = self._finals
        while finals and finals[0][0] <= now:
            _, cid = heapq.heappop(finals)
            cont = self._entries.get(cid)
            if cont is not None and cont.done and not cont.attached:
                self._forget(cid)
                self.counters["expired"] += 1

    def _forget(self, cid: str) -> None:
        self._suspended.pop(cid, None)
        self._entries.remove(cid)


def _detached(cont: Continuation) -> bool:
    """Whether a call may be evicted: no request is attached to it (it is suspended between
    rounds, or finished and kept for a late retry)."""
    return not cont.attached


def _check_responses(raw: object, methods: Mapping[str, str]) -> dict[str, Mapping[str, Any]]:
    """The answers to the outstanding requests (their methods by key), checked (nothing is
    delivered on error)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise RequestStateRefused("bad_input_responses", "inputResponses must be an object")
    answers: dict[str, Mapping[str, Any]] = {}
    for key, value in raw.items():
        method = methods.get(key)
        if method is None:
            continue  # unknown, or answered already: ignored (spec)
        problem = response_problem(method, value)
        if problem is not None:
            where = f"inputResponses.{str(key)[:64]}"
            raise RequestStateRefused("bad_input_responses", f"{where}{problem}")
        answers[key] = value
    return answers


_WALL_OFFSET: Final = trio.lowlevel.RunVar[float]("erlmcp_mrtr_wall_offset")


def _wall_offset() -> float:
    """What turns this run's trio clock into the time states are sealed and opened on.

    A state's issue and expiry times are read by other processes (replicas, the next process
    after a restart), and trio's clock is this process's own: states use the trio clock
    shifted, once per run, to the wall clock that every process shares.
    """
    try:
        return _WALL_OFFSET.get()
    except LookupError:
        offset = time.time() - trio.current_time()
        _WALL_OFFSET.set(offset)
        return offset


@asynccontextmanager
async def open_continuations(**options: Any) -> AsyncIterator[ContinuationRegistry]:
    """Open a :class:`ContinuationRegistry` with its own nursery and timer; closing it ends
    every call.

    Args:
        **options: Keyword arguments of :class:`ContinuationRegistry`.
    """
    async with trio.open_nursery() as nursery:
        registry = ContinuationRegistry(nursery, **options)
        nursery.start_soon(registry.run_timer)
        try:
            yield registry
        finally:
            registry.close()
