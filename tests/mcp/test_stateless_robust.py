"""A bug while answering one 2026-07-28 request is answered ``-32603`` and the connection
keeps serving: it never tears the session down."""

from __future__ import annotations

from typing import Any

import pydantic_core
import pytest
import trio

from erlmcp_py.actors.runtime import open_runtime
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import open_session
from erlmcp_py.mcp.stateless import StatelessEndpoint

META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
}


def frame(rid: int, method: str, params: dict[str, Any]) -> bytes:
    return pydantic_core.to_json(
        {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": META}}
    )


@pytest.mark.parametrize(
    ("method", "where"),
    [("tools/call", "on_arrival"), ("tools/call", "in_the_answer"), ("tools/list", "handle")],
)
async def test_an_unexpected_error_is_answered_and_the_session_goes_on(
    monkeypatch: pytest.MonkeyPatch, method: str, where: str
) -> None:
    real_handle, real_accept, real_answer = (
        StatelessEndpoint.handle,
        StatelessEndpoint.accept,
        StatelessEndpoint.answer,
    )

    async def buggy(self: StatelessEndpoint, request: Any, **kwargs: Any) -> dict[str, Any]:
        if request.id == 1:
            raise RuntimeError("a bug")
        return await real_handle(self, request, **kwargs)

    def buggy_accept(self: StatelessEndpoint, request: Any, **kwargs: Any) -> Any:
        if request.id == 1:
            raise RuntimeError("a bug")
        return real_accept(self, request, **kwargs)

    async def buggy_answer(self: StatelessEndpoint, attached: Any) -> dict[str, Any]:
        result = await real_answer(self, attached)
        if result["content"][0]["text"] == "4":  # the answer of request 1
            raise RuntimeError("a bug")
        return result

    # A tools/call on a byte stream is taken on arrival, and answered by its own task.
    patched = {"handle": buggy, "on_arrival": buggy_accept, "in_the_answer": buggy_answer}
    name = {"on_arrival": "accept", "in_the_answer": "answer"}.get(where, where)
    monkeypatch.setattr(StatelessEndpoint, name, patched[where])
    server = Server("robust", "1.0.0")

    @server.tool()
    async def double(x: int) -> int:
        return x * 2

    out: list[dict[str, Any]] = []
    arrived = trio.Event()

    async def write(data: bytes) -> None:
        out.append(pydantic_core.from_json(data))
        arrived.set()

    params = {"name": "double", "arguments": {"x": 2}} if method == "tools/call" else {}
    with trio.fail_after(5):
        async with open_runtime() as runtime, open_session(server, runtime, write) as session:
            await session.feed(frame(1, method, params))
            await session.feed(frame(2, "tools/call", {"name": "double", "arguments": {"x": 3}}))
            while len(out) < 2:
                await arrived.wait()
                arrived = trio.Event()
            session.close()
    by_id = {message["id"]: message for message in out}
    assert by_id[1]["error"]["code"] == -32603
    assert "a bug" not in str(by_id[1])  # nothing of the exception reaches the client
    assert by_id[2]["result"]["content"][0]["text"] == "6"
