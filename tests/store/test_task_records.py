"""Tasks' records in both stores (the embedded one and a real ``redis-server``): written,
read back bound to their principal, expired with the task, deleted, never revived by a late
change; and, with Redis, a task created on one replica read and answered on another, a task
the store cannot record refused before its tool runs.

Real time here (the Redis server's TTLs run on it): every wait is bounded.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest
import trio

from erlmcp_py import Tenant, open_runtime
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.core.policy import RatePolicy
from erlmcp_py.core.store_wire import StoreTask
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.jsonrpc import JsonRpcError, Request
from erlmcp_py.mcp.mrtr import open_continuations
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.stateless import StatelessEndpoint
from erlmcp_py.mcp.tasks import open_tasks
from erlmcp_py.store import MemoryStore
from tests.store.server import RedisServer

EXT = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {EXT: {}}},
}
RECORD = StoreTask("t-1", {"taskId": "t-1", "status": "working"}, "alice", "r1")
T = TypeVar("T")
ENDED = StoreTask("t-2", {"taskId": "t-2", "status": "completed", "result": {}}, "alice", "r1")


async def test_the_embedded_store_keeps_a_task_for_its_ttl_and_only_for_its_principal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = MemoryStore(RatePolicy(), "r1")
    assert await store.put_task(RECORD, 60.0, create=True)
    assert await store.get_task("t-1", "alice") == RECORD
    assert await store.get_task("t-1", "bob") is None  # another principal: as unknown
    assert await store.get_task("t-9", "alice") is None
    assert not await store.put_task(ENDED, 60.0)  # a change of no record: nothing written
    assert await store.get_task("t-2", "alice") is None
    assert await store.put_task(ENDED, 60.0, create=True)
    assert await store.put_task(ENDED, 60.0)  # a change replaces the record
    assert await store.get_task("t-2", "alice") == ENDED
    await store.delete_task("t-2")
    assert await store.get_task("t-2", "alice") is None
    await trio.sleep(61)
    assert await store.get_task("t-1", "alice") is None  # past its life
    assert not await store.put_task(RECORD, 60.0)  # and a late change does not revive it


async def test_redis_keeps_a_task_for_its_ttl_and_only_for_its_principal(
    redis_server: RedisServer,
) -> None:
    async with open_runtime({"store": redis_server.url()}) as runtime:
        store = runtime.store
        mine = dataclasses.replace(RECORD, replica=store.replica)
        ended = dataclasses.replace(ENDED, replica=store.replica)
        assert await store.put_task(mine, 0.3, create=True)
        assert await store.get_task("t-1", "alice") == mine
        assert await store.get_task("t-1", "bob") is None
        assert not await store.put_task(ended, 30.0)  # a change of no record: nothing written
        assert await store.put_task(ended, 30.0, create=True)
        assert (await store.get_task("t-2", "alice")) == ended
        await store.delete_task("t-2")
        assert await store.get_task("t-2", "alice") is None
        await eventually(lambda: store.get_task("t-1", "alice"), lambda found: found is None)
        assert not await store.put_task(mine, 30.0)  # and a late change does not revive it


async def eventually(probe: Callable[[], Awaitable[T]], ok: Callable[[T], bool]) -> T:
    """``probe()`` until ``ok`` of its value, within 5 s."""
    with trio.fail_after(5):
        while True:
            value = await probe()
            if ok(value):
                return value
            await trio.sleep(0.02)


def build() -> Server:
    server = Server("tasks-replicas", "1.0")

    @server.tool(task=True)
    async def confirm(ctx: Context) -> str:
        outcome = await ctx.elicit_confirm("Go?")
        return type(outcome).__name__

    @server.tool(task=True)
    async def quick() -> str:
        return "done"

    return server


class Replica:
    def __init__(self, endpoint: StatelessEndpoint) -> None:
        self.endpoint = endpoint
        self.ids = itertools.count(1)

    async def request(
        self, method: str, params: Mapping[str, Any], who: str = "alice"
    ) -> dict[str, Any]:
        request = Request(next(self.ids), method, {**params, "_meta": META})
        return await self.endpoint.handle(
            request, principal=who, tenant=Tenant(user=who), client_id=who
        )


@asynccontextmanager
async def replica(url: str) -> AsyncIterator[tuple[Replica, Runtime]]:
    server = build()
    async with open_runtime({"store": url, "rate": 1000}) as runtime:
        server.runtime = runtime
        async with open_continuations() as registry, open_tasks(runtime, durable=True) as tasks:
            yield Replica(StatelessEndpoint(server, runtime, registry, tasks=tasks)), runtime


async def test_a_task_created_on_one_replica_is_read_on_another(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    async with replica(url) as (a, _), replica(url) as (b, _):
        created = await a.request("tools/call", {"name": "confirm", "arguments": {}})
        task_id = created["taskId"]
        seen = await b.request("tasks/get", {"taskId": task_id})  # recorded before the answer
        assert seen["taskId"] == task_id
        seen = await eventually(
            lambda: b.request("tasks/get", {"taskId": task_id}),
            lambda task: task["status"] == "input_required",
        )
        (key,) = seen["inputRequests"]
        for method in ("tasks/get", "tasks/cancel"):
            with pytest.raises(JsonRpcError) as caught:
                await b.request(method, {"taskId": task_id}, who="mallory")
            assert caught.value.code == -32602
        update = {"taskId": task_id, "inputResponses": {key: {"action": "decline"}}}
        await b.request("tasks/update", update)  # forwarded to the replica running it
        done = await eventually(
            lambda: b.request("tasks/get", {"taskId": task_id}),
            lambda task: task["status"] == "completed",
        )
        assert done["result"]["content"][0]["text"] == "Declined"
        ack = await b.request("tasks/cancel", {"taskId": task_id})  # ended: a no-op anywhere
        assert ack["resultType"] == "complete"


async def test_a_task_the_store_cannot_record_is_refused_before_its_tool_runs(
    redis_server: RedisServer,
) -> None:
    async with replica(redis_server.url()) as (a, runtime):
        redis_server.stop()
        try:
            with trio.fail_after(5), pytest.raises(JsonRpcError) as caught:
                await a.request("tools/call", {"name": "quick", "arguments": {}})
            assert caught.value.code == -32603
            assert caught.value.data == {"reason": "store_unavailable"}
        finally:
            redis_server.start()
        assert runtime.store.stats()["errors"]["task_put"] >= 1
