"""The in-memory client/server pair (``erlmcp_py.testing.open_memory_client``), both eras,
against the real runtime on trio's autojump clock."""

from __future__ import annotations

import base64
import contextvars
import json
from typing import Any

import pydantic_core
import pytest
import trio
import trio.testing
from pydantic import BaseModel, Field

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.actors.peer import PeerGone
from erlmcp_py.client import ClientRequestError, InputRoundsExhausted, ServerRequest
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.errors import ToolError
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import open_session
from erlmcp_py.testing import MemoryClient, open_memory_client

LEGACY = "2025-11-25"
STATELESS = "2026-07-28"
ERAS = pytest.mark.parametrize("version", [LEGACY, STATELESS])

#: A context variable the client task sets; the server side must not see the caller's value.
WHO: contextvars.ContextVar[str] = contextvars.ContextVar("memory_test_who", default="nobody")


class Person(BaseModel):
    name: str
    age: int = Field(ge=0, le=150)
    subscribe: bool = False


def build() -> Server:
    server = Server(
        "memory-test", "1.0.0", runtime_config=RuntimeConfig.model_validate({"rate": 1000})
    )

    @server.tool()
    async def ask(ctx: Context) -> str:
        outcome = await ctx.elicit("Who are you?", Person)
        if isinstance(outcome, Accepted):
            return f"hello {outcome.content.name} ({outcome.content.age})"
        return type(outcome).__name__

    @server.tool()
    async def add(a: int, b: int = 1) -> int:
        return a + b

    @server.tool()
    async def fail() -> str:
        raise ToolError("it broke")

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.log("warning", "careful")
        return "done"

    @server.tool()
    async def whoami() -> str:
        return WHO.get()

    @server.resource("test://held")
    async def held() -> str:
        await trio.sleep_forever()
        return "never"

    return server


def accept(request: ServerRequest) -> dict[str, Any]:
    assert request.method == "elicitation/create"
    return {"action": "accept", "content": {"name": "Ada", "age": 36}}


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@ERAS
async def test_accept(version: str, autojump_clock: trio.testing.MockClock) -> None:
    async with open_memory_client(build(), handler=accept, protocol_version=version) as client:
        assert text(await client.call_tool("ask")) == "hello Ada (36)"
        (asked,) = client.server_requests
        schema = asked.params["requestedSchema"]
        assert set(schema["properties"]) == {"name", "age", "subscribe"}
        assert asked.params["message"] == "Who are you?"


