"""Following a task on screen (:func:`erlmcp_py.connect.follow_task`) over a scripted wire and
a console double, on trio's mock clock: the polling interval the server suggests, a question
that leaves the task while it is on screen, and what Ctrl-C offers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py.client import ClientSession, open_client_session
from erlmcp_py.connect import (
    TASK_CAPABILITIES,
    ConnectApp,
    follow_task,
    poll_interval,
    session_options,
)
from erlmcp_py.core.tasks import TASKS_EXTENSION
from erlmcp_py.core.versions import V_2026_07_28
from erlmcp_py.mcp.jsonrpc import Message, Request
from tests.client.wires import ScriptedWire
from tests.connect.test_app import Screen, app

ASK = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Delete a.txt?",
        "requestedSchema": {
            "type": "object",
            "properties": {"confirm": {"type": "boolean"}},
            "required": ["confirm"],
        },
    },
}


def task(status: str, **fields: Any) -> dict[str, Any]:
    return {"resultType": "complete", "taskId": "t-1", "status": status, **fields}


class TimedWire(ScriptedWire):
    """A scripted wire that also notes when (on trio's clock) each request went out."""

    def __init__(self, *results: Mapping[str, Any]) -> None:
        super().__init__(*results)
        self.times: list[float] = []

    async def send(self, message: Message) -> None:
        if isinstance(message, Request):
            self.times.append(trio.current_time())
        await super().send(message)


@asynccontextmanager
async def following(wire: ScriptedWire) -> AsyncIterator[tuple[ClientSession, ConnectApp, Screen]]:
    connect, screen = app()
    options = session_options(V_2026_07_28, connect.on_request, connect.on_notification)
    async with open_client_session(wire, **options) as client:
        yield client, connect, screen


def methods(wire: ScriptedWire) -> list[str]:
    return [method for method, _ in wire.sent]


def test_the_client_declares_the_tasks_extension_on_2026_07_28_only() -> None:
    assert session_options(V_2026_07_28, None)["capabilities"] == TASK_CAPABILITIES  # type: ignore[arg-type]
    assert TASKS_EXTENSION in TASK_CAPABILITIES["extensions"]
    without = session_options(V_2026_07_28, None, tasks=False)  # type: ignore[arg-type]
    assert "extensions" not in without["capabilities"]
    assert "extensions" not in session_options("2025-11-25", None)["capabilities"]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("suggested", "seconds"),
    [(2000, 2.0), (250, 0.25), (0, 0.1), (10**9, 60.0), (None, 2.0), ("5", 2.0), (True, 2.0)],
)
def test_the_polling_interval_is_the_servers_kept_within_bounds(
    suggested: object, seconds: float
) -> None:
    assert poll_interval({"pollIntervalMs": suggested}) == seconds


async def test_tasks_get_is_sent_at_each_interval_the_server_suggests(
    autojump_clock: trio.testing.MockClock,
) -> None:
    wire = TimedWire(
        task("working", pollIntervalMs=250),
        task("working", pollIntervalMs=0),
        task("completed", result={"content": [{"type": "text", "text": "done"}]}),
    )
    created = {"resultType": "task", "taskId": "t-1", "status": "working", "pollIntervalMs": 5000}
    async with following(wire) as (client, connect, screen):
        start = trio.current_time()
        ended = await follow_task(client, connect, created)
    assert ended is not None
    assert ended["result"]["content"][0]["text"] == "done"
    assert [round(at - start, 3) for at in wire.times] == [5.0, 5.25, 5.35]
    assert methods(wire) == ["tasks/get"] * 3
    assert all(params["taskId"] == "t-1" for _, params in wire.sent)
    assert screen.said() == [
        "Following task t-1 (Ctrl-C: cancel it or leave it running).",
        "Task working.",
        "Task completed.",
    ]


