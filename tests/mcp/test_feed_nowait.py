"""``ServerSession.feed_message_nowait``: the in-memory pair's fast path into a session.

It handles, in the caller's turn, what needs no waiting — a response, a notification, a
``tools/call`` (which only starts its task; a 2026-07-28 one once the connection's stateless
endpoint is open) — and returns ``True``; for anything
else it does *nothing* and returns ``False``, and :meth:`ServerSession.feed_message` then
answers the message exactly as it always did. Each "left alone" case is checked both ways:
nothing happened (no answer, no callback, no task, no state change), and ``feed_message``
afterwards writes the same answer as a session that never saw ``feed_message_nowait``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pydantic_core
import pytest
import trio
import trio.testing

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.actors.peer import PeerError, PeerResponse
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import ServerSession, open_session
from tests.conftest import count_tasks

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
LIMIT = 5  # seconds any test may take


@dataclass
class Tools:
    """What the test server's tools saw."""

    started: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    release: trio.Event = field(default_factory=trio.Event)


def build(tools: Tools) -> Server:
    server = Server(
        "feed-nowait-test", "1.0.0", runtime_config=RuntimeConfig.model_validate({"rate": 1000})
    )

    @server.tool()
    async def add(a: int, b: int = 1) -> int:
        tools.started.append("add")
        return a + b

    @server.tool()
    async def hold() -> str:
        tools.started.append("hold")
        try:
            await tools.release.wait()
        except trio.Cancelled:
            tools.cancelled.append("hold")
            raise
        return "released"

    return server


class Peer:
    """The client side of one session: everything the session writes, decoded, in order."""

    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []
        self.session: ServerSession

    async def send(self, frame: bytes) -> None:  # frames other layers encode (2026-07-28)
        self.out.append(pydantic_core.from_json(frame))

    async def send_message(self, message: dict[str, Any]) -> None:
        self.out.append(message)

    def send_nowait(self, frame: bytes | dict[str, Any]) -> None:
        self.out.append(frame if isinstance(frame, dict) else pydantic_core.from_json(frame))


def message(id: Any, method: str, params: Any = None) -> dict[str, Any]:
    found: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        found["params"] = params
    return found


