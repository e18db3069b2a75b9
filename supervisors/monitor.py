"""Watch any trio task's exit — Erlang's ``monitor`` and ``link`` for trio.

trio has no monitors by design (python-trio/trio#136), but its run loop reports every task's
exit to its instruments: ``trio.abc.Instrument.task_exited(task)`` is called for each task,
from the run loop, once the task's outcome is known — from the same place that breaks the
parking lots registered with ``add_parking_lot_breaker`` (how a ``trio.Lock`` learns that its
holder died).

Theory of operation: a :class:`MonitorHub` keeps a dictionary ``task -> subscribers`` and one
instrument, added to the run when the hub opens and removed when it closes. No task runs per
watched task: subscribing and unsubscribing are O(1) dictionary operations, and the
instrument's ``task_exited`` hook pops the exiting task's subscribers and calls each one's
callback synchronously, from the run loop (callbacks must not block and must not rely on
the current task or its context variables: cancel a scope, ``send_nowait`` a message,
``reschedule`` a parked task, set an event). The hook never raises — trio would remove an
instrument that raised, and every later exit would go unreported — so a raising callback is
logged and the other subscribers still run.

A task that has already exited when it is subscribed to (its coroutine is closed, the test
``add_parking_lot_breaker`` uses) gets its ``DOWN`` soon, never from inside
:meth:`MonitorHub.monitor`, as Erlang delivers ``DOWN`` with ``noproc``. It is delivered by the
hub's single task, parked on a parking lot until such a task is queued. That task also ties
the hub's lifetime to the nursery that holds it: when the nursery is cancelled the task's
``finally`` closes the hub (instrument removed, no ``DOWN`` after that), as structured code
expects. ``TrioToken.run_sync_soon`` would deliver as soon, but takes a lock and writes the
run's wakeup socket on every call, runs the callback in trio's own system task (where an
escaping exception ends the run), and would leave nothing to close the hub when its owner goes.

Each subscription is a :class:`MonitorRef`, the key of its own entry in its task's subscriber
dictionary: ``cancel`` removes the entry (and the task's dictionary with its last entry), so a
cancelled subscription never fires — even while the other subscribers of the same exit are
being called.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress

import structlog
import trio

__all__ = ["MonitorHub", "MonitorRef", "open_monitor_hub", "wait_task_exit"]

log = structlog.get_logger("supervisors.monitor")

DownCallback = Callable[[trio.lowlevel.Task], None]
_Subscribers = dict["MonitorRef", DownCallback]


async def wait_task_exit(task: trio.lowlevel.Task) -> None:
    """Return once ``task`` has exited, for any reason (at once if it already has).

    Cancelling the waiter deregisters it cleanly.
    """
    lot = trio.lowlevel.ParkingLot()
    try:
        trio.lowlevel.add_parking_lot_breaker(task, lot)
    except trio.BrokenResourceError:
        await trio.lowlevel.checkpoint()
        return
    try:
        await lot.park()
    except trio.BrokenResourceError:
        return
    finally:
        if not lot.broken_by:  # we left first (cancelled): don't leave a stale breaker behind
            trio.lowlevel.remove_parking_lot_breaker(task, lot)


class MonitorRef:
    """A subscription to one task's exit; :meth:`cancel` is Erlang's ``demonitor``.

    Attributes:
        task: the watched task.
    """

    __slots__ = ("_hub", "_subscribers", "task")

    def __init__(
        self, hub: MonitorHub, task: trio.lowlevel.Task, subscribers: _Subscribers
    ) -> None:
        self._hub = hub
        self._subscribers = subscribers
        self.task = task

    def cancel(self) -> None:
        """Stop watching; idempotent, never blocks."""
        subscribers = self._subscribers
        if subscribers.pop(self, None) is not None and not subscribers:
            self._hub._forget(self.task, subscribers)


class _ExitHook(trio.abc.Instrument):
    """The hub's instrument: trio calls ``task_exited`` for every task that exits."""

    __slots__ = ("_hub",)

    def __init__(self, hub: MonitorHub) -> None:
        self._hub = hub

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        hub = self._hub
        subscribers = hub._watches.pop(task, None)
        if subscribers is not None:
            hub._deliver(task, subscribers)


