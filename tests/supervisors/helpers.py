"""Small actors and children used by the kernel tests."""

from __future__ import annotations

from typing import Any

import trio

from supervisors import NOREPLY, Actor, ErrorReply, ReplyTo


class Echo(Actor):
    """Replies with what it got; ``("sleep", s)`` sleeps first; ``("crash",)`` raises;
    ``("defer",)`` keeps the reply slot in ``deferred``; ``("error", exc)`` makes the caller raise.
    """

    mailbox_size = 4

    def __init__(self, log: list[Any] | None = None, terminate_sleep: float = 0.0) -> None:
        self.log = log if log is not None else []
        self.deferred: list[ReplyTo] = []
        self.terminate_sleep = terminate_sleep

    async def init(self) -> None:
        self.log.append("init")

    async def handle_call(self, msg: Any, reply_to: ReplyTo) -> Any:
        match msg:
            case ("sleep", seconds):
                await trio.sleep(seconds)
                return ("slept", seconds)
            case ("wait", trio.Event() as event):
                await event.wait()
                return "waited"
            case ("crash",):
                raise RuntimeError("boom")
            case ("defer",):
                self.deferred.append(reply_to)
                return NOREPLY
            case ("error", exc):
                return ErrorReply(exc)
            case _:
                return msg

    async def handle_cast(self, msg: Any) -> None:
        if msg == "crash":
            raise RuntimeError("cast boom")
        self.log.append(("cast", msg))

    async def handle_info(self, msg: Any) -> None:
        self.log.append(("info", msg))

    async def terminate(self, reason: object) -> None:
        self.log.append(("terminate", reason if isinstance(reason, str) else type(reason).__name__))
        if self.terminate_sleep:
            await trio.sleep(self.terminate_sleep)
            self.log.append("terminate-finished")


async def current_task_child(*, task_status: trio.TaskStatus[trio.lowlevel.Task]) -> None:
    """A task that reports itself and sleeps until cancelled."""
    task_status.started(trio.lowlevel.current_task())
    await trio.sleep_forever()


class Control:
    """What a harness child hands its supervisor: a way to make it crash or exit."""

    def __init__(self) -> None:
        self.event = trio.Event()
        self.command = ""

    def order(self, command: str) -> None:
        self.command = command
        self.event.set()


class Harness:
    """Children that log ("start", id) / ("stop", id) and crash or exit on command."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.controls: dict[str, Control] = {}
        self.fail_start: set[str] = set()

    def spec(self, child_id: str, restart: str = "permanent", shutdown: Any = 5.0) -> Any:
        from supervisors import ChildSpec, Restart

        return ChildSpec(child_id, self.child, (child_id,), Restart(restart), shutdown)

    async def child(self, child_id: str, *, task_status: trio.TaskStatus[Control]) -> None:
        if child_id in self.fail_start:
            self.log.append(("start-failed", child_id))
            raise RuntimeError(f"{child_id} cannot start")
        self.log.append(("start", child_id))
        control = Control()
        self.controls[child_id] = control
        task_status.started(control)
        try:
            await control.event.wait()
        except trio.Cancelled:
            self.log.append(("stop", child_id))
            raise
        if control.command == "crash":
            raise RuntimeError(f"{child_id} crashed")

    def take_log(self) -> list[tuple[str, str]]:
        out, self.log = self.log, []
        return out
