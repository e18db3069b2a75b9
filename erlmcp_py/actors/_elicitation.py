"""ElicitationActor: the registry, and one child task per elicitation.

Theory of operation. The actor owns the registry (id -> :class:`Record`) and answers the
runtime API from its mailbox, one message at a time. A ``CreateElicitation`` asks the rate limiter
through its mailbox (``Acquire``), registers the record, subscribes it to its owner's exit
and spawns its child task; ``CompleteElicitation`` asks the validator through its mailbox
and, when the record's peer records its answers (a task's journal:
:class:`~erlmcp_py.actors.peer.RecordsAnswers`), hands it the valid answer before the
elicitation ends with it (a dismissal from the application side too).

Each record owns one pure ``core.lifecycle.Elicitation``, which decides everything: what an
answer means, which timer is next, when a warning is due, whether the application may
complete now, which notices go out. Whoever learns something — the peer's response callback,
an API call, the child — feeds it an event through the synchronous :meth:`Record.feed`,
which executes the effects that need no I/O (wake the waiters, move the child's scope, hand
back a reply) and queues the others for the child.

The child task is the elicitation's only place that awaits. It runs inside a cancel scope
whose deadline is the lifecycle's ``next_wakeup()`` — the warning, then the deadline; an
extension moves it — and loops: perform the next queued effect (send the request, validate
through the validator's mailbox, warn), or park until ``feed`` wakes it. While it performs a
live effect the scope's deadline is ``next_wakeup(busy=True)``: only the deadline may cut it
short (a send blocked by back-pressure still times out; a warning waits for the effect). When
the scope fires the child feeds ``Wakeup(now)`` and the lifecycle says what was due: the
warning, or the end and the client's ``notifications/cancelled``, which the child goes
straight on to send: the waiter's wake-up and the notice come from one turn of one task, in
that order (on Streamable HTTP the notice must precede the tool's result, which closes the
request's stream).

The owner watch is one ``MonitorHub`` subscription per record; no task runs per watch (the
hub's trio instrument sees the owner's exit). The hub's callback only signals the child (a
flag and a cancel of its scope); the child feeds ``OwnerDown``. After the end the child
performs what is left (notices) without a deadline, forgets its request at the peer and
releases the rate-limit slot with a cast to the limiter's mailbox (batched when the mailbox
is full).

Every path to a terminal status goes through ``feed`` -> ``Resolve`` ->
:meth:`ElicitationActor.on_resolved`, which records the outcome, drops the owner watch and
retains the record exactly once.

Every change of a record is handed to the store (``Store.changed``), which publishes its
status row for the other replicas (the in-memory store has none, and does nothing).

What the registry keeps of an ended elicitation, URL mode's consent, what a restart of this
actor costs a waiter, and how application code is kept from crashing it are in
docs/architecture.md ("The supervision tree", "Vocabulary", "Invariants").
"""

from __future__ import annotations

import contextlib
import functools
import math
import secrets
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import structlog
import trio

from erlmcp_py.actors._metrics import Metrics
from erlmcp_py.actors._ratelimiter import Acquire, Release, ReleaseMany, ResetPending
from erlmcp_py.actors._record import (
    AnswerElicitation,
    CancelElicitation,
    CompleteElicitation,
    CreateElicitation,
    Ended,
    ExtendTimeout,
    GetElicitationStatus,
    ListElicitations,
    Record,
    RepublishRecords,
    ResponseRoute,
    ended,
    info_of,
    json_size,
    shared_record,
    tenant_of,
)
from erlmcp_py.actors._validator import Validate, ValidatorRaised
from erlmcp_py.actors.api import ElicitationHandle, ElicitationRequest
from erlmcp_py.actors.peer import PeerGone, RecordsAnswers
from erlmcp_py.actors.urlcheck import Resolver, check_url
from erlmcp_py.core.errors import (
    AlreadyTerminal,
    AnswerInFlight,
    ElicitationNotFound,
    ExtensionDenied,
    InvalidAnswer,
    ResultTooLarge,
    StoreUnavailable,
    UnsafeURLError,
    ValidatorError,
)
from erlmcp_py.core.i18n import DEFAULT_LOCALE, LOCALES, Texts
from erlmcp_py.core.lifecycle import (
    AnswerRefused,
    Cancel,
    Complete,
    Dismiss,
    Effect,
    Extend,
    ExtensionGranted,
    ExtensionRefused,
    Phase,
    RuntimeRestart,
    SendCancelledNotice,
    SendCompleteNotice,
    SendRequest,
    SendWarning,
    Sent,
    TransportFailed,
    ValidateAnswer,
    Validated,
    ValidatorFailed,
    Wakeup,
)
from erlmcp_py.core.outcomes import Failed, Tenant
from erlmcp_py.core.policy import Policy
from erlmcp_py.core.ratelimit import Refused
from erlmcp_py.core.retention import Retention
from erlmcp_py.core.urlpolicy import UrlPolicy
from erlmcp_py.core.validation import AnswerError, json_type, problem_lines, summarize
from erlmcp_py.store import Store
from supervisors import Actor, ActorGone, ActorRef, Busy, ErrorReply, MonitorHub, ReplyTo

