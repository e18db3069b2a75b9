"""The terminal client's session (:func:`erlmcp_py.connect.session_options`) in its two
protocol eras, over a scripted wire (no server, no terminal)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest

from erlmcp_py.client import ClientRequestError, ClientSession, open_client_session
from erlmcp_py.connect import CAPABILITIES, session_options
from erlmcp_py.core.i18n import LOCALE_META_KEY
from erlmcp_py.core.versions import LATEST_SESSION_VERSION as SESSION, V_2026_07_28 as STATELESS
from tests.client.wires import ScriptedWire

META = "io.modelcontextprotocol/protocolVersion"


@asynccontextmanager
async def terminal(
    wire: ScriptedWire, protocol: str, answer: Any, locale: str | None = None
) -> AsyncIterator[ClientSession]:
    async with open_client_session(wire, **session_options(protocol, answer, locale=locale)) as c:
        yield c


async def yes(method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
    assert method == "elicitation/create"
    return {"action": "accept", "content": {"ok": params["message"] == "Sure?"}}


async def test_the_session_era_initializes_and_takes_the_negotiated_version() -> None:
    wire = ScriptedWire(
        {"protocolVersion": "2025-06-18", "serverInfo": {"name": "s", "version": "1"}}
    )
    async with terminal(wire, SESSION, yes) as client:
        await client.handshake()
    method, params = wire.sent[0]
    assert method == "initialize"
    assert params["protocolVersion"] == SESSION
    assert params["capabilities"] == CAPABILITIES
    assert wire.sent[1] == ("notifications/initialized", {})
    assert (client.protocol_version, wire.protocol) == ("2025-06-18", "2025-06-18")
    assert client.server_info == {"name": "s", "version": "1"}


async def test_the_stateless_era_discovers_with_meta_on_every_request() -> None:
    wire = ScriptedWire(
        {"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "m", "version": "2"}}},
        {"tools": [{"name": "a"}], "nextCursor": "p2"},
        {"tools": [{"name": "b"}]},
    )
    async with terminal(wire, STATELESS, yes) as client:
        await client.handshake()
        assert [t["name"] for t in await client.list_tools()] == ["a", "b"]
    assert [m for m, _ in wire.sent] == ["server/discover", "tools/list", "tools/list"]
    assert all(p["_meta"][META] == STATELESS for _, p in wire.sent)
    assert wire.sent[2][1]["cursor"] == "p2"
    assert wire.protocol == STATELESS
    assert client.server_info == {"name": "m", "version": "2"}


async def test_an_input_required_result_is_answered_and_retried_with_its_state() -> None:
    ask = {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?"}}
    wire = ScriptedWire(
        {"resultType": "input_required", "inputRequests": {"e1": ask}, "requestState": "s1"},
        {"resultType": "input_required", "requestState": "s2"},  # held: nothing to ask
        {"resultType": "complete", "content": [{"type": "text", "text": "done"}]},
    )
    async with terminal(wire, STATELESS, yes) as client:
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
    async with terminal(wire, SESSION, yes) as client:
        assert (await client.call_tool("t", {}))["resultType"] == "input_required"
    assert len(wire.sent) == 1


async def test_an_input_request_the_client_does_not_answer_is_left_for_the_server() -> None:
    async def refuse(method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        raise ClientRequestError(-32601, "Method not found")

    wire = ScriptedWire(
        {
            "resultType": "input_required",
            "inputRequests": {"s": {"method": "sampling/createMessage", "params": {}}},
            "requestState": "s1",
        },
        {"resultType": "complete", "content": []},
    )
    async with terminal(wire, STATELESS, refuse) as client:
        await client.call_tool("t", {})
    assert "inputResponses" not in wire.sent[1][1]


@pytest.mark.parametrize("protocol", [SESSION, STATELESS])
async def test_an_error_answer_reaches_the_caller(protocol: str) -> None:
    failing = ScriptedWire(ClientRequestError(-32042, "needs a page", {"elicitations": []}))
    async with terminal(failing, protocol, yes) as client:
        with pytest.raises(ClientRequestError) as info:
            await client.call_tool("t", {})
    assert info.value.code == -32042


async def test_the_session_era_declares_the_users_locale_on_initialize() -> None:
    wire = ScriptedWire({"protocolVersion": SESSION}, {"content": []})
    async with terminal(wire, SESSION, yes, locale="pt-BR") as client:
        await client.handshake()
        await client.call_tool("t", {})
    (method, initialize), _, (_, call) = wire.sent
    assert method == "initialize"
    assert initialize["_meta"] == {LOCALE_META_KEY: "pt-BR"}
    assert "_meta" not in call  # the session remembers it
    silent = ScriptedWire({"protocolVersion": SESSION})
    async with terminal(silent, SESSION, yes) as client:
        await client.handshake()
    assert "_meta" not in silent.sent[0][1]


async def test_the_stateless_era_declares_the_users_locale_on_every_request() -> None:
    ask = {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?"}}
    wire = ScriptedWire(
        {"_meta": {}},
        {"tools": []},
        {"resultType": "input_required", "inputRequests": {"e1": ask}, "requestState": "s1"},
        {"resultType": "complete", "content": []},
    )
    async with terminal(wire, STATELESS, yes, locale="pt-BR") as client:
        await client.handshake()
        await client.list_tools()
        await client.call_tool("t", {})
    assert [m for m, _ in wire.sent] == [
        "server/discover",
        "tools/list",
        "tools/call",
        "tools/call",
    ]
    assert all(p["_meta"][LOCALE_META_KEY] == "pt-BR" for _, p in wire.sent)
    assert all(p["_meta"][META] == STATELESS for _, p in wire.sent)


@pytest.mark.parametrize("protocol", [SESSION, STATELESS])
async def test_resources_templates_and_prompts_are_listed_page_by_page(protocol: str) -> None:
    wire = ScriptedWire(
        {"resources": [{"uri": "a://1"}], "nextCursor": "r2"},
        {"resources": [{"uri": "a://2"}]},
        {"resourceTemplates": [{"uriTemplate": "a://{id}"}]},
        {"prompts": [{"name": "p"}], "nextCursor": "p2"},
        {"prompts": [{"name": "q"}]},
    )
    async with terminal(wire, protocol, yes) as client:
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
    assert all(("_meta" in p) == (protocol == STATELESS) for _, p in wire.sent)


@pytest.mark.parametrize("protocol", [SESSION, STATELESS])
async def test_a_resource_is_read_by_its_uri(protocol: str) -> None:
    contents = [{"uri": "a://1", "mimeType": "text/plain", "text": "hi"}]
    wire = ScriptedWire({"contents": contents})
    async with terminal(wire, protocol, yes) as client:
        result = await client.read_resource("a://1")
    assert result == {"contents": contents}
    assert wire.sent[0][0] == "resources/read"
    assert wire.sent[0][1]["uri"] == "a://1"


async def test_a_session_era_prompt_is_one_request_its_elicitations_on_the_wire() -> None:
    wire = ScriptedWire({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]})
    async with terminal(wire, SESSION, yes) as client:
        result = await client.get_prompt("p", {"a": "1"})
    assert result["messages"][0]["content"]["text"] == "x"
    assert wire.sent == [("prompts/get", {"name": "p", "arguments": {"a": "1"}})]


async def test_a_stateless_prompt_that_asks_the_user_is_answered_and_retried() -> None:
    ask = {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?"}}
    wire = ScriptedWire(
        {"resultType": "input_required", "inputRequests": {"ctx": ask}, "requestState": "s1"},
        {"resultType": "complete", "messages": []},
    )
    async with terminal(wire, STATELESS, yes) as client:
        result = await client.get_prompt("p", {"a": "1"})
    assert result == {"resultType": "complete", "messages": []}
    (first_method, first), (_, retry) = wire.sent
    assert first_method == "prompts/get"
    assert (first["name"], first["arguments"]) == ("p", {"a": "1"})
    assert retry["requestState"] == "s1"
    assert retry["inputResponses"] == {"ctx": {"action": "accept", "content": {"ok": True}}}
