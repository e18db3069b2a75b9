"""Random interleavings of ``tasks/update`` (partial, invalid, stale and unknown keys),
``tasks/cancel``, polls and the passing of time against one task asking several questions at
once, through the endpoint and the real runtime on trio's mock clock. Whatever the order:
no question is answered twice, a key always names the one request it first named (a re-prompt
gets a key of its own) and never comes back once it left ``inputRequests``, and the task ends
in exactly one terminal state that never changes."""

from __future__ import annotations

from collections import Counter
from typing import Any

import trio
import trio.testing
from hypothesis import given, settings, strategies as st

from erlmcp_py.actors.runtime import open_runtime
from erlmcp_py.core.outcomes import Accepted, Tenant
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.jsonrpc import Request
from erlmcp_py.mcp.mrtr import open_continuations
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.stateless import StatelessEndpoint
from erlmcp_py.mcp.tasks import open_tasks

EXT = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {EXT: {}}},
}
TERMINAL = {"completed", "failed", "cancelled"}
SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0}},
    "required": ["n"],
}

OPS = st.one_of(
    st.tuples(
        st.just("answer"),
        st.lists(st.integers(0, 7), max_size=4),  # which keys seen so far (stale ones too)
        st.sampled_from(["valid", "invalid", "decline", "garbage-key"]),
    ),
    st.tuples(st.just("sleep"), st.sampled_from([0.0, 1.0, 60.0, 400.0])),
    st.tuples(st.just("cancel")),
    st.tuples(st.just("get")),
)


def build(outcomes: Counter[str]) -> Server:
    server = Server("interleavings", "1.0")

    @server.tool(task=True)
    async def panel(ctx: Context) -> str:
        async def ask(i: int) -> None:
            outcome = await ctx.elicit(f"Member {i}?", SCHEMA, key=f"m{i}")
            outcomes[f"m{i}"] += 1  # one outcome per question, however it is answered
            if isinstance(outcome, Accepted):
                outcomes["accepted"] += 1

        async with trio.open_nursery() as nursery:
            for i in range(3):
                nursery.start_soon(ask, i)
        return "panel done"

    return server


async def scenario(ops: list[tuple[Any, ...]]) -> None:
    outcomes: Counter[str] = Counter()
    server = build(outcomes)
    config = {"rate": 10_000, "task_form_deadline_s": 600.0, "task_warn_before_s": 60.0,
              "task_ttl_s": 36_000.0}  # fmt: skip
    ids = iter(range(1, 10_000))
    async with open_runtime(config) as runtime:
        server.runtime = runtime
        async with open_continuations() as registry, open_tasks(runtime) as tasks:
            endpoint = StatelessEndpoint(server, runtime, registry, tasks=tasks)

            async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
                return await endpoint.handle(
                    Request(next(ids), method, {**params, "_meta": META}),
                    principal="p",
                    tenant=Tenant(user="p"),
                    client_id="p",
                )

            task_id = (await request("tools/call", {"name": "panel", "arguments": {}}))["taskId"]
            seen: list[str] = []  # every key ever shown, in order
            shown: dict[str, Any] = {}  # the request each key named when first shown
            gone: set[str] = set()  # keys that left the map
            ended: dict[str, Any] | None = None

            async def check() -> None:
                nonlocal ended
                await trio.testing.wait_all_tasks_blocked()
                task = await request("tasks/get", {"taskId": task_id})
                asked = task.get("inputRequests", {})
                keys = set(asked)
                assert not keys & gone, f"a key came back: {keys & gone}"
                for key, named in asked.items():
                    if key not in seen:
                        seen.append(key)
                        shown[key] = named
                    assert shown[key] == named, f"{key} names another request now"
                gone.update(set(seen) - keys)
                if ended is not None:  # terminal, and never changes
                    assert {k: v for k, v in task.items() if k != "_meta"} == ended
                elif task["status"] in TERMINAL:
                    ended = {k: v for k, v in task.items() if k != "_meta"}
                assert all(n <= 1 for k, n in outcomes.items() if k.startswith("m"))

            await check()
            for op in ops:
                if op[0] == "answer":
                    picked = [seen[i % len(seen)] for i in op[1]] if seen else []
                    kind = op[2]
                    if kind == "garbage-key":
                        picked = [f"nobody-{i}" for i in op[1]]
                    response: dict[str, Any] = {
                        "valid": {"action": "accept", "content": {"n": 1}},
                        "invalid": {"action": "accept", "content": {"n": -5}},
                        "decline": {"action": "decline"},
                        "garbage-key": {"action": "accept", "content": {"n": 2}},
                    }[kind]
                    ack = await request(
                        "tasks/update",
                        {"taskId": task_id, "inputResponses": dict.fromkeys(picked, response)},
                    )
                    assert ack["resultType"] == "complete"
                elif op[0] == "sleep":
                    await trio.sleep(op[1])
                elif op[0] == "cancel":
                    await request("tasks/cancel", {"taskId": task_id})
                await check()
            await trio.sleep(3 * 700)  # past every deadline, re-prompts included
            await check()
            assert ended is not None, "the task never ended"
            assert ended["status"] in TERMINAL
            if ended["status"] == "completed":
                assert sorted(k for k in outcomes if k.startswith("m")) == ["m0", "m1", "m2"]
            statuses = Counter(
                str(row.status) for row in await runtime.list_elicitations(tenant=Tenant("p"))
            )
            assert not {"pending", "active"} & set(statuses)  # every question ended


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(OPS, max_size=12))
def test_any_interleaving_answers_each_question_once_and_ends_the_task_once(
    ops: list[tuple[Any, ...]],
) -> None:
    trio.run(scenario, ops, clock=trio.testing.MockClock(autojump_threshold=0))
