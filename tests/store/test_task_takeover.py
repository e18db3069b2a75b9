"""Durable tasks across replicas on a real ``redis-server``: a task is answered and cancelled
through a replica that does not hold it (forwarded to its holder); a replica that stops
(gracefully, or SIGKILLed in a process of its own) leaves its waiting task to another, which
runs the tool again with the journal's answers (charged once) and asks the open question
again under its key, even when its answer comes before the tool gets there; an answer
given on a question's link (through any replica) is journaled like a ``tasks/update`` one, and
a question asked again gets a new link while the dead replica's is closed; a task that
cannot be run again ends failed with its cause, one whose cancel was asked ends cancelled; a
replica whose task was taken over while it was cut off stops its copy; nothing of a task is
left in the store past its TTL.

Real time here (the store's heartbeats and TTLs run on it, 0.1 s and 0.6 s in these URLs):
every wait is bounded.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, TypeVar

import pytest
import trio

from erlmcp_py.actors.pages import PAGE_URL_META
from erlmcp_py.core.store_wire import StoreTask, TaskReplay, parse_store_url
from erlmcp_py.mcp.jsonrpc import JsonRpcError
from tests.deploy.support import REPO
from tests.store.server import RedisServer
from tests.store.task_server import PAGE_ORIGIN, Replica, answer_on_link, replica

T = TypeVar("T")
LIMIT = 10.0  # seconds: bound of every wait
WHO = {"who": {"action": "accept", "content": {"name": "Ada"}}}
SURE = {"elicitation": {"action": "accept", "content": {"confirm": True}}}
CONFIRM = "Ada, do you approve INV-7?"


async def eventually(probe: Callable[[], Awaitable[T]], ok: Callable[[T], bool]) -> T:
    """``probe()`` until ``ok`` of its value, within :data:`LIMIT`."""
    with trio.fail_after(LIMIT):
        while True:
            value = await probe()
            if ok(value):
                return value
            await trio.sleep(0.02)


async def task_on(one: Replica, task_id: str, ok: Callable[[dict[str, Any]], bool]) -> Any:
    return await eventually(lambda: one.request("tasks/get", {"taskId": task_id}), ok)


def asking(*keys: str) -> Callable[[dict[str, Any]], bool]:
    return lambda task: set(task.get("inputRequests", {})) == set(keys)


def status(wanted: str) -> Callable[[dict[str, Any]], bool]:
    return lambda task: task["status"] == wanted


async def update(one: Replica, task_id: str, responses: Mapping[str, Any]) -> None:
    params = {"taskId": task_id, "inputResponses": dict(responses)}
    assert (await one.request("tasks/update", params))["resultType"] == "complete"


async def taken_over(one: Replica, count: int = 1) -> None:
    async def seen() -> int:
        await trio.lowlevel.checkpoint()
        return one.tasks.counters["taken_over"]

    await eventually(seen, lambda n: n >= count)


@asynccontextmanager
async def stopping(url: str, **options: Any) -> AsyncIterator[tuple[Replica, AsyncExitStack]]:
    """A replica, and what stops it (gracefully) before the test's end."""
    async with AsyncExitStack() as stack:
        yield await stack.enter_async_context(replica(url, **options)), stack


