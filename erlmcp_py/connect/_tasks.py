"""``erlmcp-py connect`` following a task (the ``io.modelcontextprotocol/tasks`` extension).

Theory of operation
-------------------
On 2026-07-28 the client declares the extension (``--no-tasks`` turns that off), so a tool that
may run as a task answers its ``tools/call`` with a ``CreateTaskResult``; :func:`follow_task`
then follows it, and so does the ``task TASK_ID`` command (``--task TASK_ID`` once) for a task
started earlier, by this process or another one: nothing of a task is kept in the client.
``cancel TASK_ID`` asks the server to cancel one (``tasks/cancel``), then follows it to its
end.

Following is polling: ``tasks/get`` every ``pollIntervalMs`` the server suggests (kept between
0.1 s and 60 s). Each change of the status, and each new ``statusMessage`` (a question's
deadline warning), is said on a line of its own. While the task is ``input_required`` its
questions are asked one at a time, in the order the server lists them, with the prompts of any
elicitation (a form field by field, a URL-mode page); each answer goes at once, alone, in a
``tasks/update`` (a partial update: the others wait for their turn). A question that has a
link to the server's hosted page (``io.erlmcp/pageUrl`` in its ``_meta``) shows it first, for
the user to send to whoever should answer. While a question is on screen the polling goes on:
a question that leaves the task meanwhile (answered through its link, timed out, the task
ended) is withdrawn from the screen, saying so, before what became of the task is said.

Ctrl-C while following (at a question, or while waiting) stops the following and offers to
cancel the task (``tasks/cancel``, then follow it to its end), leave it running (its id is
printed, to resume it with ``task TASK_ID``), or keep following (the question comes back).
Ctrl-C again, or the end of input, at that choice leaves it running. The caller shows the end:
:func:`follow_task` returns the ended ``DetailedTask``, or ``None`` when the task was left
running.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import trio

from erlmcp_py.actors.pages import PAGE_URL_META
from erlmcp_py.client import ClientRequestError, ClientSession
from erlmcp_py.connect._app import ConnectApp
from erlmcp_py.core.tasks import TERMINAL_STATUSES

__all__ = ["follow_task", "poll_interval"]

#: Bounds of the polling interval, whatever the server suggests (seconds).
MIN_POLL_S: Final = 0.1
MAX_POLL_S: Final = 60.0

Choice = Literal["cancel", "leave", "follow"]

_CHOICES: Final[Mapping[str, Choice]] = {"1": "cancel", "2": "leave", "3": "follow"}

#: What each status the wire names is said as.
_STATUS_TEXTS: Final = {
    status: f"task_{status}"
    for status in ("working", "input_required", "completed", "failed", "cancelled")
}


def poll_interval(task: Mapping[str, Any], default: float = 2.0) -> float:
    """Seconds between two ``tasks/get``: the task's ``pollIntervalMs`` (else ``default``),
    kept between :data:`MIN_POLL_S` and :data:`MAX_POLL_S`."""
    millis = task.get("pollIntervalMs")
    if isinstance(millis, int | float) and not isinstance(millis, bool) and math.isfinite(millis):
        seconds = millis / 1000
    else:
        seconds = default
    return min(max(seconds, MIN_POLL_S), MAX_POLL_S)


def _requests(task: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found = task.get("inputRequests")
    if not isinstance(found, Mapping):
        return {}
    return {str(k): v for k, v in found.items() if isinstance(v, Mapping)}


def _ended(task: Mapping[str, Any]) -> bool:
    return task.get("status") in TERMINAL_STATUSES


@dataclass(eq=False)
class _Follower:
    """One task on screen."""

    client: ClientSession
    app: ConnectApp
    task_id: str
    interval: float = 2.0
    _status: object = None
    _message: object = None
    _answered: set[str] = field(default_factory=set)

    async def get(self) -> dict[str, Any]:
        task = await self.client.request("tasks/get", {"taskId": self.task_id})
        self.interval = poll_interval(task, self.interval)
        return task

    def show(self, task: Mapping[str, Any]) -> None:
        """Say what changed: the status, a new ``statusMessage``."""
        io, t = self.app.io, self.app.t
        status = task.get("status")
        if status != self._status:
            self._status = status
            if status in _STATUS_TEXTS:
                io.say(t(_STATUS_TEXTS[str(status)]))
        message = task.get("statusMessage")
        if message != self._message:
            self._message = message
            if isinstance(message, str) and message.strip() and not _ended(task):
                io.say(t("task_message", message=message))

    async def run(self, task: Mapping[str, Any]) -> Mapping[str, Any]:
        """Follow from ``task`` (the latest seen) to its end; the ended task."""
        while True:
            self.show(task)
            if _ended(task):
                return task
            waiting = [(k, r) for k, r in _requests(task).items() if k not in self._answered]
            if waiting:
                task = await self.ask(*waiting[0])
            else:
                await trio.sleep(self.interval)
                task = await self.get()

    async def ask(self, key: str, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """Ask one question, watching the task meanwhile; send its answer. The task as seen
        last."""
        app = self.app
        seen: list[Mapping[str, Any]] = []
        answer: Mapping[str, Any] | None = None
        async with trio.open_nursery() as nursery:
            with trio.CancelScope() as asking:
                nursery.start_soon(self.watch, key, asking, seen)
                answer = await self.answer(request)
            nursery.cancel_scope.cancel()
        if asking.cancelled_caught:
            app.io.say(app.t("task_question_closed"))
            return seen[-1]
        self._answered.add(key)
        if answer is not None:
            params = {"taskId": self.task_id, "inputResponses": {key: dict(answer)}}
            await self.client.request("tasks/update", params)
        return await self.get()

    async def answer(self, request: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The user's answer to one input request (``None``: this client cannot answer it)."""
        app = self.app
        method = str(request.get("method", ""))
        raw = request.get("params")
        params: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        if method == "elicitation/create":
            meta = params.get("_meta")
            link = meta.get(PAGE_URL_META) if isinstance(meta, Mapping) else None
            if isinstance(link, str) and params.get("mode") != "url":
                app.io.say(app.t("task_link", url=link))
            return (await app.elicit(params, follow=False)).result()
        try:
            return await app.on_request(method, params)
        except ClientRequestError:
            return None  # said by on_request: the question waits for another client

    async def watch(
        self, key: str, asking: trio.CancelScope, seen: list[Mapping[str, Any]]
    ) -> None:
        """Poll while question ``key`` is on screen; withdraw it when it leaves the task."""
        while True:
            await trio.sleep(self.interval)
            task = await self.get()
            seen.append(task)
            if _ended(task) or key not in _requests(task):
                asking.cancel()  # what became of the task is said once it is off the screen
                return
            self.show(task)

    async def choose(self) -> Choice:
        """Ctrl-C while following: what to do with the task."""
        io, t = self.app.io, self.app.t
        with self.app.task_scope():
            try:
                while True:
                    line = (await io.ask(t("task_menu"), history=None)).strip()
                    choice = _CHOICES.get(line)
                    if choice is not None:
                        return choice
                    io.say(f"  ! {t('err_task_menu')}")
            except EOFError:
                pass
        return "leave"


async def follow_task(
    client: ClientSession, app: ConnectApp, task: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """Follow a task on screen to its end (see the module docstring).

    Args:
        client: The session.
        app: The screen.
        task: A ``CreateTaskResult``, or a ``DetailedTask`` of a task resumed.

    Returns:
        The ended task (its ``status``, ``result`` or ``error``), or ``None`` when the user
        left it running.

    Raises:
        ClientRequestError: ``tasks/get``, ``tasks/update`` or ``tasks/cancel`` was answered
            with an error (an unknown or expired task: ``-32602``).
    """
    io, t = app.io, app.t
    follower = _Follower(client, app, str(task.get("taskId")), poll_interval(task))
    io.say(t("task_following", id=follower.task_id))
    while True:
        with app.task_scope() as scope:
            ended = await follower.run(task)
        if not scope.cancelled_caught:
            return ended
        choice = await follower.choose()
        if choice == "leave":
            io.say(t("task_left", id=follower.task_id))
            return None
        if choice == "cancel":
            io.say(t("task_cancelling"))
            await client.request("tasks/cancel", {"taskId": follower.task_id})
        task = await follower.get()
