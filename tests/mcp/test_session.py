"""The session engine in-process, against the real runtime, on trio's autojump clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pydantic
import pydantic_core
import pytest
import structlog.testing
import trio
import trio.testing
from pydantic import BaseModel

from erlmcp_py.actors.peer import PeerError, PeerGone
from erlmcp_py.app.examples.server import build_server
from erlmcp_py.core.errors import RequestTooLarge
from erlmcp_py.core.forms import load_form
from erlmcp_py.core.outcomes import Accepted, Outcome, TimedOut, Unsupported
from erlmcp_py.core.versions import V_2026_07_28
from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.errors import ClientRequestError
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import ServerSession, open_session
from tests.mcp.harness import connect

# -- lifecycle -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "answered"),
    [("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"), ("1999-01-01", "2025-11-25")],
)
async def test_version_negotiation(
    asked: str, answered: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with connect(build_server()) as wire:
        response = await wire.initialize(version=asked)
        assert response["result"]["protocolVersion"] == answered
        assert response["result"]["capabilities"]["tools"] == {"listChanged": False}
        assert wire.session.protocol_version == answered


@pytest.mark.parametrize(
    ("version", "caps", "modes"),
    [
        ("2025-11-25", {"elicitation": {}}, {"form"}),
        ("2025-11-25", {"elicitation": {"form": {}}}, {"form"}),
        ("2025-11-25", {"elicitation": {"url": {}}}, {"url"}),
        ("2025-11-25", {"elicitation": {"form": {}, "url": {}}}, {"form", "url"}),
        ("2025-06-18", {"elicitation": {"form": {}, "url": {}}}, {"form"}),
        ("2025-11-25", {}, set()),
    ],
)
async def test_capabilities(
    version: str, caps: dict[str, Any], modes: set[str], autojump_clock: trio.testing.MockClock
) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize(caps, version)
        assert {m for m in ("form", "url") if wire.session.supports(m)} == modes


async def test_before_initialize_only_ping(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(build_server()) as wire:
        assert (await wire.request("ping"))["result"] == {}
        refused = await wire.request("tools/list")
        assert refused["error"]["code"] == -32600
        assert (await wire.request("server/discover"))["error"]["code"] in (-32601, -32602)
        await wire.initialize()
        second = await wire.request(
            "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}
        )
        assert second["error"]["code"] == -32600


async def test_protocol_errors_and_the_session_keeps_serving(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize()
        assert (await wire.request("nope/nope"))["error"]["code"] == -32601
        bad = await wire.request("tools/call", {"name": 42})
        assert bad["error"]["code"] == -32602
        assert "name" in bad["error"]["message"]
        unknown = await wire.request("tools/call", {"name": "no_such_tool"})
        assert unknown["error"]["code"] == -32602
        assert "Unknown tool" in unknown["error"]["message"]
        level = await wire.request("logging/setLevel", {"level": "loud"})
        assert level["error"]["code"] == -32602
        await wire.feed(b"{not json")
        assert any(f.get("error", {}).get("code") == -32700 for f in wire.out)
        await wire.feed(b"[]")
        assert any(f.get("error", {}).get("code") == -32600 for f in wire.out)
        # a response nobody waits for, and an error response without id: ignored
        await wire.answer("srv-unknown-1", {"action": "accept"})
        await wire.feed({"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "x"}})
        assert (await wire.request("ping"))["result"] == {}
        tools = await wire.request("tools/list")
        names = {t["name"] for t in tools["result"]["tools"]}
        assert {"test_elicitation", "test_elicitation_sep1034_defaults"} <= names


async def test_bad_arguments_are_an_is_error_result(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize()
        result = (await wire.call("test_elicitation", {"message": 7}))["result"]
        assert result["isError"] is True
        assert "message" in result["content"][0]["text"]
        missing = (await wire.call("test_elicitation", {}))["result"]
        assert missing["isError"] is True


# -- elicitation through the session -------------------------------------------------------------


async def test_no_elicitation_before_initialized(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(build_server()) as wire, trio.open_nursery() as nursery:
        await wire.request(
            "initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}}
        )
        rid = wire.start_call(nursery, "test_elicitation", {"message": "hi"})
        await trio.sleep(5)
        assert not [f for f in wire.out if f.get("method") == "elicitation/create"]
        await wire.notify("notifications/initialized")
        request = await wire.server_request()
        assert request["method"] == "elicitation/create"
        assert request["params"]["requestedSchema"]["required"] == ["username", "email"]
        await wire.answer(
            request["id"],
            {"action": "accept", "content": {"username": "u", "email": "e@example.com"}},
        )
        result = (await wire.response(rid))["result"]
        assert result["content"][0]["text"].startswith("User response: action=accept")


async def test_typed_form_round_trip_and_06_18_downlevel(
    autojump_clock: trio.testing.MockClock,
) -> None:
    class Contact(BaseModel):
        name: str
        age: int = 30

    server = Server("t", "1")
    seen: list[Outcome] = []

    @server.tool()
    async def ask(ctx: Context) -> str:
        seen.append(await ctx.elicit("who?", Contact))
        return "ok"

    async with connect(server) as wire:
        await wire.initialize(version="2025-06-18")
        async with trio.open_nursery() as nursery:
            rid = wire.start_call(nursery, "ask")
            request = await wire.server_request()
            props = request["params"]["requestedSchema"]["properties"]
            assert "default" not in props["age"]  # 2025-06-18: defaults on booleans only
            await wire.answer(request["id"], {"action": "accept", "content": {"name": "Ada"}})
            await wire.response(rid)
    assert seen == [Accepted(Contact(name="Ada", age=30))]


async def test_unsupported_sends_nothing(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("t", "1")
    seen: list[Outcome] = []

    @server.tool()
    async def ask(ctx: Context) -> str:
        seen.append(await ctx.elicit_confirm("sure?"))
        seen.append(await ctx.elicit_url("go", "https://93.184.215.14/x"))
        return "ok"

    async with connect(server) as wire:
        await wire.initialize({})
        await wire.call("ask")
        assert not [f for f in wire.out if f.get("method") == "elicitation/create"]
    assert seen == [Unsupported("form"), Unsupported("url")]


async def test_multi_select_for_06_18_client_is_unsupported(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize(version="2025-06-18")
        result = (await wire.call("demo_multi_choice"))["result"]
        assert "unsupported" in result["content"][0]["text"]
        assert not [f for f in wire.out if f.get("method") == "elicitation/create"]


async def test_client_cancels_tool_call(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize()
        async with trio.open_nursery() as nursery:
            rid = wire.start_call(nursery, "demo_choice")
            request = await wire.server_request()
            await wire.notify("notifications/cancelled", {"requestId": rid, "reason": "bye"})
            note = await wire.wait(
                lambda f: (
                    f.get("method") == "notifications/cancelled"
                    and f["params"]["requestId"] == request["id"]
                )
            )
            assert "abandoned" in note["params"]["reason"]
        await trio.sleep(1)
        assert not [f for f in wire.out if f.get("id") == rid and "method" not in f]
        # a late answer to the abandoned elicitation is ignored; the session serves on
        await wire.answer(request["id"], {"action": "accept", "content": {"choice": "eu-west"}})
        assert (await wire.request("ping"))["result"] == {}


async def test_elicitation_deadline_gives_timed_out(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(build_server(), {"form_deadline_s": 5, "warn_before_s": 1}) as wire:
        await wire.initialize()
        async with trio.open_nursery() as nursery:
            rid = wire.start_call(nursery, "demo_confirm")
            request = await wire.server_request()
            start = trio.current_time()
            result = (await wire.response(rid))["result"]
            assert trio.current_time() - start == pytest.approx(5, abs=0.1)
        assert "timed out" in result["content"][0]["text"]
        cancelled = wire.notifications("notifications/cancelled")
        assert cancelled[-1]["requestId"] == request["id"]
        # answers after the deadline: late and duplicate, both ignored
        await wire.answer(request["id"], {"action": "accept", "content": {"confirm": True}})
        await wire.answer(request["id"], {"action": "accept", "content": {"confirm": True}})
        assert (await wire.request("ping"))["result"] == {}


async def test_duplicate_answer_is_ignored(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize()
        async with trio.open_nursery() as nursery:
            rid = wire.start_call(nursery, "demo_confirm")
            request = await wire.server_request()
            await wire.answer(request["id"], {"action": "decline"})
            await wire.answer(request["id"], {"action": "accept", "content": {"confirm": True}})
            result = (await wire.response(rid))["result"]
        assert result["content"][0]["text"] == "confirm: action=decline"


async def test_tool_clock_pauses_while_the_user_is_asked(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("t", "1")

    @server.tool(timeout=1.0)
    async def slow(ctx: Context) -> str:
        await trio.sleep(0.6)
        outcome = await ctx.elicit_confirm("go on?")
        await trio.sleep(0.3)
        return f"done {type(outcome).__name__}"

    @server.tool(timeout=1.0)
    async def too_slow() -> str:
        await trio.sleep(2)
        return "never"

    async with connect(server) as wire:
        await wire.initialize()
        async with trio.open_nursery() as nursery:
            rid = wire.start_call(nursery, "slow")
            request = await wire.server_request()
            await trio.sleep(60)  # a slow human: not the tool's time
            await wire.answer(request["id"], {"action": "accept", "content": {"confirm": True}})
            result = (await wire.response(rid))["result"]
        assert result == {"content": [{"type": "text", "text": "done Accepted"}]}
        timed = (await wire.call("too_slow"))["result"]
        assert timed["isError"] is True
        assert "budget" in timed["content"][0]["text"]


async def test_close_abandons_elicitations_and_cancels_tools(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("t", "1")
    outcomes: list[Outcome] = []
    cancelled = trio.Event()

    @server.tool()
    async def ask(ctx: Context) -> str:
        try:
            outcomes.append(await ctx.elicit_confirm("sure?"))
        finally:
            cancelled.set()
        return "unreachable"

    async with connect(server) as wire:
        await wire.initialize()
        async with trio.open_nursery() as nursery:
            wire.start_call(nursery, "ask")
            await wire.server_request()
            wire.session.close()
        await cancelled.wait()
        assert outcomes == []
        await wire.feed({"jsonrpc": "2.0", "id": 99, "method": "ping"})  # ignored: closed
        assert not [f for f in wire.out if f.get("id") == 99]


async def test_url_elicitation_required_and_unsafe_url(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize({"elicitation": {"form": {}, "url": {}}})
        error = (await wire.call("demo_requires_sign_in"))["error"]
        assert error["code"] == -32042
        (item,) = error["data"]["elicitations"]
        assert item["mode"] == "url"
        assert item["elicitationId"]
        refused = (await wire.call("test_elicitation_url", {"url": "http://10.0.0.1/x"}))["result"]
        assert refused["isError"] is True
        assert (
            "private" in refused["content"][0]["text"] or "refused" in refused["content"][0]["text"]
        )
        assert not [f for f in wire.out if f.get("method") == "elicitation/create"]


async def test_url_mode_completion_notifies_the_initiating_client(
    autojump_clock: trio.testing.MockClock,
) -> None:
    config = {"url_dev": True}
    async with connect(build_server(), config) as wire:
        await wire.initialize({"elicitation": {"url": {}}})
        async with trio.open_nursery() as nursery:
            rid = wire.start_call(nursery, "demo_url_sign_in")
            request = await wire.server_request()
            params = request["params"]
            assert params["mode"] == "url"
            assert params["url"].startswith("http://127.0.0.1")
            await wire.answer(request["id"], {"action": "accept"})
            await trio.sleep(1)
            assert not [f for f in wire.out if f.get("id") == rid and "result" in f]
            done = await wire.call(
                "demo_complete_sign_in", {"elicitation_id": params["elicitationId"]}
            )
            assert "completed" in done["result"]["content"][0]["text"]
            result = (await wire.response(rid))["result"]
        assert "action=accept" in result["content"][0]["text"]
        await wire.wait(lambda f: f.get("method") == "notifications/elicitation/complete")
        assert wire.notifications("notifications/elicitation/complete") == [
            {"elicitationId": params["elicitationId"]}
        ]


async def test_log_level_filters_messages_and_progress_passes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize()
        assert (await wire.request("logging/setLevel", {"level": "error"}))["result"] == {}
        await wire.call("test_tool_with_logging")
        assert wire.notifications("notifications/message") == []
        await wire.request("logging/setLevel", {"level": "debug"})
        await wire.call("test_tool_with_logging")
        assert len(wire.notifications("notifications/message")) == 3
        rid = 500
        await wire.feed(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": "test_tool_with_progress", "_meta": {"progressToken": "p"}},
            }
        )
        await wire.response(rid)
        progress = wire.notifications("notifications/progress")
        assert [p["progress"] for p in progress] == [0, 50, 100]
        assert {p["progressToken"] for p in progress} == {"p"}


async def test_conformance_schemas_are_exact(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize()
        async with trio.open_nursery() as nursery:
            wire.start_call(nursery, "test_elicitation_sep1034_defaults")
            request = await wire.server_request()
            props = request["params"]["requestedSchema"]["properties"]
            assert props["name"] == {
                "type": "string", "description": "User name", "default": "John Doe"
            }  # fmt: skip
            assert props["age"]["type"] == "integer"
            assert props["age"]["default"] == 30
            assert props["score"]["default"] == 95.5
            assert props["status"]["enum"] == ["active", "inactive", "pending"]
            assert props["verified"]["default"] is True
            assert request["params"]["requestedSchema"]["required"] == []
            await wire.answer(
                request["id"],
                {
                    "action": "accept",
                    "content": {
                        "name": "Jane Smith",
                        "age": 25,
                        "score": 88,
                        "status": "inactive",
                        "verified": False,
                    },
                },
            )
            wire.start_call(nursery, "test_elicitation_sep1330_enums")
            enums = (await wire.server_request(1))["params"]["requestedSchema"]["properties"]
            assert "oneOf" not in enums["untitledSingle"]
            assert "enum" in enums["untitledSingle"]
            assert "enum" not in enums["titledSingle"]
            assert len(enums["legacyEnum"]["enumNames"]) == len(enums["legacyEnum"]["enum"])
            assert enums["untitledMulti"]["items"]["type"] == "string"
            assert "enum" not in enums["titledMulti"]["items"]
            nursery.cancel_scope.cancel()


def test_timed_out_is_distinct() -> None:
    assert TimedOut() != Unsupported()


# -- writing ----------------------------------------------------------------------------------


class _Transport:
    """Records the frames a session writes; ``gate`` holds a write, ``broken`` fails it."""

    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []
        self.broken = False
        self.gate: trio.Event | None = None

    async def send(self, frame: bytes) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.broken:
            raise trio.BrokenResourceError
        self.out.append(pydantic_core.from_json(frame))


@asynccontextmanager
async def _ready_session() -> AsyncIterator[tuple[ServerSession, _Transport]]:
    transport = _Transport()
    server = Server("write-test", "1.0.0")
    with trio.fail_after(5):
        async with (
            server.running() as runtime,
            open_session(server, runtime, transport.send) as session,
        ):
            init = {"protocolVersion": "2025-11-25", "capabilities": {}}
            await session.feed(jsonrpc.encode_request(0, "initialize", init))
            await session.feed(jsonrpc.encode_notification("notifications/initialized"))
            transport.out.clear()
            yield session, transport


async def test_a_write_while_another_is_under_way_waits_its_turn() -> None:
    async with _ready_session() as (session, transport), trio.open_nursery() as nursery:
        transport.gate = trio.Event()
        nursery.start_soon(session.send_notification, "first", {})
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(session.send_notification, "second", {})
        await trio.testing.wait_all_tasks_blocked()
        assert transport.out == []  # the second did not overtake the parked first
        transport.gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert [m["method"] for m in transport.out] == ["first", "second"]


async def test_a_writer_cancelled_while_waiting_its_turn_sends_nothing_and_others_keep_order() -> (
    None
):
    async with _ready_session() as (session, transport), trio.open_nursery() as nursery:
        transport.gate = trio.Event()
        nursery.start_soon(session.send_notification, "first", {})
        await trio.testing.wait_all_tasks_blocked()
        second = trio.CancelScope()

        async def cancellable() -> None:
            with second:
                await session.send_notification("second", {})

        nursery.start_soon(cancellable)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(session.send_notification, "third", {})
        await trio.testing.wait_all_tasks_blocked()
        second.cancel()  # parked behind "first", ahead of "third"
        await trio.testing.wait_all_tasks_blocked()
        assert second.cancelled_caught
        transport.gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert [m["method"] for m in transport.out] == ["first", "third"]


async def test_a_writer_whose_turn_comes_after_the_session_closed_gets_peer_gone() -> None:
    async with _ready_session() as (session, transport), trio.open_nursery() as nursery:
        transport.gate = trio.Event()
        nursery.start_soon(session.send_notification, "first", {})
        await trio.testing.wait_all_tasks_blocked()
        outcomes: list[str] = []

        async def second() -> None:
            try:
                await session.send_notification("second", {})
                outcomes.append("sent")
            except PeerGone:
                outcomes.append("gone")

        nursery.start_soon(second)
        await trio.testing.wait_all_tasks_blocked()
        session.close()
        transport.gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert outcomes == ["gone"]
        assert [m["method"] for m in transport.out] == ["first"]


async def test_a_write_yields_only_in_the_transports_send() -> None:
    async with _ready_session() as (session, transport):
        with trio.testing.assert_no_checkpoints():  # this transport's send never yields
            await session.send_raw(jsonrpc.encode_notification("raw"))
        assert [m["method"] for m in transport.out] == ["raw"]


async def test_a_notification_is_a_checkpoint_even_on_a_transport_that_never_yields() -> None:
    async with _ready_session() as (session, transport):
        with trio.testing.assert_checkpoints():
            await session.send_notification("notifications/progress", {"progressToken": 1})
        session.log_level = "error"
        with trio.testing.assert_checkpoints():  # filtered out by the log level: not sent
            await session.send_notification("notifications/message", {"level": "debug"})
        with trio.CancelScope() as scope:
            scope.cancel()
            await session.send_notification("notifications/progress", {"progressToken": 2})
        assert scope.cancelled_caught
        assert [m["params"] for m in transport.out] == [{"progressToken": 1}]


async def test_a_broken_transport_closes_the_session() -> None:
    async with _ready_session() as (session, transport):
        transport.broken = True
        with structlog.testing.capture_logs() as events, pytest.raises(PeerGone):
            await session.send_notification("notifications/tools/list_changed", {})
        assert session.closed
        failed = [e for e in events if e["event"] == "transport_write_failed"]
        assert [e["error"] for e in failed] == ["BrokenResourceError"]
        with pytest.raises(PeerGone):
            await session.send_notification("notifications/tools/list_changed", {})


# -- reading ----------------------------------------------------------------------------------


async def test_responses_go_to_their_callbacks_once() -> None:
    answers: list[Any] = []
    async with _ready_session() as (session, transport):
        for rid in ("s1", "s2", "s3"):
            await session.send_request(
                "elicitation/create", {"message": "?"}, request_id=rid, on_response=answers.append
            )
        assert [m["id"] for m in transport.out] == ["s1", "s2", "s3"]
        await session.feed(jsonrpc.encode_response("s1", {"x": 1}))
        await session.feed(jsonrpc.encode_error("s2", -1, "no", 7))
        assert answers == [{"x": 1}, PeerError(-1, "no", 7)]
        # unknown, duplicate, or an error without id: ignored
        await session.feed(jsonrpc.encode_response("s1", {}))
        await session.feed(jsonrpc.encode_response("zz", {}))
        await session.feed(jsonrpc.encode_error(None, -1, "x"))
        session.forget_request("s3")
        await session.feed(jsonrpc.encode_response("s3", {}))  # forgotten: ignored
        assert len(answers) == 2
        assert [m["id"] for m in transport.out] == ["s1", "s2", "s3"]  # nothing answered


@pytest.mark.parametrize(
    "frame",
    [
        jsonrpc.encode_request(3, "tools/call", {"name": "nope"}),
        jsonrpc.encode_request(4, "ping"),
        jsonrpc.encode_notification("notifications/initialized"),
        jsonrpc.encode_response("s1", {}),
        b"not json",
        b'[{"jsonrpc": "2.0", "id": 5, "method": "ping"}]',
    ],
    ids=["tools/call", "ping", "notification", "response", "garbage", "batch"],
)
async def test_every_frame_is_dropped_once_the_session_is_closed(frame: bytes) -> None:
    async with _ready_session() as (session, transport):
        session.close()
        await session.feed(frame)
        await trio.testing.wait_all_tasks_blocked()
        assert transport.out == []
        assert session.phase == "closed"


# -- the schema size limit, every way of asking, both eras ---------------------------------------

HIDDEN = "S3CRET-FIELD-TITLE"  # in the form's text: never in the refusal
WIDE = 60  # fields of about 100 bytes each: a schema of about 6 KB


def _wide_model() -> type[BaseModel]:
    fields: dict[str, Any] = {
        f"f{i}": (str, pydantic.Field(title=f"{HIDDEN} {'x' * 60}")) for i in range(WIDE)
    }
    model: type[BaseModel] = pydantic.create_model("Wide", **fields)
    return model


WIDE_RAW = {
    "type": "object",
    "properties": {
        f"f{i}": {"type": "string", "title": f"{HIDDEN} {'x' * 60}"} for i in range(WIDE)
    },
}
WIDE_FORM = {
    "id": "wide",
    "title": "Wide",
    "fields": [
        {"id": f"f{i}", "type": "text", "label": f"{HIDDEN} {'x' * 60}"} for i in range(WIDE)
    ],
}
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": V_2026_07_28,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_a_schema_over_schema_bytes_is_refused_at_once_every_way_of_asking(
    era: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = Server("t", "1", runtime_config={"schema_bytes": 1000})
    refusals: list[RequestTooLarge] = []
    forms: dict[str, Any] = {
        "model": _wide_model(),
        "raw": WIDE_RAW,
        "definition": WIDE_FORM,
        "compiled": load_form(WIDE_FORM),
    }

    @server.tool()
    async def ask(ctx: Context, way: str) -> str:
        try:
            await ctx.elicit("Fill this in", forms[way])
        except RequestTooLarge as exc:
            refusals.append(exc)
            return f"refused: {exc}"
        return "asked"

    async with connect(server) as wire:
        if era == "2025-11-25":
            await wire.initialize()
        for way in forms:
            params: dict[str, Any] = {"name": "ask", "arguments": {"way": way}}
            if era == "2026-07-28":
                params["_meta"] = STATELESS_META
            result = (await wire.request("tools/call", params))["result"]
            assert result["content"][0]["text"].startswith("refused: requestedSchema"), result
        assert not [f for f in wire.out if f.get("method") == "elicitation/create"]
        assert "inputRequests" not in str(wire.out)
    assert len(refusals) == len(forms)
    for exc in refusals:
        assert (exc.part, exc.limit) == ("requestedSchema", 1000)
        assert 5000 < exc.size < 8000
        assert f"{exc.size} bytes > 1000 bytes" in str(exc)
        assert HIDDEN not in str(exc)


async def test_an_answer_too_large_to_read_ends_a_tools_own_request_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("t", "1")
    seen: list[ClientRequestError] = []

    @server.tool()
    async def roots(ctx: Context) -> str:
        try:
            await ctx.request("roots/list", {}, timeout=600)
        except ClientRequestError as exc:
            seen.append(exc)
        return "done"

    async with connect(server) as wire:
        await wire.initialize()
        async with trio.open_nursery() as nursery:
            rid = wire.start_call(nursery, "roots")
            asked = await wire.server_request()
            start = trio.current_time()
            assert wire.session.answer_too_large(asked["id"], 5_000_000, 1 << 20) is True
            await wire.response(rid)
        assert trio.current_time() == start
        assert wire.session.answer_too_large(asked["id"], 5_000_000, 1 << 20) is False
    (refused,) = seen
    assert refused.code == -32600
    assert refused.data == {"reason": "answer_too_large", "size": 5_000_000, "limit": 1 << 20}


# -- calls in progress (what a graceful stop waits on) -------------------------------------------


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_a_call_is_in_progress_until_its_answer_is_written(
    era: str, autojump_clock: trio.testing.MockClock
) -> None:
    """``calls_ended`` is set when the last call's answer has been written, not sooner: a stop
    that waits on it never cuts an answer off."""
    from tests.transports.test_http_mrtr import META

    server = Server("calls", "1.0")

    @server.tool()
    async def work() -> str:
        await trio.sleep(5)
        return "worked"

    writing = trio.Event()
    release = trio.Event()
    written: list[dict[str, Any]] = []

    async def send(frame: bytes) -> None:
        if b"worked" in frame:  # the answer: its write takes until released
            writing.set()
            await release.wait()
        written.append(pydantic_core.from_json(frame))

    async with server.running() as runtime, open_session(server, runtime, send) as session:
        assert session.calls_ended().is_set()  # none in progress: at once
        if era == "2025-11-25":
            init = {"protocolVersion": era, "capabilities": {}}
            await session.feed(pydantic_core.to_json(jsonrpc_request(0, "initialize", init)))
            await session.feed(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
            params: dict[str, Any] = {"name": "work", "arguments": {}}
        else:
            params = {"name": "work", "arguments": {}, "_meta": META}
        await session.feed(pydantic_core.to_json(jsonrpc_request(1, "tools/call", params)))
        ended = session.calls_ended()
        assert session.calls_in_progress == 1
        await writing.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert not ended.is_set()  # the tool has returned, its answer is not written yet
        assert session.calls_in_progress == 1
        release.set()
        await ended.wait()
        assert session.calls_in_progress == 0
        assert any(frame.get("id") == 1 for frame in written)


def jsonrpc_request(id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
