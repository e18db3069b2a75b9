"""The example server's 2026-07-28 conformance tools, driven over real Streamable HTTP on
127.0.0.1 the way the official conformance suite drives them: one POST per round, the retry
carrying ``inputResponses`` and the ``requestState`` of the round it answers; and the same
tools in a 2025-11-25 session, where they send their requests to the client."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import httpx2
import trio
import trio.testing

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.app.examples.server import build_server
from erlmcp_py.transports.http import Listening, serve_http
from tests.mcp.harness import connect

TIMEOUT = 10  # seconds: bound of every wait in this file
VERSION = "2026-07-28"
ALL_CAPS: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
ROOTS = {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}


def accept(content: Mapping[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": dict(content)}


def sampled(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": "test-model",
        "stopReason": "endTurn",
    }


class Suite:
    """A client shaped like the conformance suite's stateless harness."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.ids = itertools.count(1)

    async def post(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        caps: Mapping[str, Any] | None = None,
        log_level: str | None = None,
    ) -> httpx2.Response:
        meta: dict[str, Any] = {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": dict(ALL_CAPS if caps is None else caps),
            "io.modelcontextprotocol/clientInfo": {"name": "conformance-like", "version": "1"},
        }
        if log_level is not None:
            meta["io.modelcontextprotocol/logLevel"] = log_level
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": VERSION,
            "mcp-method": method,
        }
        if method in ("tools/call", "prompts/get"):
            headers["mcp-name"] = str(params["name"])
        body = {
            "jsonrpc": "2.0",
            "id": next(self.ids),
            "method": method,
            "params": {**params, "_meta": meta},
        }
        return await self.http.post(self.url, content=json.dumps(body).encode(), headers=headers)

    async def call(
        self,
        name: str,
        *,
        state: str | None = None,
        responses: Mapping[str, Any] | None = None,
        caps: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One round; its result (asserting a 200 ``application/json`` answer)."""
        params: dict[str, Any] = {"name": name, "arguments": {}}
        if state is not None:
            params["requestState"] = state
        if responses is not None:
            params["inputResponses"] = dict(responses)
        response = await self.post("tools/call", params, caps=caps)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "application/json"
        result: dict[str, Any] = response.json()["result"]
        return result


@asynccontextmanager
async def suite(config: RuntimeConfig | None = None) -> AsyncIterator[Suite]:
    server = build_server(config)
    async with server.running(), trio.open_nursery() as nursery:
        listening: Listening = await nursery.start(
            partial(serve_http, server, host="127.0.0.1", port=0)
        )
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            yield Suite(http, listening.url)
        nursery.cancel_scope.cancel()


def methods(result: Mapping[str, Any]) -> dict[str, str]:
    assert result["resultType"] == "input_required"
    assert isinstance(result["requestState"], str)
    return {key: request["method"] for key, request in result["inputRequests"].items()}


def text_of(result: Mapping[str, Any]) -> str:
    assert result["resultType"] == "complete", result
    text: str = result["content"][0]["text"]
    return text


async def test_elicitation_asks_under_the_key_user_name() -> None:
    async with suite() as s:
        first = await s.call("test_input_required_result_elicitation")
        assert methods(first) == {"user_name": "elicitation/create"}
        params = first["inputRequests"]["user_name"]["params"]
        assert params["message"] == "What is your name?"
        assert params["requestedSchema"]["properties"] == {"name": {"type": "string"}}
        assert params["requestedSchema"]["required"] == ["name"]
        done = await s.call(
            "test_input_required_result_elicitation",
            state=first["requestState"],
            responses={"user_name": accept({"name": "Alice"}), "extra": accept({"x": 1})},
        )
        assert text_of(done) == "Hello, Alice!"


async def test_answers_a_first_call_brings_serve_the_named_request_and_extras_are_ignored() -> None:
    async with suite() as s:
        extra = {"unknown_extra_key": accept({"foo": "bar"}), "another": accept({"baz": 123})}
        done = await s.call(
            "test_input_required_result_elicitation",
            responses={"user_name": accept({"name": "Alice"}), **extra},
        )
        assert text_of(done) == "Hello, Alice!"
        wrong = await s.call(
            "test_input_required_result_elicitation",
            responses={"wrong_key": accept({"data": "wrong"})},
        )
        assert methods(wrong) == {"user_name": "elicitation/create"}  # asked again


async def test_the_prompt_asks_for_its_context_then_returns_its_messages() -> None:
    async with suite() as s:
        params: dict[str, Any] = {"name": "test_input_required_result_prompt"}
        first_response = await s.post("prompts/get", params)
        assert first_response.status_code == 200
        assert first_response.headers["content-type"] == "application/json"
        first = first_response.json()["result"]
        assert methods(first) == {"user_context": "elicitation/create"}
        asked = first["inputRequests"]["user_context"]["params"]
        assert asked["message"] == "What context should the prompt use?"
        assert asked["requestedSchema"]["properties"] == {"context": {"type": "string"}}
        assert asked["requestedSchema"]["required"] == ["context"]
        retry = {
            **params,
            "requestState": first["requestState"],
            "inputResponses": {"user_context": accept({"context": "test context"})},
        }
        done = (await s.post("prompts/get", retry)).json()["result"]
        assert done["resultType"] == "complete"
        texts = [m["content"]["text"] for m in done["messages"]]
        assert texts == ["Use this context: test context", "Understood."]


async def test_sampling_and_roots_are_input_requests() -> None:
    async with suite() as s:
        first = await s.call("test_input_required_result_sampling")
        ((key, method),) = methods(first).items()
        assert method == "sampling/createMessage"
        params = first["inputRequests"][key]["params"]
        assert params["maxTokens"] == 100
        assert params["messages"][0]["content"]["text"] == "What is the capital of France?"
        answer = {key: sampled("The capital of France is Paris.")}
        done = await s.call(
            "test_input_required_result_sampling", state=first["requestState"], responses=answer
        )
        assert text_of(done) == "LLM response: The capital of France is Paris."

        first = await s.call("test_input_required_result_list_roots")
        ((key, method),) = methods(first).items()
        assert (method, first["inputRequests"][key]["params"]) == ("roots/list", {})
        done = await s.call(
            "test_input_required_result_list_roots",
            state=first["requestState"],
            responses={key: ROOTS},
        )
        assert text_of(done) == "Client roots: file:///test/root"


async def test_multiple_inputs_are_asked_in_one_round() -> None:
    async with suite() as s:
        first = await s.call("test_input_required_result_multiple_inputs")
        asked = methods(first)
        assert sorted(asked.values()) == [
            "elicitation/create",
            "roots/list",
            "sampling/createMessage",
        ]
        answers = {
            "elicitation/create": accept({"name": "Alice"}),
            "sampling/createMessage": sampled("Hello there!"),
            "roots/list": ROOTS,
        }
        done = await s.call(
            "test_input_required_result_multiple_inputs",
            state=first["requestState"],
            responses={key: answers[method] for key, method in asked.items()},
        )
        assert text_of(done) == "name=Alice; greeting=Hello there!; roots=file:///test/root"


async def test_a_refused_elicitation_among_several_inputs_is_reported_by_name() -> None:
    async with suite(RuntimeConfig(rate=1)) as s:
        await s.call("test_input_required_result_elicitation")  # the only token
        refused = await s.call("test_input_required_result_multiple_inputs")
        assert refused["resultType"] == "complete"
        assert refused["isError"] is True
        assert "rate" in refused["content"][0]["text"].lower()
        assert "group" not in refused["content"][0]["text"].lower()


async def test_request_state_multi_round_and_tampered_state() -> None:
    async with suite() as s:
        first = await s.call("test_input_required_result_request_state")
        assert methods(first) == {"confirm": "elicitation/create"}
        done = await s.call(
            "test_input_required_result_request_state",
            state=first["requestState"],
            responses={"confirm": accept({"ok": True})},
        )
        assert "state-ok" in text_of(done)

        one = await s.call("test_input_required_result_multi_round")
        assert methods(one) == {"step1": "elicitation/create"}
        two = await s.call(
            "test_input_required_result_multi_round",
            state=one["requestState"],
            responses={"step1": accept({"name": "Alice"})},
        )
        assert methods(two) == {"step2": "elicitation/create"}
        assert two["requestState"] != one["requestState"]
        three = await s.call(
            "test_input_required_result_multi_round",
            state=two["requestState"],
            responses={"step2": accept({"color": "blue"})},
        )
        assert text_of(three) == "Alice likes blue"

        first = await s.call("test_input_required_result_tampered_state")
        tampered = await s.post(
            "tools/call",
            {
                "name": "test_input_required_result_tampered_state",
                "arguments": {},
                "requestState": first["requestState"] + "-TAMPERED",
                "inputResponses": {"confirm": accept({"ok": True})},
            },
        )
        assert tampered.status_code == 400
        assert tampered.json()["error"]["code"] == -32602


async def test_capabilities_decide_what_is_asked() -> None:
    async with suite() as s:
        sampling_only = await s.call(
            "test_input_required_result_capabilities", caps={"sampling": {}}
        )
        assert list(methods(sampling_only).values()) == ["sampling/createMessage"]
        with_elicitation = await s.call("test_input_required_result_capabilities")
        assert methods(with_elicitation) == {"user_name": "elicitation/create"}
        nothing = await s.call("test_input_required_result_capabilities", caps={})
        assert "nothing was asked" in text_of(nothing)


async def test_missing_capability_is_32021_with_http_400() -> None:
    async with suite() as s:
        params = {"name": "test_missing_capability", "arguments": {}}
        response = await s.post("tools/call", params, caps={})
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == -32021
        assert error["data"] == {"requiredCapabilities": {"sampling": {}}}
        assert response.json()["id"] is not None


async def test_streaming_elicitation_answers_input_required_never_a_request() -> None:
    async with suite() as s:
        params = {"name": "test_streaming_elicitation", "arguments": {}}
        response = await s.post("tools/call", params, caps={"elicitation": {}})
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        body = response.json()
        assert "method" not in body
        assert methods(body["result"]) == {"continue": "elicitation/create"}


async def test_logging_tool_logs_only_to_a_request_that_names_a_level() -> None:
    async with suite() as s:
        params = {"name": "test_logging_tool", "arguments": {}}
        quiet = await s.post("tools/call", params)
        assert quiet.headers["content-type"] == "application/json"
        assert text_of(quiet.json()["result"]) == "Logged three messages"
        loud = await s.post("tools/call", params, log_level="info")
        assert loud.headers["content-type"].startswith("text/event-stream")
        events = [
            json.loads(line.removeprefix("data:"))
            for line in loud.text.splitlines()
            if line.startswith("data:")
        ]
        logged = [
            e["params"]["level"] for e in events if e.get("method") == "notifications/message"
        ]
        assert logged == ["info", "warning"]
        assert text_of(events[-1]["result"]) == "Logged three messages"


async def test_in_a_2025_session_the_same_tools_send_requests(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize({"elicitation": {}, "sampling": {}, "roots": {}})
        async with trio.open_nursery() as nursery:
            rid = wire.start_call(nursery, "test_input_required_result_elicitation")
            asked = await wire.server_request(0)
            assert asked["method"] == "elicitation/create"
            assert asked["params"]["message"] == "What is your name?"
            await wire.answer(asked["id"], accept({"name": "Alice"}))
            done = await wire.response(rid)
        assert text_of({"resultType": "complete", **done["result"]}) == "Hello, Alice!"


async def test_in_a_2025_session_the_prompt_elicits_through_a_server_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(build_server()) as wire, trio.open_nursery() as nursery:
        await wire.initialize({"elicitation": {}})
        rid = next(wire.ids)
        params = {"name": "test_input_required_result_prompt"}
        msg = {"jsonrpc": "2.0", "id": rid, "method": "prompts/get", "params": params}
        nursery.start_soon(wire.feed, msg)
        asked = await wire.server_request(0)
        assert asked["method"] == "elicitation/create"
        assert asked["params"]["message"] == "What context should the prompt use?"
        await wire.answer(asked["id"], accept({"context": "ops"}))
        done = await wire.response(rid)
        assert done["result"]["messages"][0]["content"]["text"] == "Use this context: ops"
