"""gen_server for trio: an :class:`Actor` owns its state and serves one message at a time.

Theory of operation. An actor is one task reading a *bounded* mailbox (a trio memory
channel). Callers never wait to enqueue: a full mailbox answers :class:`Busy` at once.
A call carries a one-shot :class:`ReplyTo` slot — the first write wins, later writes are
dropped silently — and the caller waits on it under its own timeout, which covers enqueue
and wait and can never hurt the actor (the actor never writes into a closed channel).

When the actor exits for any reason (crash, cancellation, shutdown, normal stop), its
``finally`` block, without a checkpoint in between, closes the mailbox, fails every queued
call, every deferred reply it still owes and the call in flight with :class:`ActorGone`,
and only then runs ``terminate(reason)`` shielded and time-bounded. So no caller hangs.

Every message — call, cast or info — travels through the mailbox and is handled in the
actor's own task, one at a time, in arrival order; no handler ever runs in a caller's task.

Subclass hooks mirror OTP: ``init``, ``handle_call``, ``handle_cast``,
``handle_info``, ``terminate``. ``handle_call`` returns the reply, :data:`NOREPLY` to answer
later from any task through ``reply_to.reply(...)`` (OTP's ``noreply`` + ``gen_server:reply``), or
:class:`ErrorReply` to make the caller raise. An exception escaping a hook crashes the
actor, as in OTP; its supervisor decides what happens next.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import structlog
import trio

from supervisors._errors import ActorGone, Busy, CallTimeout

__all__ = ["NOREPLY", "Actor", "ActorRef", "ErrorReply", "ReplyTo", "start_actor"]

log = structlog.get_logger("supervisors.actor")


class _NoReply:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOREPLY"


NOREPLY: Final = _NoReply()
"""Returned by ``handle_call`` to reply later through the :class:`ReplyTo`."""


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """Returned by ``handle_call`` (or passed to :meth:`ReplyTo.reply`): the caller raises it."""

    error: BaseException


class ReplyTo:
    """One-shot reply slot for one call. First write wins; late writes are dropped.

    The caller parks its task directly (``wait_task_rescheduled``) rather than on a
    ``trio.Event``: a call is the hottest path of the runtime.
    """

    __slots__ = ("_done", "_owner", "_value", "_waiter", "abandoned")

    def __init__(self) -> None:
        self._done = False
        self._value: Any = None
        self._waiter: trio.lowlevel.Task | None = None
        self._owner: set[ReplyTo] | None = None
        self.abandoned = False
        """True once the caller stopped waiting (timeout, cancellation)."""

    @property
    def done(self) -> bool:
        """Whether a reply has been written."""
        return self._done

    def reply(self, value: Any) -> bool:
        """Deliver ``value`` (an :class:`ErrorReply` makes the caller raise).

        Returns:
            ``True`` if this write was the first, ``False`` if it was dropped.
        """
        if self._done:
            return False
        self._done = True
        self._value = value
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            trio.lowlevel.reschedule(waiter)
        if self._owner is not None:
            self._owner.discard(self)
            self._owner = None
        return True

    def fail(self, error: BaseException) -> bool:
        """Make the caller raise ``error``; same first-write-wins rule as :meth:`reply`."""
        return self.reply(ErrorReply(error))

    async def _wait(self) -> None:
        if self._done:
            await trio.lowlevel.checkpoint()
            return
        self._waiter = trio.lowlevel.current_task()

        def abort(_: Any) -> trio.lowlevel.Abort:
            self._waiter = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)


class _Call:
    __slots__ = ("msg", "reply_to")

    def __init__(self, msg: Any, reply_to: ReplyTo) -> None:
        self.msg = msg
        self.reply_to = reply_to


class _Cast:
    __slots__ = ("msg",)

    def __init__(self, msg: Any) -> None:
        self.msg = msg


class _Info:
    __slots__ = ("msg",)

    def __init__(self, msg: Any) -> None:
        self.msg = msg


_STOP: Final = object()

_Envelope = _Call | _Cast | _Info | object


class _Shared:
    """What an actor and its refs share: liveness and the exit reason."""

    __slots__ = ("actor", "exit_reason", "name")

    def __init__(self, name: str, actor: Actor) -> None:
        self.name = name
        self.actor: Actor | None = actor
        self.exit_reason: object = None


class ActorRef:
    """Handle to a running actor: ``call``, ``cast``, ``send`` (info) and ``request_stop``.

    A ref outlives its actor: after the actor exits every operation raises
    :class:`ActorGone`. A restarted actor has a new ref.
    """

    __slots__ = ("_send", "_shared")

    def __init__(self, send: trio.MemorySendChannel[Any], shared: _Shared) -> None:
        self._send = send
        self._shared = shared

    @property
    def name(self) -> str:
        """The actor's name (for errors and logs)."""
        return self._shared.name

    @property
    def alive(self) -> bool:
        """Whether the actor is still running."""
        return self._shared.exit_reason is None

    @property
    def exit_reason(self) -> object:
        """``None`` while alive, else the reason it exited."""
        return self._shared.exit_reason

    def _post(self, envelope: Any) -> None:
        try:
            self._send.send_nowait(envelope)
        except trio.WouldBlock:
            raise Busy(self._shared.name) from None
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ActorGone(self._shared.name, self._shared.exit_reason or "stopped") from None

    async def call(self, msg: Any, timeout: float | None = 5.0) -> Any:
        """Send ``msg`` to ``handle_call`` and wait for the reply.

        Args:
            msg: the request.
            timeout: seconds covering enqueue and wait; ``None`` waits as long as the actor
                lives (it can still never hang: the actor's exit fails the call).

        Raises:
            Busy: the mailbox is full (raised at once).
            ActorGone: the actor exited before replying.
            CallTimeout: no reply within ``timeout``; the actor is unharmed and its late
                reply is dropped.
        """
        await trio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller sends nothing
        reply_to = ReplyTo()
        self._post(_Call(msg, reply_to))
        try:
            if timeout is None:
                await reply_to._wait()
            else:
                with trio.move_on_after(timeout):
                    await reply_to._wait()
                if not reply_to._done:
                    raise CallTimeout(self._shared.name, timeout)
        finally:
            if not reply_to._done:
                reply_to.abandoned = True
        value = reply_to._value
        if type(value) is ErrorReply:
            raise value.error
        return value

    def cast(self, msg: Any) -> None:
        """Send ``msg`` to ``handle_cast`` without waiting. Never blocks.

        Raises:
            Busy: the mailbox is full.
            ActorGone: the actor has exited.
        """
        self._post(_Cast(msg))

    def send(self, msg: Any) -> None:
        """Send ``msg`` to ``handle_info`` (Erlang's ``!``). Never blocks.

        Raises:
            Busy: the mailbox is full.
            ActorGone: the actor has exited.
        """
        self._post(_Info(msg))

    def request_stop(self) -> None:
        """Ask the actor to stop with reason ``"shutdown"`` after its current message.

        Used by supervisors for a graceful shutdown; queued messages are failed with
        :class:`ActorGone`. Never blocks; a no-op if the actor is already gone.
        """
        actor = self._shared.actor
        if actor is not None:
            actor.stop("shutdown")

    def __repr__(self) -> str:
        state = "alive" if self.alive else f"gone: {self._shared.exit_reason!r}"
        return f"<ActorRef {self._shared.name} {state}>"