async def test_a_task_is_answered_and_cancelled_through_a_replica_that_does_not_hold_it(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    async with replica(url) as a, replica(url) as b:
        task_id = await a.call("approve", {"item": "INV-7"})
        await task_on(b, task_id, asking("who"))
        with pytest.raises(JsonRpcError) as caught:  # the holder's refusal, carried back
            await b.request(
                "tasks/update", {"taskId": task_id, "inputResponses": {"who": {"action": 1}}}
            )
        assert caught.value.code == -32602
        assert caught.value.data == {"reason": "bad_input_responses"}
        with pytest.raises(JsonRpcError) as caught:  # another principal: as unknown, anywhere
            await b.request("tasks/cancel", {"taskId": task_id}, who="mallory")
        assert caught.value.code == -32602
        await update(b, task_id, WHO)
        assert (await task_on(a, task_id, asking("elicitation")))["status"] == "input_required"
        assert a.tasks.counters["answers"] == 1
        assert b.tasks.counters["forwarded"] == 2  # the refused update and this one
        await b.request("tasks/cancel", {"taskId": task_id})
        done = await task_on(b, task_id, status("cancelled"))
        assert "inputRequests" not in done
        assert a.probe.answers == [("INV-7", "Ada")]  # the confirmation ended with the task
        await b.request("tasks/cancel", {"taskId": task_id})  # ended: a no-op anywhere
        assert b.probe.runs == []


async def test_a_key_answered_is_gone_from_the_task_on_every_replica_once_acknowledged(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    async with replica(url) as a, replica(url) as b:
        for item in ("INV-1", "INV-2", "INV-3"):
            task_id = await a.call("approve", {"item": item})
            await task_on(b, task_id, asking("who"))
            await update(a, task_id, WHO)  # on the holder
            # at once, on a replica that reads the record: the answered key is not asked
            assert "who" not in (await b.request("tasks/get", {"taskId": task_id})).get(
                "inputRequests", {}
            )


async def test_a_replica_that_stops_leaves_its_waiting_task_to_another_which_completes_it(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    async with replica(url) as b, stopping(url) as (a, stop_a):
        task_id = await a.call("approve", {"item": "INV-7"})
        await task_on(b, task_id, asking("who"))
        await update(b, task_id, WHO)
        before = await task_on(b, task_id, asking("elicitation"))
        await stop_a.aclose()  # a graceful stop: its task stays in the store, an orphan
        await taken_over(b)
        after = await task_on(b, task_id, asking("elicitation"))
        # the open question is asked again, under the key its client has, as it was asked
        assert after["inputRequests"] == before["inputRequests"]
        assert after["inputRequests"]["elicitation"]["params"]["message"] == CONFIRM
        assert b.probe.runs == ["INV-7"]  # the tool ran again here, once
        assert b.probe.answers == [("INV-7", "Ada")]  # the first answer, from the journal
        await update(b, task_id, SURE)
        done = await task_on(b, task_id, status("completed"))
        assert done["result"]["content"][0]["text"] == "INV-7: Ada Accepted"
        assert done["createdAt"] == before["createdAt"]
        # both questions were charged on the replica that first asked them, not again here
        assert b.runtime.store.rate_stats().admitted == 0
        assert b.tasks.snapshot()["running"] == 0


async def test_an_answer_sent_while_the_task_moves_answers_the_question_asked_again(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    async with replica(url) as b, stopping(url) as (a, stop_a):
        task_id = await a.call("approve", {"item": "INV-7", "pause": 1.0})
        await task_on(b, task_id, asking("who"))
        await stop_a.aclose()
        await taken_over(b)
        # the tool works a second before it asks again: the answer comes first
        assert b.probe.answers == []
        assert set((await b.request("tasks/get", {"taskId": task_id}))["inputRequests"]) == {"who"}
        await update(b, task_id, WHO)
        await task_on(b, task_id, asking("elicitation"))
        assert b.probe.answers == [("INV-7", "Ada")]
        loaded = await b.runtime.store.load_task(task_id)
        assert loaded is not None
        assert [(key, response) for key, _, response in loaded[1]] == [("who", WHO["who"])]
        await update(b, task_id, SURE)
        done = await task_on(b, task_id, status("completed"))
        assert done["result"]["content"][0]["text"] == "INV-7: Ada Accepted"


@asynccontextmanager
async def process_replica(
    url: str, tool: str, arguments: Mapping[str, Any], **config: Any
) -> AsyncIterator[tuple[trio.Process, str]]:
    """A replica in a process of its own (``config`` besides) that calls ``tool`` as a task:
    the process (to SIGKILL), and the task's id."""
    command = [sys.executable, "-m", "tests.store.task_server", url, tool, json.dumps(arguments),
               "1", json.dumps(config)]  # fmt: skip
    dying = await trio.lowlevel.open_process(command, stdout=subprocess.PIPE, cwd=REPO)
    try:
        assert dying.stdout is not None
        line = b""
        with trio.fail_after(30):  # a process that imports everything, on a busy machine
            while not line.endswith(b"\n"):
                line += await dying.stdout.receive_some()
        yield dying, line.decode().strip()
    finally:
        dying.kill()
        with trio.move_on_after(5):
            await dying.wait()


async def kill(process: trio.Process) -> None:
    process.send_signal(signal.SIGKILL)  # no goodbye to the store
    await process.wait()


async def test_a_replica_killed_while_its_task_waits_is_replaced_by_another(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    async with (
        process_replica(url, "approve", {"item": "INV-7"}) as (dying, task_id),
        replica(url) as b,
    ):
        await task_on(b, task_id, asking("who"))
        await update(b, task_id, WHO)  # forwarded to the other process
        before = await task_on(b, task_id, asking("elicitation"))
        await kill(dying)
        await taken_over(b)
        after = await task_on(b, task_id, asking("elicitation"))
        assert after["inputRequests"] == before["inputRequests"]
        assert b.probe.runs == ["INV-7"]
        await update(b, task_id, SURE)
        done = await task_on(b, task_id, status("completed"))
        assert done["result"]["content"][0]["text"] == "INV-7: Ada Accepted"
        assert b.runtime.store.rate_stats().admitted == 0


async def test_a_question_asked_again_after_a_takeover_has_a_new_link_and_the_old_one_is_closed(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    async with replica(url, links=True) as b, stopping(url, links=True) as (a, stop_a):
        task_id = await a.call("approve", {"item": "INV-7"})
        old_link = link_of(await task_on(b, task_id, asking("who")), "who")
        await stop_a.aclose()
        await taken_over(b)
        after = await task_on(b, task_id, linked("who", old_link))
        old = await b.runtime.pages.get(old_link.rsplit("/", 1)[-1])
        assert old is not None
        assert old.state == "closed"
        with pytest.raises(AssertionError, match="closed"):
            await answer_on_link(b, old_link, WHO["who"])
        await answer_on_link(b, link_of(after, "who"), WHO["who"])
        await task_on(b, task_id, asking("elicitation"))
        assert b.probe.answers == [("INV-7", "Ada")]


def link_of(task: Mapping[str, Any], key: str) -> str:
    url: str = task["inputRequests"][key]["params"]["_meta"][PAGE_URL_META]
    assert url.startswith(f"{PAGE_ORIGIN}/elicit/"), url
    return url


def linked(key: str, other_than: str) -> Callable[[dict[str, Any]], bool]:
    """The task asks ``key`` alone, with a link other than ``other_than``."""

    def ok(task: dict[str, Any]) -> bool:
        requests = task.get("inputRequests", {})
        meta = requests.get(key, {}).get("params", {}).get("_meta", {})
        return set(requests) == {key} and meta.get(PAGE_URL_META, other_than) != other_than

    return ok


async def test_a_question_answered_on_its_link_is_not_asked_again_when_its_replica_is_killed(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    async with (
        process_replica(url, "approve", {"item": "INV-7"}, links=True) as (dying, task_id),
        replica(url, links=True) as b,
    ):
        asked = await task_on(b, task_id, asking("who"))
        # answered on its link, through B: the page's answer goes to the process holding it
        await answer_on_link(b, link_of(asked, "who"), WHO["who"])
        before = await task_on(b, task_id, asking("elicitation"))
        loaded = await b.runtime.store.load_task(task_id)
        assert loaded is not None
        assert [(key, response) for key, _, response in loaded[1]] == [("who", WHO["who"])]
        old_link = link_of(before, "elicitation")
        await kill(dying)
        await taken_over(b)
        after = await task_on(b, task_id, linked("elicitation", old_link))
        assert after["inputRequests"]["elicitation"]["params"]["message"] == CONFIRM
        # the answer from the link came from the journal: that question was not asked again
        assert b.probe.answers == [("INV-7", "Ada")]
        # the old link named the dead process's question: closed ("expired or used")
        old = await b.runtime.pages.get(old_link.rsplit("/", 1)[-1])
        assert old is not None
        assert old.state == "closed"
        # the question asked again has a link of its own, which answers it here
        new_link = link_of(after, "elicitation")
        assert await b.tasks.page_links(task_id, "alice") == {"elicitation": new_link}
        await answer_on_link(b, new_link, SURE["elicitation"])
        done = await task_on(b, task_id, status("completed"))
        assert done["result"]["content"][0]["text"] == "INV-7: Ada Accepted"


async def test_a_task_that_ended_just_before_its_replica_stops_is_recorded_ended_not_replayed(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    prefix = parse_store_url(url).prefix
    async with replica(url) as b, stopping(url) as (a, stop_a):
        task_id = await a.call("approve", {"item": "INV-7"})
        await task_on(a, task_id, asking("who"))
        await update(a, task_id, WHO)
        await task_on(a, task_id, asking("elicitation"))
        await update(a, task_id, SURE)
        with trio.fail_after(LIMIT):  # the tool's end, seen in the step it happens
            while a.tasks.snapshot()["running"]:
                await trio.lowlevel.checkpoint()
        await stop_a.aclose()  # before its record is written: the stop writes it
        done = await task_on(b, task_id, status("completed"))
        assert done["result"]["content"][0]["text"] == "INV-7: Ada Accepted"
        # a few heartbeats of B: nothing was left for it to take over
        await trio.sleep(0.5)
        assert not redis_server.keys(f"{prefix}:orphans")
        assert b.tasks.counters["taken_over"] == 0
        assert b.probe.runs == []


async def test_a_task_that_asked_in_url_mode_ends_failed_when_its_replica_is_gone(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    async with replica(url) as b, stopping(url) as (a, stop_a):
        task_id = await a.call("sign_in", {})
        asked = await task_on(b, task_id, status("input_required"))
        ((request,),) = [list(asked["inputRequests"].values())]
        assert request["params"]["mode"] == "url"
        await stop_a.aclose()
        failed = await task_on(b, task_id, status("failed"))
        assert failed["error"]["code"] == -32603
        assert failed["error"]["data"] == {
            "reason": "task_not_resumable",
            "cause": "url_elicitation",
        }
        assert "URL mode" in failed["statusMessage"]
        assert b.probe.runs == []  # never run again


async def test_a_task_taken_over_where_calls_are_not_replayed_ends_failed(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    async with replica(url, replay=False) as b, stopping(url) as (a, stop_a):
        task_id = await a.call("approve", {"item": "INV-7"})
        await task_on(b, task_id, asking("who"))
        await stop_a.aclose()
        failed = await task_on(b, task_id, status("failed"))
        assert failed["error"]["data"] == {
            "reason": "task_not_resumable",
            "cause": "replay_disabled",
        }
        assert b.probe.runs == []


def record(task_id: str, replica_id: str, **facts: Any) -> StoreTask:
    """A durable task's record as a replica that then dies wrote it."""
    detailed = {
        "taskId": task_id,
        "status": "working",
        "createdAt": "2026-11-28T10:00:00.000Z",
        "lastUpdatedAt": "2026-11-28T10:00:00.000Z",
        "ttlMs": 86_400_000,
        "pollIntervalMs": 2000,
    }
    call = {"tool": "approve", "arguments": {"item": "INV-7"}, "id": 1,
            "tenant": ["alice", "", ""], "locale": None}  # fmt: skip
    replay = TaskReplay("approve", call, "alice", "2026-07-28", {"elicitation": {}}, **facts)
    return StoreTask(task_id, detailed, "alice", replica_id, replay)


@pytest.mark.parametrize(
    ("facts", "ended"),
    [
        ({"cancel_requested": True}, "cancelled"),
        ({"blocked": "url_elicitation"}, "failed"),
    ],
)
async def test_a_task_taken_over_ends_as_its_record_says_it_must(
    redis_server: RedisServer, facts: dict[str, Any], ended: str
) -> None:
    url = redis_server.url()
    async with replica(url) as b, stopping(url) as (dead, stop_dead):
        task = record("t-recorded", dead.runtime.store.replica, **facts)
        assert await dead.runtime.store.put_task(task, 60.0, create=True)
        await stop_dead.aclose()
        await task_on(b, "t-recorded", status(ended))
        assert b.probe.runs == []
        stored = await b.runtime.store.get_task("t-recorded", "alice")
        assert stored is not None
        assert stored.terminal
        assert stored.replica == b.runtime.store.replica  # B holds it now, and wrote its end


async def test_a_task_of_a_tool_this_replica_lacks_ends_failed_with_that_error(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    async with replica(url) as b, stopping(url) as (dead, stop_dead):
        task = record("t-unknown", dead.runtime.store.replica)
        assert task.replay is not None
        call = {**task.replay.call, "tool": "retired"}
        task = dataclasses.replace(task, replay=dataclasses.replace(task.replay, call=call))
        assert await dead.runtime.store.put_task(task, 60.0, create=True)
        await stop_dead.aclose()
        failed = await task_on(b, "t-unknown", status("failed"))
        assert failed["error"]["code"] == -32602
        assert "retired" in failed["error"]["message"]


async def test_a_replica_whose_task_was_taken_over_while_it_was_cut_off_stops_its_copy(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    prefix = parse_store_url(url).prefix
    async with replica(url) as a, replica(url) as b:
        task_id = await a.call("approve", {"item": "INV-7"})
        await task_on(b, task_id, asking("who"))
        # what the store does when A's heartbeat expires and B's claims its task
        a_id, b_id = a.runtime.store.replica, b.runtime.store.replica
        redis_server.cli("HSET", f"{prefix}:task:{task_id}", "h", b_id)
        redis_server.cli("SMOVE", f"{prefix}:taskset:{a_id}", f"{prefix}:taskset:{b_id}", task_id)
        b.tasks.tasks_claimed([task_id])
        await taken_over(b)
        await task_on(b, task_id, asking("who"))
        # A still runs its copy, and learns it is not the holder when it records an answer
        with pytest.raises(JsonRpcError) as caught:
            await update(a, task_id, WHO)
        assert caught.value.data == {"reason": "task_moving"}
        assert a.tasks.counters["lost"] == 1
        assert a.probe.answers == []  # nothing was applied there
        await update(a, task_id, WHO)  # the retry: forwarded to B
        await task_on(a, task_id, asking("elicitation"))
        await update(a, task_id, SURE)
        done = await task_on(a, task_id, status("completed"))
        assert done["result"]["content"][0]["text"] == "INV-7: Ada Accepted"
        assert b.probe.answers == [("INV-7", "Ada"), ("INV-7", "confirm=Accepted")]
        assert a.tasks.snapshot()["held"] == 0


async def test_nothing_of_a_task_is_left_in_the_store_past_its_ttl(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    prefix = parse_store_url(url).prefix
    short: dict[str, Any] = {"task_form_deadline_s": 1.0, "task_url_deadline_s": 1.0,
             "task_warn_before_s": 0.0, "task_ttl_s": 2.0}  # fmt: skip
    async with replica(url, **short) as b, stopping(url, **short) as (a, stop_a):
        answered = await a.call("approve", {"item": "INV-1"})
        await task_on(b, answered, asking("who"))
        await update(b, answered, WHO)  # a journal, a cancel, an end
        await b.request("tasks/cancel", {"taskId": answered})
        waiting = await a.call("approve", {"item": "INV-2"})
        await task_on(b, waiting, asking("who"))
        assert redis_server.keys(f"{prefix}:task*")  # records, a journal, A's task set
        await stop_a.aclose()
        await taken_over(b)  # an orphan, then B's
        await eventually(
            lambda: trio.to_thread.run_sync(lambda: redis_server.keys(f"{prefix}:*task*")),
            lambda left: not left,
        )
        assert not redis_server.keys(f"{prefix}:orphans")
        assert b.tasks.snapshot()["held"] == 0  # and B forgot it at its TTL too
        with pytest.raises(JsonRpcError) as caught:
            await b.request("tasks/get", {"taskId": waiting})
        assert caught.value.code == -32602
