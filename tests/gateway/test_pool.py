"""The pool of session-era upstream sessions lent to one call at a time: reuse, bounds, the
capabilities each session declared, questions going to the call that holds the session, idle
sessions closed. The official SDK's ``MCPServer`` is the upstream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py.client import ClientRequestError, ServerRequest
from erlmcp_py.gateway import Upstream, UpstreamPolicy
from erlmcp_py.gateway._link import Connection, UpstreamGone, UpstreamLink, UpstreamSlots
from erlmcp_py.gateway._pool import UpstreamPool
from erlmcp_py.mcp.jsonrpc import Response
from tests.gateway.support import LIMIT, alive, poll, upstream_command

FORM = {"elicitation": {"form": {}}}


class Call:
    """One call's events: answers the upstream's questions with ``answer``."""

    def __init__(self, answer: Mapping[str, Any] | None = None) -> None:
        self.answer = answer
        self.asked: list[ServerRequest] = []

    async def _answer(self, request: ServerRequest) -> Mapping[str, Any]:
        self.asked.append(request)
        if self.answer is None:
            raise ClientRequestError(-32601, "Method not found")
        return self.answer

    def upstream_request(self, connection: Connection, request: ServerRequest) -> Any:
        return self._answer(request)

    def upstream_notification(
        self, connection: Connection, method: str, params: Mapping[str, Any]
    ) -> None:
        pass

    async def upstream_connected(self, connection: Connection) -> None:
        pass


@asynccontextmanager
async def pool(**options: Any) -> AsyncIterator[UpstreamPool]:
    upstream = Upstream(command=upstream_command())
    the_pool = UpstreamPool(upstream, UpstreamPolicy(), UpstreamSlots(16), **options)
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            await nursery.start(the_pool.run)
            yield the_pool
            nursery.cancel_scope.cancel()


async def tool(link: UpstreamLink, name: str, **arguments: Any) -> str:
    connection = await link.connection()
    answer = await connection.session.request_raw(
        "tools/call", {"name": name, "arguments": arguments}
    )
    assert isinstance(answer, Response), answer
    return str(answer.result["content"][0]["text"])


async def test_a_session_given_back_is_lent_again_and_two_calls_at_once_get_two() -> None:
    async with pool(size=2) as upstreams:
        async with upstreams.lease(FORM, Call()) as link:
            first = await tool(link, "pid")
        async with upstreams.lease(FORM, Call()) as link:
            assert await tool(link, "pid") == first  # the same process, lent again
        async with upstreams.lease(FORM, Call()) as a, upstreams.lease(FORM, Call()) as b:
            pids = {await tool(a, "pid"), await tool(b, "pid")}
            assert first in pids
            assert len(pids) == 2  # a second session, for the second call at once
        assert upstreams.sessions == 2


async def test_a_call_waits_for_a_session_when_all_are_lent_then_gets_one() -> None:
    async with pool(size=1, wait_s=1) as upstreams:
        async with upstreams.lease(FORM, Call()):
            with pytest.raises(UpstreamGone) as busy:
                async with upstreams.lease(FORM, Call()):
                    pass
            assert "all 1 pooled upstream sessions are busy" in str(busy.value)
        got = trio.Event()
        async with trio.open_nursery() as nursery, upstreams.lease(FORM, Call()):

            async def second() -> None:
                async with upstreams.lease(FORM, Call()):
                    got.set()

            nursery.start_soon(second)
            await trio.testing.wait_all_tasks_blocked()
            assert not got.is_set()  # it waits while the first holds the only session
        await got.wait()


async def test_a_session_that_starts_slower_than_wait_s_is_still_lent() -> None:
    # wait_s bounds the wait for a free session; a new one's start has the start timeout
    async with pool(size=1, wait_s=0.001) as upstreams:
        async with upstreams.lease(FORM, Call()) as link:
            assert int(await tool(link, "pid")) > 0
        assert upstreams.sessions == 1


async def test_a_session_is_lent_only_to_calls_of_the_capabilities_it_declared() -> None:
    async with pool(size=2) as upstreams:
        async with upstreams.lease(FORM, Call()) as link:
            assert json.loads(await tool(link, "client_caps")) == FORM
        async with upstreams.lease({}, Call()) as link:
            assert json.loads(await tool(link, "client_caps")) == {}
        assert upstreams.sessions == 2


async def test_a_question_goes_to_the_call_holding_the_session() -> None:
    person = {"action": "accept", "content": {"name": "Ada", "age": 36}}
    holder, other = Call(person), Call(person)
    async with pool(size=1) as upstreams:
        async with upstreams.lease(FORM, other):
            pass
        async with upstreams.lease(FORM, holder) as link:
            assert await tool(link, "ask_person") == "accept: Ada (36)"
    assert [r.method for r in holder.asked] == ["elicitation/create"]
    assert other.asked == []


async def test_a_session_nobody_leases_is_closed_after_idle_s() -> None:
    async with pool(idle_s=0.5) as upstreams:
        async with upstreams.lease(FORM, Call()) as link:
            pid = int(await tool(link, "pid"))
        await poll(lambda: upstreams.sessions == 0, "the idle session's end")
        await poll(lambda: not alive(pid), "its process's exit")


async def test_an_upstream_that_cannot_start_is_the_leases_error() -> None:
    upstreams = UpstreamPool(
        Upstream(command=("/nonexistent/server",)), UpstreamPolicy(), UpstreamSlots(4)
    )
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            await nursery.start(upstreams.run)
            with pytest.raises(UpstreamGone) as failed:
                async with upstreams.lease(FORM, Call()):
                    pass
            assert "could not be started" in str(failed.value)
            assert "No such file or directory" in str(failed.value)
            assert upstreams.sessions == 0
            nursery.cancel_scope.cancel()
