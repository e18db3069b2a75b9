"""2026-07-28 (stateless, MRTR) over Streamable HTTP: a real server on 127.0.0.1.

Raw HTTP with httpx2 (headers and bodies under the test's control), then the official
``mcp==2.3.0`` ``Client`` over streamable HTTP in 2026-07-28 mode, pinned and ``auto``
(``server/discover`` probe), against the bundled example server.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import httpx2
import pytest
import trio
import trio.testing

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.app.examples.server import describe
from erlmcp_py.core.outcomes import Accepted, Tenant
from erlmcp_py.core.state_token import KeyRing, request_digest, seal
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.transports.http import HttpConfig, Listening, serve_http
from erlmcp_py.transports.http_checks import decode_header_value, http_status_for

TIMEOUT = 10  # seconds: bound of every wait in this file
VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-http", "version": "1"},
}
WHO = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "legacy", "version": "1"},
}


class Probe:
    """What the test server's tool did."""

    def __init__(self) -> None:
        self.starts = 0
        self.tasks: list[object] = []
        self.ended: list[str] = []
        self.ended_event = trio.Event()
        self.tenants: list[Tenant] = []


def build_server(probe: Probe, **runtime: Any) -> Server:
    server = Server("mrtr-http", "1.0", runtime_config=RuntimeConfig.model_validate(runtime))

    @server.tool()
    async def signup(ctx: Context, plan: str = "free") -> str:
        """Ask who the user is, then confirm: two rounds on 2026-07-28."""
        probe.starts += 1
        probe.tenants.append(ctx.tenant)
        probe.tasks.append(trio.lowlevel.current_task())
        try:
            who = await ctx.elicit("Who are you?", WHO)
            probe.tasks.append(trio.lowlevel.current_task())
            if not isinstance(who, Accepted):
                return f"{plan}: no account ({type(who).__name__})"
            name = who.content["name"]
            sure = await ctx.elicit(f"Create a {plan} account for {name}?", CONFIRM)
            probe.tasks.append(trio.lowlevel.current_task())
            return f"{plan}: {name} -> {describe(sure)}"
        finally:
            probe.ended.append(plan)
            probe.ended_event.set()

    @server.tool()
    async def three_words(ctx: Context) -> str:
        """Ask for three words, one after the other: three rounds."""
        probe.starts += 1
        words = []
        for n in range(3):
            outcome = await ctx.elicit_string(f"Word {n}?")
            words.append(outcome.content if isinstance(outcome, Accepted) else "-")
        return " ".join(words)

    @server.tool()
    async def slow_after_answer(ctx: Context) -> str:
        """Ask once, then work for a long time (the retry waits on it)."""
        try:
            await ctx.elicit("Go?", CONFIRM)
            await trio.sleep(3600)
            return "done"
        finally:
            probe.ended.append("slow")
            probe.ended_event.set()

    return server


@asynccontextmanager
async def serving(
    probe: Probe, config: HttpConfig | None = None, **runtime: Any
) -> AsyncIterator[Listening]:
    server = build_server(probe, **runtime)
    async with server.running(), trio.open_nursery() as nursery:
        listening: Listening = await nursery.start(
            partial(serve_http, server, host="127.0.0.1", port=0, config=config)
        )
        try:
            yield listening
        finally:
            nursery.cancel_scope.cancel()


