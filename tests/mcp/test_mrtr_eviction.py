"""A full continuation registry evicts a suspended call instead of refusing a new one.

In-process under trio's autojump clock: the registry behind a ``StatelessEndpoint``, principals
named per request. At ``max_continuations`` a new call evicts the least recently used call
nobody is attached to, of the principal holding the most; its retry is then replayed
(``auto``) or refused ``unknown_continuation`` (``suspend``); a registry full of attached
calls refuses (``busy``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py.actors.runtime import Runtime, open_runtime
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.mcp.jsonrpc import JsonRpcError, Request
from erlmcp_py.mcp.mrtr import RequestStateRefused, open_continuations
from erlmcp_py.mcp.stateless import StatelessEndpoint
from tests.mcp.test_mrtr import make_server, meta, only_request

PERSON = {"action": "accept", "content": {"name": "Ada", "age": 36}}
CONFIRM = {"action": "accept", "content": {"confirm": True}}


class Calls:
    """``signup`` calls of named principals through one endpoint, and what they reach."""

    def __init__(self, endpoint: StatelessEndpoint, seen: dict[str, Any]) -> None:
        self.endpoint = endpoint
        self.registry = endpoint.registry
        self.runtime: Runtime = endpoint.runtime
        self.seen = seen  # what the server's tools did (make_server)
        self.ids = 0

    def request(self, state: str | None = None, answers: Any = None) -> Request:
        self.ids += 1
        params: dict[str, Any] = {"name": "signup", "arguments": {}, "_meta": meta()}
        if state is not None:
            params["requestState"] = state
            params["inputResponses"] = answers
        return Request(self.ids, "tools/call", params)

    async def call(
        self, principal: str, state: str | None = None, answers: Any = None
    ) -> dict[str, Any]:
        return await self.endpoint.handle(
            self.request(state, answers),
            principal=principal,
            tenant=Tenant(user=principal),
            client_id=principal,
        )


@asynccontextmanager
async def registry_of(mrtr: str, cap: int, **options: Any) -> AsyncIterator[Calls]:
    server, seen = make_server()
    async with (
        open_runtime({"rate": 10_000, "max_pending_per_client": 10_000}) as runtime,
        open_continuations(mrtr=mrtr, max_continuations=cap, **options) as registry,
    ):
        yield Calls(StatelessEndpoint(server, runtime, registry), seen)
        registry.close()


async def elicitation_statuses(runtime: Runtime, principal: str) -> list[str]:
    rows = await runtime.list_elicitations(tenant=Tenant(user=principal))
    return sorted(row.status for row in rows)


async def test_a_full_registry_evicts_the_heaviest_principals_least_recent_suspended_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with registry_of("auto", 4) as calls:
        heavy = [await calls.call("heavy") for _ in range(3)]
        light = await calls.call("light")
        newcomer = await calls.call("newcomer")  # the registry is full: not refused
        assert newcomer["resultType"] == "input_required"
        assert calls.registry.counters["evicted"] == 1
        assert len(calls.registry) == 4
        await trio.testing.wait_all_tasks_blocked()
        # the evicted call's tool ended, and so did its elicitation (no leak, outcome named)
        statuses = await elicitation_statuses(calls.runtime, "heavy")
        assert statuses == ["abandoned", "active", "active"]
        assert calls.runtime.metrics()["pending"] == 4
        assert calls.registry.snapshot()["unfinished"] == 4
        # the calls of the lighter principals stay where they are (resumed, not replayed)
        key, _ = only_request(light)
        resumed = await calls.call("light", light["requestState"], {key: PERSON})
        assert resumed["resultType"] == "input_required"
        assert calls.registry.counters["replayed"] == 0
        # heavy's second call was not the least recently used one: it resumes too
        key, _ = only_request(heavy[1])
        assert (await calls.call("heavy", heavy[1]["requestState"], {key: PERSON}))[
            "resultType"
        ] == "input_required"
        assert calls.registry.counters["replayed"] == 0
        assert calls.seen["invocations"] == 5


async def test_an_evicted_calls_retry_is_replayed_and_completes_in_auto_mode(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with registry_of("auto", 2) as calls:
        first = await calls.call("heavy")
        await calls.call("heavy")
        await calls.call("other")  # evicts heavy's first call
        assert calls.registry.counters["evicted"] == 1
        key, _ = only_request(first)
        again = await calls.call("heavy", first["requestState"], {key: PERSON})
        assert calls.registry.counters["replayed"] == 1
        key, params = only_request(again)
        assert params["message"] == "Create the account?"
        done = await calls.call("heavy", again["requestState"], {key: CONFIRM})
        assert done["resultType"] == "complete"
        assert done["content"][0]["text"] == "plan=free: Ada (36) confirmed=True"
        # the replay made room as a new call does (the registry was full again)
        assert calls.registry.counters["evicted"] == 2
        assert calls.seen["invocations"] == 4


async def test_an_evicted_calls_retry_is_refused_as_unknown_in_suspend_mode(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with registry_of("suspend", 2) as calls:
        first = await calls.call("heavy")
        await calls.call("heavy")
        await calls.call("other")
        key, _ = only_request(first)
        with pytest.raises(RequestStateRefused) as refused:
            await calls.call("heavy", first["requestState"], {key: PERSON})
        assert refused.value.reason == "unknown_continuation"
        assert refused.value.data == {"reason": "unknown_continuation"}
        await trio.testing.wait_all_tasks_blocked()
        assert await elicitation_statuses(calls.runtime, "heavy") == ["abandoned", "active"]
        fresh = await calls.call("heavy")  # what the error tells the client to do
        assert fresh["resultType"] == "input_required"


async def test_a_registry_full_of_attached_calls_refuses_and_evicts_none(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with registry_of("auto", 2, hold_s=600) as calls:
        firsts = [await calls.call(p) for p in ("a", "b")]
        retries = []
        for principal, first in zip(("a", "b"), firsts, strict=True):
            key, _ = only_request(first)
            request = calls.request(first["requestState"], {key: PERSON})
            # attached and not awaited yet: each call works for its retry
            retries.append(calls.endpoint.accept(request, principal=principal, client_id=principal))
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(JsonRpcError) as full:
            await calls.call("c")
        assert full.value.data == {"reason": "busy"}
        assert calls.registry.counters["refused.busy"] == 1
        assert calls.registry.counters["evicted"] == 0
        for attached in retries:  # both go on as if nothing happened
            second = await calls.endpoint.answer(attached)
            assert only_request(second)[1]["message"] == "Create the account?"
        newcomer = await calls.call("c")  # detached again: one is evicted for the newcomer
        assert newcomer["resultType"] == "input_required"
        assert calls.registry.counters["evicted"] == 1


async def test_a_principal_at_its_share_is_refused_rather_than_evicting_its_own(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with registry_of("auto", 10, max_per_principal=2) as calls:
        await calls.call("a")
        await calls.call("a")
        with pytest.raises(JsonRpcError) as busy:
            await calls.call("a")
        assert busy.value.data == {"reason": "principal_busy"}
        assert calls.registry.counters["evicted"] == 0
