"""Streamable HTTP end to end: a real server on 127.0.0.1 and real HTTP clients.

Each test serves a small server on a free port in-process (trio), and talks to it with httpx2
(the HTTP client the official ``mcp`` SDK uses) or with the SDK's own streamable HTTP client.
"""

from __future__ import annotations

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
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.transports._http_session import classify
from erlmcp_py.transports.http import HttpConfig, Listening, serve_http
from erlmcp_py.transports.http_checks import HostPolicy

ACCEPT_BOTH = "application/json, text/event-stream"
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Your name"}},
    "required": ["name"],
}
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "test-http", "version": "1"},
}
TIMEOUT = 10  # seconds: bound of every wait in this file


class Probe:
    """What the test server's tools did: tenants seen, calls that ended."""

    def __init__(self) -> None:
        self.tenants: list[Tenant] = []
        self.ended: list[str] = []
        self.ended_event = trio.Event()


def build_server(probe: Probe, **config: Any) -> Server:
    server = Server("http-test", "1.0", runtime_config=RuntimeConfig.model_validate(config))

    @server.tool()
    async def ask(ctx: Context, what: str = "name") -> str:
        """Ask the user one question."""
        probe.tenants.append(ctx.tenant)
        try:
            outcome = await ctx.elicit(f"Your {what}?", SCHEMA)
        finally:
            probe.ended.append(what)
            probe.ended_event.set()
        return describe(outcome)

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """Log and report progress, then answer."""
        await ctx.log("info", "working")
        await ctx.report_progress(1, 2)
        await ctx.report_progress(2, 2)
        return "done"

    @server.tool()
    async def quiet() -> str:
        """Answer at once, sending nothing before."""
        return "ok"

    return server


@asynccontextmanager
async def serving(
    probe: Probe | None = None,
    config: HttpConfig | None = None,
    server: Server | None = None,
    **runtime: Any,
) -> AsyncIterator[Listening]:
    server = server or build_server(probe or Probe(), **runtime)
    async with server.running(), trio.open_nursery() as nursery:
        listening: Listening = await nursery.start(
            partial(serve_http, server, host="127.0.0.1", port=0, config=config)
        )
        try:
            yield listening
        finally:
            nursery.cancel_scope.cancel()


def message(method: str, params: Mapping[str, Any] | None = None, id: Any = None) -> bytes:
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        out["params"] = dict(params)
    if id is not None:
        out["id"] = id
    return json.dumps(out).encode()


