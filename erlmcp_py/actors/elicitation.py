"""ElicitationActor: the registry, and one child task per elicitation.

Theory of operation. The actor owns the registry (id -> :class:`Record`) and answers the
runtime API — inline in the caller's turn when it is idle (``handle_call_nowait``), else from
its mailbox; both paths run the same ``_step``. Each record owns one pure
``core.lifecycle.Elicitation`` and is fed events by whoever learns something — the peer's
response callback, the owner monitor, the API calls, the record's child — through the
synchronous :meth:`Record.feed`. ``feed`` executes the effects that need no I/O at once
(resolve the waiter, arm the timer, answer an extension) and queues the others (send a
request, validate, warn, notify) for the record's child task, which performs them one at a
time — in its own turn when they need no waiting (a peer's ``send_request_nowait``, an idle
validator), else in a cancel scope that the deadline cancels — and otherwise parks until
``feed`` or the timer wakes it. One shortcut: the peer's answer is validated by whoever
delivers it (:meth:`Record.perform_now`, when no effect is in progress), so the waiter wakes
one trip through the scheduler sooner; the child only sees that the record has ended.

Time belongs to one timer task per actor (``actors/timers.py``): each live record has one
armed timer (the warning, then the deadline); when it is due the timer task marks the record
and wakes its child, which feeds ``WarningDue`` / ``DeadlineReached`` itself, so the waiter's
wake-up and the client's notice come from one turn, in that order.

So the lifecycle decides everything, the child task is the only place that awaits for a
record, and every path to a terminal status goes through ``feed`` -> ``Resolve`` ->
:meth:`ElicitationActor._on_resolved`, which releases the rate-limit slot, the owner watch,
the timer and the pending gauge exactly once.

The owner watch is one ``MonitorHub`` subscription per record, sharing one watcher task per
owner task, kept while the owner lives; ``Runtime.ask`` subscribes only if its waiting caller
stops waiting. URL mode adds one shell rule the lifecycle does not model: the client's
``accept`` only means the user agreed to open the page, so the record keeps waiting for the
application's ``complete_elicitation``; then ``notifications/elicitation/complete`` goes to
the initiating client.

If the actor dies (crash, restart of a sibling under rest_for_one, shutdown), its nursery
takes every child task with it; ``terminate`` tells each client to drop its open request and
then feeds ``RuntimeRestart`` to every live record: each waiter gets
``Failed("runtime_restarted")``, never a hang.
"""

from __future__ import annotations

import binascii
import contextlib
import logging
import math
import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic_core
import structlog
import trio

from erlmcp_py.actors.api import ElicitationHandle, ElicitationInfo, ElicitationRequest, Mode
from erlmcp_py.actors.metrics import Metrics
from erlmcp_py.actors.peer import Peer, PeerError, PeerGone, PeerResponse
from erlmcp_py.actors.ratelimiter import Acquire, Release, ReleaseMany, ResetPending
from erlmcp_py.actors.timers import Timers
from erlmcp_py.actors.urlcheck import Resolver, check_url
from erlmcp_py.actors.validator import Validate
from erlmcp_py.core.errors import (
    AlreadyTerminal,
    AnswerInFlight,
    ElicitationNotFound,
    ExtensionDenied,
    InvalidAnswer,
    ResultTooLarge,
    UnsafeURLError,
)
from erlmcp_py.core.lifecycle import (
    Answer,
    Cancel,
    DeadlineReached,
    Effect,
    Elicitation,
    Extend,
    ExtensionGranted,
    ExtensionRefused,
    OwnerDown,
    Resolve,
    RuntimeRestart,
    SendCancelledNotice,
    SendRequest,
    SendWarning,
    Sent,
    SetDeadline,
    TransportFailed,
    ValidateAnswer,
    Validated,
    WarningDue,
)
from erlmcp_py.core.outcomes import Accepted, Failed, Outcome, Tenant
from erlmcp_py.core.policy import Policy
from erlmcp_py.core.ratelimit import Refused
from erlmcp_py.core.retention import Retention
from erlmcp_py.core.urlpolicy import UrlPolicy
from erlmcp_py.core.validation import AnswerError, json_type, summarize
from supervisors import (
    Actor,
    ActorGone,
    ActorRef,
    Busy,
    ErrorReply,
    MonitorHub,
    MonitorRef,
    ReplyTo,
)

__all__ = ["ElicitationActor", "Record"]

log = structlog.get_logger("erlmcp_py.elicitation")

_ACTIONS = frozenset({"accept", "decline", "cancel"})

#: Effects that :meth:`Record.apply` only queues for the child (checked first: most are).
_QUEUED: frozenset[type] = frozenset({SendRequest, ValidateAnswer, SendCancelledNotice})

_b2a_base64 = binascii.b2a_base64
_URLSAFE = bytes.maketrans(b"+/", b"-_")  # base64's own url-safe alphabet