@ERAS
@pytest.mark.parametrize(("action", "outcome"), [("decline", "Declined"), ("cancel", "Cancelled")])
async def test_decline_and_cancel(
    version: str, action: str, outcome: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_memory_client(
        build(), handler=lambda _: {"action": action}, protocol_version=version
    ) as client:
        assert text(await client.call_tool("ask")) == outcome


@ERAS
async def test_async_handler_runs_in_its_own_task(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    async def slow(request: ServerRequest) -> dict[str, Any]:
        await trio.sleep(5)  # a human thinking: the reader keeps serving meanwhile
        return {"action": "accept", "content": {"name": "Bo", "age": 7, "subscribe": True}}

    async with open_memory_client(build(), handler=slow, protocol_version=version) as client:
        async with trio.open_nursery() as nursery:
            results: list[str] = []

            async def call() -> None:
                results.append(text(await client.call_tool("ask")))

            nursery.start_soon(call)
            await client.next_server_request()
            assert text(await client.call_tool("add", {"a": 2})) == "3"  # not blocked
        assert results == ["hello Bo (7)"]


@ERAS
async def test_tools_and_tool_errors(version: str, autojump_clock: trio.testing.MockClock) -> None:
    async with open_memory_client(build(), handler=accept, protocol_version=version) as client:
        names = {tool["name"] for tool in await client.list_tools()}
        assert names == {"ask", "add", "fail", "chatty", "whoami"}
        assert text(await client.call_tool("add", {"a": 40, "b": 2})) == "42"
        failed = await client.call_tool("fail")
        assert failed["isError"] is True
        assert text(failed) == "it broke"
        bad = await client.call_tool("add", {"a": "x"})
        assert bad["isError"] is True
        assert "a:" in text(bad)
        with pytest.raises(ClientRequestError) as caught:
            await client.call_tool("nope")
        assert caught.value.code == -32602


async def test_initialize_and_notifications(autojump_clock: trio.testing.MockClock) -> None:
    async with open_memory_client(build(), handler=accept) as client:
        assert client.server_info == {"name": "memory-test", "version": "1.0.0"}
        assert client.protocol_version == LEGACY
        await client.ping()  # served after notifications/initialized: messages stay in order
        assert client.session.phase == "ready"
        assert text(await client.call_tool("chatty")) == "done"
        assert client.notifications == [
            ("notifications/message", {"level": "warning", "data": "careful"})
        ]


async def test_stateless_discover(autojump_clock: trio.testing.MockClock) -> None:
    async with open_memory_client(build(), handler=accept, protocol_version=STATELESS) as client:
        discovered = await client.discover()
        assert STATELESS in discovered["supportedVersions"]
        with pytest.raises(RuntimeError):
            await client.initialize()


async def test_every_script_waiting_sees_what_arrives(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_memory_client(build(), handler=accept) as client:
        seen: list[str] = []

        async def waits_for(count: int, name: str) -> None:
            await client.wait_for(lambda: len(client.notifications) >= count)
            seen.append(name)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waits_for, 1, "first")
            nursery.start_soon(waits_for, 1, "second")
            nursery.start_soon(waits_for, 2, "later")
            await trio.sleep(1)
            assert seen == []
            assert text(await client.call_tool("chatty")) == "done"  # one notification
            await trio.sleep(1)
            assert sorted(seen) == ["first", "second"]
            await client.call_tool("chatty")
        assert sorted(seen) == ["first", "later", "second"]
        await client.wait_for(lambda: True)  # holds already: returns at once


async def bad(client: MemoryClient, message: Any, id: Any = None) -> dict[str, Any]:
    """Send ``message`` unchecked; return the error response the server answers it with."""
    seen = len(client.unmatched)
    await client.send(message)
    with trio.fail_after(10):
        await client.wait_for(lambda: len(client.unmatched) > seen)
    (response,) = client.unmatched[seen:]
    assert response["id"] == id
    error: dict[str, Any] = response["error"]
    return error


async def test_bad_messages_get_the_wire_errors(autojump_clock: trio.testing.MockClock) -> None:
    async with open_memory_client(build(), handler=accept) as client:
        batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]
        assert (await bad(client, batch))["data"] == {"detail": "batches are not supported"}
        assert (await bad(client, b'"ping"'))["code"] == -32600
        assert (await bad(client, b"not json"))["code"] == -32700
        null_id = {"jsonrpc": "2.0", "id": None, "method": "ping"}
        assert (await bad(client, null_id))["code"] == -32600
        float_id = {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}
        assert (await bad(client, float_id))["code"] == -32600
        old = {"jsonrpc": "1.0", "id": "v1", "method": "ping"}
        assert (await bad(client, old, "v1"))["code"] == -32600
        params = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": "x"}
        assert (await bad(client, params, 7))["code"] == -32600
        unknown = {"jsonrpc": "2.0", "id": 8, "method": "no/such"}
        assert (await bad(client, unknown, 8))["code"] == -32601
        wrong = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": 3}}
        assert (await bad(client, wrong, 9))["code"] == -32602
        # and the session keeps serving
        assert text(await client.call_tool("ask")) == "hello Ada (36)"


async def test_invalid_answer_is_reprompted(autojump_clock: trio.testing.MockClock) -> None:
    answers = iter(
        [
            {"action": "accept", "content": {"name": "Ada", "age": 999}},
            {"action": "accept", "content": {"name": "Ada", "age": 36}},
        ]
    )
    async with open_memory_client(build(), handler=lambda _: next(answers)) as client:
        assert text(await client.call_tool("ask")) == "hello Ada (36)"
        first, second = client.server_requests
        assert "age" in second.params["message"]
        assert first.id != second.id


async def test_handler_error_answers_a_jsonrpc_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def refuse(request: ServerRequest) -> dict[str, Any]:
        raise ClientRequestError(-32601, "no elicitation here")

    async with open_memory_client(build(), handler=refuse) as client:
        assert text(await client.call_tool("ask")) == "Failed"


async def test_a_stateless_input_request_refused_or_left_unanswered_ends_the_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def refuse(request: ServerRequest) -> dict[str, Any]:
        raise ClientRequestError(-32601, "no elicitation here")

    server = build()
    async with server.running():
        for handler, why in ((refuse, "refused: -32601"), (lambda _: None, "left unanswered")):
            async with open_memory_client(server, handler=handler, protocol_version=STATELESS) as c:
                with pytest.raises(RuntimeError, match=why):
                    await c.call_tool("ask")


async def test_a_stateless_server_that_never_completes_ends_the_call_after_max_rounds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = build()

    @server.tool()
    async def pester(ctx: Context) -> str:
        while True:
            await ctx.elicit_confirm("Again?")

    def yes(request: ServerRequest) -> dict[str, Any]:
        return {"action": "accept", "content": {"confirm": True}}

    async with open_memory_client(server, handler=yes, protocol_version=STATELESS) as client:
        with pytest.raises(InputRoundsExhausted, match="'pester': no complete result after 4"):
            await client.call_tool("pester", max_rounds=4)
        assert len(client.server_requests) == 4
        assert text(await client.call_tool("add", {"a": 1})) == "2"  # the client still works


async def test_cancelled_call_cancels_the_tool(autojump_clock: trio.testing.MockClock) -> None:
    server = build()
    async with open_memory_client(server, handler=lambda _: None) as client:  # never answers
        with trio.move_on_after(30):
            await client.call_tool("ask")
        runtime = server.runtime
        assert runtime is not None
        with trio.fail_after(10):
            while True:
                infos = await runtime.list_elicitations(tenant=client.session.tenant)
                if infos and infos[0].status == "abandoned":
                    break
                await trio.sleep(0.1)
        assert client.session._calls == {}
        (elicit,) = client.server_requests
        # the server told the client its pending form is moot
        assert ("notifications/cancelled", {"requestId": elicit.id}) in [
            (m, {"requestId": p.get("requestId")}) for m, p in client.notifications
        ]


async def test_no_handler_leaves_requests_to_the_script(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_memory_client(build()) as client:
        async with trio.open_nursery() as nursery:
            results: list[str] = []

            async def call() -> None:
                results.append(text(await client.call_tool("ask")))

            nursery.start_soon(call)
            request = await client.next_server_request()
            await client.answer(
                request.id, {"action": "accept", "content": {"name": "Cy", "age": 1}}
            )
        assert results == ["hello Cy (1)"]
        # a duplicate answer is ignored by the server, which keeps serving
        await client.answer(request.id, {"action": "decline"})
        assert text(await client.call_tool("add", {"a": 1})) == "2"


async def test_shares_a_running_runtime(autojump_clock: trio.testing.MockClock) -> None:
    server = build()
    async with server.running() as runtime:
        async with (
            open_memory_client(server, handler=accept, peer_id="a") as one,
            open_memory_client(server, handler=accept, peer_id="b") as two,
        ):
            assert server.runtime is runtime
            assert text(await one.call_tool("ask")) == text(await two.call_tool("ask"))
            assert {s.peer_id for s in server.sessions} == {"a", "b"}
        assert server.sessions == set()


async def test_a_full_server_to_client_channel_makes_writers_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # buffer=0: every frame to the client waits for its reader; concurrent calls all complete.
    async with open_memory_client(build(), handler=accept, buffer=0) as client:
        results: list[str] = []

        async def call() -> None:
            results.append(text(await client.call_tool("ask")))

        async with trio.open_nursery() as nursery:
            for _ in range(20):
                nursery.start_soon(call)
        assert results == ["hello Ada (36)"] * 20


async def test_send_request_waits_for_initialized_and_routes_the_answer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    sent: list[bytes] = []

    async def send(frame: bytes) -> None:
        sent.append(frame)

    answers: list[Any] = []
    server = build()
    async with (
        server.running() as runtime,
        open_session(server, runtime, send) as session,
        trio.open_nursery() as nursery,
    ):

        async def ask(rid: str) -> None:
            await session.send_request("ping", {}, request_id=rid, on_response=answers.append)

        nursery.start_soon(ask, "r1")
        await trio.testing.wait_all_tasks_blocked()
        assert sent == []  # not initialized yet: the request waits
        initialize = {"protocolVersion": LEGACY, "capabilities": {}}
        await session.feed(jsonrpc.encode_request(1, "initialize", initialize))
        await session.feed(jsonrpc.encode_notification("notifications/initialized"))
        await trio.testing.wait_all_tasks_blocked()
        assert [pydantic_core.from_json(f).get("id") for f in sent] == [1, "r1"]
        await session.feed(jsonrpc.encode_response("unknown", {}))  # ignored
        await session.feed(jsonrpc.encode_response("r1", {"ok": 1}))
        await session.feed(jsonrpc.encode_response("r1", {"ok": 2}))  # a duplicate: ignored
        assert answers == [{"ok": 1}]
        session.close()
        with pytest.raises(PeerGone):
            await ask("r2")


def request(id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return jsonrpc.request_object(id, method, params)


async def unmatched_ids(client: MemoryClient, count: int) -> list[Any]:
    """Wait until ``count`` responses nobody waited for arrived; their ids, in arrival order."""
    with trio.fail_after(10):
        await client.wait_for(lambda: len(client.unmatched) >= count)
    return [response["id"] for response in client.unmatched]


async def test_frames_are_served_in_the_order_they_were_sent(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_memory_client(build(), handler=accept) as client:
        pings = [f"p{n}" for n in range(5)]
        for rid in pings:
            await client.send(request(rid, "ping"))
        await client.send(request("t", "tools/call", {"name": "add", "arguments": {"a": 1}}))
        assert await unmatched_ids(client, 6) == [*pings, "t"]
        assert text(client.unmatched[-1]["result"]) == "2"


async def test_a_notification_does_not_overtake_the_request_sent_before_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The cancellation reaches the server after the read it names, so it cancels that read.
    async with open_memory_client(build(), handler=accept) as client:
        await client.send(request("r", "resources/read", {"uri": "test://held"}))
        await client.notify("notifications/cancelled", {"requestId": "r"})
        await client.ping()
        await trio.testing.wait_all_tasks_blocked()
        assert client.unmatched == []  # the read was cancelled: no answer
        assert text(await client.call_tool("add", {"a": 2})) == "3"


async def test_concurrent_calls_with_elicitations_each_get_one_answer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_memory_client(build(), handler=accept) as client:
        results: list[str] = []

        async def call() -> None:
            results.append(text(await client.call_tool("ask")))

        async with trio.open_nursery() as nursery:
            for _ in range(4):
                nursery.start_soon(call)
                nursery.start_soon(client.ping)
        assert results == ["hello Ada (36)"] * 4
        assert len(client.server_requests) == 4
        assert client.unmatched == []


async def test_a_plain_handler_error_surfaces_from_the_client_block(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def broken(request: ServerRequest) -> dict[str, Any]:
        raise ValueError("the handler has a bug")

    server = build()
    async with server.running() as runtime:
        with pytest.raises(ExceptionGroup) as caught:
            async with open_memory_client(server, handler=broken) as client:
                await client.call_tool("ask")
        assert caught.group_contains(ValueError, match="the handler has a bug")
        assert [r.method for r in client.server_requests] == ["elicitation/create"]
        await trio.testing.wait_all_tasks_blocked()
        (info,) = await runtime.list_elicitations(tenant=client.session.tenant)
    # the request was sent; its elicitation ends when the session closes and cancels the tool
    assert info.sent_at is not None
    assert info.status == "abandoned"


async def test_the_tool_does_not_see_the_calling_tasks_context_variables(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen_by_handler: list[str] = []

    def answer(request: ServerRequest) -> dict[str, Any]:
        seen_by_handler.append(WHO.get())
        return accept(request)

    async with open_memory_client(build(), handler=answer) as client:
        token = WHO.set("the client task")
        try:
            assert text(await client.call_tool("whoami")) == "nobody"
            assert text(await client.call_tool("ask")) == "hello Ada (36)"
            assert WHO.get() == "the client task"
        finally:
            WHO.reset(token)
    assert seen_by_handler == ["nobody"]  # the handler runs in the client's reader task


async def test_a_value_set_before_the_pair_opened_is_inherited(
    autojump_clock: trio.testing.MockClock,
) -> None:
    token = WHO.set("set before opening")
    try:
        async with open_memory_client(build(), handler=accept) as client:
            assert text(await client.call_tool("whoami")) == "set before opening"
    finally:
        WHO.reset(token)


@ERAS
async def test_an_async_handler_answers_server_requests(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    tasks: dict[str, trio.lowlevel.Task] = {}

    async def answer(request: ServerRequest) -> dict[str, Any]:
        tasks["handler"] = trio.lowlevel.current_task()
        await trio.lowlevel.checkpoint()
        return accept(request)

    async with open_memory_client(build(), handler=answer, protocol_version=version) as client:
        tasks["caller"] = trio.lowlevel.current_task()
        assert text(await client.call_tool("ask")) == "hello Ada (36)"
        assert text(await client.call_tool("add", {"a": 41})) == "42"
        assert [r.method for r in client.server_requests] == ["elicitation/create"]
        assert client.unmatched == []
        assert client.refused == []
    # a session-era request is answered from a task of its own; 2026-07-28 input requests
    # are answered by the caller's call_tool, which retries the call
    assert (tasks["handler"] is not tasks["caller"]) == (version == LEGACY)


def catalogue() -> Server:
    """A server with resources, a template and prompts (one that asks the user first)."""
    server = Server(
        "memory-catalogue", "1.0.0", runtime_config=RuntimeConfig.model_validate({"rate": 1000})
    )

    @server.resource("memo://greeting", mime_type="text/plain", description="A greeting")
    async def greeting() -> str:
        return "hello"

    @server.resource("memo://logo", mime_type="image/png")
    async def logo() -> bytes:
        return b"\x89PNG\r\n"

    @server.resource_template("memo://users/{id}", mime_type="application/json")
    async def user(id: str) -> dict[str, str]:
        return {"id": id}

    @server.prompt()
    def greet(name: str, mood: str | None = None) -> str:
        """Greet someone."""
        return f"Hello {name}{f', {mood}' if mood else ''}"

    @server.prompt()
    async def for_whom(ctx: Context) -> str:
        """Ask who the prompt is for, then write it."""
        outcome = await ctx.elicit("Who is it for?", Person)
        if isinstance(outcome, Accepted):
            return f"A prompt for {outcome.content.name}"
        return f"nobody: {type(outcome).__name__}"

    return server


@ERAS
async def test_resources_and_templates_are_listed_and_read(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_memory_client(catalogue(), protocol_version=version) as client:
        resources = await client.list_resources()
        assert [(r["uri"], r.get("mimeType")) for r in resources] == [
            ("memo://greeting", "text/plain"),
            ("memo://logo", "image/png"),
        ]
        assert resources[0]["description"] == "A greeting"
        templates = await client.list_resource_templates()
        assert [t["uriTemplate"] for t in templates] == ["memo://users/{id}"]
        text = await client.read_resource("memo://greeting")
        assert text["contents"] == [
            {"uri": "memo://greeting", "mimeType": "text/plain", "text": "hello"}
        ]
        blob = (await client.read_resource("memo://logo"))["contents"][0]
        assert base64.b64decode(blob["blob"]) == b"\x89PNG\r\n"
        templated = (await client.read_resource("memo://users/7"))["contents"][0]
        assert json.loads(templated["text"]) == {"id": "7"}
        with pytest.raises(ClientRequestError) as unknown:
            await client.read_resource("memo://nothing")
        assert unknown.value.code == (-32602 if version == STATELESS else -32002)


@ERAS
async def test_prompts_are_listed_and_got_with_their_arguments(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_memory_client(catalogue(), protocol_version=version) as client:
        prompts = {p["name"]: p for p in await client.list_prompts()}
        assert set(prompts) == {"greet", "for_whom"}
        assert prompts["greet"]["arguments"] == [
            {"name": "name", "required": True},
            {"name": "mood", "required": False},
        ]
        got = await client.get_prompt("greet", {"name": "Ada", "mood": "cheerfully"})
        assert got["description"] == "Greet someone."
        assert got["messages"] == [
            {"role": "user", "content": {"type": "text", "text": "Hello Ada, cheerfully"}}
        ]
        with pytest.raises(ClientRequestError) as missing:
            await client.get_prompt("greet")
        assert missing.value.code == -32602


@ERAS
async def test_a_prompt_that_asks_the_user_is_answered_by_the_handler(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_memory_client(catalogue(), handler=accept, protocol_version=version) as client:
        got = await client.get_prompt("for_whom")
        assert got["messages"][0]["content"]["text"] == "A prompt for Ada"
        (asked,) = client.server_requests
        assert asked.method == "elicitation/create"
        assert asked.params["message"] == "Who is it for?"


async def test_a_server_without_prompts_or_resources_says_method_not_found(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("bare", "1.0.0")

    @server.tool()
    async def noop() -> str:
        return ""

    async with open_memory_client(server) as client:
        for call in (client.list_prompts(), client.list_resources()):
            with pytest.raises(ClientRequestError) as info:
                await call
            assert info.value.code == -32601