class McpHttp:
    """A hand-driven Streamable HTTP client (headers under the test's control)."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.session_id: str | None = None
        self.version = "2025-11-25"

    def headers(self, **extra: str) -> dict[str, str]:
        out = {"accept": ACCEPT_BOTH, "content-type": "application/json"}
        if self.session_id is not None:
            out["mcp-session-id"] = self.session_id
            out["mcp-protocol-version"] = self.version
        out.update({k.replace("_", "-"): v for k, v in extra.items()})
        return out

    async def post(self, body: bytes, **headers: str) -> httpx2.Response:
        return await self.http.post(self.url, content=body, headers=self.headers(**headers))

    async def initialize(self, params: Mapping[str, Any] = INIT) -> dict[str, Any]:
        response = await self.post(message("initialize", params, id=0))
        assert response.status_code == 200, response.text
        self.session_id = response.headers["mcp-session-id"]
        result: dict[str, Any] = response.json()["result"]
        self.version = result["protocolVersion"]
        answer = await self.post(message("notifications/initialized"))
        assert answer.status_code == 202
        return result

    async def answer(self, request: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": dict(result)})
        response = await self.post(body.encode())
        assert response.status_code == 202, response.text

    @asynccontextmanager
    async def stream(self, body: bytes) -> AsyncIterator[SseReader]:
        async with self.http.stream("POST", self.url, content=body, headers=self.headers()) as r:
            assert r.status_code == 200, await r.aread()
            assert r.headers["content-type"].startswith("text/event-stream")
            yield SseReader(r)

    @asynccontextmanager
    async def get_stream(self) -> AsyncIterator[SseReader]:
        headers = self.headers(accept="text/event-stream")
        async with self.http.stream("GET", self.url, headers=headers) as r:
            assert r.status_code == 200
            yield SseReader(r)


class SseReader:
    """Server-sent events of one response, as parsed JSON-RPC messages."""

    def __init__(self, response: httpx2.Response) -> None:
        self._chunks = response.aiter_bytes()
        self._buf = b""

    async def next(self) -> dict[str, Any] | None:
        """The next message, or ``None`` at the end of the stream."""
        while True:
            while b"\n\n" in self._buf:
                event, self._buf = self._buf.split(b"\n\n", 1)
                data = [line[5:].lstrip() for line in event.split(b"\n") if line[:5] == b"data:"]
                if data and b"".join(data).strip():
                    parsed: dict[str, Any] = json.loads(b"\n".join(data))
                    return parsed
            try:
                self._buf += await self._chunks.__anext__()
            except StopAsyncIteration:
                return None

    async def rest(self) -> list[dict[str, Any]]:
        out = []
        while (msg := await self.next()) is not None:
            out.append(msg)
        return out


@asynccontextmanager
async def client(listening: Listening) -> AsyncIterator[McpHttp]:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        yield McpHttp(http, listening.url)


def call(id: Any, name: str = "ask", **arguments: Any) -> bytes:
    return message("tools/call", {"name": name, "arguments": arguments}, id=id)


async def settle() -> None:
    """Let every task run until all of them wait (owner watches, session teardown)."""
    with trio.fail_after(TIMEOUT):
        await trio.testing.wait_all_tasks_blocked(0.01)


async def statuses(listening: Listening, probe: Probe) -> list[str]:
    runtime = listening.transport.runtime
    rows = await runtime.list_elicitations(tenant=probe.tenants[-1])
    return [row.status for row in rows]


# -- sessions and headers ---------------------------------------------------------------------


async def test_initialize_assigns_a_session_and_answers_json() -> None:
    async with serving() as listening, client(listening) as c:
        result = await c.initialize()
        assert result["protocolVersion"] == "2025-11-25"
        assert c.session_id is not None
        assert len(c.session_id) >= 32
        assert all(0x21 <= ord(ch) <= 0x7E for ch in c.session_id)
        response = await c.post(message("tools/list", {}, id=1))
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        names = {tool["name"] for tool in response.json()["result"]["tools"]}
        assert names == {"ask", "chatty", "quiet"}
        ping = await c.post(message("ping", id="p"))
        assert ping.json() == {"jsonrpc": "2.0", "id": "p", "result": {}}


async def test_session_id_missing_unknown_and_deleted() -> None:
    async with serving() as listening, client(listening) as c:
        await c.initialize()
        sid = c.session_id
        c.session_id = None
        missing = await c.post(message("tools/list", {}, id=1))
        assert missing.status_code == 400
        unknown = await c.post(message("tools/list", {}, id=1), mcp_session_id="nope")
        assert unknown.status_code == 404
        assert unknown.json()["error"]["code"] == -32001
        c.session_id = sid
        again = await c.post(message("initialize", INIT, id=2))
        assert again.status_code == 400  # initialize never carries a session id
        deleted = await c.http.delete(c.url, headers=c.headers())
        assert deleted.status_code == 200
        after = await c.post(message("tools/list", {}, id=3))
        assert after.status_code == 404
        assert listening.transport.session_count == 0


async def test_protocol_version_header_is_checked() -> None:
    async with serving() as listening, client(listening) as c:
        await c.initialize({**INIT, "protocolVersion": "2025-06-18"})
        assert c.version == "2025-06-18"
        body = message("tools/list", {}, id=1)
        assert (await c.post(body)).status_code == 200
        assert (await c.post(body, mcp_protocol_version="1999-01-01")).status_code == 400
        newer = await c.post(body, mcp_protocol_version="2025-11-25")
        assert newer.status_code == 400
        assert "does not match" in newer.json()["error"]["message"]
        assert (await c.post(body, mcp_protocol_version="2025-03-26")).status_code == 200
        headers = c.headers()
        del headers["mcp-protocol-version"]
        bare = await c.http.post(c.url, content=body, headers=headers)
        assert bare.status_code == 200


async def test_dns_rebinding_is_refused() -> None:
    config = HttpConfig(allowed_hosts=("mcp.internal",), allowed_origins=("https://app.example",))
    async with serving(config=config) as listening, client(listening) as c:
        init = message("initialize", INIT, id=0)
        evil = await c.post(init, host="evil.example.com", origin="http://evil.example.com")
        assert evil.status_code == 403
        bad_origin = await c.post(init, origin="http://evil.example.com")
        assert bad_origin.status_code == 403
        assert (await c.post(init, origin="null")).status_code == 403
        for origin in ("http://localhost:5173", "http://127.0.0.1", "http://[::1]:8080"):
            ok = await c.post(init, origin=origin)
            assert ok.status_code == 200, origin
        assert (await c.post(init, host="localhost:1234")).status_code == 200
        assert (await c.post(init, host="mcp.internal")).status_code == 200
        assert (await c.post(init, origin="https://app.example")).status_code == 200
        assert (await c.http.get(c.url, headers={"host": "evil.example.com"})).status_code == 403


async def test_accept_content_type_and_method_checks() -> None:
    async with serving() as listening, client(listening) as c:
        init = message("initialize", INIT, id=0)
        assert (await c.post(init, accept="application/json")).status_code == 406
        assert (await c.post(init, accept="text/event-stream")).status_code == 406
        assert (await c.post(init, content_type="text/plain")).status_code == 415
        assert (await c.post(init, accept="*/*")).status_code == 200
        await c.initialize()
        get = await c.http.get(c.url, headers=c.headers(accept="application/json"))
        assert get.status_code == 406
        put = await c.http.put(c.url, content=b"{}", headers=c.headers())
        assert put.status_code == 405
        other = await c.http.post(c.url + "x", content=init, headers=c.headers())
        assert other.status_code == 404


# -- elicitation over HTTP --------------------------------------------------------------------


async def test_a_prompts_elicitation_goes_out_on_its_post_stream() -> None:
    server = build_server(Probe())

    @server.prompt()
    async def greeting(ctx: Context) -> str:
        outcome = await ctx.elicit("Your name?", SCHEMA)
        return describe(outcome)

    async with serving(server=server) as listening, client(listening) as c:
        await c.initialize()
        with trio.fail_after(TIMEOUT):
            async with c.stream(message("prompts/get", {"name": "greeting"}, id=3)) as events:
                request = await events.next()
                assert request is not None
                assert request["method"] == "elicitation/create"
                await c.answer(request, {"action": "accept", "content": {"name": "Ada"}})
                (response,) = await events.rest()
        assert response["id"] == 3
        text = response["result"]["messages"][0]["content"]["text"]
        assert text == 'action=accept, content={"name": "Ada"}'


async def test_elicitation_goes_out_on_the_originating_post_stream() -> None:
    probe = Probe()
    async with serving(probe) as listening, client(listening) as c:
        await c.initialize()
        with trio.fail_after(TIMEOUT):
            async with c.get_stream() as get_events:
                async with c.stream(call(7, what="name")) as events:
                    request = await events.next()
                    assert request is not None
                    assert request["method"] == "elicitation/create"
                    assert request["params"]["message"] == "Your name?"
                    assert request["params"]["requestedSchema"] == SCHEMA
                    await c.answer(request, {"action": "accept", "content": {"name": "Ada"}})
                    (response,) = await events.rest()
                assert response["id"] == 7
                text = response["result"]["content"][0]["text"]
                assert text == 'action=accept, content={"name": "Ada"}'
                # end the session: the GET stream ends, and nothing was sent on it
                assert (await c.http.delete(c.url, headers=c.headers())).status_code == 200
                assert await get_events.rest() == []
        assert await statuses(listening, probe) == ["completed"]
        assert listening.transport.open_streams == 0


async def test_the_accept_language_of_initialize_words_the_sessions_reprompts() -> None:
    probe = Probe()
    async with serving(probe) as listening, client(listening) as c:
        response = await c.post(message("initialize", INIT, id=0), accept_language="pt-BR")
        c.session_id = response.headers["mcp-session-id"]
        await c.post(message("notifications/initialized"))
        with trio.fail_after(TIMEOUT):
            async with c.stream(call(3)) as events:
                request = await events.next()
                assert request is not None
                await c.answer(request, {"action": "accept", "content": {"name": 5}})
                reprompt = await events.next()
                assert reprompt is not None
                await c.answer(reprompt, {"action": "decline"})
                await events.rest()
        assert reprompt["params"]["message"].startswith(
            "Your name?\n\nSua resposta anterior não foi aceita (tentativa 2):\n- "
        )


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ({"action": "decline"}, "action=decline"),
        ({"action": "cancel"}, "action=cancel (by client)"),
    ],
)
async def test_decline_and_cancel(answer: dict[str, Any], text: str) -> None:
    probe = Probe()
    async with serving(probe) as listening, client(listening) as c:
        await c.initialize()
        with trio.fail_after(TIMEOUT):
            async with c.stream(call("x")) as events:
                request = await events.next()
                assert request is not None
                await c.answer(request, answer)
                (response,) = await events.rest()
        assert response["id"] == "x"
        assert response["result"]["content"][0]["text"] == text


async def test_timeout_sends_cancelled_on_the_same_stream() -> None:
    probe = Probe()
    async with serving(probe, form_deadline_s=0.3, warn_before_s=0) as listening:
        async with client(listening) as c:
            await c.initialize()
            with trio.fail_after(TIMEOUT):
                async with c.stream(call(1)) as events:
                    request = await events.next()
                    assert request is not None
                    rest = await events.rest()
            cancelled = [m for m in rest if m.get("method") == "notifications/cancelled"]
            assert [m["params"]["requestId"] for m in cancelled] == [request["id"]]
            assert rest[-1]["result"]["content"][0]["text"].startswith("timed out")
            # a late answer is ignored and still gets 202
            await c.answer(request, {"action": "accept", "content": {"name": "late"}})
        assert await statuses(listening, probe) == ["timed_out"]


async def test_client_disconnect_abandons_the_elicitation() -> None:
    probe = Probe()
    async with serving(probe) as listening, client(listening) as c:
        await c.initialize()
        with trio.fail_after(TIMEOUT):
            async with c.stream(call(1)) as events:
                request = await events.next()
                assert request is not None
            # the POST stream is closed: the tool is cancelled, its elicitation abandoned
            await probe.ended_event.wait()
        await settle()
        assert listening.transport.runtime.metrics()["pending"] == 0
        assert await statuses(listening, probe) == ["abandoned"]
        assert listening.transport.open_streams == 0
        # the session itself survives and serves the next call
        assert (await c.post(message("tools/list", {}, id=2))).status_code == 200
        assert listening.transport.session_count == 1


async def test_client_cancel_notification_abandons_the_elicitation() -> None:
    probe = Probe()
    async with serving(probe) as listening, client(listening) as c:
        await c.initialize()
        with trio.fail_after(TIMEOUT):
            async with c.stream(call("c1")) as events:
                request = await events.next()
                assert request is not None
                cancel = message("notifications/cancelled", {"requestId": "c1", "reason": "no"})
                assert (await c.post(cancel)).status_code == 202
                await probe.ended_event.wait()
                # no response comes for a cancelled request; end the stream from our side
        await settle()
        assert listening.transport.runtime.metrics()["pending"] == 0
        assert await statuses(listening, probe) == ["abandoned"]
        await settle()
        assert listening.transport.open_streams == 0


async def test_delete_ends_running_calls() -> None:
    probe = Probe()
    async with serving(probe) as listening, client(listening) as c:
        await c.initialize()
        with trio.fail_after(TIMEOUT):
            async with c.stream(call(1)) as events:
                assert await events.next() is not None
                deleted = await c.http.delete(c.url, headers=c.headers())
                assert deleted.status_code == 200
                assert await events.rest() == []  # the stream just ends
            await probe.ended_event.wait()
        await settle()
        assert listening.transport.session_count == 0
        assert await statuses(listening, probe) == ["abandoned"]


async def test_concurrent_post_streams_in_one_session() -> None:
    probe = Probe()
    async with serving(probe) as listening, client(listening) as c:
        await c.initialize()
        with trio.fail_after(TIMEOUT):
            async with (
                c.stream(call(1, what="first")) as one,
                c.stream(call(2, what="second")) as two,
            ):
                first = await one.next()
                second = await two.next()
                assert first is not None
                assert second is not None
                assert first["params"]["message"] == "Your first?"
                assert second["params"]["message"] == "Your second?"
                await c.answer(second, {"action": "accept", "content": {"name": "B"}})
                (answer2,) = await two.rest()
                await c.answer(first, {"action": "decline"})
                (answer1,) = await one.rest()
        assert answer2["id"] == 2
        assert answer2["result"]["content"][0]["text"].endswith('{"name": "B"}')
        assert answer1["id"] == 1
        assert answer1["result"]["content"][0]["text"] == "action=decline"


async def test_logs_and_progress_of_a_call_share_its_stream() -> None:
    async with serving() as listening, client(listening) as c:
        await c.initialize()
        body = message(
            "tools/call", {"name": "chatty", "arguments": {}, "_meta": {"progressToken": "t"}}, 5
        )
        with trio.fail_after(TIMEOUT):
            async with c.stream(body) as events:
                got = await events.rest()
        assert [m.get("method") for m in got] == [
            "notifications/message",
            "notifications/progress",
            "notifications/progress",
            None,
        ]
        assert got[-1]["id"] == 5


async def test_a_call_with_nothing_to_send_before_its_answer_is_one_whole_sse_response() -> None:
    """The head of a call's SSE answer goes out with its first event: a call that sends none
    before its response is answered in one write, with its length."""
    async with serving() as listening, client(listening) as c:
        await c.initialize()
        with trio.fail_after(TIMEOUT):
            async with c.http.stream(
                "POST", c.url, content=call(6, "quiet"), headers=c.headers()
            ) as response:
                body = await response.aread()
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert "transfer-encoding" not in response.headers
        assert int(response.headers["content-length"]) == len(body)
        assert body.startswith(b"event: message\ndata: ")
        (frame,) = [json.loads(e.split(b"data: ", 1)[1]) for e in body.split(b"\n\n") if e]
        assert frame["id"] == 6
        assert frame["result"]["content"][0]["text"] == "ok"


async def test_unrelated_messages_wait_for_the_get_stream() -> None:
    async with serving() as listening, client(listening) as c:
        await c.initialize()
        (hs,) = listening.transport._sessions.values()
        await hs.write(message("notifications/tools/list_changed"))
        with trio.fail_after(TIMEOUT):
            async with c.get_stream() as events:
                note = await events.next()
                assert note is not None
                assert note["method"] == "notifications/tools/list_changed"
                conflict = await c.http.get(c.url, headers=c.headers(accept="text/event-stream"))
                assert conflict.status_code == 409


# -- bad input --------------------------------------------------------------------------------


async def test_bad_input_is_refused_and_other_sessions_keep_working() -> None:
    config = HttpConfig(max_frame_bytes=4096)
    async with serving(config=config) as listening, client(listening) as c, client(listening) as d:
        await c.initialize()
        await d.initialize()
        malformed = await c.post(b'{"jsonrpc": "2.0", "id": 1, "method": ')
        assert malformed.status_code == 400
        assert malformed.json()["error"]["code"] == -32700
        not_rpc = await c.post(b'{"jsonrpc": "2.0", "id": 1}')
        assert not_rpc.status_code == 400
        assert not_rpc.json()["error"]["code"] == -32600
        batch = await c.post(b"[]")
        assert batch.status_code == 400
        big = message("tools/list", {"pad": "x" * 5000}, id=1)
        oversize = await c.post(big)
        assert oversize.status_code == 413
        assert oversize.json()["error"]["data"]["reason"] == "frame_too_large"
        unknown_method = await c.post(message("nope/nope", {}, id=2))
        assert unknown_method.status_code == 200
        assert unknown_method.json()["error"]["code"] == -32601
        bad_params = await c.post(message("tools/call", {"name": 3}, id=3))
        assert bad_params.json()["error"]["code"] == -32602
        stray = json.dumps({"jsonrpc": "2.0", "id": "never-sent", "result": {}}).encode()
        assert (await c.post(stray)).status_code == 202
        # both sessions still serve
        for peer in (c, d):
            ok = await peer.post(message("tools/list", {}, id=9))
            assert ok.status_code == 200
            assert "result" in ok.json()
        assert listening.transport.session_count == 2


# -- the official SDK client ------------------------------------------------------------------


async def test_official_mcp_client_form_round_trip() -> None:
    from mcp import types
    from mcp.client.client import Client

    asked: list[Any] = []

    async def answer(_ctx: Any, params: Any) -> Any:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    async with serving() as listening:
        with trio.fail_after(TIMEOUT):
            async with Client(listening.url, mode="legacy", elicitation_callback=answer) as sdk:
                result = await sdk.call_tool("ask", {"what": "name"})
                declined = await sdk.call_tool("ask", {"what": "age"})
        assert [p.message for p in asked] == ["Your name?", "Your age?"]
        assert result.is_error is False
        assert result.content[0].text.endswith('{"name": "Grace"}')
        assert declined.content[0].text.endswith('{"name": "Grace"}')
        await settle()
        assert listening.transport.session_count == 0  # DELETE on close


# -- the bundled example server's everything-server tools -------------------------------------


async def test_example_server_sampling_and_content_tools() -> None:
    from erlmcp_py.app.examples.server import build_server as build_example

    async with serving(server=build_example()) as listening, client(listening) as c:
        await c.initialize({**INIT, "capabilities": {"elicitation": {}, "sampling": {}}})
        with trio.fail_after(TIMEOUT):
            async with c.stream(call(1, "test_sampling", prompt="Say hi")) as events:
                request = await events.next()
                assert request is not None
                assert request["method"] == "sampling/createMessage"
                assert request["params"]["messages"][0]["content"]["text"] == "Say hi"
                await c.answer(
                    request,
                    {
                        "role": "assistant",
                        "content": {"type": "text", "text": "hi!"},
                        "model": "m",
                        "stopReason": "endTurn",
                    },
                )
                (response,) = await events.rest()
        assert response["result"]["content"][0]["text"] == "LLM response: hi!"
        kinds = {}
        for name in ("test_image_content", "test_audio_content", "test_embedded_resource"):
            with trio.fail_after(TIMEOUT):
                async with c.stream(call(name, name)) as events:
                    (answer,) = await events.rest()
            kinds[name] = answer["result"]["content"][0]["type"]
        assert kinds == {
            "test_image_content": "image",
            "test_audio_content": "audio",
            "test_embedded_resource": "resource",
        }


def test_serve_http_is_public_and_serves_the_server_it_is_given() -> None:
    import ast
    import inspect

    import erlmcp_py
    import erlmcp_py.transports.http as http

    assert erlmcp_py.serve_http is serve_http
    assert "serve_http" in erlmcp_py.__all__
    assert next(iter(inspect.signature(serve_http).parameters)) == "server"
    # the CLI, not the transport, picks the example server
    imported = {
        node.module
        for node in ast.walk(ast.parse(inspect.getsource(http)))
        if isinstance(node, ast.ImportFrom)
    }
    assert "erlmcp_py.app.examples.server" not in imported


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (jsonrpc.encode_response(7, {"ok": True}), (True, 7)),
        (jsonrpc.encode_response('a"b\\c', {}), (True, 'a"b\\c')),
        (jsonrpc.encode_error("x", -32000, "no"), (True, "x")),
        (jsonrpc.encode_error(None, -32700, "parse"), (True, None)),
        (jsonrpc.encode_request(3, "elicitation/create", {}), (False, None)),
        (jsonrpc.encode_notification("notifications/progress", {}), (False, None)),
    ],
)
def test_an_outgoing_frame_is_classified_by_its_id_alone(
    frame: bytes, expected: tuple[bool, Any]
) -> None:
    assert classify(frame) == expected


@pytest.mark.parametrize(
    ("public_url", "host", "origin", "allowed"),
    [
        ("https://mcp.example.com", "mcp.example.com", "https://mcp.example.com", True),
        ("https://mcp.example.com/", "MCP.example.com:443", "https://mcp.example.com", True),
        ("https://mcp.example.com:8443", "mcp.example.com:8443", None, True),
        ("http://[2001:db8::1]:8080", "[2001:db8::1]:8080", "http://[2001:db8::1]:8080", True),
        ("https://mcp.example.com", "mcp.example.com:8443", None, False),
        ("https://mcp.example.com", "evil.example", None, False),
        ("https://mcp.example.com", "mcp.example.com", "http://mcp.example.com", False),
        ("https://mcp.example.com", "mcp.example.com", "https://mcp.example.com:8443", False),
        ("https://mcp.example.com", "localhost:8000", "http://localhost:8000", True),
    ],
)
def test_a_public_url_admits_exactly_its_host_and_origin(
    public_url: str, host: str, origin: str | None, allowed: bool
) -> None:
    policy = HostPolicy.build(public_url=public_url)
    verdict = policy.check_host(host) or policy.check_origin(origin)
    assert (verdict is None) is allowed, verdict
