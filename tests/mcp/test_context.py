"""``ctx.sample``, ``ctx.list_roots`` and ``ctx.request`` in a session (2025-11-25): the
server→client request, its typed answer, its deadline, its cancellation with the tool, and the
capability check. (On 2026-07-28 the same calls are input requests: ``test_mrtr.py``.)"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from erlmcp_py.mcp.client_results import InvalidClientResult, Root, SampledMessage
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.errors import CapabilityMissing
from erlmcp_py.mcp.server import Server
from tests.mcp.harness import connect

REPLY = {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}


def asking_server(seen: list[Any]) -> Server:
    server = Server("ctx", "1")

    @server.tool()
    async def sample(ctx: Context) -> str:
        try:
            seen.append(await ctx.sample("2+2?", max_tokens=5, timeout=30))
        except Exception as exc:
            seen.append(exc)
            raise
        return "sampled"

    @server.tool()
    async def roots(ctx: Context) -> str:
        try:
            seen.append(await ctx.list_roots(timeout=30))
        except Exception as exc:
            seen.append(exc)
            raise
        return "listed"

    return server


async def test_list_roots_sends_roots_list_and_returns_typed_roots(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[Any] = []
    async with connect(asking_server(seen)) as wire, trio.open_nursery() as nursery:
        await wire.initialize({"roots": {"listChanged": True}})
        call = wire.start_call(nursery, "roots")
        request = await wire.server_request()
        assert (request["method"], request.get("params", {})) == ("roots/list", {})
        roots = [{"uri": "file:///work", "name": "Work"}, {"uri": "file:///tmp"}]
        await wire.answer(request["id"], {"roots": roots})
        assert (await wire.response(call))["result"]["content"][0]["text"] == "listed"
    assert seen == [(Root("file:///work", "Work"), Root("file:///tmp", None))]


async def test_sample_returns_a_sampled_message(autojump_clock: trio.testing.MockClock) -> None:
    seen: list[Any] = []
    async with connect(asking_server(seen)) as wire, trio.open_nursery() as nursery:
        await wire.initialize({"sampling": {}})
        call = wire.start_call(nursery, "sample")
        request = await wire.server_request()
        await wire.answer(request["id"], {**REPLY, "stopReason": "endTurn"})
        await wire.response(call)
    assert seen == [
        SampledMessage(role="assistant", content=REPLY["content"], model="m", stop_reason="endTurn")
    ]
    assert seen[0].text == "4"


async def test_without_the_capability_nothing_is_sent_and_capability_missing_is_raised(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[Any] = []
    async with connect(asking_server(seen)) as wire:
        await wire.initialize({"elicitation": {}})
        for tool in ("roots", "sample"):
            result = (await wire.call(tool))["result"]
            assert result["isError"] is True
        assert not [f for f in wire.out if "method" in f and "id" in f]
    assert [(type(e), e.capability) for e in seen] == [
        (CapabilityMissing, "roots"),
        (CapabilityMissing, "sampling"),
    ]
    assert str(seen[0]) == "the client does not support roots"


async def test_a_malformed_answer_raises_invalid_client_result_naming_the_member(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[Any] = []
    async with connect(asking_server(seen)) as wire, trio.open_nursery() as nursery:
        await wire.initialize({"sampling": {}, "roots": {}})
        call = wire.start_call(nursery, "sample")
        request = await wire.server_request(0)
        await wire.answer(request["id"], {"role": "assistant", "content": "4"})
        text = (await wire.response(call))["result"]["content"][0]["text"]
        assert "sampling/createMessage is malformed" in text
        assert "model: Field required" in text

        call = wire.start_call(nursery, "roots")
        request = await wire.server_request(1)
        await wire.answer(request["id"], {"roots": [{"name": "no uri"}]})
        await wire.response(call)
    assert [type(e) for e in seen] == [InvalidClientResult, InvalidClientResult]
    assert seen[1].method == "roots/list"
    assert "roots.0.uri" in seen[1].detail


async def test_an_unanswered_request_times_out_and_the_client_is_told(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[Any] = []
    async with connect(asking_server(seen)) as wire, trio.open_nursery() as nursery:
        await wire.initialize({"roots": {}})
        call = wire.start_call(nursery, "roots")
        request = await wire.server_request()
        before = trio.current_time()
        assert (await wire.response(call))["result"]["isError"] is True
        assert trio.current_time() - before == 30
        assert isinstance(seen[0], trio.TooSlowError)
        told = wire.notifications("notifications/cancelled")
        assert told == [{"requestId": request["id"], "reason": "timed out"}]


async def test_cancelling_the_tool_cancels_its_request_to_the_client(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[Any] = []
    async with connect(asking_server(seen)) as wire, trio.open_nursery() as nursery:
        await wire.initialize({"sampling": {}})
        call = wire.start_call(nursery, "sample")
        request = await wire.server_request()
        await wire.notify("notifications/cancelled", {"requestId": call, "reason": "changed mind"})
        await wire.wait(lambda f: f.get("method") == "notifications/cancelled")
        told = wire.notifications("notifications/cancelled")
        assert told == [{"requestId": request["id"], "reason": "cancelled"}]
        await wire.answer(request["id"], REPLY)  # late: ignored
        assert (await wire.request("ping"))["result"] == {}
        assert not [f for f in wire.out if f.get("id") == call]  # a cancelled call: no answer
    assert seen == []  # the tool saw no outcome: it was cancelled


async def test_request_sends_any_method_and_returns_the_raw_result(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("raw", "1")

    @server.tool()
    async def ask(ctx: Context) -> str:
        result = await ctx.request("roots/list", {}, key="ignored-in-a-session", timeout=5)
        return str(result)

    async with connect(server) as wire, trio.open_nursery() as nursery:
        await wire.initialize({})
        call = wire.start_call(nursery, "ask")
        request = await wire.server_request()
        await wire.answer(request["id"], {"anything": 1})
        assert (await wire.response(call))["result"]["content"][0]["text"] == "{'anything': 1}"
