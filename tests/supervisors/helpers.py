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