#: The name of every elicitation child task (trio would otherwise format one per spawn).
_CHILD_TASK = f"{__name__}.ElicitationActor._child"


def json_size(value: Any) -> int:
    """Bytes of ``value``'s compact UTF-8 JSON encoding (how answer sizes are measured).

    pydantic-core's encoder gives the same bytes as ``json.dumps(separators=(",", ":"),
    ensure_ascii=False)`` for JSON values, several times faster.
    """
    return len(pydantic_core.to_json(value))


class _ResponseRoute:
    """What the peer calls with the answer to one attempt: the record and that attempt's id.

    A two-slot object rather than ``functools.partial`` (a quarter of the bytes), because
    the peer holds one for every pending elicitation.
    """

    __slots__ = ("record", "rid")

    def __init__(self, record: Record, rid: str) -> None:
        self.record = record
        self.rid = rid

    def __call__(self, response: PeerResponse) -> None:
        self.record.on_response(self.rid, response)


@dataclass(frozen=True, slots=True)
class _NotifyComplete:
    """Shell effect: tell the initiating client a URL-mode elicitation completed."""


class Record:
    """One elicitation: its lifecycle, its peer, its waiter. Fed by :meth:`feed`.

    ``outcome`` is set by the :class:`Resolve` effect, which the lifecycle emits first
    whenever it reaches a terminal status; so ``outcome is not None`` is the shell's
    ``core.is_terminal`` (without the property call on every check).
    """

    __slots__ = (
        "actor",
        "asker",
        "client",
        "consented",
        "core",
        "due",
        "ended_at",
        "id",
        "mode",
        "monitor",
        "outcome",
        "owner",
        "peer",
        "performing",
        "request",
        "rid",
        "scope",
        "tenant",
        "timer_at",
        "waiter",
        "waiters",
        "warned",
        "work",
    )

    def __init__(
        self,
        actor: ElicitationActor,
        elicitation_id: str,
        request: ElicitationRequest,
        peer: Peer,
        tenant: Tenant,
        client: str,
        now: float,
    ) -> None:
        self.actor = actor
        self.id = elicitation_id
        self.mode: Mode = request.mode
        self.request = request
        self.peer = peer
        self.tenant = tenant
        self.client = client
        self.core = Elicitation(actor.policy.lifecycle, now, mode=request.mode)
        # A list, not a deque: it holds at most a few effects, and an empty deque allocates
        # a 64-slot block (~760 bytes) per pending elicitation.
        self.work: list[Effect | _NotifyComplete] = []
        self.waiters: list[trio.lowlevel.Task] | None = None  # ElicitationHandle.outcome()
        self.asker: trio.lowlevel.Task | None = None  # Runtime.ask's caller, while it waits
        self.outcome: Outcome | None = None
        self.waiter: trio.lowlevel.Task | None = None
        self.rid: str | None = None  # JSON-RPC id of our outstanding elicitation/create
        self.consented = False
        self.warned = False
        self.ended_at: float | None = None
        self.monitor: MonitorRef | None = None
        self.owner: trio.lowlevel.Task | None = None
        self.scope: trio.CancelScope | None = None  # while the child performs live effects
        self.timer_at: float | None = None  # the one armed timer (see actors/timers.py)
        self.due = False  # the timer fired; the child feeds it (see on_timer)
        self.performing = False  # an effect is in progress (one at a time, see _child)

    # -- feeding the lifecycle (synchronous: callable from any trio task) ----------------

    def feed(self, event: Any) -> tuple[ExtensionGranted | ExtensionRefused, ...]:
        """Hand ``event`` to the lifecycle and execute or queue its effects."""
        return self.apply(self.core.handle(event))

    def apply(self, effects: list[Effect]) -> tuple[ExtensionGranted | ExtensionRefused, ...]:
        """Execute or queue ``effects``; return the extension replies among them (only an
        ``Extend`` has any: the others share one empty tuple instead of a list each)."""
        replies: tuple[ExtensionGranted | ExtensionRefused, ...] = ()
        effect: Any  # narrowed by ``kind`` below (an isinstance assert per effect is not free)
        for effect in effects:
            kind = type(effect)
            if kind in _QUEUED:  # the common case: work for the child
                self.work.append(effect)
            elif kind is Resolve:
                self.outcome = effect.outcome
                asker = self.asker
                if asker is not None:
                    self.asker = None
                    trio.lowlevel.reschedule(asker)
                waiters = self.waiters
                if waiters:
                    self.waiters = None
                    for task in waiters:
                        trio.lowlevel.reschedule(task)
                self.actor._on_resolved(self)  # sets ended_at
            elif kind is SetDeadline:
                # The effect carries the lifecycle's new deadline and warning time, so this is
                # ``next_timer()`` for an unwarned deadline without asking the core again.
                self.warned = False
                warn_at = effect.warn_at
                deadline = effect.deadline
                self.actor.timers.arm(
                    self, warn_at if warn_at is not None and warn_at < deadline else deadline
                )
            elif kind is ExtensionGranted or kind is ExtensionRefused:
                replies = (*replies, effect)
            else:
                if kind is SendWarning:
                    self.warned = True
                    self.actor.timers.arm(self, self.next_timer())  # now: the deadline
                self.work.append(effect)
        waiter = self.waiter  # wake(), inline: once per applied event
        if waiter is not None:
            self.waiter = None
            trio.lowlevel.reschedule(waiter)
        return replies

    def on_response(self, rid: str, response: PeerResponse) -> None:
        """The peer's answer to our request ``rid`` (called once, synchronously)."""
        if rid != self.rid or self.outcome is not None:
            return  # an answer to an earlier attempt, or too late: ignored
        if type(response) is dict:  # a result object: the common case, checked first
            action = response.get("action")
        elif isinstance(response, PeerGone):
            self.feed(TransportFailed("client gone"))
            return
        elif isinstance(response, PeerError):
            self.feed(TransportFailed(f"client error {response.code}: {response.message}"))
            return
        else:
            action = response.get("action") if isinstance(response, Mapping) else None
        if action not in _ACTIONS:
            self.feed(TransportFailed("invalid response: action must be accept|decline|cancel"))
            return
        # From the request reaching the client (or, if it answered before our send returned,
        # from creation) to the human's answer.
        actor = self.actor
        sent_at = self.core.sent_at
        asked_at = self.core.created_at if sent_at is None else sent_at
        actor.metrics.on_answer_latency(actor.now() - asked_at)
        if self.mode == "url" and action == "accept":
            self.consented = True  # the user opened the page; the app completes it later
            actor._event("consented", self)
            return
        if actor._log_events:  # checked here too: the event's fields are not built for nothing
            actor._event("answered", self, action=action)
        content = response.get("content") if action == "accept" else None
        self.apply(self.core.handle(Answer(action, content)))  # feed(), inline: every answer
        self.perform_now()

    def perform_now(self) -> None:
        """Perform the queued effects that need no waiting here, in the caller's turn, unless
        an effect is in progress (there is never more than one at a time) or a timer is due
        (the child handles it first: an answer after the deadline fired must not win): an
        answer is validated — and its waiter woken — by whoever delivered it."""
        work = self.work
        if self.performing or self.due:
            return
        self.performing = True
        try:
            while work and self.outcome is None:
                if not self.actor._perform_nowait(self, work[0]):
                    return
                del work[0]
        finally:
            self.performing = False

    def on_owner_down(self, _task: trio.lowlevel.Task) -> None:
        self.feed(OwnerDown())

    def watch_owner(self) -> None:
        """Subscribe to the owner's exit (once; not after the end)."""
        if self.monitor is not None or self.owner is None or self.outcome is not None:
            return
        # RuntimeError: the actor is gone; its terminate() ends this record (runtime_restarted).
        with contextlib.suppress(RuntimeError):
            self.monitor = self.actor.hub.monitor(self.owner, self.on_owner_down)

    @property
    def timer_key(self) -> str:
        return self.id

    def on_timer(self, now: float) -> None:
        """The armed timer is due (called by the timer task): hand it to the child.

        The child feeds it itself (:meth:`on_due`), so that at a deadline the waiter's
        wake-up and the client's ``notifications/cancelled`` come from one turn of one task,
        in that order — on Streamable HTTP the notice must precede the tool's result, which
        closes the request's stream.
        """
        if self.outcome is not None:
            return
        self.due = True
        if now >= self.core.deadline:
            if self.scope is not None:
                self.scope.cancel()  # interrupt the effect in progress (a blocked send)
        else:
            # The warning: keep the deadline armed even if the child is stuck in an effect.
            self.actor.timers.arm(self, self.core.deadline)
        self.wake()

    def on_due(self, now: float) -> None:
        """Feed the due timer: the deadline, or the warning before it."""
        self.due = False
        if self.outcome is not None:
            return
        if now >= self.core.deadline:
            self.feed(DeadlineReached(now))
        elif self.core.warn_at is not None and now >= self.core.warn_at and not self.warned:
            self.warned = True  # fired once for this deadline
            self.feed(WarningDue(now))
        if self.outcome is None:
            self.actor.timers.arm(self, self.next_timer())

    # -- the child task's sleep ------------------------------------------------------------

    def next_timer(self) -> float:
        warn_at = self.core.warn_at
        if warn_at is not None and not self.warned and warn_at < self.core.deadline:
            return warn_at
        return self.core.deadline

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            trio.lowlevel.reschedule(waiter)

    def _abort_park(self, _: Any) -> trio.lowlevel.Abort:
        self.waiter = None
        return trio.lowlevel.Abort.SUCCEEDED

    def _abort_ask(self, _: Any) -> trio.lowlevel.Abort:
        self.asker = None
        return trio.lowlevel.Abort.SUCCEEDED

    def info(self) -> ElicitationInfo:
        core = self.core
        return ElicitationInfo(
            id=self.id,
            mode=self.mode,
            status=core.status.value,
            client=self.client,
            created_at=core.created_at,
            deadline=core.deadline,
            sent_at=core.sent_at,
            ended_at=self.ended_at,
            extensions_used=core.extensions_used,
            reprompts_used=core.reprompts_used,
            outcome=None if self.outcome is None else type(self.outcome).__name__,
        )


