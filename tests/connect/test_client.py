"""The terminal client's two protocol eras over a scripted wire (no server, no terminal)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from erlmcp_py.connect import CAPABILITIES, MODERN, SESSION, McpClient, RpcError
from erlmcp_py.core.i18n import LOCALE_META_KEY

META = "io.modelcontextprotocol/protocolVersion"


class ScriptedWire:
    """Answers each request with the next scripted result; records what was sent."""

    def __init__(self, *results: Mapping[str, Any]) -> None:
        self.results = list(results)
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.protocol: str | None = None

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        self.sent.append((method, dict(params)))
        return dict(self.results.pop(0))

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        self.sent.append((method, dict(params or {})))

    def set_protocol(self, version: str) -> None:
        self.protocol = version


async def yes(method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
    assert method == "elicitation/create"
    return {"action": "accept", "content": {"ok": params["message"] == "Sure?"}}


async def test_the_session_era_initializes_and_takes_the_negotiated_version() -> None:
    wire = ScriptedWire(
        {"protocolVersion": "2025-06-18", "serverInfo": {"name": "s", "version": "1"}}
    )
    client = McpClient(wire, SESSION, yes)
    await client.open()
    method, params = wire.sent[0]
    assert method == "initialize"
    assert params["protocolVersion"] == SESSION
    assert params["capabilities"] == CAPABILITIES
    assert wire.sent[1] == ("notifications/initialized", {})
    assert (client.protocol, wire.protocol, client.server) == ("2025-06-18", "2025-06-18", "s 1")


async def test_the_stateless_era_discovers_with_meta_on_every_request() -> None:
    wire = ScriptedWire(
        {"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "m", "version": "2"}}},
        {"tools": [{"name": "a"}], "nextCursor": "p2"},
        {"tools": [{"name": "b"}]},
    )
    client = McpClient(wire, MODERN, yes)
    await client.open()
    assert [t["name"] for t in await client.list_tools()] == ["a", "b"]
    assert [m for m, _ in wire.sent] == ["server/discover", "tools/list", "tools/list"]
    assert all(p["_meta"][META] == MODERN for _, p in wire.sent)
    assert wire.sent[2][1]["cursor"] == "p2"
    assert (wire.protocol, client.server) == (MODERN, "m 2")


async def test_an_input_required_result_is_answered_and_retried_with_its_state() -> None:
    ask = {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?"}}
    wire = ScriptedWire(
        {"resultType": "input_required", "inputRequests": {"e1": ask}, "requestState": "s1"},
        {"resultType": "input_required", "requestState": "s2"},  # held: nothing to ask
        {"resultType": "complete", "content": [{"type": "text", "text": "done"}]},
    )
    client = McpClient(wire, MODERN, yes)
    result = await client.call_tool("t", {"x": 1})
    assert result["content"] == [{"type": "text", "text": "done"}]
    first, retry, held = (p for _, p in wire.sent)
    assert "requestState" not in first
    assert retry["requestState"] == "s1"
    assert retry["inputResponses"] == {"e1": {"action": "accept", "content": {"ok": True}}}
    assert (retry["name"], retry["arguments"]) == ("t", {"x": 1})
    assert held["requestState"] == "s2"
    assert "inputResponses" not in held


async def test_a_session_era_call_is_one_request() -> None:
    wire = ScriptedWire({"resultType": "input_required", "content": []})
    client = McpClient(wire, SESSION, yes)
    assert (await client.call_tool("t", {}))["resultType"] == "input_required"
    assert len(wire.sent) == 1


async def test_an_input_request_the_client_does_not_answer_is_left_for_the_server() -> None:
    async def refuse(method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        raise RpcError(-32601, "Method not found")

    wire = ScriptedWire(
        {
            "resultType": "input_required",
            "inputRequests": {"s": {"method": "sampling/createMessage", "params": {}}},
            "requestState": "s1",
        },
        {"resultType": "complete", "content": []},
    )
    await McpClient(wire, MODERN, refuse).call_tool("t", {})
    assert "inputResponses" not in wire.sent[1][1]


@pytest.mark.parametrize("protocol", [SESSION, MODERN])
async def test_an_error_answer_reaches_the_caller(protocol: str) -> None:
    class Failing(ScriptedWire):
        async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
            raise RpcError(-32042, "needs a page", {"elicitations": []})

    with pytest.raises(RpcError) as info:
        await McpClient(Failing(), protocol, yes).call_tool("t", {})
    assert info.value.code == -32042


async def test_the_session_era_declares_the_users_locale_on_initialize() -> None:
    wire = ScriptedWire({"protocolVersion": SESSION}, {"content": []})
    client = McpClient(wire, SESSION, yes, locale="pt-BR")
    await client.open()
    await client.call_tool("t", {})
    (method, initialize), _, (_, call) = wire.sent
    assert method == "initialize"
    assert initialize["_meta"] == {LOCALE_META_KEY: "pt-BR"}
    assert "_meta" not in call  # the session remembers it
    silent = ScriptedWire({"protocolVersion": SESSION})
    await McpClient(silent, SESSION, yes).open()
    assert "_meta" not in silent.sent[0][1]


async def test_the_stateless_era_declares_the_users_locale_on_every_request() -> None:
    ask = {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?"}}
    wire = ScriptedWire(
        {"_meta": {}},
        {"tools": []},
        {"resultType": "input_required", "inputRequests": {"e1": ask}, "requestState": "s1"},
        {"resultType": "complete", "content": []},
    )
    client = McpClient(wire, MODERN, yes, locale="pt-BR")
    await client.open()
    await client.list_tools()
    await client.call_tool("t", {})
    assert [m for m, _ in wire.sent] == [
        "server/discover",
        "tools/list",
        "tools/call",
        "tools/call",
    ]
    assert all(p["_meta"][LOCALE_META_KEY] == "pt-BR" for _, p in wire.sent)
    assert all(p["_meta"][META] == MODERN for _, p in wire.sent)


@pytest.mark.parametrize("protocol", [SESSION, MODERN])
async def test_resources_templates_and_prompts_are_listed_page_by_page(protocol: str) -> None:
    wire = ScriptedWire(
        {"resources": [{"uri": "a://1"}], "nextCursor": "r2"},
        {"resources": [{"uri": "a://2"}]},
        {"resourceTemplates": [{"uriTemplate": "a://{id}"}]},
        {"prompts": [{"name": "p"}], "nextCursor": "p2"},
        {"prompts": [{"name": "q"}]},
    )
    client = McpClient(wire, protocol, yes)
    assert [r["uri"] for r in await client.list_resources()] == ["a://1", "a://2"]
    assert await client.list_resource_templates() == [{"uriTemplate": "a://{id}"}]
    assert [p["name"] for p in await client.list_prompts()] == ["p", "q"]
    assert [m for m, _ in wire.sent] == [
        "resources/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "prompts/list",
    ]
    assert (wire.sent[1][1]["cursor"], wire.sent[4][1]["cursor"]) == ("r2", "p2")
    assert all(("_meta" in p) == (protocol == MODERN) for _, p in wire.sent)


@pytest.mark.parametrize("protocol", [SESSION, MODERN])
async def test_a_resource_is_read_by_its_uri(protocol: str) -> None:
    contents = [{"uri": "a://1", "mimeType": "text/plain", "text": "hi"}]
    wire = ScriptedWire({"contents": contents})
    result = await McpClient(wire, protocol, yes).read_resource("a://1")
    assert result == {"contents": contents}
    assert wire.sent[0][0] == "resources/read"
    assert wire.sent[0][1]["uri"] == "a://1"


async def test_a_session_era_prompt_is_one_request_its_elicitations_on_the_wire() -> None:
    wire = ScriptedWire({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]})
    result = await McpClient(wire, SESSION, yes).get_prompt("p", {"a": "1"})
    assert result["messages"][0]["content"]["text"] == "x"
    assert wire.sent == [("prompts/get", {"name": "p", "arguments": {"a": "1"}})]


async def test_a_stateless_prompt_that_asks_the_user_is_answered_and_retried() -> None:
    ask = {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?"}}
    wire = ScriptedWire(
        {"resultType": "input_required", "inputRequests": {"ctx": ask}, "requestState": "s1"},
        {"resultType": "complete", "messages": []},
    )
    result = await McpClient(wire, MODERN, yes).get_prompt("p", {"a": "1"})
    assert result == {"resultType": "complete", "messages": []}
    (first_method, first), (_, retry) = wire.sent
    assert first_method == "prompts/get"
    assert (first["name"], first["arguments"]) == ("p", {"a": "1"})
    assert retry["requestState"] == "s1"
    assert retry["inputResponses"] == {"ctx": {"action": "accept", "content": {"ok": True}}}
