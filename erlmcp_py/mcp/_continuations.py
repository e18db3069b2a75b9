"""The continuation registry's calls: starting one, resuming a held one with a retry's answers
(or replaying it, or sending the retry to the process that holds it), running its tool, and
answering the request attached to it (:mod:`~erlmcp_py.mcp.mrtr` has when a round ends;
docs/mrtr.md the refusals of a state and replay). What the registry holds, its bounds and its
timer are :class:`~erlmcp_py.mcp._held_calls.HeldCalls`, which it is built on.

A request attaches to its call through :meth:`ContinuationRegistry.start` or
:meth:`~ContinuationRegistry.resume`; the :class:`~erlmcp_py.mcp._attached.Attached` they
return waits for the call's round to end, and the registry decides its answer: the call's
result, or an ``InputRequiredResult`` with the sealed state a retry brings back
(:mod:`~erlmcp_py.mcp._request_state`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, NoReturn

import structlog
import trio

from erlmcp_py.core.errors import StateTokenError, StateTokenTooLarge
from erlmcp_py.core.state_token import request_digest
from erlmcp_py.mcp._attached import Attached, Waiter, until_yield
from erlmcp_py.mcp._call_record import Continuation, Handoff, RunCall
from erlmcp_py.mcp._held_calls import HeldCalls
from erlmcp_py.mcp._mrtr_peer import NotificationSink
from erlmcp_py.mcp._replay import ReplayCall, replay_plan
from erlmcp_py.mcp._request_state import (
    ContinuationElsewhere,
    RequestStateRefused,
    check_responses,
    open_state,
    refusal_reason,
    seal_state,
)
from erlmcp_py.mcp.jsonrpc import JsonRpcError, internal_error
from erlmcp_py.mcp.versions import ClientCapabilities

__all__ = ["ContinuationRegistry", "open_continuations"]

log = structlog.get_logger("erlmcp.mrtr")


class ContinuationRegistry(HeldCalls):
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
            payload = open_state(
                state,
                principal=principal,
                digest=digest,
                now=now,
                keyring=self.keyring,
                max_chars=self.max_state_chars,
            )
        except StateTokenError as exc:
            self._refuse(refusal_reason(exc), exc.reason)
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
            return check_responses(raw, methods)
        except RequestStateRefused as exc:
            self.counters["refused.bad_input_responses"] += 1
            log.info("input_responses_refused", detail=exc.message[:200])
            raise

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
            await until_yield(cont, waiter, self.settle_checkpoints)
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

    def _input_required(self, cont: Continuation) -> dict[str, Any]:
        now = trio.current_time()
        cont.round += 1
        cont.expires_at = now + self.state_ttl
        try:
            token = seal_state(
                cont,
                holder=self.holder,
                replayable=self.mrtr != "suspend",
                now=now,
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