class Actor:
    """Base class of a gen_server-style actor. Override the hooks you need.

    Attributes:
        mailbox_size: bound of the mailbox; a full mailbox answers ``Busy``.
        terminate_timeout: seconds ``terminate`` may take (shielded) before it is abandoned.
        name: used in errors and logs; defaults to the class name.
    """

    mailbox_size: ClassVar[int] = 1024
    terminate_timeout: ClassVar[float] = 5.0
    name: str = ""

    # Set by the runtime before ``init`` runs.
    ref: ActorRef
    nursery: trio.Nursery
    """A nursery for the actor's helper tasks; a crash there crashes the actor."""

    _stop_reason: object = None
    _send: trio.MemorySendChannel[Any] | None = None
    _in_flight: ReplyTo | None = None

    async def init(self) -> None:
        """Prepare state; the actor is reported ready (and ``start`` returns) after this."""

    async def handle_call(self, msg: Any, reply_to: ReplyTo) -> Any:
        """Answer a call: return the reply, :data:`NOREPLY` or an :class:`ErrorReply`."""
        raise NotImplementedError(f"{type(self).__name__} does not handle calls: {msg!r}")

    async def handle_cast(self, msg: Any) -> None:
        """Handle a cast (no reply)."""
        raise NotImplementedError(f"{type(self).__name__} does not handle casts: {msg!r}")

    async def handle_info(self, msg: Any) -> None:
        """Handle any other message (``ActorRef.send``); ignored by default."""
        log.warning("unexpected_info", actor=self.name, message_type=type(msg).__name__)

    async def terminate(self, reason: object) -> None:
        """Clean up; runs on crash, cancellation and shutdown (shielded, time-bounded)."""

    def stop(self, reason: object = "normal") -> None:
        """Stop after the current message with ``reason`` (callable from any task)."""
        if self._stop_reason is None:
            self._stop_reason = reason
            if self._send is not None:
                # Wake an idle loop; a full mailbox means the loop sees the flag soon anyway.
                with contextlib.suppress(
                    trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError
                ):
                    self._send.send_nowait(_STOP)

    async def _dispatch(self, env: Any) -> None:
        cls = type(env)
        if cls is _Call:
            reply_to: ReplyTo = env.reply_to
            self._in_flight = reply_to
            result = await self.handle_call(env.msg, reply_to)
            self._in_flight = None
            if result is NOREPLY:
                if not reply_to._done:
                    reply_to._owner = self._deferred
                    self._deferred.add(reply_to)
            else:
                reply_to.reply(result)
        elif cls is _Cast:
            await self.handle_cast(env.msg)
        elif cls is _Info:
            await self.handle_info(env.msg)

    async def _serve(self, *, task_status: trio.TaskStatus[ActorRef]) -> None:
        name = self.name or type(self).__name__
        self.name = name
        send, recv = trio.open_memory_channel[Any](self.mailbox_size)
        shared = _Shared(name, self)
        self._send = send
        self.ref = ActorRef(send, shared)
        self._deferred: set[ReplyTo] = set()
        self._in_flight = None
        reason: object = "normal"
        started = False
        crash: Exception | None = None
        try:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                try:
                    await self.init()
                    task_status.started(self.ref)
                    started = True
                    log.debug("actor_started", actor=name)
                    while self._stop_reason is None:
                        env = await recv.receive()
                        if env is not _STOP:
                            await self._dispatch(env)
                except Exception as exc:
                    crash = exc  # re-raised below, not wrapped in the nursery's exception group
                reason = self._stop_reason
                nursery.cancel_scope.cancel()
            if crash is not None:
                raise crash  # noqa: TRY301 -- re-raised outside the nursery, unwrapped
        except BaseException as exc:
            reason = _exit_reason(exc)
            raise
        finally:
            shared.exit_reason = reason
            shared.actor = None
            self._fail_waiters(recv, ActorGone(name, reason))
            if started:
                await self._run_terminate(reason)
                _log_exit(name, reason)

    def _fail_waiters(self, recv: trio.MemoryReceiveChannel[Any], gone: ActorGone) -> None:
        # No checkpoint from here to recv.close(): no sender can slip a call in between.
        if self._in_flight is not None:
            self._in_flight.fail(gone)
            self._in_flight = None
        while True:
            try:
                env = recv.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            if type(env) is _Call:
                env.reply_to.fail(gone)
        recv.close()
        for reply_to in list(self._deferred):
            reply_to.fail(gone)
        self._deferred.clear()

    async def _run_terminate(self, reason: object) -> None:
        with trio.CancelScope(shield=True), trio.move_on_after(self.terminate_timeout) as scope:
            try:
                await self.terminate(reason)
            except Exception:
                log.exception("actor_terminate_failed", actor=self.name)
        if scope.cancelled_caught:
            log.warning(
                "actor_terminate_timed_out", actor=self.name, timeout=self.terminate_timeout
            )