__all__ = ["ElicitationActor", "json_size"]

log = structlog.get_logger("erlmcp_py.elicitation")

#: The name of every elicitation child task.
_CHILD_TASK = f"{__name__}.ElicitationActor.child"


class ElicitationActor(Actor):
    """Registry of elicitations; spawns and supervises (links) one child task each."""

    name = "elicitation"
    mailbox_size = 8192

    def __init__(
        self,
        policy: Policy,
        registry: dict[str, ActorRef],
        metrics: Metrics,
        store: Store,
        url_policy: UrlPolicy | None = None,
        resolver: Resolver | None = None,
        *,
        locale: str = DEFAULT_LOCALE,
    ) -> None:
        self.policy = policy
        self.locale = locale  # for a request that names none
        # A Texts is an immutable view of the catalog in one locale: one each, made here.
        self._texts = {name: Texts(name) for name in LOCALES}
        self.store = store
        self.url_policy = url_policy
        self.resolver = resolver
        self.metrics = metrics
        self._registry = registry

    async def init(self) -> None:
        self.now: Callable[[], float] = trio.current_time
        self.records: dict[str, Record | Ended] = {}  # Ended once the child is done
        self.retention: Retention[str] = Retention(self.policy.retention)
        self._evict_at = math.inf  # when the oldest retained record ages out
        self.ratelimiter = self._registry["ratelimiter"]
        self.validator = self._registry["validator"]
        self.hub = MonitorHub(self.nursery)  # closes when this incarnation's nursery ends
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

    async def handle_cast(self, msg: Any) -> None:
        if type(msg) is RepublishRecords:
            for elicitation_id, entry in self.records.items():
                self.changed(elicitation_id, entry)
        else:
            await super().handle_cast(msg)  # raises: an unknown cast crashes the actor

    async def handle_call(self, msg: Any, reply_to: ReplyTo) -> Any:
        self._evict(self.now())
        kind = type(msg)
        if kind is CreateElicitation:
            return await self._create(msg)
        if kind is ListElicitations:
            return [info_of(e) for e in self.records.values() if tenant_of(e) == msg.tenant]
        entry = self._find(msg.elicitation_id, msg.tenant)
        if entry is None:
            return ErrorReply(ElicitationNotFound(msg.elicitation_id))
        if kind is GetElicitationStatus:
            return info_of(entry)
        if not isinstance(entry, Record) or entry.outcome is not None:
            return ErrorReply(AlreadyTerminal(info_of(entry).status))
        record = entry
        if kind is CancelElicitation:
            record.feed(Cancel(by="server"))
            return record.info()
        if kind is ExtendTimeout:
            (reply,) = record.feed(Extend(self.now(), msg.seconds))
            if isinstance(reply, ExtensionGranted):
                self.event("extended", record, deadline=reply.deadline)
                return record.info()
            assert isinstance(reply, ExtensionRefused)
            return ErrorReply(ExtensionDenied(reply.reason, reply.max_extensions))
        if kind is CompleteElicitation:
            return await self._complete(record, msg)
        if kind is AnswerElicitation:
            refusal = await self._record_answer(record, {"action": msg.action})
            if refusal is not None:
                return refusal
            if record.feed(Dismiss(msg.action)):  # AnswerRefused: an accept is validated
                return ErrorReply(AnswerInFlight(record.id))
            return record.info()
        raise TypeError(f"unknown elicitation call {kind.__name__}")

    def _find(self, elicitation_id: str, tenant: Tenant) -> Record | Ended | None:
        """The registry's entry of ``elicitation_id`` (its ``Record``, or its ``Ended`` row
        once it has ended and its child is done), or ``None`` when it is unknown, evicted or
        another tenant's: another tenant's id takes exactly the unknown-id path."""
        entry = self.records.get(elicitation_id)
        if entry is None or tenant_of(entry) != tenant:
            return None
        return entry

    async def _ask(self, ref: ActorRef, msg: Any) -> Any:
        """Call a sibling actor; its Busy/death (or the store's outage) becomes the caller's
        typed error.

        Never raises: an exception escaping ``handle_call`` would crash this actor and fail
        every pending waiter for one caller's bad luck. No timeout: a sibling that dies fails
        the call with ``ActorGone``, and the runtime API's own timeout bounds the request.
        """
        try:
            return await ref.call(msg, timeout=None)
        except (Busy, ActorGone, StoreUnavailable) as exc:
            return ErrorReply(exc)

    async def _create(self, msg: CreateElicitation) -> Any:
        decision = await self._ask(self.ratelimiter, Acquire(msg.client, msg.charge))
        if isinstance(decision, ErrorReply):
            if isinstance(decision.error, StoreUnavailable):
                self.metrics.on_refused("store_unavailable")
            return decision
        if isinstance(decision, Refused):
            self.metrics.on_refused(decision.limit)
            return ErrorReply(decision.to_error())
        record = Record(
            self,
            secrets.token_urlsafe(16),
            msg.request,
            msg.schema,
            msg.peer,
            msg.tenant,
            msg.client,
            self.now(),
            for_task=msg.for_task,
        )
        self.records[record.id] = record
        self.metrics.on_created(record.mode)
        # Always watched: the caller may stop waiting for this reply, and then nobody would.
        record.monitor = self.hub.monitor(msg.owner, record.on_owner_down)
        # Started here, not in the child: the request is outstanding from the create on, so
        # an application completion that comes before the child's first turn is honoured.
        record.start()  # published to the store with the start's effects (Record.apply)
        self.nursery.start_soon(self._child, record, name=_CHILD_TASK)
        self.event("created", record)
        return ElicitationHandle(record.id, record.mode, record)

    async def _complete(self, record: Record, message: CompleteElicitation) -> Any:
        """The application completes ``record`` with ``content``: validate, then end it."""
        content = message.content
        limit = self.policy.sizes.answer_bytes
        if message.size > limit:
            return ErrorReply(ResultTooLarge(message.size, limit))
        verdict = await self._ask(
            self.validator, Validate(record.schema, record.request.validator, content)
        )
        if isinstance(verdict, ErrorReply):
            return verdict
        if record.core.is_terminal:  # it ended (client answer, deadline…) while we validated
            return ErrorReply(AlreadyTerminal(record.core.status.value))
        raised = type(verdict) is ValidatorRaised
        if raised:
            event = Complete(validator_failed=verdict.detail)
        elif verdict.ok:
            refusal = await self._record_answer(record, {"action": "accept", "content": content})
            if refusal is not None:
                return refusal
            event = Complete(verdict.answer)
        else:
            return ErrorReply(InvalidAnswer(verdict.errors, summarize(verdict.errors)))
        effects = record.core.handle(event)
        if isinstance(effects[0], AnswerRefused):  # a client's accept is being validated
            return ErrorReply(AnswerInFlight(record.id))
        if raised:
            _log_validator_failed(record, verdict)
        record.apply(effects)
        if raised:
            return ErrorReply(ValidatorError(record.id, verdict.error_type or verdict.detail))
        return record.info()

    async def _record_answer(
        self, record: Record, response: Mapping[str, Any]
    ) -> ErrorReply | None:
        """Hand an answer given beside the peer (a valid completion, a dismissal) to a peer
        that records its answers (:class:`~erlmcp_py.actors.peer.RecordsAnswers`: a task's
        journal) before the elicitation ends with it; the refusal to reply with, else
        ``None`` (recorded, or nothing records it). Never raises: the peer is application
        code as far as this actor knows."""
        peer = record.peer
        if not isinstance(peer, RecordsAnswers) or record.core.is_terminal:
            return None  # an ended one refuses the answer itself
        if record.rid is None or record.core.phase is Phase.VALIDATING:
            return ErrorReply(AnswerInFlight(record.id))  # not asked yet, or being answered
        try:
            await peer.record_answer(record.rid, response)
        except (StoreUnavailable, AnswerInFlight) as exc:
            return ErrorReply(exc)
        except Exception as exc:
            log.exception("peer_record_failed", elicitation_id=record.id)
            return ErrorReply(exc)
        if record.core.is_terminal:  # it ended (its deadline…) while the answer was recorded
            return ErrorReply(AlreadyTerminal(record.core.status.value))
        return None

    # -- bookkeeping -------------------------------------------------------------------------

    def on_resolved(self, record: Record) -> None:
        """``record`` reached its terminal status (called once, by its ``Resolve``)."""
        record.ended_at = ended_at = self.now()
        outcome = record.outcome
        self.metrics.on_outcome(record.mode, type(outcome).__name__)
        if record.monitor is not None:
            record.monitor.cancel()
            record.monitor = None
        for elicitation_id in self.retention.add(record.id, ended_at):
            self.records.pop(elicitation_id, None)
        if self._evict_at == math.inf:
            expiry = self.retention.next_expiry()
            self._evict_at = math.inf if expiry is None else expiry
        self.event("outcome", record, outcome=type(outcome).__name__, status=record.core.status)

    def changed(self, elicitation_id: str, entry: Record | Ended) -> None:
        """The status row of ``entry`` may have changed: hand it to the store."""
        store = self.store
        store.changed(elicitation_id, functools.partial(shared_record, entry, store.replica))

    def _finished(self, record: Record) -> None:
        """``record`` has ended and its child is done: the registry keeps its ``Ended`` row
        (unless the retention already evicted it)."""
        if self.records.get(record.id) is record:
            self.records[record.id] = ended(record)

    def _evict(self, now: float) -> None:
        if now < self._evict_at:
            return  # nothing retained is old enough yet
        for elicitation_id in self.retention.evict(now):
            self.records.pop(elicitation_id, None)
        expiry = self.retention.next_expiry()
        self._evict_at = math.inf if expiry is None else expiry

    def event(self, name: str, record: Record, **extra: Any) -> None:
        """Log one event of ``record``'s life (structured, at info level)."""
        tenant = record.tenant
        log.info(
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
        work = record.work  # the record's one queue, never replaced
        try:
            while record.outcome is None:
                # Busy from one effect to the next, idle once parked: the scope's deadline
                # moves only when the child goes from one to the other (no effect yields
                # between two, and the scope's end needs no deadline).
                record.performing = bool(work)
                deadline = record.core.next_wakeup(busy=record.performing)
                with trio.CancelScope(deadline=deadline) as scope:
                    record.scope = scope
                    while record.outcome is None and not record.owner_down:
                        if work:
                            record.set_performing(True)
                            await self._perform(record, work.pop(0))
                        else:
                            record.set_performing(False)
                            # Parked until record.wake(); the record is the park's abort.
                            record.waiter = trio.lowlevel.current_task()
                            await trio.lowlevel.wait_task_rescheduled(record)
                record.scope = None
                record.performing = False
                if record.outcome is None:
                    self._on_wake(record)
            while work:  # after the end: notices, not timed
                await self._perform(record, work.pop(0))
        finally:
            record.scope = None
            if record.rid is not None:
                _forget(record, record.rid)
        self._release(record)
        self._finished(record)

    def _on_wake(self, record: Record) -> None:
        """The child left its scope with the record live: its owner died or its timer fired
        (the lifecycle says whether the warning or the deadline was due)."""
        if record.owner_down:
            record.feed_owner_down()
        else:
            record.feed(Wakeup(self.now()))

    async def _perform(self, record: Record, effect: Effect) -> None:
        if isinstance(effect, SendRequest):
            if record.outcome is None:  # ended before its turn: nothing to ask
                await self._send_request(record, effect)
        elif isinstance(effect, ValidateAnswer):
            await self._validate(record, effect.content)
        elif isinstance(effect, SendWarning):
            self.event("warned", record, remaining_s=round(effect.remaining_s, 3))
            warning = _warning(record, effect, self.texts(record))
            await self._notify(record, "notifications/message", warning)
        elif isinstance(effect, SendCancelledNotice):
            await self._send_cancelled(record)
        elif isinstance(effect, SendCompleteNotice):
            await self._notify(
                record, "notifications/elicitation/complete", {"elicitationId": record.id}
            )

    async def _send_request(self, record: Record, effect: SendRequest) -> None:
        if record.rid is not None:
            _forget(record, record.rid)
        rid = record.rid = f"{record.id}.{effect.attempt}"
        try:
            await record.peer.send_request(
                "elicitation/create",
                _request_params(record, effect, self.texts(record)),
                request_id=rid,
                on_response=ResponseRoute(record, rid),
            )
        except trio.Cancelled:
            # A cancelled send did not happen: there is no request to answer or withdraw.
            _forget(record, rid)
            record.rid = None
            raise
        except PeerGone:
            record.feed(TransportFailed("client gone"))
            return
        except Exception as exc:
            log.exception("elicitation_send_failed", elicitation_id=record.id)
            record.feed(TransportFailed(f"send failed: {type(exc).__name__}"))
            return
        record.feed(Sent(self.now()))
        self.event("sent", record, attempt=effect.attempt)

    async def _validate(self, record: Record, content: Any) -> None:
        if self._answer_too_large(record, content):
            return
        request = record.request
        message = Validate(record.schema, request.validator, content)
        while True:
            try:  # no timeout: the deadline cancels the child's scope
                verdict = await self.validator.call(message, timeout=None)
            except ActorGone:
                record.feed(RuntimeRestart())  # the validator died; rest_for_one restarts us
                return
            except Busy:
                await trio.sleep(0.01)
                continue
            break
        if type(verdict) is ValidatorRaised:
            self._validator_failed(record, verdict)
            return
        if verdict.ok:
            try:
                refused = await self._refused_urls(request, verdict.content, self.texts(record))
            except Exception as exc:  # the application's url_values or resolver
                self._validator_failed(
                    record, ValidatorRaised.of(exc, "while checking the answer's URLs")
                )
                return
            if refused:
                record.feed(Validated(False, refused))
                return
        record.feed(Validated(verdict.ok, verdict.errors, verdict.answer))

    def _validator_failed(self, record: Record, verdict: ValidatorRaised) -> None:
        """Application code could not judge ``record``'s answer: that elicitation ends
        ``Failed("validator_error")``."""
        _log_validator_failed(record, verdict)
        record.feed(ValidatorFailed(verdict.detail))

    def texts(self, record: Record) -> Texts:
        """What the runtime says to ``record``'s user, in the request's locale (else the
        runtime's default)."""
        return self._texts[record.request.locale or self.locale]

    def _answer_too_large(self, record: Record, content: Any) -> bool:
        """Refuse (feed an invalid verdict for) an answer over the size policy; fail one
        that is not JSON at all (an application's peer handed over something else)."""
        try:
            size = json_size(content)
        except TypeError:
            record.feed(TransportFailed("invalid response: the content is not JSON"))
            return True
        limit = self.policy.sizes.answer_bytes
        if size <= limit:
            return False
        error = AnswerError(
            field="",
            constraint="maxBytes",
            expected=f"at most {limit} bytes of JSON",
            path="",
            message=self.texts(record)("mcp.answer.too_large", size=size, limit=limit),
            actual_type=json_type(content),
            actual_length=size,
        )
        record.feed(Validated(False, (error,)))
        return True

    async def _refused_urls(
        self, request: ElicitationRequest, content: Mapping[str, Any] | None, t: Texts
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
                        message=t("mcp.answer.url_refused", field=field_id, reason=exc.reason),
                        actual_type="string",
                        actual_length=len(url),
                    )
                )
        return tuple(errors)

    async def _send_cancelled(self, record: Record, reason: str | None = None) -> None:
        rid = record.rid
        if rid is None:
            return  # no request of ours is on the wire: nothing to withdraw
        _forget(record, rid)
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
        """Free the record's pending slot with a cast to the rate limiter; when its mailbox
        is full the release is kept and batched — a burst of endings (an owner with
        thousands of elicitations exits) becomes one message, and none is lost."""
        if not self._releases:
            try:
                self.ratelimiter.cast(Release(record.client))
                return
            except ActorGone:
                return  # a restarted rate limiter starts from empty counts
            except Busy:
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
                    self.ratelimiter.cast(ReleaseMany(batch))
                    break
                except ActorGone:
                    break  # a restarted rate limiter starts from empty counts
                except Busy:
                    await trio.sleep(0.01)  # keep the batch; the limiter will drain

    async def terminate(self, reason: object) -> None:
        live = [
            r for r in self.records.values() if isinstance(r, Record) and not r.core.is_terminal
        ]
        # The lifecycle ends each one now; its effects are applied below, once the notices
        # it asks for are out: best effort, bounded, and before the waiters wake, because a
        # woken tool answers its call at once, and on Streamable HTTP that answer closes the
        # stream the notice has to go on.
        endings = [(record, record.core.handle(RuntimeRestart())) for record in live]
        with trio.move_on_after(1.0):
            async with trio.open_nursery() as nursery:
                for record, effects in endings:
                    if any(isinstance(e, SendCancelledNotice) for e in effects):
                        nursery.start_soon(
                            self._send_cancelled, record, "elicitation failed (runtime_restarted)"
                        )
        for record, effects in endings:
            record.apply(effects)  # the children are gone: the notice it queues stays unsent
        for record in live:
            if record.rid is not None:
                _forget(record, record.rid)


