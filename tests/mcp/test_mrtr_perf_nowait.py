"""MRTR hot path: the runtime records an input request through ``send_request_nowait``.

Recording is all an MRTR peer does to "send", so it offers the synchronous variant and the
elicitation child sends in its own turn, without a cancel scope or an extra scheduler pass.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from pydantic import BaseModel

from erlmcp_py.actors.peer import PeerResponse
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.mrtr import MrtrPeer, _Continuation
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.versions import ClientCapabilities
from tests.mcp.test_mrtr import connect, only_request


class Person(BaseModel):
    name: str
    age: int


def test_send_request_nowait_records_at_once() -> None:
    cont = _Continuation("alice", "digest")
    peer = MrtrPeer(cont, "c1", ClientCapabilities(frozenset({"form"})), "2026-07-28")
    version = cont.version
    answers: list[PeerResponse] = []
    params: dict[str, Any] = {"message": "hi", "requestedSchema": {"type": "object"}}
    peer.send_request_nowait(
        "elicitation/create", params, request_id="e.1", on_response=answers.append
    )
    ((key, request),) = cont.outstanding.items()
    assert key == "elicitation-1"
    assert (request.rid, request.method) == ("e.1", "elicitation/create")
    assert request.params == {**params, "mode": "form"}
    assert "mode" not in params  # the caller's params are not changed
    assert cont.version == version + 1
    request.on_response({"action": "decline"})
    assert answers == [{"action": "decline"}]


async def test_runtime_records_without_the_async_send(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_async_send(*_: Any, **__: Any) -> None:
        raise AssertionError("the runtime should record through send_request_nowait")

    monkeypatch.setattr(MrtrPeer, "send_request", no_async_send)
    server = Server("perf", "1")

    @server.tool()
    async def ask(ctx: Context) -> str:
        outcome = await ctx.elicit("Who?", Person)
        assert isinstance(outcome, Accepted)
        return f"{outcome.content.name}:{outcome.content.age}"

    async with connect(server) as client:
        first = (await client.call("ask"))["result"]
        key, params = only_request(first)
        assert params["message"] == "Who?"
        answer = {key: {"action": "accept", "content": {"name": "Ada", "age": 36}}}
        final = (await client.call("ask", state=first["requestState"], responses=answer))["result"]
        assert final["resultType"] == "complete"
        assert final["content"][0]["text"] == "Ada:36"