def note(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        found["params"] = params
    return found


def call(id: Any, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return message(id, "tools/call", {"name": name, "arguments": arguments or {}})


INITIALIZE = message(
    "init", "initialize", {"protocolVersion": LEGACY, "capabilities": {"elicitation": {}}}
)
INITIALIZED = note("notifications/initialized")
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
}


@asynccontextmanager
async def opened(phase: str = "ready", tools: Tools | None = None) -> AsyncIterator[Peer]:
    """A session in ``phase`` (``new``, ``initializing`` or ``ready``) with a fresh server."""
    peer = Peer()
    server = build(tools or Tools())
    with trio.fail_after(LIMIT):
        async with (
            server.running() as runtime,
            open_session(
                server,
                runtime,
                peer.send,
                send_message=peer.send_message,
                send_nowait=peer.send_nowait,
            ) as session,
        ):
            peer.session = session
            if phase != "new":
                await session.feed_message(INITIALIZE)
            if phase == "ready":
                await session.feed_message(INITIALIZED)
            assert session.phase == phase
            peer.out.clear()
            yield peer
            session.close()


# -- handled now: True ---------------------------------------------------------------------------


async def test_a_response_goes_to_its_callback() -> None:
    answers: list[PeerResponse] = []
    async with opened() as peer:
        session = peer.session
        for rid in ("s1", "s2", "s3"):
            session.send_request_nowait(
                "elicitation/create", {"message": "?"}, request_id=rid, on_response=answers.append
            )
        assert [m["id"] for m in peer.out] == ["s1", "s2", "s3"]
        peer.out.clear()
        assert session.feed_message_nowait({"jsonrpc": "2.0", "id": "s1", "result": {"x": 1}})
        assert answers == [{"x": 1}]  # delivered in the caller's turn
        error = {"jsonrpc": "2.0", "id": "s2", "error": {"code": -1, "message": "no", "data": 7}}
        assert session.feed_message_nowait(error)
        assert answers[1] == PeerError(-1, "no", 7)
        # unknown, duplicate, or an error without id: handled (ignored), as feed_message does
        assert session.feed_message_nowait({"jsonrpc": "2.0", "id": "s1", "result": {}})
        assert session.feed_message_nowait({"jsonrpc": "2.0", "id": "zz", "result": {}})
        no_id = {"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "x"}}
        assert session.feed_message_nowait(no_id)
        assert len(answers) == 2
        assert peer.out == []
        session.forget_request("s3")


async def test_a_2026_tools_call_starts_now_once_the_stateless_endpoint_is_open() -> None:
    tools = Tools()
    async with opened("new", tools) as peer:
        session = peer.session

        def modern(id: Any, name: str, **arguments: Any) -> dict[str, Any]:
            return message(
                id, "tools/call", {"name": name, "arguments": arguments, "_meta": MODERN_META}
            )

        # The first modern request opens the connection's stateless endpoint (awaited).
        assert not session.feed_message_nowait(modern(1, "add", a=1))
        await session.feed_message(modern(1, "add", a=1))
        await trio.testing.wait_all_tasks_blocked()
        # From then on a modern tools/call only starts its task: taken in the caller's turn.
        assert session.feed_message_nowait(modern(2, "hold"))
        assert session.feed_message_nowait(modern(3, "add", a=2))
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(tools.started) == ["add", "add", "hold"]  # 2 and 3 start in one batch
        # A duplicate id of a call still running is an answer to write: left alone...
        assert not session.feed_message_nowait(modern(2, "add", a=3))
        await session.feed_message(modern(2, "add", a=3))
        tools.release.set()
        await trio.testing.wait_all_tasks_blocked()
        by_id: dict[Any, list[dict[str, Any]]] = {}
        for out in peer.out:
            by_id.setdefault(out.get("id"), []).append(out)
        assert by_id[1][0]["result"]["content"][0]["text"] == "2"
        assert by_id[3][0]["result"]["content"][0]["text"] == "3"
        # ...answered -32600 by feed_message, and the running call still answers once
        assert [m.get("error", {}).get("code") for m in by_id[2]] == [-32600, None]
        assert by_id[2][1]["result"]["content"][0]["text"] == "released"


async def test_notifications_initialized_moves_the_session_to_ready() -> None:
    async with opened("initializing") as peer:
        assert peer.session.feed_message_nowait(INITIALIZED)
        assert peer.session.phase == "ready"
        assert peer.out == []


async def test_notifications_cancelled_cancels_a_call_in_flight() -> None:
    tools = Tools()
    async with opened(tools=tools) as peer:
        session = peer.session
        assert session.feed_message_nowait(call(5, "hold"))
        await trio.testing.wait_all_tasks_blocked()
        assert tools.started == ["hold"]
        assert session.feed_message_nowait(note("notifications/cancelled", {"requestId": 5}))
        await trio.testing.wait_all_tasks_blocked()
        assert tools.cancelled == ["hold"]
        assert session._calls == {}
        assert peer.out == []  # cancelled by the client: no answer
        # a notification that is no good is handled too (logged, ignored), as by feed_message
        assert session.feed_message_nowait(note("notifications/cancelled", {"requestId": []}))
        assert session.feed_message_nowait(note("notifications/cancelled", {"requestId": 99}))
        assert session.feed_message_nowait(note("notifications/whatever"))
        assert peer.out == []


@pytest.mark.parametrize("phase", ["initializing", "ready"])
async def test_a_session_era_tools_call_starts_its_task_now(phase: str) -> None:
    tools = Tools()
    async with opened(phase, tools) as peer:
        session = peer.session
        before = count_tasks()
        assert session.feed_message_nowait(call(1, "add", {"a": 41}))
        assert list(session._calls) == [1]  # started in the caller's turn...
        assert count_tasks() == before + 1
        assert peer.out == []  # ...which writes nothing: the task answers
        await trio.testing.wait_all_tasks_blocked()
        assert tools.started == ["add"]
        (answer,) = peer.out
        assert answer["id"] == 1
        assert answer["result"]["content"][0]["text"] == "42"
        # bad *arguments* are the tool task's business: an isError result, not a refusal
        assert session.feed_message_nowait(call(2, "add", {"a": "x"}))
        await trio.testing.wait_all_tasks_blocked()
        assert peer.out[-1]["id"] == 2
        assert peer.out[-1]["result"]["isError"] is True


@pytest.mark.parametrize(
    "obj",
    [
        call(1, "add", {"a": 1}),
        message(2, "ping"),
        INITIALIZE,
        INITIALIZED,
        {"jsonrpc": "2.0", "id": "s1", "result": {}},
        "not even an object",
        [message(3, "ping")],
    ],
    ids=["tools/call", "ping", "initialize", "initialized", "response", "garbage", "batch"],
)
async def test_anything_is_dropped_once_the_session_is_closed(obj: Any) -> None:
    tools = Tools()
    async with opened(tools=tools) as peer:
        session = peer.session
        session.close()
        before = count_tasks()
        assert session.feed_message_nowait(obj)
        assert count_tasks() == before
        await trio.testing.wait_all_tasks_blocked()
        assert peer.out == []
        assert tools.started == []
        assert session.phase == "closed"


# -- left alone: False, nothing done, then feed_message answers as it always did ---------------


@dataclass(frozen=True)
class Case:
    """A message feed_message_nowait must leave alone.

    ``setup`` messages are fed (with ``feed_message``) first; ``check`` inspects the answers
    ``feed_message`` writes for ``obj`` afterwards.
    """

    obj: Any
    check: Callable[[list[dict[str, Any]]], bool]
    phase: str = "ready"
    setup: tuple[Any, ...] = ()


def error_code(code: int, id: Any = None, text: str = "") -> Callable[[list[dict[str, Any]]], bool]:
    def check(out: list[dict[str, Any]]) -> bool:
        (answer,) = out
        error = answer.get("error") or {}
        said = f"{error.get('message')} {error.get('data')}"  # the detail is in data
        return bool(answer["id"] == id and error.get("code") == code and text in said)

    return check


def result_for(id: Any, test: Callable[[dict[str, Any]], bool]) -> Callable[[Any], bool]:
    def check(out: list[dict[str, Any]]) -> bool:
        (answer,) = out
        return bool(answer["id"] == id and "result" in answer and test(answer["result"]))

    return check


CASES = {
    "refused-old-jsonrpc": Case(
        {"jsonrpc": "1.0", "id": "x", "method": "ping"}, error_code(-32600, "x")
    ),
    "refused-batch": Case([message(1, "ping")], error_code(-32600)),
    "refused-not-an-object": Case("ping", error_code(-32600)),
    "refused-float-id": Case(message(1.5, "tools/call", {"name": "add"}), error_code(-32600)),
    "ping": Case(message(1, "ping"), result_for(1, lambda r: r == {})),
    "ping-with-tool-params": Case(
        message(1, "ping", {"name": "add", "arguments": {"a": 1}}),
        result_for(1, lambda r: r == {}),
    ),
    "other-method-with-tool-params": Case(
        message(1, "prompts/get", {"name": "add", "arguments": {"a": 1}}), error_code(-32601, 1)
    ),
    "ping-before-initialize": Case(message(1, "ping"), result_for(1, lambda r: r == {}), "new"),
    "initialize": Case(
        INITIALIZE, result_for("init", lambda r: r["protocolVersion"] == LEGACY), "new"
    ),
    "initialize-again": Case(INITIALIZE, error_code(-32600, "init", "already")),
    "tools/list": Case(
        message(1, "tools/list", {}),
        result_for(1, lambda r: {t["name"] for t in r["tools"]} == {"add", "hold"}),
    ),
    "unknown-method": Case(message(1, "no/such"), error_code(-32601, 1)),
    "tools/call-bad-params": Case(
        message(1, "tools/call", {"name": 3}), error_code(-32602, 1, "name")
    ),
    "tools/call-params-not-an-object": Case(
        message(1, "tools/call", ["add"]), error_code(-32602, 1)
    ),
    "tools/call-unknown-tool": Case(call(1, "nope"), error_code(-32602, 1, "Unknown tool")),
    "tools/call-duplicate-id": Case(
        call(7, "add", {"a": 1}),
        error_code(-32600, 7, "already in progress"),
        setup=(call(7, "hold"),),
    ),
    "tools/call-2026-07-28": Case(
        message(1, "tools/call", {"name": "add", "arguments": {"a": 1}, "_meta": MODERN_META}),
        result_for(1, lambda r: r["content"][0]["text"] == "2"),
    ),
    "tools/call-2026-07-28-before-initialize": Case(
        message(1, "tools/call", {"name": "add", "arguments": {"a": 2}, "_meta": MODERN_META}),
        result_for(1, lambda r: r["content"][0]["text"] == "3"),
        "new",
    ),
    "server/discover": Case(
        message(1, "server/discover", {"_meta": MODERN_META}),
        result_for(1, lambda r: MODERN in r["supportedVersions"]),
    ),
    "tools/call-before-initialize": Case(
        call(1, "add", {"a": 1}), error_code(-32600, 1, "not initialized"), "new"
    ),
    "tools/list-before-initialize": Case(
        message(1, "tools/list", {}), error_code(-32600, 1, "not initialized"), "new"
    ),
}


async def answers_of(case: Case, *, nowait_first: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """Open a session in the case's phase, feed the setup, then (optionally try
    ``feed_message_nowait``, checking it did nothing, then) ``feed_message``; return what was
    written for the case's message."""
    tools = Tools()
    async with opened(case.phase, tools) as peer:
        session = peer.session
        for obj in case.setup:
            assert session.feed_message_nowait(obj)
        await trio.testing.wait_all_tasks_blocked()
        peer.out.clear()
        started = list(tools.started)
        if nowait_first:
            calls = dict(session._calls)
            phase = session.phase
            tasks = count_tasks()
            assert session.feed_message_nowait(case.obj) is False
            assert count_tasks() == tasks  # no task started
            assert session._calls == calls
            assert session.phase == phase
            assert peer.out == []  # no answer written
            await trio.testing.wait_all_tasks_blocked()
            assert peer.out == []
            assert tools.started == started
            assert tools.cancelled == []
        await session.feed_message(case.obj)
        await trio.testing.wait_all_tasks_blocked()
        return list(peer.out), list(tools.cancelled)


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
async def test_left_alone_then_feed_message_answers_as_before(case: Case) -> None:
    out, cancelled = await answers_of(case, nowait_first=True)
    assert case.check(out), out
    reference, _ = await answers_of(case, nowait_first=False)
    assert out == reference
    assert cancelled == []  # e.g. the call in progress under a duplicate id is untouched


async def test_a_refused_response_is_left_to_feed_message_which_calls_back() -> None:
    # A response that fails the envelope check but carries an id is refused *to its waiter*
    # (a PeerError), not answered: feed_message_nowait does nothing; feed_message calls back.
    answers: list[PeerResponse] = []
    async with opened() as peer:
        session = peer.session
        session.send_request_nowait(
            "elicitation/create", {"message": "?"}, request_id="s1", on_response=answers.append
        )
        peer.out.clear()
        bad = {"jsonrpc": "2.0", "id": "s1", "error": {"code": "not an int"}}
        assert session.feed_message_nowait(bad) is False
        assert answers == []
        await session.feed_message(bad)
        (answer,) = answers
        assert isinstance(answer, PeerError)
        assert answer.code == -32600
        assert peer.out == []
