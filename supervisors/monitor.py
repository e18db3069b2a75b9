"""Watch any trio task's exit — Erlang's ``monitor`` and ``link`` for trio.

trio has no monitors by design (python-trio/trio#136). Since trio 0.27 the parking-lot
breaker mechanism that breaks a ``trio.Lock`` when its holder dies works for any task:
a waiter parked on a private lot registered with ``add_parking_lot_breaker(task, lot)``
gets ``BrokenResourceError`` when ``task`` exits, for any reason.

Theory of operation: a :class:`MonitorHub` keeps **one** watcher task per watched task,
however many subscribers it has (an owner may have thousands of elicitations). Subscribing
and unsubscribing are O(1) dictionary operations; when the last subscriber of a task leaves,
its watcher is cancelled and the breaker deregistered — or, with ``keep_idle_watchers``,
kept until the task exits, so a task that subscribes again and again (a tool asking its
user one question after another) costs one watcher spawn, not one per subscription. When
the watched task exits, the watcher calls every subscriber's callback synchronously
(callbacks must not block: cancel a scope, ``send_nowait`` a message, set an event).
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import structlog
import trio

__all__ = ["MonitorHub", "MonitorRef", "open_monitor_hub", "wait_task_exit"]

log = structlog.get_logger("supervisors.monitor")

DownCallback = Callable[[trio.lowlevel.Task], None]


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
    """A subscription to one task's exit; :meth:`cancel` is Erlang's ``demonitor``."""

    __slots__ = ("_hub", "_key", "task")

    def __init__(self, hub: MonitorHub, task: trio.lowlevel.Task, key: int) -> None:
        self._hub = hub
        self._key = key
        self.task = task

    def cancel(self) -> None:
        """Stop watching; idempotent, never blocks."""
        self._hub._unsubscribe(self.task, self._key)


class _Watch:
    __slots__ = ("fired", "scope", "subscribers")

    def __init__(self) -> None:
        self.subscribers: dict[int, DownCallback] = {}
        self.scope = trio.CancelScope()
        self.fired = False


class MonitorHub:
    """Shared task watchers. Create with :func:`open_monitor_hub`."""

    def __init__(self, nursery: trio.Nursery, *, keep_idle_watchers: bool = False) -> None:
        self._nursery = nursery
        self._keep_idle = keep_idle_watchers
        self._watches: dict[trio.lowlevel.Task, _Watch] = {}
        self._keys = itertools.count()
        self._closed = False

    def monitor(self, task: trio.lowlevel.Task, on_down: DownCallback) -> MonitorRef:
        """Call ``on_down(task)`` once when ``task`` exits.

        If ``task`` has already exited, ``on_down`` is called soon (from the hub's watcher,
        never from inside this call), as Erlang delivers ``DOWN`` with ``noproc``.

        Raises:
            RuntimeError: the hub is closed.
        """
        if self._closed:
            raise RuntimeError("monitor hub is closed")
        key = next(self._keys)
        watch = self._watches.get(task)
        if watch is None:
            watch = self._watches[task] = _Watch()
            self._nursery.start_soon(self._watch, task, watch, name=f"monitor:{task.name}")
        watch.subscribers[key] = on_down
        return MonitorRef(self, task, key)

    def link(self, task: trio.lowlevel.Task, scope: trio.CancelScope) -> MonitorRef:
        """Cancel ``scope`` when ``task`` exits — a one-way link for structured code."""
        return self.monitor(task, lambda _task: scope.cancel())

    def watched_tasks(self) -> int:
        """How many distinct tasks are being watched (one watcher task each), idle ones too."""
        return len(self._watches)

    def is_watching(self, task: trio.lowlevel.Task) -> bool:
        """Whether ``task`` has a watcher (with or without subscribers)."""
        return task in self._watches

    def subscriber_count(self, task: trio.lowlevel.Task) -> int:
        """How many live subscriptions ``task`` has."""
        watch = self._watches.get(task)
        return 0 if watch is None else len(watch.subscribers)

    def _unsubscribe(self, task: trio.lowlevel.Task, key: int) -> None:
        watch = self._watches.get(task)
        if watch is None or watch.subscribers.pop(key, None) is None:
            return
        if not watch.subscribers and not watch.fired and not self._keep_idle:
            del self._watches[task]
            watch.scope.cancel()

    async def _watch(self, task: trio.lowlevel.Task, watch: _Watch) -> None:
        with watch.scope:
            await wait_task_exit(task)
            watch.fired = True
            self._watches.pop(task, None)
            subscribers = list(watch.subscribers.values())
            watch.subscribers.clear()
            for on_down in subscribers:
                try:
                    on_down(task)
                except Exception:
                    # A broken callback must not take the other subscribers (or the hub) down.
                    log.exception("monitor_callback_failed", task=task.name)


@asynccontextmanager
async def open_monitor_hub() -> AsyncIterator[MonitorHub]:
    """Open a :class:`MonitorHub` whose watchers live in a private nursery.

    Leaving the block cancels every watcher (no callback fires after that).
    """
    async with trio.open_nursery() as nursery:
        hub = MonitorHub(nursery)
        try:
            yield hub
        finally:
            hub._closed = True
            nursery.cancel_scope.cancel()