def _exit_reason(exc: BaseException) -> object:
    """``"killed"`` for cancellation — also a group of many ``Cancelled`` from helper tasks —
    else the real error, unwrapped from single-exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        _, rest = exc.split(trio.Cancelled)
        if rest is None:
            return "killed"
        exc = rest
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
    if isinstance(exc, trio.Cancelled):
        return "killed"
    return exc


def _log_exit(name: str, reason: object) -> None:
    if reason in ("normal", "shutdown", "killed"):
        log.debug("actor_exited", actor=name, reason=str(reason))
    else:
        log.warning("actor_crashed", actor=name, reason=repr(reason))


async def start_actor(nursery: trio.Nursery, actor: Actor) -> ActorRef:
    """Start ``actor`` in ``nursery``; return its ref once ``init`` has finished.

    A crash of the actor propagates into ``nursery`` (a link, in Erlang terms); run it under
    a :class:`~supervisors.Supervisor` to have it restarted instead.
    """
    ref: ActorRef = await nursery.start(
        actor._serve, name=f"actor:{actor.name or type(actor).__name__}"
    )
    return ref


def actor_starter(factory: Callable[[], Actor]) -> Callable[..., Awaitable[None]]:
    """A child start function that builds a fresh actor with ``factory`` on every (re)start."""

    async def start(*, task_status: trio.TaskStatus[ActorRef] = trio.TASK_STATUS_IGNORED) -> None:
        await factory()._serve(task_status=task_status)

    return start