def _log_validator_failed(record: Record, verdict: ValidatorRaised) -> None:
    """Log that application code could not judge ``record``'s answer: what was raised and
    where, never what it said."""
    tenant = record.tenant
    log.warning(
        "validator_failed",
        elicitation_id=record.id,
        client=record.client,
        user=tenant.user,
        detail=verdict.detail,
        error_type=verdict.error_type,
        at=verdict.at,
    )


def _forget(record: Record, rid: str) -> None:
    """Tell ``record``'s peer to drop ``rid``: application code, so a failure of it is
    logged (its type) and skipped, never let into the actor."""
    try:
        record.peer.forget_request(rid)
    except Exception as exc:
        log.warning(
            "peer_forget_failed", elicitation_id=record.id, error_type=type(exc).__qualname__
        )


def _request_params(record: Record, effect: SendRequest, t: Texts) -> dict[str, Any]:
    request = record.request
    message = request.message
    if effect.errors:
        message = t(
            "mcp.elicitation.reprompt",
            message=message,
            attempt=effect.attempt,
            problems=problem_lines(effect.errors),
        )
    params: dict[str, Any]
    if record.mode == "url":
        params = {"mode": "url", "message": message, "url": request.url, "elicitationId": record.id}
    else:
        params = {"message": message, "requestedSchema": record.schema}
    if request.meta:
        params["_meta"] = dict(request.meta)
    return params


def _warning(record: Record, effect: SendWarning, t: Texts) -> dict[str, Any]:
    seconds = math.ceil(effect.remaining_s)  # never "expires in 0 seconds" while it is open
    return {
        "level": "warning",
        "logger": "erlmcp.elicitation",
        "data": {
            "elicitationId": record.id,
            "remainingSeconds": seconds,
            "message": t.count("mcp.elicitation.expires", seconds),
        },
    }