class MonitorHub:
    """Task-exit subscriptions, delivered by one trio instrument.

    Create with :func:`open_monitor_hub`, or as ``MonitorHub(nursery)``: the hub opens at once
    and closes when ``nursery`` is cancelled or :meth:`close` is called.
    """

    def __init__(self, nursery: trio.Nursery) -> None:
        self._watches: dict[trio.lowlevel.Task, _Subscribers] = {}
        self._exited: list[trio.lowlevel.Task] = []  # subscribed to after their exit
        self._lot = trio.lowlevel.ParkingLot()  # the hub's task waits here for _exited
        self._closed = False
        self._hook = _ExitHook(self)
        nursery.start_soon(self._serve)
        trio.lowlevel.add_instrument(self._hook)

    def monitor(self, task: trio.lowlevel.Task, on_down: DownCallback) -> MonitorRef:
        """Call ``on_down(task)`` once when ``task`` exits.

        ``on_down`` runs synchronously from trio's run loop: it must not block, nor rely on
        the current task or its context variables. If ``task`` has already exited,
        ``on_down`` is called soon (from the hub's task, never from inside this call), as
        Erlang delivers ``DOWN`` with ``noproc``.

        Raises:
            RuntimeError: the hub is closed.
        """
        if self._closed:
            raise RuntimeError("monitor hub is closed")
        subscribers = self._watches.get(task)
        if subscribers is None:
            subscribers = self._watches[task] = {}
            if inspect.getcoroutinestate(task.coro) == inspect.CORO_CLOSED:
                self._exited.append(task)
                self._lot.unpark_all()
        ref = MonitorRef(self, task, subscribers)
        subscribers[ref] = on_down
        return ref

    def link(self, task: trio.lowlevel.Task, scope: trio.CancelScope) -> MonitorRef:
        """Cancel ``scope`` when ``task`` exits — a one-way link for structured code."""
        return self.monitor(task, lambda _task: scope.cancel())

    def watched_tasks(self) -> int:
        """How many distinct tasks have live subscriptions."""
        return len(self._watches)

    def is_watching(self, task: trio.lowlevel.Task) -> bool:
        """Whether ``task`` has live subscriptions."""
        return task in self._watches

    def subscriber_count(self, task: trio.lowlevel.Task) -> int:
        """How many live subscriptions ``task`` has."""
        subscribers = self._watches.get(task)
        return 0 if subscribers is None else len(subscribers)

    def close(self) -> None:
        """Drop every subscription and remove the instrument: no callback fires after this.

        Idempotent; :meth:`monitor` raises ``RuntimeError`` afterwards.
        """
        if self._closed:
            return
        self._closed = True
        self._watches.clear()
        self._exited.clear()
        self._lot.unpark_all()
        with suppress(KeyError):  # already removed
            trio.lowlevel.remove_instrument(self._hook)

    def _forget(self, task: trio.lowlevel.Task, subscribers: _Subscribers) -> None:
        """``task``'s last subscription was cancelled: stop looking for its exit."""
        if self._watches.get(task) is subscribers:
            del self._watches[task]

    def _deliver(self, task: trio.lowlevel.Task, subscribers: _Subscribers) -> None:
        """Call the callback of each subscription still in ``subscribers``, each once."""
        for ref in list(subscribers):
            on_down = subscribers.pop(ref, None)
            if on_down is None:
                continue  # cancelled by an earlier callback of this exit
            if self._closed:
                return  # closed by an earlier callback of this exit
            try:
                on_down(task)
            except BaseException:
                # Logged, never raised: the other subscribers still run, and an exception
                # escaping the instrument's hook would make trio remove the instrument.
                log.exception("monitor_callback_failed", task=task.name)

    async def _serve(self) -> None:
        """Deliver the DOWN of tasks subscribed to after their exit; close the hub at the end."""
        try:
            while not self._closed:
                if not self._exited:
                    await self._lot.park()  # until monitor() queues one, or close()
                    continue
                exited, self._exited = self._exited, []
                for task in exited:
                    subscribers = self._watches.pop(task, None)
                    if subscribers is not None:
                        self._deliver(task, subscribers)
        finally:
            self.close()


@asynccontextmanager
async def open_monitor_hub() -> AsyncIterator[MonitorHub]:
    """Open a :class:`MonitorHub` for the duration of the block.

    Leaving the block closes the hub: no callback fires after that.
    """
    async with trio.open_nursery() as nursery:
        hub = MonitorHub(nursery)
        try:
            yield hub
        finally:
            hub.close()
            nursery.cancel_scope.cancel()
