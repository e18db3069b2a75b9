"""The 2026-07-28 answers of :class:`~erlmcp_py.mcp.stateless.StatelessEndpoint` to resources,
prompts and completion requests: cache hints and error codes of that protocol version, next to
the session era's answers to the same requests on the same server."""

from __future__ import annotations

from typing import Any

import pytest
import trio.testing

from erlmcp_py.app.examples.server import build_server
from erlmcp_py.mcp.server import Server
from tests.mcp.harness import connect

META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
}
UNKNOWN = "test://no-such-resource"


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "test://static-text"}),
        ("resources/read", {"uri": "test://static-binary"}),
        ("resources/read", {"uri": "test://template/7/data"}),
        ("prompts/list", {}),
    ],
)
async def test_cacheable_results_carry_cache_hints(
    autojump_clock: trio.testing.MockClock, method: str, params: dict[str, Any]
) -> None:
    async with connect(build_server()) as wire:
        result = (await wire.request(method, {**params, "_meta": META}))["result"]
        assert result["resultType"] == "complete"
        assert result["ttlMs"] == 0
        assert result["cacheScope"] == "public"


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("prompts/get", {"name": "test_simple_prompt"}),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": ""},
            },
        ),
    ],
)
async def test_results_that_are_not_cacheable_carry_no_cache_hints(
    autojump_clock: trio.testing.MockClock, method: str, params: dict[str, Any]
) -> None:
    async with connect(build_server()) as wire:
        result = (await wire.request(method, {**params, "_meta": META}))["result"]
        assert result["resultType"] == "complete"
        assert "ttlMs" not in result
        assert "cacheScope" not in result


async def test_unknown_resource_is_invalid_params_on_2026_and_not_found_on_2025(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(build_server()) as wire:
        stateless = (await wire.request("resources/read", {"uri": UNKNOWN, "_meta": META}))["error"]
        assert stateless["code"] == -32602
        assert stateless["data"] == {"uri": UNKNOWN}
        assert stateless["message"] == f"Resource not found: {UNKNOWN}"

        await wire.initialize(version="2025-11-25")
        legacy = (await wire.request("resources/read", {"uri": UNKNOWN}))["error"]
        assert legacy["code"] == -32002
        assert legacy["data"] == {"uri": UNKNOWN}


async def test_initialize_with_2026_meta_is_a_removed_method(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(build_server()) as wire:
        params = {"protocolVersion": "2026-07-28", "capabilities": {}, "_meta": META}
        error = (await wire.request("initialize", params))["error"]
        assert error["code"] == -32601
        # nothing was initialized: a 2025-11-25 client can still open the session
        opened = await wire.initialize(version="2025-11-25")
        assert opened["result"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("method", ["tools/call", "prompts/get", "tools/list", "server/discover"])
@pytest.mark.parametrize(
    ("meta", "code", "message"),
    [
        (
            {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"},
            -32022,
            "Unsupported protocol version",
        ),
        (
            {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
            -32602,
            "Invalid params: _meta.io.modelcontextprotocol/clientCapabilities must be an object",
        ),
        (
            {**META, "io.modelcontextprotocol/protocolVersion": 20260728},
            -32602,
            "Invalid params: _meta.io.modelcontextprotocol/protocolVersion must be a string",
        ),
    ],
)
async def test_a_request_whose_meta_is_refused_gets_its_error_and_the_stream_goes_on(
    autojump_clock: trio.testing.MockClock,
    method: str,
    meta: dict[str, Any],
    code: int,
    message: str,
) -> None:
    params = {"name": "test_simple_prompt"} if method == "prompts/get" else {"name": "x"}
    async with connect(build_server()) as wire:
        error = (await wire.request(method, {**params, "_meta": meta}))["error"]
        assert (error["code"], error["message"]) == (code, message)
        served = (await wire.request("tools/list", {"_meta": META}))["result"]
        assert served["resultType"] == "complete"


async def test_a_request_with_the_id_of_a_call_in_progress_is_refused_and_the_call_goes_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("duplicate-id", "1.0.0")
    release = trio.Event()

    @server.tool()
    async def wait() -> str:
        await release.wait()
        return "done"

    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    params = {"name": "wait", "arguments": {}, "_meta": META}
    async with connect(server) as wire:
        await wire.feed({**call, "params": params})
        await wire.feed({**call, "params": params})
        refused = await wire.response(1)
        assert refused["error"]["code"] == -32600
        release.set()
        await wire.wait(lambda f: f.get("id") == 1 and "result" in f)
        answers = [f for f in wire.out if f.get("id") == 1]
        assert [a["result"]["content"][0]["text"] for a in answers if "result" in a] == ["done"]
