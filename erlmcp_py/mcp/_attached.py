"""A request attached to its call (:class:`Attached`, or any :class:`Attachment`), and how the
task answering it waits (a :class:`Waiter`) until the call's round ends: the tool finished, or
asked and settled, or the retry's hold ran out (:mod:`~erlmcp_py.mcp.mrtr`, "Yield
detection"). The registry (:mod:`~erlmcp_py.mcp._continuations`) attaches the request and
decides its answer.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Protocol

import trio

if TYPE_CHECKING:
    from erlmcp_py.mcp._call_record import Continuation
    from erlmcp_py.mcp._continuations import ContinuationRegistry

__all__ = ["Attached", "Attachment", "Waiter", "until_yield"]


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


async def until_yield(cont: Continuation, waiter: Waiter, settle_checkpoints: int) -> None:
    """Wait until the tool finished, or asked and the round settled, or the retry's hold
    ran out (parked in ``waiter``, which every change of the call wakes)."""
    while not (cont.done or cont.final is not None or cont.held):
        if cont.outstanding and not cont.unsent():
            if not cont.parked():
                await _settle(cont, settle_checkpoints)
            if cont.outstanding or cont.done or cont.final is not None:
                return
        try:
            await waiter.park()
        except BaseException:
            cont.life.cancel()  # the request is gone (cancelled, its client left)
            raise


async def _settle(cont: Continuation, settle_checkpoints: int) -> None:
    """Pass checkpoints until ``settle_checkpoints`` in a row saw no new request and no
    question on its way, the tool ended, or ten times that many passed (a tool that keeps
    asking is answered anyway)."""
    quiet = 0
    for _ in range(settle_checkpoints * 10):
        before = cont.version
        await trio.lowlevel.checkpoint()
        quiet = quiet + 1 if cont.version == before and not cont.unsent() else 0
        if quiet >= settle_checkpoints or cont.done:
            return
