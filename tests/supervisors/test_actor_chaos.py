"""Chaos: hundreds of concurrent callers with random timeouts while the actor randomly crashes
and its supervisor restarts it. Every call must end in its reply or a typed error; none hangs.
The actor must never run a handler while another one is in progress.

The seed is printed; set ERLMCP_CHAOS_SEED to replay one. ``--long`` runs a bigger storm.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from typing import Any

import trio
import trio.testing

from supervisors import (
    NOREPLY,
    Actor,
    ActorGone,
    ActorRef,
    Busy,
    CallTimeout,
    ChildSpec,
    ReplyTo,
    Supervisor,
    actor_starter,
)
from tests.conftest import count_tasks


class ChaosActor(Actor):
    mailbox_size = 16

    def __init__(self, rng: random.Random, registry: dict[str, ActorRef], crash_p: float) -> None:
        self.rng = rng
        self.registry = registry
        self.crash_p = crash_p

    async def init(self) -> None:
        self.registry["chaos"] = self.ref

    in_handler = False  # one handler at a time
    overlaps: list[Any] = []  # shared across incarnations, checked at the end

    async def handle_call(self, msg: Any, reply_to: ReplyTo) -> Any:
        if self.in_handler:
            self.overlaps.append(msg)
        self.in_handler = True
        try:
            return await self._handle_call(msg, reply_to)
        finally:
            self.in_handler = False

    async def _handle_call(self, msg: Any, reply_to: ReplyTo) -> Any:
        roll = self.rng.random()
        if roll < self.crash_p:
            raise RuntimeError("chaos crash")
        if roll < 0.3:
            await trio.sleep(self.rng.uniform(0, 0.05))
        elif roll < 0.5:
            delay = self.rng.uniform(0, 0.5)

            async def later() -> None:
                await trio.sleep(delay)
                reply_to.reply(("echo", msg))

            self.nursery.start_soon(later)
            return NOREPLY
        return ("echo", msg)

    async def handle_cast(self, msg: Any) -> None:
        raise RuntimeError("killed by chaos monkey")


async def test_actor_chaos(autojump_clock: trio.testing.MockClock, long_run: bool) -> None:
    seed = int(os.environ.get("ERLMCP_CHAOS_SEED", random.randrange(2**32)))
    print(f"actor chaos seed={seed} (replay: ERLMCP_CHAOS_SEED={seed})")
    rng = random.Random(seed)
    callers, calls_each = (2000, 10) if long_run else (300, 5)
    ChaosActor.overlaps.clear()
    registry: dict[str, ActorRef] = {}
    outcomes: Counter[str] = Counter()
    baseline = count_tasks()
    spec = ChildSpec("chaos", actor_starter(lambda: ChaosActor(rng, registry, crash_p=0.01)))
    sup = Supervisor([spec], max_restarts=1_000_000, max_seconds=1)

    async def caller(i: int) -> None:
        await trio.sleep(rng.uniform(0, 5))  # spread arrivals so replies, not only Busy, happen
        for j in range(calls_each):
            msg = (i, j)
            timeout = rng.choice([None, 0.01, 0.1, 1.0, 10.0])
            try:
                reply = await registry["chaos"].call(msg, timeout=timeout)
            except Busy:
                outcomes["busy"] += 1
            except ActorGone:
                outcomes["gone"] += 1
            except CallTimeout:
                outcomes["timeout"] += 1
            else:
                assert reply == ("echo", msg)  # never someone else's reply
                outcomes["reply"] += 1
            await trio.sleep(rng.uniform(0, 0.02))

    async def monkey(stop: trio.Event) -> None:
        while not stop.is_set():
            await trio.sleep(rng.uniform(0.05, 0.3))
            try:
                registry["chaos"].cast("die")
            except (Busy, ActorGone):
                outcomes["monkey_missed"] += 1

    with trio.fail_after(3600):  # virtual seconds: a hang shows up as TooSlowError, not forever
        async with trio.open_nursery() as nursery:
            await nursery.start(sup.run)
            stop = trio.Event()
            nursery.start_soon(monkey, stop)
            async with trio.open_nursery() as calls:
                for i in range(callers):
                    calls.start_soon(caller, i)
            stop.set()
            await trio.testing.wait_all_tasks_blocked()
            sup.request_stop()
    total = outcomes["reply"] + outcomes["busy"] + outcomes["gone"] + outcomes["timeout"]
    print(f"actor chaos outcomes: {dict(outcomes)}")
    assert total == callers * calls_each
    assert outcomes["reply"] > 0
    assert outcomes["gone"] > 0  # the chaos really did kill callers' actors
    assert outcomes["timeout"] > 0
    assert ChaosActor.overlaps == [], "handlers overlapped"
    assert count_tasks() == baseline
