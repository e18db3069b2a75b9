"""OTP supervisor on trio: ordered start, reverse-ordered stop, restart strategies, intensity.

Theory of operation. Each child runs in its own task inside the supervisor's nursery, under a
*shielded* cancel scope that only the supervisor cancels — so even when the supervisor itself
is cancelled by its parent it can still stop its children one by one in reverse start order,
giving each its shutdown time, as OTP does. Children start in order, each ready (it called
``task_status.started``) before the next starts.

A child that exits on its own reports on the supervisor's exit channel. The supervisor
handles exits one at a time (a lock serialises them with the dynamic-child API):
``_policy.should_restart`` says whether to act, ``_policy.victims`` which children the
strategy touches, and ``RestartIntensity`` (on trio's clock) whether to give up. Giving up
stops every child and raises :class:`RestartIntensityExceeded` to the parent: escalation.

Graceful stop: if the value a child passed to ``task_status.started`` has a
``request_stop()`` method (``ActorRef`` and ``Supervisor`` do), the supervisor calls it and
waits up to ``shutdown`` seconds before cancelling the child's scope; otherwise it cancels at
once. ``shutdown=BRUTAL_KILL`` always cancels at once.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import structlog
import trio

from supervisors._errors import RestartIntensityExceeded, StartError, SupervisorError
from supervisors._policy import (
    ExitKind,
    Restart,
    RestartIntensity,
    Strategy,
    should_restart,
    victims,
)

__all__ = ["BRUTAL_KILL", "ChildCounts", "ChildInfo", "ChildSpec", "Supervisor"]

log = structlog.get_logger("supervisors.supervisor")

BRUTAL_KILL: Final = "brutal_kill"

StartFn = Callable[..., Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """How to start and stop one child.

    Attributes:
        id: unique among the supervisor's children.
        start: ``async def start(*args, task_status)``; must call ``task_status.started(value)``
            once ready. ``value`` is what ``start_child``/``which_children`` hand out.
        args: positional arguments for ``start``.
        restart: ``permanent`` | ``transient`` | ``temporary``.
        shutdown: seconds a graceful stop may take before the child is cancelled
            (``math.inf`` for nested supervisors), or ``BRUTAL_KILL``.
    """

    id: str
    start: StartFn
    args: tuple[Any, ...] = ()
    restart: Restart = Restart.PERMANENT
    shutdown: float | Literal["brutal_kill"] = 5.0

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("ChildSpec.id must be a non-empty string")
        if self.shutdown != BRUTAL_KILL and not (
            isinstance(self.shutdown, int | float) and self.shutdown >= 0
        ):
            raise ValueError(
                f"ChildSpec.shutdown must be >= 0 or BRUTAL_KILL, got {self.shutdown!r}"
            )
        object.__setattr__(self, "restart", Restart(self.restart))


@dataclass(frozen=True, slots=True)
class ChildInfo:
    """One row of :meth:`Supervisor.which_children`."""

    id: str
    value: Any
    running: bool
    restart: Restart
    kind: Literal["worker", "supervisor"]


@dataclass(frozen=True, slots=True)
class ChildCounts:
    """What :meth:`Supervisor.count_children` returns."""

    specs: int
    active: int
    supervisors: int
    workers: int


class _Instance:
    """One run of a child: its scope, started value and exit event."""

    __slots__ = ("done", "scope", "stopping", "value")

    def __init__(self) -> None:
        self.scope = trio.CancelScope(shield=True)
        self.done = trio.Event()
        self.stopping = False
        self.value: Any = None


_TRY_AGAIN: Final = _Instance()
"""Marks a queued retry of a child whose restart failed (not a real run of it)."""


@dataclass(slots=True)
class _Child:
    spec: ChildSpec
    instance: _Instance | None = None
    kind: Literal["worker", "supervisor"] = "worker"


@dataclass(frozen=True, slots=True)
class _Exit:
    child: _Child
    instance: _Instance
    kind: ExitKind
    error: BaseException | None = field(default=None)


class _StartedProxy:
    """Wraps the supervisor's ``task_status`` to record the child's started value."""

    __slots__ = ("_inner", "_instance", "started_called")

    def __init__(self, inner: trio.TaskStatus[Any], instance: _Instance) -> None:
        self._inner = inner
        self._instance = instance
        self.started_called = False

    def started(self, value: Any = None) -> None:
        self._instance.value = value
        self.started_called = True
        self._inner.started(value)


class Supervisor:
    """An OTP supervisor. Run it with ``await nursery.start(sup.run)`` or as a child spec.

    Args:
        children: the static child specs, started in this order.
        strategy: ``one_for_one`` | ``one_for_all`` | ``rest_for_one``.
        max_restarts: restarts allowed within ``max_seconds`` before escalating.
        max_seconds: the sliding window of the restart intensity.
        name: used in logs and errors.
    """

    def __init__(
        self,
        children: Sequence[ChildSpec] = (),
        *,
        strategy: Strategy | str = Strategy.ONE_FOR_ONE,
        max_restarts: int = 3,
        max_seconds: float = 5.0,
        name: str = "supervisor",
    ) -> None:
        ids = [spec.id for spec in children]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate child ids in {ids}")
        self.name = name
        self.strategy = Strategy(strategy)
        self.max_restarts = max_restarts
        self.max_seconds = max_seconds
        RestartIntensity(max_restarts, max_seconds)  # validate now, not at first restart
        self._specs = list(children)
        self._children: list[_Child] = []
        self._nursery: trio.Nursery | None = None
        self._loop_scope = trio.CancelScope()
        self._lock = trio.Lock()
        self._exits_send, self._exits_recv = trio.open_memory_channel[_Exit](math.inf)
        #: Restarts so far, by child id (each start of a child again by the strategy).
        self.restarts: Counter[str] = Counter()

    # ------------------------------------------------------------------ running

    async def run(
        self, *, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Start every child in order, report ready, then supervise until stopped.

        Raises:
            StartError: a static child failed to start (those already started are stopped).
            RestartIntensityExceeded: too many restarts; every child was stopped first.
        """
        self._children = [_Child(spec) for spec in self._specs]
        self._loop_scope = trio.CancelScope()
        self._exits_send, self._exits_recv = trio.open_memory_channel[_Exit](math.inf)
        intensity = RestartIntensity(self.max_restarts, self.max_seconds)
        failure: SupervisorError | None = None
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                for child in list(self._children):
                    await self._start(child)
                log.info("supervisor_started", supervisor=self.name, children=len(self._children))
                task_status.started(self)
                with self._loop_scope:
                    await self._supervise(intensity)
            except SupervisorError as exc:
                failure = exc
            finally:
                with trio.CancelScope(shield=True):
                    await self._stop_all()
                self._nursery = None
        if failure is not None:
            raise failure

    def request_stop(self) -> None:
        """Stop gracefully: every child in reverse start order, then ``run`` returns."""
        self._loop_scope.cancel()

    async def _supervise(self, intensity: RestartIntensity) -> None:
        async for ev in self._exits_recv:
            async with self._lock:
                await self._handle_exit(ev, intensity)

    async def _handle_exit(self, ev: _Exit, intensity: RestartIntensity) -> None:
        child = ev.child
        if ev.instance is _TRY_AGAIN:
            # A restart of this child failed earlier; exits queued since were handled first.
            if child.instance is None and child in self._children:
                await self._restart(child, intensity)
            return
        if ev.instance.stopping or child.instance is not ev.instance:
            return  # we stopped it on purpose, or a newer instance already replaced it
        child.instance = None
        spec = child.spec
        if ev.kind is ExitKind.CRASHED:
            log.error(
                "child_crashed", supervisor=self.name, child_id=spec.id, reason=repr(ev.error)
            )
        else:
            log.info("child_exited", supervisor=self.name, child_id=spec.id, reason=ev.kind.value)
        if spec.restart is Restart.TEMPORARY:
            self._children.remove(child)
            return
        if not should_restart(spec.restart, ev.kind):
            return
        await self._restart(child, intensity)

    async def _restart(self, failed: _Child, intensity: RestartIntensity) -> None:
        while True:  # one pass; a failed start re-queues itself (see the except below)
            if not intensity.add_restart(trio.current_time()):
                log.error(
                    "supervisor_escalating",
                    supervisor=self.name,
                    child_id=failed.spec.id,
                    max_restarts=self.max_restarts,
                    max_seconds=self.max_seconds,
                )
                raise RestartIntensityExceeded(
                    self.name, self.max_restarts, self.max_seconds, failed.spec.id
                )
            order = [c.spec.id for c in self._children]
            hit = set(victims(self.strategy, order, failed.spec.id))
            group = [c for c in self._children if c.spec.id in hit]
            for child in reversed(group):
                if child is not failed:
                    await self._stop(child)
            for child in group:
                if child is not failed and child.spec.restart is Restart.TEMPORARY:
                    self._children.remove(child)  # OTP: temporaries are not restarted
            try:
                for child in [c for c in group if c in self._children]:
                    await self._start(child)
                    self.restarts[child.spec.id] += 1
                    log.info("child_restarted", supervisor=self.name, child_id=child.spec.id)
                return
            except StartError as exc:
                log.exception("child_restart_failed", supervisor=self.name, child_id=exc.child_id)
                failed = next(c for c in self._children if c.spec.id == exc.child_id)
                # OTP's try_again: queue the retry behind exits already reported, so that a
                # sibling's death that caused this failure is handled (and restarts what it
                # must) before we try again — not a tight loop that only ends in escalation.
                self._exits_send.send_nowait(_Exit(failed, _TRY_AGAIN, ExitKind.CRASHED, exc))
                return

    # ------------------------------------------------------------------ one child

    async def _start(self, child: _Child) -> Any:
        assert self._nursery is not None
        instance = _Instance()
        try:
            value = await self._nursery.start(
                self._child_main, child, instance, name=f"{self.name}/{child.spec.id}"
            )
        except Exception as exc:
            raise StartError(self.name, child.spec.id, exc) from exc
        child.instance = instance
        child.kind = "supervisor" if isinstance(value, Supervisor) else "worker"
        log.debug("child_started", supervisor=self.name, child_id=child.spec.id)
        return value

    async def _child_main(
        self, child: _Child, instance: _Instance, *, task_status: trio.TaskStatus[Any]
    ) -> None:
        proxy = _StartedProxy(task_status, instance)
        kind = ExitKind.NORMAL
        error: BaseException | None = None
        try:
            with instance.scope:
                try:
                    await child.spec.start(*child.spec.args, task_status=proxy)
                except Exception as exc:
                    if not proxy.started_called:
                        raise  # nursery.start() re-raises it to _start
                    kind, error = ExitKind.CRASHED, exc
        finally:
            if instance.stopping:
                kind = ExitKind.SHUTDOWN
            instance.done.set()
            if proxy.started_called:
                self._exits_send.send_nowait(_Exit(child, instance, kind, error))

    async def _stop(self, child: _Child) -> None:
        instance = child.instance
        child.instance = None
        if instance is None or instance.done.is_set():
            return
        instance.stopping = True
        spec = child.spec
        request_stop = getattr(instance.value, "request_stop", None)
        if spec.shutdown == BRUTAL_KILL or not callable(request_stop):
            instance.scope.cancel()
        else:
            request_stop()
            with trio.move_on_after(float(spec.shutdown)):
                await instance.done.wait()
            if not instance.done.is_set():
                log.warning(
                    "child_shutdown_timeout",
                    supervisor=self.name,
                    child_id=spec.id,
                    timeout=spec.shutdown,
                )
                instance.scope.cancel()
        await instance.done.wait()
        log.debug("child_stopped", supervisor=self.name, child_id=spec.id)

    async def _stop_all(self) -> None:
        for child in reversed(self._children):
            await self._stop(child)

    # ------------------------------------------------------------------ dynamic children

    def _find(self, child_id: str) -> _Child:
        for child in self._children:
            if child.spec.id == child_id:
                return child
        raise KeyError(child_id)

    def _require_running(self) -> None:
        if self._nursery is None:
            raise RuntimeError(f"supervisor {self.name!r} is not running")

    async def start_child(self, spec: ChildSpec) -> Any:
        """Add ``spec`` after the existing children and start it; return its started value.

        Raises:
            ValueError: a child with that id exists.
            StartError: it failed to start (the spec is not kept).
        """
        self._require_running()
        async with self._lock:
            if any(c.spec.id == spec.id for c in self._children):
                raise ValueError(f"child {spec.id!r} already exists")
            child = _Child(spec)
            self._children.append(child)
            try:
                return await self._start(child)
            except StartError:
                self._children.remove(child)
                raise

    async def terminate_child(self, child_id: str) -> None:
        """Stop a child (graceful, within its shutdown time). Temporary specs are dropped.

        Raises:
            KeyError: no such child.
        """
        self._require_running()
        async with self._lock:
            child = self._find(child_id)
            await self._stop(child)
            if child.spec.restart is Restart.TEMPORARY:
                self._children.remove(child)

    async def restart_child(self, child_id: str) -> Any:
        """Start a stopped child again; return its started value.

        Raises:
            KeyError: no such child.
            RuntimeError: it is running.
        """
        self._require_running()
        async with self._lock:
            child = self._find(child_id)
            if child.instance is not None:
                raise RuntimeError(f"child {child_id!r} is running")
            return await self._start(child)

    async def delete_child(self, child_id: str) -> None:
        """Forget a stopped child's spec.

        Raises:
            KeyError: no such child.
            RuntimeError: it is running.
        """
        async with self._lock:
            child = self._find(child_id)
            if child.instance is not None:
                raise RuntimeError(f"child {child_id!r} is running")
            self._children.remove(child)

    def which_children(self) -> list[ChildInfo]:
        """Every child, in start order."""
        return [
            ChildInfo(
                id=c.spec.id,
                value=None if c.instance is None else c.instance.value,
                running=c.instance is not None,
                restart=c.spec.restart,
                kind=c.kind,
            )
            for c in self._children
        ]

    def count_children(self) -> ChildCounts:
        """Counts as OTP's ``count_children``."""
        running = [c for c in self._children if c.instance is not None]
        sups = sum(1 for c in self._children if c.kind == "supervisor")
        return ChildCounts(
            specs=len(self._children),
            active=len(running),
            supervisors=sups,
            workers=len(self._children) - sups,
        )