# Messages of the actor's call protocol (the Runtime builds them).


@dataclass(frozen=True, slots=True)
class Create:
    request: ElicitationRequest
    peer: Peer
    tenant: Tenant
    owner: trio.lowlevel.Task
    client: str
    watch_owner: bool = True
    """``False`` only for ``Runtime.ask``, whose owner waits at once (see there); honoured
    only inline — a create through the mailbox always watches its owner."""


@dataclass(frozen=True, slots=True)
class GetStatus:
    elicitation_id: str
    tenant: Tenant


@dataclass(frozen=True, slots=True)
class ListAll:
    tenant: Tenant


@dataclass(frozen=True, slots=True)
class CancelIt:
    elicitation_id: str
    tenant: Tenant


@dataclass(frozen=True, slots=True)
class ExtendIt:
    elicitation_id: str
    tenant: Tenant
    seconds: float | None


@dataclass(frozen=True, slots=True)
class _Ask:
    """A call step: ask ``ref`` for ``message``, then answer with ``then(its reply)``."""

    ref: ActorRef
    message: Any
    then: Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class CompleteIt:
    elicitation_id: str
    tenant: Tenant
    content: Any


class ElicitationActor(Actor):
    """Registry of elicitations; spawns and supervises (links) one child task each."""

    name = "elicitation"
    mailbox_size = 8192

    def __init__(
        self,
        policy: Policy,
        registry: dict[str, ActorRef],
        metrics: Metrics,
        url_policy: UrlPolicy | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        self.policy = policy
        self.url_policy = url_policy
        self.resolver = resolver
        self.metrics = metrics
        self._registry = registry

    async def init(self) -> None:
        # The run's clock, read without trio.current_time()'s two extra calls (per event).
        self.now: Callable[[], float] = trio.lowlevel.current_clock().current_time
        self.records: dict[str, Record] = {}
        self.retention: Retention[str] = Retention(self.policy.retention)
        self._evict_at = math.inf  # when the oldest retained record ages out
        self._id_pool = b""
        self._id_pos = 0
        self.ratelimiter = self._registry["ratelimiter"]
        self.validator = self._registry["validator"]
        self._bind_log()
        # A tool that asks several questions in a row keeps one watcher; it ends with the tool.
        self.hub = MonitorHub(self.nursery, keep_idle_watchers=True)
        self.timers = Timers(Record.on_timer)
        self.nursery.start_soon(self.timers.run)
        self._releases: Counter[str] = Counter()
        self._releases_due = trio.Event()
        self.nursery.start_soon(self._flush_releases)
        # Every elicitation of a previous incarnation died with it: free their slots. If the
        # limiter is itself dead, it restarts empty and rest_for_one restarts us after it.
        with contextlib.suppress(ActorGone, Busy):
            await self.ratelimiter.call(ResetPending(), timeout=None)
        self._registry["elicitation"] = self.ref

    @property
    def live(self) -> int:
        """Elicitations not yet ended: every terminal record is retained until it is evicted
        from both the registry and the retention, so the live ones are the difference."""
        return len(self.records) - len(self.retention)

    # -- API ---------------------------------------------------------------------------------

    def handle_call_nowait(self, msg: Any) -> Any:
        if type(msg) is Create:  # the hot path, without the _Ask detour (_ask_nowait inline)
            now = self.now()
            if now >= self._evict_at:
                self._evict(now)
            try:
                decision = self.ratelimiter.call_nowait(Acquire(msg.client))
            except (Busy, ActorGone) as exc:
                decision = ErrorReply(exc)
            return self._admit(msg, decision, now, watch=msg.watch_owner)
        step = self._step(msg)
        if type(step) is _Ask:
            return step.then(self._ask_nowait(step.ref, step.message))
        return step

    async def handle_call(self, msg: Any, reply_to: ReplyTo) -> Any:
        step = self._step(msg)
        if type(step) is _Ask:
            return step.then(await self._ask(step.ref, step.message))
        return step

    def _step(self, msg: Any) -> Any:
        """Answer ``msg``, or say which sibling to ask first (:class:`_Ask`).

        Written once for both paths: inline (``call_nowait``: the sibling is asked inline
        too, or the whole call falls back to the mailbox) and in the actor's own task.
        """
        self._evict(self.now())
        kind = type(msg)
        if kind is Create:
            # Through the mailbox the create can outlive a caller that gives up waiting for
            # the reply; then nobody would wait for it, so its owner is always watched.
            return _Ask(
                self.ratelimiter,
                Acquire(msg.client),
                lambda d: self._admit(msg, d, self.now(), watch=True),
            )
        if kind is ListAll:
            return [r.info() for r in self.records.values() if r.tenant == msg.tenant]
        record = self.records.get(msg.elicitation_id)
        if record is None or record.tenant != msg.tenant:
            # Another tenant's id takes exactly the unknown-id path.
            return ErrorReply(ElicitationNotFound(msg.elicitation_id))
        if kind is GetStatus:
            return record.info()
        if record.outcome is not None:
            return ErrorReply(AlreadyTerminal(record.core.status.value))
        if kind is CancelIt:
            record.feed(Cancel(by="server"))
            return record.info()
        if kind is ExtendIt:
            (reply,) = record.feed(Extend(self.now(), msg.seconds))
            if isinstance(reply, ExtensionGranted):
                self._event("extended", record, deadline=reply.deadline)
                return record.info()
            assert isinstance(reply, ExtensionRefused)
            return ErrorReply(ExtensionDenied(reply.reason, reply.max_extensions))
        if kind is CompleteIt:
            size = json_size(msg.content)
            limit = self.policy.sizes.answer_bytes
            if size > limit:
                return ErrorReply(ResultTooLarge(size, limit))
            request = record.request
            return _Ask(
                self.validator,
                Validate(request.requested_schema, request.validator, msg.content),
                lambda verdict: self._complete(record, msg.content, verdict),
            )
        raise TypeError(f"unknown elicitation call {kind.__name__}")

    async def _ask(self, ref: ActorRef, msg: Any) -> Any:
        """Call a sibling actor; its Busy/death becomes the caller's typed error.

        Never raises: an exception escaping ``handle_call`` would crash this actor and fail
        every pending waiter for one caller's bad luck. No timeout (a cancel scope per call
        is most of a call's cost): a sibling that dies fails the call with ``ActorGone``,
        and the runtime API's own timeout bounds the whole request.
        """
        try:
            return await ref.call(msg, timeout=None)
        except (Busy, ActorGone) as exc:
            return ErrorReply(exc)

    @staticmethod
    def _ask_nowait(ref: ActorRef, msg: Any) -> Any:
        """:meth:`_ask` inline; ``trio.WouldBlock`` (the sibling is busy) propagates."""
        try:
            return ref.call_nowait(msg)
        except (Busy, ActorGone) as exc:
            return ErrorReply(exc)

    def _new_id(self) -> str:
        """128 random bits as URL-safe text (what ``secrets.token_urlsafe(16)`` gives), from
        the OS CSPRNG read 4 KiB at a time: one system call per 256 ids, each byte used once."""
        pos = self._id_pos
        if pos >= len(self._id_pool):
            self._id_pool = os.urandom(4096)
            pos = 0
        self._id_pos = pos + 16
        # base64.urlsafe_b64encode(...).rstrip(b"="), without its two Python-level calls:
        # 16 bytes encode to 22 characters and two "=".
        chunk = _b2a_base64(self._id_pool[pos : pos + 16], newline=False)
        return chunk.translate(_URLSAFE)[:22].decode()

    def _admit(self, msg: Create, decision: Any, now: float, *, watch: bool) -> Any:
        """The rate limiter's ``decision`` is in: register the record and start its child."""
        if isinstance(decision, ErrorReply):
            return decision
        if isinstance(decision, Refused):
            self.metrics.on_refused(decision.limit)
            return ErrorReply(decision.to_error())
        record = Record(
            self,
            self._new_id(),
            msg.request,
            msg.peer,
            msg.tenant,
            msg.client,
            now,
        )
        self.records[record.id] = record
        self.metrics.on_created(record.mode)
        record.owner = msg.owner
        if watch:
            record.watch_owner()
        # Started here, not in the child: the request is outstanding from the create on, so
        # an application completion that comes before the child's first turn is honoured.
        record.apply(record.core.start())
        self.nursery.start_soon(self._child, record, name=_CHILD_TASK)
        if self._log_events:
            self._event("created", record)
        if not watch:  # Runtime.ask, inline: it waits on the record itself (no handle)
            return record
        return ElicitationHandle(record.id, record.mode, record)

    def _complete(self, record: Record, content: Any, verdict: Any) -> Any:
        """The validator's ``verdict`` on the application's completion is in."""
        if isinstance(verdict, ErrorReply):
            return verdict
        if record.outcome is not None:  # it ended (client answer, deadline…) while we validated
            return ErrorReply(AlreadyTerminal(record.core.status.value))
        if not verdict.ok:
            return ErrorReply(InvalidAnswer(verdict.errors, summarize(verdict.errors)))
        effects = record.core.handle(Answer("accept", content))
        if not any(isinstance(e, ValidateAnswer) for e in effects):
            return ErrorReply(AnswerInFlight(record.id))
        record.apply(record.core.handle(Validated(True, (), verdict.content)))
        if record.mode == "form" and record.rid is not None:
            record.work.append(SendCancelledNotice())  # the client's form is moot now
            record.wake()
        return record.info()

    # -- bookkeeping -------------------------------------------------------------------------

    def _on_resolved(self, record: Record) -> None:
        record.ended_at = ended_at = self.now()
        outcome = record.outcome
        self.timers.disarm(record)
        self.metrics.on_outcome(record.mode, type(outcome).__name__)
        if record.monitor is not None:
            record.monitor.cancel()
            record.monitor = None
        if record.mode == "url" and isinstance(outcome, Accepted):
            record.work.append(_NotifyComplete())
        for elicitation_id in self.retention.add(record.id, ended_at):
            self.records.pop(elicitation_id, None)
        if self._evict_at == math.inf:
            expiry = self.retention.next_expiry()
            self._evict_at = math.inf if expiry is None else expiry
        if self._log_events:
            self._event(
                "outcome", record, outcome=type(outcome).__name__, status=record.core.status
            )

    def _evict(self, now: float) -> None:
        if now < self._evict_at:
            return  # nothing retained is old enough yet (checked on every API call)
        for elicitation_id in self.retention.evict(now):
            self.records.pop(elicitation_id, None)
        expiry = self.retention.next_expiry()
        self._evict_at = math.inf if expiry is None else expiry

    def _bind_log(self) -> None:
        """Pin the logger when structlog pins it anyway (``cache_logger_on_first_use``, as
        ``erlmcp_py.logging.configure_logging`` sets): its level is then fixed, so a
        filtered-out event costs one attribute test instead of a call with eight fields.
        Otherwise (tests, ``capture_logs``) every event goes through the lazy proxy."""
        self._log: Any = log
        self._log_events = True
        if structlog.get_config().get("cache_logger_on_first_use"):
            bound = log.bind()
            self._log = bound
            is_enabled_for = getattr(bound, "is_enabled_for", None)
            if is_enabled_for is not None:
                self._log_events = bool(is_enabled_for(logging.INFO))

    def _event(self, name: str, record: Record, **extra: Any) -> None:
        # The hot call sites test ``_log_events`` themselves, before building the fields.
        if not self._log_events:
            return
        tenant = record.tenant
        self._log.info(
            name,
            elicitation_id=record.id,
            mode=record.mode,
            client=record.client,
            user=tenant.user,
            workspace=tenant.workspace,
            conversation=tenant.conversation,
            **extra,
        )

    # -- the child task ----------------------------------------------------------------------

    async def _child(self, record: Record) -> None:
        # The child only performs effects and parks; time is the timer task's (on_timer).
        # Live effects run in a cancel scope that a deadline cancels (a send blocked by
        # back-pressure still times out); effects after the end — notices — are not timed.
        # Parked, the child holds no scope at all: a pending elicitation stays small.
        # An effect that can finish without waiting (a peer that takes the request at once,
        # an idle validator) is done in the child's own turn, without a scope; so are the
        # ones after it that can (nothing else runs in between: no timer can become due).
        work = record.work  # the record's one queue, never replaced
        try:
            while True:
                if record.due:
                    record.on_due(self.now())
                if work:
                    record.performing = True
                    try:
                        if record.outcome is not None:
                            await self._perform(record, work.pop(0))
                            continue
                        while self._perform_nowait(record, work[0]):
                            del work[0]
                            if not work or record.outcome is not None:
                                break
                        else:
                            with trio.CancelScope() as scope:
                                record.scope = scope
                                while work and record.outcome is None:
                                    await self._perform(record, work.pop(0))
                            record.scope = None
                        continue
                    finally:
                        record.performing = False
                if record.outcome is not None:
                    break
                record.waiter = trio.lowlevel.current_task()
                await trio.lowlevel.wait_task_rescheduled(record._abort_park)
        finally:
            record.scope = None
            if record.timer_at is not None:  # the end disarmed it already, unless cancelled
                self.timers.disarm(record)
            if record.rid is not None:
                record.peer.forget_request(record.rid)
        self._release(record)

    async def _perform(self, record: Record, effect: Effect | _NotifyComplete) -> None:
        kind = type(effect)
        if kind is SendRequest:
            assert isinstance(effect, SendRequest)
            if record.outcome is None:  # ended before its turn: nothing to ask
                await self._send_request(record, effect)
        elif kind is ValidateAnswer:
            assert isinstance(effect, ValidateAnswer)
            await self._validate(record, effect.content)
        elif kind is SendWarning:
            assert isinstance(effect, SendWarning)
            self._event("warned", record, remaining_s=round(effect.remaining_s, 3))
            await self._notify(record, "notifications/message", _warning(record, effect))
        elif kind is SendCancelledNotice:
            await self._send_cancelled(record)
        elif kind is _NotifyComplete:
            await self._notify(
                record, "notifications/elicitation/complete", {"elicitationId": record.id}
            )

    def _perform_nowait(self, record: Record, effect: Any) -> bool:
        """Perform a live ``effect`` now if it needs no waiting; ``False``: nothing done.

        ``effect`` is an ``Effect | _NotifyComplete``, told apart by its exact type."""
        kind = type(effect)
        if kind is SendRequest:
            send_nowait = getattr(record.peer, "send_request_nowait", None)
            if send_nowait is None:
                return False
            rid = self._next_rid(record, effect)
            try:
                send_nowait(
                    "elicitation/create",
                    _request_params(record, effect),
                    request_id=rid,
                    on_response=_ResponseRoute(record, rid),
                )
            except trio.WouldBlock:
                return False
            except Exception as exc:
                self._send_failed(record, exc)
                return True
            self._sent(record, effect)
            return True
        if kind is ValidateAnswer:
            return self._validate_nowait(record, effect.content)
        return False

    def _next_rid(self, record: Record, effect: SendRequest) -> str:
        if record.rid is not None:
            record.peer.forget_request(record.rid)
        rid = f"{record.id}.{effect.attempt}"
        record.rid = rid
        return rid

    def _sent(self, record: Record, effect: SendRequest) -> None:
        # The lifecycle ignores a Sent when no request is outstanding any more (the client
        # answered inside our send, or the record ended): skip building and feeding it then.
        # tests/actors/test_perf_actors_sent.py pins that Sent is a no-op in those states.
        if record.core.awaiting_answer:
            record.feed(Sent(self.now()))
        if self._log_events:
            self._event("sent", record, attempt=effect.attempt)

    def _send_failed(self, record: Record, exc: Exception) -> None:
        if isinstance(exc, PeerGone):
            record.feed(TransportFailed("client gone"))
            return
        log.error("elicitation_send_failed", elicitation_id=record.id, exc_info=exc)
        record.feed(TransportFailed(f"send failed: {type(exc).__name__}"))

    async def _send_request(self, record: Record, effect: SendRequest) -> None:
        rid = self._next_rid(record, effect)
        try:
            await record.peer.send_request(
                "elicitation/create",
                _request_params(record, effect),
                request_id=rid,
                on_response=_ResponseRoute(record, rid),
            )
        except Exception as exc:
            self._send_failed(record, exc)
            return
        self._sent(record, effect)

    def _answer_too_large(self, record: Record, content: Any) -> bool:
        """Refuse (feed an invalid verdict for) an answer over the size policy."""
        size = json_size(content)
        limit = self.policy.sizes.answer_bytes
        if size <= limit:
            return False
        error = AnswerError(
            field="",
            constraint="maxBytes",
            expected=f"at most {limit} bytes of JSON",
            path="",
            message=f"The answer is too large ({size} bytes; the limit is {limit}).",
            actual_type=json_type(content),
            actual_length=size,
        )
        record.feed(Validated(False, (error,)))
        return True

    def _validate_nowait(self, record: Record, content: Any) -> bool:
        """Validate with an idle validator; ``False`` (nothing fed) if that needs waiting:
        a busy validator, or url fields whose host names must be resolved."""
        if self._answer_too_large(record, content):
            return True
        request = record.request
        try:
            verdict = self.validator.call_nowait(
                Validate(request.requested_schema, request.validator, content)
            )
        except trio.WouldBlock:
            return False
        except ActorGone:
            record.feed(RuntimeRestart())  # the validator died; rest_for_one restarts us
            return True
        ok = verdict.ok
        if ok:
            url_values = getattr(request.validator, "url_values", None)
            if url_values is not None and url_values(verdict.content_with_defaults):
                return False  # DNS: the awaited path validates again, then resolves
        # feed(), inline, and the content field itself (not its ``content`` alias): every answer
        record.apply(
            record.core.handle(Validated(ok, verdict.errors, verdict.content_with_defaults))
        )
        return True

    async def _validate(self, record: Record, content: Any) -> None:
        if self._answer_too_large(record, content):
            return
        request = record.request
        message = Validate(request.requested_schema, request.validator, content)
        while True:
            try:  # no timeout: a deadline cancels the record's effect scope
                try:
                    verdict = self.validator.call_nowait(message)
                except trio.WouldBlock:
                    verdict = await self.validator.call(message, timeout=None)
            except ActorGone:
                record.feed(RuntimeRestart())  # the validator died; rest_for_one restarts us
                return
            except Busy:
                await trio.sleep(0.01)
                continue
            break
        if verdict.ok:
            refused = await self._refused_urls(request, verdict.content)
            if refused:
                record.feed(Validated(False, refused))
                return
        record.feed(Validated(verdict.ok, verdict.errors, verdict.content))

    async def _refused_urls(
        self, request: ElicitationRequest, content: Mapping[str, Any] | None
    ) -> tuple[AnswerError, ...]:
        """Resolve the answer's ``url`` fields: any unsafe address refuses the answer."""
        url_values = getattr(request.validator, "url_values", None)
        if url_values is None or content is None:
            return ()
        errors: list[AnswerError] = []
        for field_id, url in url_values(content):
            try:
                await check_url(url, self.url_policy, resolver=self.resolver)
            except UnsafeURLError as exc:
                errors.append(
                    AnswerError(
                        field=field_id,
                        constraint="urlPolicy",
                        expected="a URL whose host resolves only to public addresses",
                        path=f"/{field_id}",
                        message=f"{field_id}: this address is not allowed ({exc.reason}).",
                        actual_type="string",
                        actual_length=len(url),
                    )
                )
        return tuple(errors)

    async def _send_cancelled(self, record: Record, reason: str | None = None) -> None:
        rid = record.rid
        if rid is None or record.consented:
            return
        record.peer.forget_request(rid)
        record.rid = None
        if reason is None:
            reason = f"elicitation {record.core.status.value.replace('_', ' ')}"
            if isinstance(record.outcome, Failed) and record.outcome.reason != "abandoned":
                reason += f" ({record.outcome.reason})"
        await self._notify(record, "notifications/cancelled", {"requestId": rid, "reason": reason})

    async def _notify(self, record: Record, method: str, params: Mapping[str, Any]) -> None:
        try:
            await record.peer.send_notification(method, params)
        except PeerGone:
            pass  # best effort: the client is gone, there is nobody left to tell
        except Exception:
            log.exception("elicitation_notify_failed", elicitation_id=record.id, method=method)

    def _release(self, record: Record) -> None:
        """Free the record's pending slot: inline when the limiter is idle, else batched — a
        burst of endings (an owner with thousands of elicitations exits) becomes one
        message, not a mailbox flood."""
        if not self._releases:
            try:
                self.ratelimiter.call_nowait(Release(record.client))
                return
            except ActorGone:
                return  # a restarted rate limiter starts from empty counts
            except trio.WouldBlock:
                pass
        self._releases[record.client] += 1
        self._releases_due.set()

    async def _flush_releases(self) -> None:
        while True:
            await self._releases_due.wait()
            self._releases_due = trio.Event()
            batch, self._releases = self._releases, Counter()
            while True:
                try:
                    await self.ratelimiter.call(ReleaseMany(batch), timeout=None)
                    break
                except ActorGone:
                    break  # a restarted rate limiter starts from empty counts
                except Busy:
                    await trio.sleep(0.01)  # keep the batch; the limiter will drain

    async def terminate(self, reason: object) -> None:
        live = [r for r in self.records.values() if not r.core.is_terminal]
        # Best effort, bounded: tell clients to drop requests nobody will wait for — before
        # the waiters wake, because a woken tool answers its call at once, and on Streamable
        # HTTP that answer closes the stream the notice has to go on.
        with trio.move_on_after(1.0):
            async with trio.open_nursery() as nursery:
                for record in live:
                    if record.rid is not None and not record.consented:
                        nursery.start_soon(
                            self._send_cancelled, record, "elicitation failed (runtime_restarted)"
                        )
        for record in live:
            record.feed(RuntimeRestart())
        for record in live:
            if record.rid is not None:
                record.peer.forget_request(record.rid)


def _request_params(record: Record, effect: SendRequest) -> dict[str, Any]:
    request = record.request
    message = request.message
    if effect.errors:
        message = (
            f"{message}\n\nYour previous answer was not accepted "
            f"(attempt {effect.attempt}):\n{summarize(effect.errors)}"
        )
    if record.mode == "url":
        return {"mode": "url", "message": message, "url": request.url, "elicitationId": record.id}
    params: dict[str, Any] = {"message": message, "requestedSchema": request.requested_schema}
    return params


def _warning(record: Record, effect: SendWarning) -> dict[str, Any]:
    seconds = math.ceil(effect.remaining_s)  # never "expires in 0 seconds" while it is open
    return {
        "level": "warning",
        "logger": "erlmcp.elicitation",
        "data": {
            "elicitationId": record.id,
            "remainingSeconds": seconds,
            "message": f"This request expires in {seconds} second{'s' if seconds != 1 else ''}.",
        },
    }
