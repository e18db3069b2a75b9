"""Chaos on durable tasks (a real ``redis-server``): many tasks on replicas sharing the store,
answered at random (valid, invalid, partial, unknown keys, declined), cancelled at random,
while replicas die: processes of their own are SIGKILLed with tasks waiting, an in-process
replica stops gracefully. Every task ends in exactly one terminal state (what a client reads
never changes once it ended, on any replica), no question is answered twice (an answered key
is never asked again, and the store's journal holds each key once), and nothing of a task is
left in the store after its TTL.

The choices (which task gets which answer when, and when a replica dies) come from a seed,
printed; the interleaving with the store's heartbeats runs on real time, so a run is
reproducible in its choices, not in its timing. ``TASK_CHAOS_SEED`` replays a seed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import trio

from erlmcp_py.core.store_wire import parse_store_url
from erlmcp_py.mcp.jsonrpc import JsonRpcError
from tests.deploy.support import REPO
from tests.store.server import RedisServer
from tests.store.task_server import Replica, replica

TASKS_PER_OWNER = 6  # tasks each creator makes: 2 in-process replicas, 1 to stop, 2 to kill
TERMINAL = {"completed", "failed", "cancelled"}
#: Short lives so that the run sees them end: a question waits at most 6 s, a task lives 8 s.
CONFIG: dict[str, Any] = {
    "task_form_deadline_s": 6.0,
    "task_url_deadline_s": 6.0,
    "task_warn_before_s": 0.0,
    "task_ttl_s": 8.0,
    "max_pending_per_client": 1000,
}
LIMIT = 60.0  # seconds: bound of the whole run


@dataclass
class Seen:
    """What the client saw of one task."""

    task_id: str
    statuses: list[str] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)  # keys acknowledged with a valid answer
    asked_again: list[str] = field(default_factory=list)  # answered keys shown later
    ended: dict[str, Any] | None = None


def answer(rng: random.Random, key: str, request: dict[str, Any]) -> dict[str, Any]:
    """A random answer to a question of the test's tools: valid, invalid (re-prompted under
    a new key) or declined."""
    kind = rng.choice(["valid", "valid", "valid", "invalid", "decline"])
    if kind == "decline":
        return {"action": "decline"}
    if request["params"].get("mode") == "url":  # the user says they went through it
        return {"action": "accept"}
    if key.startswith("elicitation"):  # a confirmation
        content: dict[str, Any] = {"confirm": "yes" if kind == "invalid" else rng.random() < 0.7}
    else:
        content = {"name": 7 if kind == "invalid" else rng.choice(["Ada", "Grace", "Edsger"])}
    return {"action": "accept", "content": content}


async def drive(seen: Seen, rng: random.Random, replicas: list[Replica]) -> None:
    """Poll and answer one task through random live replicas until it ends."""
    while True:
        one = rng.choice(replicas)
        try:
            task = await one.request("tasks/get", {"taskId": seen.task_id})
        except JsonRpcError as exc:
            raise AssertionError(f"tasks/get of {seen.task_id}: {exc.data}") from exc
        status = task["status"]
        seen.statuses.append(status)
        asked = set(task.get("inputRequests", {}))
        seen.asked_again.extend(sorted(asked & seen.answered))
        if status in TERMINAL:
            seen.ended = task
            await check_end(seen, replicas)
            return
        roll = rng.random()
        if roll < 0.04:
            await send(one, "tasks/cancel", {"taskId": seen.task_id})
        elif asked and roll < 0.6:
            # partial: some of the outstanding keys, sometimes with one never issued
            keys = rng.sample(sorted(asked), rng.randint(1, len(asked)))
            responses = {key: answer(rng, key, task["inputRequests"][key]) for key in keys}
            if rng.random() < 0.2:
                responses["never-issued"] = {"action": "decline"}
            params = {"taskId": seen.task_id, "inputResponses": responses}
            if await send(one, "tasks/update", params):
                seen.answered.update(keys)
        await trio.sleep(rng.choice([0.02, 0.1, 0.2, 0.4]))


async def check_end(seen: Seen, replicas: list[Replica]) -> None:
    """As soon as a task is seen ended, before its TTL can take it: its journal holds each
    answered key once, and every replica reads the same end."""
    loaded = await replicas[0].runtime.store.load_task(seen.task_id)
    assert loaded is not None, seen.task_id
    keys = [key for key, _, _ in loaded[1]]
    assert len(keys) == len(set(keys)), (seen.task_id, keys)
    assert seen.ended is not None
    for one in replicas:
        again = await one.request("tasks/get", {"taskId": seen.task_id})
        assert plain(again) == plain(seen.ended), (seen.task_id, again, seen.ended)


async def send(one: Replica, method: str, params: dict[str, Any]) -> bool:
    """``method``; whether it was acknowledged (``task_moving``: not, the task is between
    replicas and the client tries again later)."""
    try:
        await one.request(method, params)
    except JsonRpcError as exc:
        if exc.data != {"reason": "task_moving"}:
            raise
        return False
    return True


def plain(task: dict[str, Any]) -> dict[str, Any]:
    """A ``tasks/get`` result without its ``_meta``."""
    return {key: value for key, value in task.items() if key != "_meta"}


async def until_stopped(
    url: str, stop: trio.Event, *, task_status: trio.TaskStatus[Replica] = trio.TASK_STATUS_IGNORED
) -> None:
    """A replica in this process that stops gracefully when ``stop`` is set."""
    async with replica(url, **CONFIG) as one:
        task_status.started(one)
        await stop.wait()


@asynccontextmanager
async def doomed(url: str, tool: str, arguments: dict[str, Any]) -> AsyncIterator[Any]:
    """A replica in a process of its own that makes :data:`TASKS_PER_OWNER` tasks; yields
    ``(process, task ids)``; killed at the end if it still runs."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "tests.store.task_server", url, tool, json.dumps(arguments),
         str(TASKS_PER_OWNER), json.dumps(CONFIG)],
        stdout=subprocess.PIPE,
        cwd=REPO,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        out = b""
        with trio.fail_after(30):  # a process that imports everything, on a busy machine
            while out.count(b"\n") < TASKS_PER_OWNER:
                out += await process.stdout.receive_some()
        yield process, out.decode().split()
    finally:
        process.kill()
        with trio.move_on_after(5):
            await process.wait()