async def test_a_question_that_leaves_the_task_is_taken_off_the_screen_unanswered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Answered through its link meanwhile: the next poll no longer lists it.
    wire = ScriptedWire(
        task("input_required", inputRequests={"confirm": ASK}, pollIntervalMs=1000),
        task("completed", result={"content": []}),
    )
    async with following(wire) as (client, connect, screen):
        ended = await follow_task(client, connect, {"taskId": "t-1", "status": "working"})
    assert ended is not None
    assert ended["status"] == "completed"
    assert "tasks/update" not in methods(wire)
    assert ("withdraw", "  [y/n] > ") in screen.events
    said = screen.said()
    assert said.index("This question was answered or closed elsewhere.") < said.index(
        "Task completed."
    )


async def test_the_status_message_is_said_once_while_the_question_waits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    warning = "This request expires in 900 seconds."
    waiting = task("input_required", inputRequests={"confirm": ASK}, statusMessage=warning)
    wire = ScriptedWire(waiting, waiting, waiting, task("cancelled"))
    async with following(wire) as (client, connect, screen):
        ended = await follow_task(client, connect, {"taskId": "t-1", "status": "working"})
    assert ended is not None
    assert ended["status"] == "cancelled"
    assert screen.said().count(f"⚠ {warning}") == 1
    assert screen.said()[-1] == "Task cancelled."


@pytest.mark.parametrize(("choice", "sent"), [("2", []), ("1", ["tasks/cancel", "tasks/get"])])
async def test_ctrl_c_while_following_offers_to_cancel_the_task_or_leave_it_running(
    choice: str, sent: list[str], autojump_clock: trio.testing.MockClock
) -> None:
    wire = ScriptedWire(task("cancelled"), task("cancelled"))
    got: list[Mapping[str, Any] | None] = []
    async with following(wire) as (client, connect, screen), trio.open_nursery() as nursery:

        async def follow() -> None:
            got.append(await follow_task(client, connect, {"taskId": "t-1"}))

        nursery.start_soon(follow)
        await trio.testing.wait_all_tasks_blocked()
        assert connect.interrupt()  # while it waits for the next poll
        await trio.testing.wait_all_tasks_blocked()
        screen.type("4")  # not a choice: asked again
        await trio.testing.wait_all_tasks_blocked()
        screen.type(choice)
    assert methods(wire) == sent
    assert screen.said()[1] == "  ! Answer 1, 2 or 3."
    if choice == "2":
        assert got == [None]
        assert screen.said()[-1] == ("Task t-1 goes on running; follow it again with: task t-1")
    else:
        assert got[0] is not None
        assert got[0]["status"] == "cancelled"
        assert screen.said()[-2:] == ["Asking the server to cancel the task.", "Task cancelled."]


async def test_ctrl_c_at_a_question_then_keep_following_asks_it_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    waiting = task("input_required", inputRequests={"confirm": ASK}, pollIntervalMs=60000)
    # the task as it is after the choice; the update's acknowledgement; the end
    wire = ScriptedWire(waiting, {"resultType": "complete"}, task("completed", result={}))
    async with following(wire) as (client, connect, screen), trio.open_nursery() as nursery:
        nursery.start_soon(follow_task, client, connect, waiting)
        await trio.testing.wait_all_tasks_blocked()
        assert list(screen.open.values()) == ["  [y/n] > "]
        connect.interrupt()
        await trio.testing.wait_all_tasks_blocked()
        screen.type("3")  # keep following: the question comes back
        await trio.testing.wait_all_tasks_blocked()
        assert list(screen.open.values()) == ["  [y/n] > "]
        screen.type("y")
        await trio.testing.wait_all_tasks_blocked()
        screen.type("1")  # Submit
    assert methods(wire) == ["tasks/get", "tasks/update", "tasks/get"]
    update = wire.sent[1][1]
    assert update["taskId"] == "t-1"
    assert update["inputResponses"] == {
        "confirm": {"action": "accept", "content": {"confirm": True}}
    }
    asked = [text for kind, text in screen.events if kind == "ask"]
    assert asked.count("  [y/n] > ") == 2
