"""The client session against a server the test plays message by message (on trio's autojump
clock): correlation, server requests answered now or later, cancellation both ways, error
answers, a server that dies, progress, ``_meta`` both ways, both eras."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings, strategies as st

from erlmcp_py.client import (
    ClientRequestError,
    ClientSession,
    ConnectionLost,
    Refused,
    ServerRequest,
    SessionOptions,
    Undeliverable,
    open_client_session,
)
from erlmcp_py.core.i18n import LOCALE_META_KEY
from erlmcp_py.mcp.jsonrpc import ErrorResponse, JsonRpcError, Notification, Request, Response
from erlmcp_py.mcp.meta import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    PROTOCOL_VERSION,
)
from tests.client.wires import Peer, PeerWire, wire_pair

STATELESS = "2026-07-28"


@asynccontextmanager
async def played(**options: Any) -> AsyncIterator[tuple[ClientSession, Peer, PeerWire]]:
    """A session whose server is the test; it fails rather than hang (a deadline on the mock
    clock, far beyond what any test here waits)."""
    wire, peer = wire_pair()
    session_options: SessionOptions = options  # type: ignore[assignment]
    with trio.fail_after(3600):
        async with open_client_session(wire, **session_options) as session:
            yield session, peer, wire


# -- correlation -----------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(order=st.permutations(list(range(8))))
def test_concurrent_requests_each_get_their_own_answer_in_any_order(order: list[int]) -> None:
    async def main() -> None:
        results: dict[int, dict[str, Any]] = {}
        async with played() as (session, peer, _), trio.open_nursery() as nursery:

            async def ask(n: int) -> None:
                results[n] = await session.request("echo", {"n": n})

            for n in range(8):
                nursery.start_soon(ask, n)
            requests = [await peer.next_request() for _ in range(8)]
            for i in order:
                request = requests[i]
                assert isinstance(request.params, dict)
                await peer.answer(request, {"echo": request.params["n"]})
        assert results == {n: {"echo": n} for n in range(8)}

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


async def test_a_request_with_an_id_that_is_already_waiting_is_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with played() as (session, peer, _), trio.open_nursery() as nursery:
        nursery.start_soon(partial(session.request, "slow", id="mine"))
        request = await peer.next_request()
        with pytest.raises(ValueError, match="already waiting"):
            await session.request("again", id="mine")
        await peer.answer(request, {})


# -- server requests -----------------------------------------------------------------------------


async def test_a_plain_handler_is_answered_at_once(autojump_clock: trio.testing.MockClock) -> None:
    def roots(request: ServerRequest) -> Mapping[str, Any]:
        assert (request.method, request.params) == ("roots/list", {})
        return {"roots": []}

    async with played(handler=roots) as (_, peer, _wire):
        await peer.send(Request("r1", "roots/list"))
        assert await peer.receive() == Response("r1", {"roots": []})


async def test_a_handler_can_leave_the_answer_to_another_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    asked: list[ServerRequest] = []

    def later(request: ServerRequest) -> None:
        asked.append(request)  # a gateway forwards it and answers when its client does

    async with played(handler=later) as (session, peer, _):
        await peer.send(Request("e1", "elicitation/create", {"message": "Sure?"}))
        await peer.send(Request("e2", "elicitation/create", {"message": "Really?"}))
        await trio.sleep(60)  # minutes may pass; the session keeps serving meanwhile
        await peer.send(Request("p", "ping"))
        await trio.testing.wait_all_tasks_blocked()
        assert [r.id for r in asked] == ["e1", "e2", "p"]
        await session.respond("e2", ClientRequestError(-1, "the user left", {"why": "gone"}))
        await session.respond("e1", {"action": "accept", "content": {"ok": True}})
    assert await peer.receive() == ErrorResponse("e2", -1, "the user left", {"why": "gone"})
    assert await peer.receive() == Response("e1", {"action": "accept", "content": {"ok": True}})


async def test_an_async_handler_may_wait_on_another_task_while_requests_are_served(
    autojump_clock: trio.testing.MockClock,
) -> None:
    decided = trio.Event()
    answer: dict[str, Any] = {}

    async def human(request: ServerRequest) -> Mapping[str, Any]:
        await decided.wait()
        return answer

    async with played(handler=human) as (session, peer, _), trio.open_nursery() as nursery:
        await peer.send(Request("e1", "elicitation/create", {"message": "Sure?"}))

        async def call() -> None:
            assert await session.request("tools/list") == {"tools": []}

        nursery.start_soon(call)
        await peer.answer(await peer.next_request(), {"tools": []})  # served meanwhile

        async def decide() -> None:
            await trio.sleep(300)
            answer["action"] = "decline"
            decided.set()

        nursery.start_soon(decide)
        assert await peer.receive(timeout=600) == Response("e1", {"action": "decline"})


async def test_a_refusing_handler_answers_the_jsonrpc_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def refuse(request: ServerRequest) -> Mapping[str, Any]:
        raise ClientRequestError(-32601, "Method not found", {"method": request.method})

    async with played(handler=refuse) as (_, peer, _wire):
        await peer.send(Request(7, "sampling/createMessage", {}))
        expected = ErrorResponse(
            7, -32601, "Method not found", {"method": "sampling/createMessage"}
        )
        assert await peer.receive() == expected


async def test_without_a_handler_ping_is_answered_and_anything_else_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with played() as (_, peer, _wire):
        await peer.send(Request(1, "ping"))
        await peer.send(Request(2, "elicitation/create", {"message": "?"}))
        assert await peer.receive() == Response(1, {})
        assert await peer.receive() == ErrorResponse(2, -32601, "Method not found")


async def test_a_handler_with_a_bug_ends_the_session_and_fails_waiting_requests(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def broken(request: ServerRequest) -> Mapping[str, Any]:
        raise ValueError("the handler has a bug")

    outcome: list[BaseException] = []
    wire, peer = wire_pair()
    with trio.fail_after(3600):
        async with trio.open_nursery() as outside:
            with pytest.raises(ExceptionGroup) as caught:
                async with open_client_session(wire, handler=broken) as session:

                    async def wait_elsewhere() -> None:
                        try:
                            await session.request("tools/list")
                        except ConnectionLost as exc:
                            outcome.append(exc)

                    outside.start_soon(wait_elsewhere)
                    await peer.next_request()
                    await peer.send(Request("x", "roots/list"))
                    await trio.sleep_forever()
    assert caught.group_contains(ValueError, match="the handler has a bug")
    assert len(outcome) == 1  # the request waiting in another task failed: no hang


# -- cancellation --------------------------------------------------------------------------------


async def test_a_caller_that_stops_waiting_withdraws_its_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    late: list[Response | ErrorResponse] = []
    async with played(on_unmatched=late.append) as (session, peer, _):
        with trio.move_on_after(5):
            await session.request("tools/call", {"name": "slow"})
        request = await peer.next_request()
        assert await peer.receive() == Notification(
            "notifications/cancelled",
            {"requestId": request.id, "reason": "the client stopped waiting"},
        )
        await peer.answer(request, {"content": []})  # too late: nobody waits
        await trio.testing.wait_all_tasks_blocked()
    assert late == [Response(request.id, {"content": []})]


async def test_the_server_cancelling_its_request_stops_the_handler_and_nothing_is_sent(
    autojump_clock: trio.testing.MockClock,
) -> None:
    stopped = trio.Event()

    async def human(request: ServerRequest) -> Mapping[str, Any]:
        if request.method == "ping":
            return {}
        try:
            await trio.sleep_forever()
        finally:
            stopped.set()
        raise AssertionError("unreachable")

    seen: list[str] = []
    async with played(handler=human, on_notification=lambda m, p: seen.append(m)) as (
        _,
        peer,
        _wire,
    ):
        await peer.send(Request("e1", "elicitation/create", {"message": "Sure?"}))
        await trio.sleep(30)
        await peer.send(Notification("notifications/cancelled", {"requestId": "e1"}))
        await stopped.wait()
        await peer.send(Request("after", "ping"))
        assert await peer.receive() == Response("after", {})  # and nothing for e1 before it
    assert seen == ["notifications/cancelled"]  # the cancellation is seen too


# -- errors and ends -----------------------------------------------------------------------------


async def test_an_error_answer_is_raised_and_given_as_data_by_request_raw(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with played() as (session, peer, _), trio.open_nursery() as nursery:
        caught: list[ClientRequestError] = []
        raw: list[Response | ErrorResponse] = []

        async def typed() -> None:
            with pytest.raises(ClientRequestError) as info:
                await session.request("tools/call", {"name": "nope"})
            caught.append(info.value)

        async def passthrough() -> None:
            raw.append(await session.request_raw("tools/call", {"name": "nope"}))

        nursery.start_soon(typed)
        first = await peer.next_request()
        nursery.start_soon(passthrough)
        second = await peer.next_request()
        for request in (first, second):
            await peer.send(ErrorResponse(request.id, -32602, "Unknown tool: nope", {"n": 1}))
    (error,) = caught
    assert (error.code, error.message, error.data) == (-32602, "Unknown tool: nope", {"n": 1})
    assert str(error) == "-32602: Unknown tool: nope"
    assert raw == [ErrorResponse(second.id, -32602, "Unknown tool: nope", {"n": 1})]


async def test_a_server_that_dies_fails_every_waiting_request_and_every_later_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    failed: list[str] = []
    async with played() as (session, peer, _):
        async with trio.open_nursery() as nursery:

            async def ask(name: str) -> None:
                with pytest.raises(ConnectionLost, match="hung up"):
                    await session.call_tool(name)
                failed.append(name)

            for name in ("a", "b", "c"):
                nursery.start_soon(ask, name)
            for _ in range(3):
                await peer.next_request()
            peer.hang_up()
        assert sorted(failed) == ["a", "b", "c"]
        assert session.closed
        with pytest.raises(ConnectionLost):
            await session.request("ping")


async def test_closing_the_session_fails_requests_waiting_in_other_tasks(
    autojump_clock: trio.testing.MockClock,
) -> None:
    failed: list[ConnectionLost] = []
    with trio.fail_after(3600):
        async with trio.open_nursery() as outside, played() as (session, peer, _):

            async def wait_elsewhere() -> None:
                try:
                    await session.request("tools/call", {"name": "slow"})
                except ConnectionLost as exc:
                    failed.append(exc)

            outside.start_soon(wait_elsewhere)
            await peer.next_request()
    assert [str(e) for e in failed] == ["the session is closed"]


async def test_a_malformed_answer_fails_the_request_it_names_and_an_undelivered_one_its_own(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with played() as (session, peer, _), trio.open_nursery() as nursery:
        outcomes: dict[str, BaseException] = {}

        async def ask(name: str) -> None:
            try:
                await session.request(name)
            except (ClientRequestError, ConnectionLost) as exc:
                outcomes[name] = exc

        nursery.start_soon(ask, "a")
        a = await peer.next_request()
        nursery.start_soon(ask, "b")
        b = await peer.next_request()
        nursery.start_soon(ask, "c")
        c = await peer.next_request()
        bad = JsonRpcError(-32600, "Invalid Request: result must be an object", response_id=a.id)
        await peer.send(Refused(b'{"jsonrpc":"2.0","id":1,"result":7}', bad))
        await peer.send(Undeliverable(b.id, ConnectionLost("the event stream broke")))
        await peer.answer(c, {})
    assert isinstance(outcomes["a"], ClientRequestError)
    assert outcomes["a"].code == -32600
    assert isinstance(outcomes["b"], ConnectionLost)
    assert str(outcomes["b"]) == "the event stream broke"
    assert "c" not in outcomes


# -- notifications and progress ------------------------------------------------------------------


async def test_notifications_are_seen_in_order_and_progress_reaches_its_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[tuple[str, Mapping[str, Any]]] = []
    progress: list[Mapping[str, Any]] = []
    async with (
        played(on_notification=lambda m, p: seen.append((m, p))) as (session, peer, _),
        trio.open_nursery() as nursery,
    ):

        async def call() -> None:
            result = await session.call_tool("long", on_progress=progress.append)
            assert result == {"content": []}

        nursery.start_soon(call)
        request = await peer.next_request()
        assert isinstance(request.params, dict)
        token = request.params["_meta"]["progressToken"]
        await peer.send(Notification("notifications/message", {"level": "info", "data": "1"}))
        step = {"progressToken": token, "progress": 1}
        await peer.send(Notification("notifications/progress", step))
        await peer.send(Notification("notifications/progress", {"progressToken": "other"}))
        await peer.send(Notification("notifications/message", {"level": "info", "data": "2"}))
        await peer.answer(request, {"content": []})
    assert progress == [step]
    assert seen == [
        ("notifications/message", {"level": "info", "data": "1"}),
        ("notifications/progress", {"progressToken": "other"}),
        ("notifications/message", {"level": "info", "data": "2"}),
    ]


# -- _meta and the eras ---------------------------------------------------------------------------


async def test_meta_passes_through_both_ways_untouched(
    autojump_clock: trio.testing.MockClock,
) -> None:
    meta = {"progressToken": 5, "vendor/trace": {"id": "t1"}}
    async with played() as (session, peer, _), trio.open_nursery() as nursery:
        raw: list[Response | ErrorResponse] = []

        async def passthrough() -> None:
            raw.append(await session.request_raw("tools/call", {"name": "t", "_meta": meta}))

        nursery.start_soon(passthrough)
        request = await peer.next_request()
        assert request.params == {"name": "t", "_meta": meta}
        await peer.answer(request, {"content": [], "_meta": {"vendor/cost": 3}})
    assert raw == [Response(request.id, {"content": [], "_meta": {"vendor/cost": 3}})]


async def test_a_session_initializes_keeps_what_the_server_says_and_tells_the_wire(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with (
        played(locale="pt-BR", client_info={"name": "gw", "version": "9"}) as (session, peer, wire),
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(session.handshake)
        initialize = await peer.next_request()
        assert initialize.method == "initialize"
        assert initialize.params == {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "gw", "version": "9"},
            "_meta": {LOCALE_META_KEY: "pt-BR"},
        }
        await peer.answer(
            initialize,
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "up", "version": "1"},
                "instructions": "be kind",
            },
        )
        assert await peer.receive() == Notification("notifications/initialized")
    assert session.protocol_version == "2025-06-18"
    assert wire.protocols == ["2025-06-18"]
    assert (session.server_info, session.server_capabilities, session.instructions) == (
        {"name": "up", "version": "1"},
        {"tools": {}},
        "be kind",
    )


async def test_a_stateless_session_discovers_and_puts_its_meta_on_every_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with (
        played(protocol_version=STATELESS, locale="pt-BR", log_level="info") as (
            session,
            peer,
            wire,
        ),
        trio.open_nursery() as nursery,
    ):
        assert wire.protocols == [STATELESS]  # before anything is sent
        with pytest.raises(RuntimeError, match="no initialize"):
            await session.initialize()
        nursery.start_soon(session.handshake)
        discover = await peer.next_request()
        await peer.answer(
            discover,
            {
                "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "m"}},
            },
        )
        nursery.start_soon(
            session.request, "tools/list", {"_meta": {CLIENT_INFO: {"name": "mine"}}}
        )
        listed = await peer.next_request()
        await peer.answer(listed, {"tools": []})
    assert discover.method == "server/discover"
    assert isinstance(listed.params, dict)
    assert listed.params["_meta"] == {
        PROTOCOL_VERSION: STATELESS,
        CLIENT_CAPABILITIES: {"elicitation": {"form": {}}},
        CLIENT_INFO: {"name": "mine"},  # the caller's own member wins
        LOG_LEVEL: "info",
        LOCALE_META_KEY: "pt-BR",
    }
    assert (session.server_info, session.server_capabilities) == ({"name": "m"}, {"tools": {}})
    own = {"_meta": {LOCALE_META_KEY: "en-US", LOG_LEVEL: "error"}}
    assert session.with_meta(own)["_meta"] == {
        PROTOCOL_VERSION: STATELESS,
        CLIENT_CAPABILITIES: {"elicitation": {"form": {}}},
        CLIENT_INFO: {"name": "erlmcp-py", "version": "0.1.0"},
        LOG_LEVEL: "error",  # the caller's own members win over the session's too
        LOCALE_META_KEY: "en-US",
    }
    assert own == {"_meta": {LOCALE_META_KEY: "en-US", LOG_LEVEL: "error"}}  # not changed


async def test_stateless_input_rounds_go_to_the_handler_and_refusals_are_left_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def answer(request: ServerRequest) -> Mapping[str, Any]:
        if request.method == "sampling/createMessage":
            raise ClientRequestError(-32601, "Method not found")
        return {"action": "accept", "content": {"key": request.id}}

    ask = {"method": "elicitation/create", "params": {"message": "Sure?"}}
    sample = {"method": "sampling/createMessage", "params": {}}
    async with (
        played(protocol_version=STATELESS, handler=answer) as (session, peer, _),
        trio.open_nursery() as nursery,
    ):
        results: list[dict[str, Any]] = []

        async def call() -> None:
            results.append(await session.call_tool("t", {"x": 1}, id="first"))

        nursery.start_soon(call)
        first = await peer.next_request()
        needs = {"resultType": "input_required", "requestState": "s1"}
        await peer.answer(first, {**needs, "inputRequests": {"e": ask, "s": sample}})
        retry = await peer.next_request()
        await peer.answer(retry, {"resultType": "complete", "content": []})
    assert first.id == "first"
    assert retry.id != "first"
    assert isinstance(retry.params, dict)
    assert retry.params["requestState"] == "s1"
    assert retry.params["inputResponses"] == {"e": {"action": "accept", "content": {"key": "e"}}}
    assert results == [{"resultType": "complete", "content": []}]