async def test_tasks_end_once_answer_once_and_leave_nothing_when_replicas_die_at_random(
    redis_server: RedisServer,
) -> None:
    seed = int(os.environ.get("TASK_CHAOS_SEED", random.randrange(2**32)))
    print(f"task chaos seed: {seed} (TASK_CHAOS_SEED={seed} replays its choices)")
    rng = random.Random(seed)
    url = redis_server.url()
    prefix = parse_store_url(url).prefix
    tools = [
        ("approve", lambda n: {"item": f"I-{n}"}),
        ("pair", lambda n: {"item": f"P-{n}"}),
        ("sign_in", lambda n: {}),  # cannot be run again: ends failed when its replica dies
    ]
    serial = iter(range(10_000))

    def a_call() -> tuple[str, dict[str, Any]]:
        tool, arguments = rng.choice(tools)
        return tool, arguments(next(serial))

    with trio.fail_after(LIMIT):
        async with (
            replica(url, **CONFIG) as a,
            replica(url, **CONFIG) as b,
            trio.open_nursery() as hosting,
            AsyncExitStack() as killing,
        ):
            stop_c = trio.Event()
            c: Replica = await hosting.start(until_stopped, url, stop_c)
            task_ids: list[str] = []
            for owner in (a, b, c):
                for _ in range(TASKS_PER_OWNER):
                    task_ids.append(await owner.call(*a_call()))
            processes = []
            for _ in range(2):
                process, ids = await killing.enter_async_context(doomed(url, *a_call()))
                processes.append(process)
                task_ids.extend(ids)
            seen = {task_id: Seen(task_id) for task_id in task_ids}
            # the replicas that die, in a random order at random times while the tasks run
            deaths: list[Any] = [*processes, c]
            rng.shuffle(deaths)
            moments = sorted(rng.uniform(0.05, 1.0) for _ in deaths)

            async def die() -> None:
                start = trio.current_time()
                for victim, moment in zip(deaths, moments, strict=True):
                    await trio.sleep_until(start + moment)
                    if victim is c:
                        stop_c.set()  # gracefully: its tasks go at once
                    else:
                        victim.send_signal(signal.SIGKILL)  # no goodbye to the store
                        await victim.wait()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(die)
                for task_id in task_ids:
                    nursery.start_soon(drive, seen[task_id], random.Random(rng.random()), [a, b])

            # each task ended, and its journal and its end were checked when it did
            assert all(task.ended is not None for task in seen.values())
            ends = Counter(task.ended["status"] for task in seen.values() if task.ended)
            taken_over = a.tasks.counters["taken_over"] + b.tasks.counters["taken_over"]
            print(f"task chaos: {len(task_ids)} tasks, ends {dict(ends)}, taken over {taken_over}")
            # nothing left after the TTL (a few heartbeats past the last task's)
            with trio.fail_after(CONFIG["task_ttl_s"] + 10):
                left = partial(redis_server.keys, f"{prefix}:*task*")
                while await trio.to_thread.run_sync(left):  # noqa: ASYNC110 - the store's keys
                    await trio.sleep(0.1)
            assert not redis_server.keys(f"{prefix}:orphans")
            assert a.tasks.snapshot()["held"] == b.tasks.snapshot()["held"] == 0

    for task in seen.values():
        terminal = [s for s in task.statuses if s in TERMINAL]
        assert terminal, (task.task_id, task.statuses)
        assert set(terminal) == {terminal[-1]}, (task.task_id, task.statuses)
        first_end = task.statuses.index(terminal[0])
        assert all(s in TERMINAL for s in task.statuses[first_end:]), task.statuses
        assert task.asked_again == [], (task.task_id, task.asked_again)
    assert taken_over > 0