class StatelessPoster:
    """A hand-driven 2026-07-28 client: one POST per request, no session."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.ids = itertools.count(1)

    def headers(self, method: str, name: str | None = None, **extra: str) -> dict[str, str]:
        out = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": VERSION,
            "mcp-method": method,
        }
        if name is not None:
            out["mcp-name"] = name
        out.update({k.replace("_", "-"): v for k, v in extra.items()})
        return out

    async def post(
        self, method: str, params: Mapping[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> httpx2.Response:
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": dict(params)}
        name = params.get("name") if method == "tools/call" else None
        name = name if isinstance(name, str) else None
        sent = dict(headers) if headers is not None else self.headers(method, name)
        return await self.http.post(self.url, content=json.dumps(body).encode(), headers=sent)

    def call_params(
        self, state: str | None = None, responses: Any = None, **arguments: Any
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "name": "signup",
            "arguments": arguments or {"plan": "pro"},
            "_meta": META,
        }
        if state is not None:
            params["requestState"] = state
            params["inputResponses"] = responses
        return params

    async def call(
        self, state: str | None = None, responses: Any = None, **headers: str
    ) -> httpx2.Response:
        params = self.call_params(state, responses)
        return await self.post(
            "tools/call", params, headers=self.headers("tools/call", "signup", **headers)
        )


@asynccontextmanager
async def stateless_poster(listening: Listening) -> AsyncIterator[StatelessPoster]:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        yield StatelessPoster(http, listening.url)


def ok(response: httpx2.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in response.headers
    result: dict[str, Any] = response.json()["result"]
    return result


def refused(response: httpx2.Response, status: int, code: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code, error
    return error


def only_request(result: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    assert result["resultType"] == "input_required"
    ((key, request),) = result["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    return key, request["params"]


def forge(token: str) -> str:
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[-1] ^= 0x20
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


async def settle() -> None:
    with trio.fail_after(TIMEOUT):
        await trio.testing.wait_all_tasks_blocked(0.01)


async def statuses(listening: Listening, tenant: Tenant) -> list[str]:
    rows = await listening.transport.runtime.list_elicitations(tenant=tenant)
    return [row.status for row in rows]


ACCEPT_ADA = {"action": "accept", "content": {"name": "Ada", "age": 36}}


# -- raw HTTP ---------------------------------------------------------------------------------


async def test_discover_without_a_session() -> None:
    async with serving(Probe()) as listening, stateless_poster(listening) as c:
        found = ok(await c.post("server/discover", {"_meta": META}))
        assert found["resultType"] == "complete"
        assert found["supportedVersions"][0] == VERSION
        assert "2025-11-25" in found["supportedVersions"]
        assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mrtr-http"
        # an Mcp-Session-Id on a stateless request is ignored (none exists, none is minted)
        headers = c.headers("server/discover", mcp_session_id="nope")
        assert ok(await c.post("server/discover", {"_meta": META}, headers=headers))
        tools = ok(await c.post("tools/list", {"_meta": META}))
        assert {t["name"] for t in tools["tools"]} == {"signup", "three_words", "slow_after_answer"}
        assert listening.transport.session_count == 0


async def test_two_rounds_resume_the_same_coroutine() -> None:
    probe = Probe()
    async with serving(probe) as listening, stateless_poster(listening) as c:
        with trio.fail_after(TIMEOUT):
            first = ok(await c.call())
            key, params = only_request(first)
            assert params == {"mode": "form", "message": "Who are you?", "requestedSchema": WHO}
            second = ok(await c.call(first["requestState"], {key: ACCEPT_ADA}))
            key2, params2 = only_request(second)
            assert key2 != key
            assert params2["message"] == "Create a pro account for Ada?"
            assert second["requestState"] != first["requestState"]
            answer = {key2: {"action": "accept", "content": {"confirm": True}}}
            final = ok(await c.call(second["requestState"], answer))
        assert final["resultType"] == "complete"
        assert final["content"][0]["text"] == 'pro: Ada -> action=accept, content={"confirm": true}'
        assert probe.starts == 1  # resumed, never re-run
        assert len(probe.tasks) == 3
        assert len(set(map(id, probe.tasks))) == 1  # one task ran the whole coroutine
        assert probe.tenants == [Tenant(user="addr:127.0.0.1")]
        assert await statuses(listening, probe.tenants[0]) == ["completed", "completed"]
        # the call is over and held nowhere: its first round's state replays it (auto mode)
        stale = ok(await c.call(first["requestState"], {key: ACCEPT_ADA}))
        assert only_request(stale)[1]["message"] == "Create a pro account for Ada?"
        assert probe.starts == 2


async def test_accept_language_of_the_request_words_the_reprompt() -> None:
    probe = Probe()
    async with serving(probe) as listening, stateless_poster(listening) as c:
        with trio.fail_after(TIMEOUT):
            first = ok(await c.call(accept_language="pt-BR,en;q=0.5"))
            key, _ = only_request(first)
            wrong = {key: {"action": "accept", "content": {"name": "Ada", "age": "36"}}}
            second = ok(await c.call(first["requestState"], wrong, accept_language="pt-BR"))
            _, params = only_request(second)
        assert params["message"].startswith(
            "Who are you?\n\nSua resposta anterior não foi aceita (tentativa 2):\n"
        )


async def test_tampered_foreign_and_mismatched_state_is_refused() -> None:
    probe = Probe()
    config = HttpConfig(principal_header="X-Principal")
    async with serving(probe, config) as listening, stateless_poster(listening) as c:
        first = ok(await c.call(x_principal="alice"))
        key, _ = only_request(first)
        state = first["requestState"]
        answer = {key: ACCEPT_ADA}

        tampered = refused(await c.call(forge(state), answer, x_principal="alice"), 400, -32602)
        assert tampered["data"] == {"reason": "invalid"}
        foreign = refused(await c.call(state, answer, x_principal="mallory"), 400, -32602)
        assert foreign["data"] == {"reason": "wrong_principal"}
        by_address = refused(await c.call(state, answer), 400, -32602)  # no header: the IP
        assert by_address["data"] == {"reason": "wrong_principal"}
        other = c.call_params(state, answer, plan="team")
        mismatch = await c.post(
            "tools/call",
            other,
            headers={**c.headers("tools/call", "signup"), "x-principal": "alice"},
        )
        assert refused(mismatch, 400, -32602)["data"] == {"reason": "request_mismatch"}
        no_state = c.call_params()
        no_state["inputResponses"] = answer
        bad = {key: {"action": "maybe"}}
        assert refused(await c.call(state, bad, x_principal="alice"), 400, -32602)["data"] == {
            "reason": "bad_input_responses"
        }

        # nothing was delivered: the real principal's retry still resumes the call
        second = ok(await c.call(state, answer, x_principal="alice"))
        _, params = only_request(second)
        assert params["message"] == "Create a pro account for Ada?"
        assert probe.tenants == [Tenant(user="header:alice")]
        assert probe.starts == 1
        # answers without a state (under a key the tool did not name): a fresh call, asked again
        fresh = ok(await c.post("tools/call", no_state))
        assert only_request(fresh)[1]["message"] == first["inputRequests"][key]["params"]["message"]
        assert probe.starts == 2


async def test_versions_headers_and_methods() -> None:
    async with serving(Probe()) as listening, stateless_poster(listening) as c:
        future = {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
        headers = c.headers("server/discover", mcp_protocol_version="2099-01-01")
        unsupported = await c.post("server/discover", {"_meta": future}, headers=headers)
        error = refused(unsupported, 400, -32022)
        assert error["data"]["supported"][0] == VERSION
        assert error["data"]["requested"] == "2099-01-01"

        mismatched = c.headers("server/discover", mcp_protocol_version="2025-11-25")
        refused(await c.post("server/discover", {"_meta": META}, headers=mismatched), 400, -32020)
        no_method = c.headers("tools/list")
        del no_method["mcp-method"]
        refused(await c.post("tools/list", {"_meta": META}, headers=no_method), 400, -32020)
        wrong_name = c.headers("tools/call", "other")
        error = refused(
            await c.post("tools/call", c.call_params(), headers=wrong_name), 400, -32020
        )
        assert "Mcp-Name" in error["message"]
        assert error["message"].startswith("Header mismatch")
        no_name = c.headers("tools/call")
        refused(await c.post("tools/call", c.call_params(), headers=no_name), 400, -32020)
        twice = [*c.headers("tools/list").items(), ("mcp-method", "tools/list")]
        body = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {}})
        dup = await c.http.post(c.url, content=body.encode(), headers=twice)
        refused(dup, 400, -32020)
        # the base64 sentinel of Mcp-Name is decoded before comparing
        encoded = "=?base64?" + base64.b64encode(b"signup").decode() + "?="
        sentinel = await c.post(
            "tools/call", c.call_params(), headers=c.headers("tools/call", encoded)
        )
        assert ok(sentinel)["resultType"] == "input_required"

        no_meta = await c.post("tools/list", {})  # 2026-07-28 headers, no _meta
        assert refused(no_meta, 400, -32602)["data"]["missing"]
        refused(await c.post("ping", {"_meta": META}), 404, -32601)  # no ping in 2026-07-28
        # nor initialize: answered statelessly, no session is opened
        initialize = await c.post("initialize", {**INIT, "_meta": META})
        refused(initialize, 404, -32601)
        assert "mcp-session-id" not in initialize.headers
        for removed in ("logging/setLevel", "resources/subscribe", "resources/unsubscribe"):
            refused(await c.post(removed, {"_meta": META}), 404, -32601)
        refused(await c.post("nope/nope", {"_meta": META}), 404, -32601)
        bad_params = await c.post("tools/call", {"name": 3, "_meta": META})
        refused(bad_params, 400, -32602)


async def test_transport_checks_apply_to_stateless_requests() -> None:
    config = HttpConfig(max_frame_bytes=4096)
    async with serving(Probe(), config) as listening, stateless_poster(listening) as c:
        discover = {"_meta": META}
        evil = c.headers("server/discover", origin="http://evil.example.com")
        assert (await c.post("server/discover", discover, headers=evil)).status_code == 403
        rebound = c.headers("server/discover", host="evil.example.com")
        assert (await c.post("server/discover", discover, headers=rebound)).status_code == 403
        json_only = c.headers("server/discover", accept="application/json")
        assert (await c.post("server/discover", discover, headers=json_only)).status_code == 406
        text = c.headers("server/discover", content_type="text/plain")
        assert (await c.post("server/discover", discover, headers=text)).status_code == 415
        big = await c.post("server/discover", {"_meta": META, "pad": "x" * 5000})
        assert big.status_code == 413
        # no GET stream and no sessions in 2026-07-28
        get = await c.http.get(c.url, headers=c.headers("server/discover"))
        assert get.status_code == 405
        assert get.headers["allow"] == "POST"
        assert (await c.http.delete(c.url, headers=c.headers("x"))).status_code == 405
        # a notification is accepted and ignored
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        posted = await c.http.post(
            c.url,
            content=json.dumps(note).encode(),
            headers=c.headers("notifications/cancelled"),
        )
        assert posted.status_code == 202
        assert ok(await c.post("server/discover", discover))


async def test_deadline_between_rounds() -> None:
    probe = Probe()
    async with serving(probe, form_deadline_s=0.3, warn_before_s=0) as listening:
        async with stateless_poster(listening) as c:
            first = ok(await c.call())
            key, _ = only_request(first)
            await trio.sleep(0.6)  # real time: the runtime's 0.3 s deadline passes
            assert await statuses(listening, probe.tenants[0]) == ["timed_out"]
            late = ok(await c.call(first["requestState"], {key: ACCEPT_ADA}))
        assert late["resultType"] == "complete"
        assert late["content"][0]["text"] == "pro: no account (TimedOut)"
        assert probe.starts == 1


async def test_closing_the_post_cancels_the_call() -> None:
    probe = Probe()
    async with serving(probe) as listening, stateless_poster(listening) as c:
        params = {"name": "slow_after_answer", "arguments": {}, "_meta": META}
        headers = c.headers("tools/call", "slow_after_answer")
        first = ok(await c.post("tools/call", params, headers=headers))
        key, _ = only_request(first)
        retry = {
            **params,
            "requestState": first["requestState"],
            "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}},
        }
        body = {"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": retry}
        with trio.fail_after(TIMEOUT):
            # the tool works for an hour after the answer; the client gives up on the retry
            with pytest.raises(httpx2.ReadTimeout):
                await c.http.post(
                    c.url,
                    content=json.dumps(body).encode(),
                    headers=headers,
                    timeout=httpx2.Timeout(TIMEOUT, read=0.3),
                )
            await probe.ended_event.wait()  # the tool was cancelled
        await settle()
        registry = listening.transport.continuations
        assert registry is not None
        assert len(registry) == 0
        assert registry.counters["completed"] == 0


async def test_closing_the_transport_ends_suspended_calls() -> None:
    probe = Probe()
    server = build_server(probe)
    async with server.running() as runtime:
        async with trio.open_nursery() as nursery:
            listening: Listening = await nursery.start(
                partial(serve_http, server, host="127.0.0.1", port=0)
            )
            async with stateless_poster(listening) as c:
                for _ in range(3):
                    only_request(ok(await c.call()))
            registry = listening.transport.continuations
            assert registry is not None
            assert registry.snapshot()["suspended"] == 3
            assert runtime.metrics()["pending"] == 3
            nursery.cancel_scope.cancel()  # the app stops: its registry closes
        await settle()
        assert probe.ended == ["pro", "pro", "pro"]  # every suspended tool was cancelled
        assert len(registry) == 0
        assert listening.transport.continuations is None
        assert runtime.metrics()["pending"] == 0
        rows = await runtime.list_elicitations(tenant=probe.tenants[0])
        assert [row.status for row in rows] == ["abandoned"] * 3


async def test_a_2025_client_on_the_same_endpoint_is_unaffected() -> None:
    probe = Probe()
    async with serving(probe) as listening, stateless_poster(listening) as c:
        first = ok(await c.call())  # a stateless call stays suspended meanwhile
        key, _ = only_request(first)
        legacy = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}
        opened = await c.http.post(c.url, content=json.dumps(init).encode(), headers=legacy)
        assert opened.status_code == 200
        assert opened.json()["result"]["protocolVersion"] == "2025-11-25"
        session = {
            **legacy,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        done = await c.http.post(c.url, content=json.dumps(note).encode(), headers=session)
        assert done.status_code == 202
        listed = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        tools = await c.http.post(c.url, content=json.dumps(listed).encode(), headers=session)
        assert tools.status_code == 200
        assert tools.headers["mcp-session-id"] == session["mcp-session-id"]
        assert len(tools.json()["result"]["tools"]) == 3
        # without a session, a 2025 request is refused
        bare = await c.http.post(c.url, content=json.dumps(listed).encode(), headers=legacy)
        assert bare.status_code == 400
        assert listening.transport.session_count == 1
        second = ok(await c.call(first["requestState"], {key: ACCEPT_ADA}))
        assert only_request(second)[1]["message"] == "Create a pro account for Ada?"


def test_status_mapping_and_header_value_decoding() -> None:
    assert [http_status_for(c) for c in (-32700, -32600, -32602, -32020, -32021, -32022)] == [
        400
    ] * 6
    assert http_status_for(-32601) == 404
    assert http_status_for(-32603) == 200
    assert decode_header_value("get_weather") == "get_weather"
    encoded = "=?base64?" + base64.b64encode("Hello, 世界".encode()).decode() + "?="
    assert decode_header_value(encoded) == "Hello, 世界"
    assert decode_header_value("=?base64?not base64?=") is None
    assert decode_header_value("=?base64?QQ=?=") is None  # non-canonical padding
    assert decode_header_value("bad\x01value") is None


# -- the official SDK client ------------------------------------------------------------------


@asynccontextmanager
async def serving_example(**runtime: Any) -> AsyncIterator[Listening]:
    from erlmcp_py.app.examples.server import build_server as build_example

    server = build_example(RuntimeConfig.model_validate({"url_dev": True, **runtime}))
    async with server.running(), trio.open_nursery() as nursery:
        listening: Listening = await nursery.start(
            partial(serve_http, server, host="127.0.0.1", port=0)
        )
        try:
            yield listening
        finally:
            nursery.cancel_scope.cancel()


def text(result: Any) -> str:
    value: str = result.content[0].text
    return value


@pytest.mark.parametrize("mode", [VERSION, "auto"])
async def test_official_client_over_http(mode: str) -> None:
    from mcp import Client, types

    seen: list[Any] = []
    answers: list[types.ElicitResult] = []
    url_asked = trio.Event()

    async def on_elicit(_ctx: Any, p: Any) -> types.ElicitResult:
        seen.append(p)
        if isinstance(p, types.ElicitRequestURLParams):
            url_asked.set()
        return answers.pop(0)

    async with serving_example() as listening:
        with trio.fail_after(30):
            async with Client(listening.url, mode=mode, elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
                assert client.protocol_version == VERSION
                assert listening.transport.session_count == 0  # no initialize, no session

                answers.append(
                    types.ElicitResult(
                        action="accept", content={"username": "ada", "email": "ada@example.com"}
                    )
                )
                result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
                assert text(result).startswith("User response: action=accept")
                assert seen[-1].message == "Who are you?"

                answers.append(
                    types.ElicitResult(
                        action="accept",
                        content={
                            "name": "Jane Smith",
                            "age": 25,
                            "score": 88.0,
                            "status": "inactive",
                            "verified": False,
                        },
                    )
                )
                result = await client.call_tool("test_elicitation_sep1034_defaults", {})
                props = seen[-1].requested_schema["properties"]
                assert props["age"] == {"type": "integer", "description": "User age", "default": 30}
                assert props["score"]["default"] == 95.5
                assert text(result).startswith("Elicitation completed: action=accept")

                answers.append(
                    types.ElicitResult(
                        action="accept",
                        content={
                            "untitledSingle": "option1",
                            "titledSingle": "value1",
                            "legacyEnum": "opt1",
                            "untitledMulti": ["option1", "option2"],
                            "titledMulti": ["value1", "value2"],
                        },
                    )
                )
                result = await client.call_tool("test_elicitation_sep1330_enums", {})
                props = seen[-1].requested_schema["properties"]
                assert props["untitledSingle"]["enum"] == ["option1", "option2", "option3"]
                assert '"titledMulti": ["value1", "value2"]' in text(result)

                answers.append(types.ElicitResult(action="decline"))
                assert text(await client.call_tool("demo_confirm", {})) == "confirm: action=decline"
                answers.append(types.ElicitResult(action="cancel"))
                assert "action=cancel" in text(await client.call_tool("demo_multi_choice", {}))

                # strict validation: an invalid accept is asked again (one more MRTR round)
                asked_before = len(seen)
                answers.append(types.ElicitResult(action="accept", content={"choice": "mars"}))
                answers.append(types.ElicitResult(action="accept", content={"choice": "us-east"}))
                result = await client.call_tool("demo_choice", {})
                assert text(result) == 'region: action=accept, content="us-east"'
                assert len(seen) == asked_before + 2
                assert "not accepted" in seen[-1].message

                # URL mode: the user consents; the application completes it meanwhile
                answers.append(types.ElicitResult(action="accept"))
                out: list[Any] = []
                async with trio.open_nursery() as nursery:

                    async def sign_in() -> None:
                        out.append(await client.call_tool("demo_url_sign_in", {}))

                    nursery.start_soon(sign_in)
                    await url_asked.wait()
                    url_params = seen[-1]
                    assert url_params.url == "http://127.0.0.1:8765/sign-in"
                    done = await client.call_tool(
                        "demo_complete_sign_in", {"elicitation_id": url_params.elicitation_id}
                    )
                    assert "completed" in text(done)
                assert text(out[0]) == "sign-in: action=accept, content=null"
                unsafe = await client.call_tool("test_elicitation_url", {"url": "file:///etc/pw"})
                assert unsafe.is_error
                assert "refused" in text(unsafe)
        registry = listening.transport.continuations
        assert registry is not None
        assert len(registry) == 0


async def test_official_client_slower_than_the_deadline_gets_a_timeout() -> None:
    from mcp import Client, types

    async def slow(_ctx: Any, _p: Any) -> types.ElicitResult:
        await trio.sleep(0.8)  # the runtime's 0.3 s deadline passes meanwhile
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with serving_example(form_deadline_s=0.3, warn_before_s=0) as listening:
        with trio.fail_after(30):
            async with Client(listening.url, mode=VERSION, elicitation_callback=slow) as client:
                result = await client.call_tool("demo_confirm", {})
        assert text(result) == "confirm: timed out: nobody answered before the deadline"


# -- replay: rounds on replicas that share only the key ring -----------------------------------

RING = KeyRing("shared", b"r" * 32)
YES = {"action": "accept", "content": {"confirm": True}}


def replica_config(mrtr: str = "auto", **options: Any) -> HttpConfig:
    return HttpConfig(continuations={"keyring": RING, "mrtr": mrtr, **options})


@asynccontextmanager
async def two_replicas(
    probe: Probe, mrtr: str = "auto", **runtime: Any
) -> AsyncIterator[tuple[StatelessPoster, StatelessPoster]]:
    """Two servers (two runtimes, two registries) on two ports, sharing the key ring."""
    config = replica_config(mrtr)
    async with (
        serving(probe, config, **runtime) as a,
        serving(probe, config, **runtime) as b,
        stateless_poster(a) as ca,
        stateless_poster(b) as cb,
    ):
        yield ca, cb


@pytest.mark.parametrize("mrtr", ["auto", "replay"])
async def test_rounds_alternating_between_replicas_complete(mrtr: str) -> None:
    probe = Probe()
    async with two_replicas(probe, mrtr) as (a, b):
        with trio.fail_after(TIMEOUT):
            key, _ = only_request(first := ok(await a.call()))
            second = ok(await b.call(first["requestState"], {key: ACCEPT_ADA}))
            key2, params2 = only_request(second)
            assert params2["message"] == "Create a pro account for Ada?"
            final = ok(await a.call(second["requestState"], {key2: YES}))
    assert final["content"][0]["text"] == 'pro: Ada -> action=accept, content={"confirm": true}'
    assert probe.starts == 3  # started on A, replayed on B, replayed on A


async def test_suspend_replicas_refuse_each_others_calls() -> None:
    probe = Probe()
    async with two_replicas(probe, "suspend") as (a, b):
        with trio.fail_after(TIMEOUT):
            key, _ = only_request(first := ok(await a.call()))
            again = await b.call(first["requestState"], {key: ACCEPT_ADA})
    assert refused(again, 400, -32602)["data"]["reason"] == "unknown_continuation"


async def test_an_invalid_answer_is_asked_again_on_another_replica() -> None:
    probe = Probe()
    async with two_replicas(probe, "replay") as (a, b):
        with trio.fail_after(TIMEOUT):
            key, _ = only_request(first := ok(await a.call()))
            bad = {key: {"action": "accept", "content": {"name": "Ada", "age": "old"}}}
            again = ok(await b.call(first["requestState"], bad))
            key_again, params = only_request(again)
            assert "not accepted" in params["message"]
            second = ok(await a.call(again["requestState"], {key_again: ACCEPT_ADA}))
            key2, params2 = only_request(second)
            assert params2["message"] == "Create a pro account for Ada?"
            final = ok(await b.call(second["requestState"], {key2: YES}))
    assert final["content"][0]["text"] == 'pro: Ada -> action=accept, content={"confirm": true}'


async def test_replayed_states_are_refused_when_forged_foreign_or_expired() -> None:
    probe = Probe()
    config = HttpConfig(principal_header="x-user", continuations={"keyring": RING})
    async with (
        serving(probe, config) as a,
        serving(probe, config) as b,
        stateless_poster(a) as ca,
        stateless_poster(b) as cb,
    ):
        with trio.fail_after(TIMEOUT):
            key, _ = only_request(first := ok(await ca.call(x_user="alice")))
            state, answer = first["requestState"], {key: ACCEPT_ADA}
            forged = await cb.call(forge(state), answer, x_user="alice")
            assert refused(forged, 400, -32602)["data"]["reason"] == "invalid"
            foreign = await cb.call(state, answer, x_user="mallory")
            assert refused(foreign, 400, -32602)["data"]["reason"] == "wrong_principal"
            params = cb.call_params(state, answer)
            params["arguments"] = {"plan": "free"}
            headers = cb.headers("tools/call", "signup", x_user="alice")
            other = await cb.post("tools/call", params, headers=headers)
            assert refused(other, 400, -32602)["data"]["reason"] == "request_mismatch"
            # what B would seal for this very call, but long expired
            expired = seal(
                {"c": "x", "r": 1, "a": [], "q": [[key, "elicitation/create"]], "n": 1},
                principal="header:alice",
                request_digest=request_digest("tools/call", cb.call_params()),
                now=trio.current_time() - 1000,
                ttl=60,
                keyring=RING,
            )
            late = await cb.call(expired, answer, x_user="alice")
            assert refused(late, 400, -32602)["data"]["reason"] == "expired"
    assert probe.starts == 1


async def test_replayed_questions_are_charged_once_across_replicas() -> None:
    probe = Probe()
    async with two_replicas(probe, "replay", rate=3) as (a, b):
        # one rate limiter per replica: every round on B shows what a replay charges
        with trio.fail_after(TIMEOUT):
            params = a.call_params()
            params.update(name="three_words", arguments={})
            headers = a.headers("tools/call", "three_words")
            result = ok(await a.post("tools/call", params, headers=headers))
            for n in range(3):
                key, asked = only_request(result)
                assert asked["message"] == f"Word {n}?"
                params.update(
                    requestState=result["requestState"],
                    inputResponses={key: {"action": "accept", "content": {"value": f"w{n}"}}},
                )
                result = ok(await b.post("tools/call", params, headers=headers))
            assert result["content"][0]["text"] == "w0 w1 w2"
            # B was charged for words 1 and 2 only, though it asked 1+2+3 questions: one
            # token is left, then the bucket is empty
            fresh = {k: v for k, v in params.items() if k not in ("requestState", "inputResponses")}
            assert only_request(ok(await b.post("tools/call", fresh, headers=headers)))
            limited = ok(await b.post("tools/call", fresh, headers=headers))
            assert limited["isError"] is True
            assert "rate" in limited["content"][0]["text"].lower()
    assert probe.starts == 1 + 3 + 2


async def test_a_state_past_its_bound_ends_the_call_with_state_too_large() -> None:
    probe = Probe()
    config = replica_config("replay", max_state_chars=1500)
    async with serving(probe, config) as listening, stateless_poster(listening) as c:
        with trio.fail_after(TIMEOUT):
            key, _ = only_request(first := ok(await c.call()))
            long_name = {"action": "accept", "content": {"name": "A" * 1500, "age": 36}}
            response = await c.call(first["requestState"], {key: long_name})
    error = refused(response, 200, -32603)
    assert error["data"] == {"reason": "state_too_large", "limit": 1500}


async def test_official_client_completes_a_call_served_in_replay_mode() -> None:
    from mcp import Client, types

    probe = Probe()
    answers = [
        types.ElicitResult(action="accept", content={"name": "Ada", "age": "x"}),  # re-prompted
        types.ElicitResult(action="accept", content={"name": "Ada", "age": 36}),
        types.ElicitResult(action="accept", content={"confirm": True}),
    ]
    messages: list[str] = []

    async def on_elicit(_ctx: Any, p: Any) -> types.ElicitResult:
        messages.append(p.message)
        return answers.pop(0)

    async with serving(probe, replica_config("replay")) as listening:
        with trio.fail_after(30):
            async with Client(
                listening.url, mode=VERSION, elicitation_callback=on_elicit
            ) as client:  # type: ignore[arg-type]
                result = await client.call_tool("signup", {"plan": "pro"})
        assert text(result) == 'pro: Ada -> action=accept, content={"confirm": true}'
        assert len(messages) == 3
        assert "not accepted" in messages[1]
        assert probe.starts == 4  # every retry replayed the tool
        registry = listening.transport.continuations
        assert registry is not None
        assert len(registry) == 0
        assert registry.snapshot()["replayed"] == 3
