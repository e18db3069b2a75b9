"""2026-07-28 over Streamable HTTP: a tool's progress and log notifications go on its POST.

A real server on 127.0.0.1, raw HTTP with httpx2. A ``tools/call`` whose tool sends a
notification while the POST is the request it works for is answered as an SSE stream: the
notifications, then the response as the last event. A call that sends nothing is answered as
``application/json``, with the statuses of :mod:`tests.transports.test_http_mrtr`.
"""

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

from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.transports.http import HttpConfig, Listening, serve_http
from tests.mcp.test_mrtr_notify_e2e import add_export
from tests.transports.test_http import SseReader

TIMEOUT = 10  # seconds: bound of every wait in this file
VERSION = "2026-07-28"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-http", "version": "1"},
}
SSE = "text/event-stream"
YES = {"action": "accept", "content": {"confirm": True}}


class Probe:
    def __init__(self) -> None:
        self.gate = trio.Event()  # opened by the test
        self.ended = trio.Event()


def build_server(probe: Probe) -> Server:
    server = Server("mrtr-notify-http", "1.0")
    add_export(server)

    @server.tool()
    async def quiet(ctx: Context) -> str:
        """Sends nothing."""
        return "hush"

    @server.tool()
    async def refuse(ctx: Context, chatty: bool = False) -> str:
        """A JSON-RPC error from the tool, after a log message when ``chatty``."""
        if chatty:
            await ctx.log("info", "about to refuse")
        raise jsonrpc.invalid_params("no, thanks")

    @server.tool()
    async def burst(ctx: Context, n: int) -> str:
        """Logs ``n`` messages at once (no checkpoint between them), then answers."""
        for i in range(n):
            await ctx.log("info", f"line {i}")
        return "burst"

    @server.tool()
    async def gated(ctx: Context) -> str:
        """Logs, then waits for the test (which has seen that log) to open the gate."""
        try:
            await ctx.log("info", "waiting")
            await probe.gate.wait()
            await ctx.log("info", "let through")
            return "through"
        finally:
            probe.ended.set()

    return server


@asynccontextmanager
async def serving(probe: Probe, config: HttpConfig | None = None) -> AsyncIterator[Listening]:
    server = build_server(probe)
    async with server.running(), trio.open_nursery() as nursery:
        listening: Listening = await nursery.start(
            partial(serve_http, server, host="127.0.0.1", port=0, config=config)
        )
        try:
            yield listening
        finally:
            nursery.cancel_scope.cancel()


class Client:
    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.ids = itertools.count(1)

    def request(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        previous: Mapping[str, Any] | None = None,
    ) -> tuple[bytes, dict[str, str]]:
        params: dict[str, Any] = {
            "name": name,
            "arguments": dict(arguments or {}),
            "_meta": {**META, **(meta or {})},
        }
        if previous is not None:
            ((key, _),) = previous["inputRequests"].items()
            params["requestState"] = previous["requestState"]
            params["inputResponses"] = {key: YES}
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": "tools/call", "params": params}
        headers = {
            "accept": f"application/json, {SSE}",
            "content-type": "application/json",
            "mcp-protocol-version": VERSION,
            "mcp-method": "tools/call",
            "mcp-name": name,
        }
        return json.dumps(body).encode(), headers

    async def call(self, name: str, *args: Any) -> httpx2.Response:
        body, headers = self.request(name, *args)
        return await self.http.post(self.url, content=body, headers=headers)

    @asynccontextmanager
    async def stream(self, name: str, *args: Any) -> AsyncIterator[SseReader]:
        body, headers = self.request(name, *args)
        async with self.http.stream("POST", self.url, content=body, headers=headers) as r:
            assert r.status_code == 200, await r.aread()
            assert r.headers["content-type"] == SSE
            assert "mcp-session-id" not in r.headers
            yield SseReader(r)


@asynccontextmanager
async def client(listening: Listening) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        yield Client(http, listening.url)


def events(response: httpx2.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a whole SSE answer, checked to be one."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == SSE
    assert "mcp-session-id" not in response.headers
    out: list[dict[str, Any]] = []
    for block in response.content.split(b"\n\n"):
        if not block.strip():
            continue
        lines = block.split(b"\n")
        assert lines[0] == b"event: message", block
        ((data,),) = [[line[6:] for line in lines if line.startswith(b"data: ")]]
        out.append(json.loads(data))
    return out


def notes(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    assert all("id" not in m for m in messages)
    return [(m["method"], m["params"]) for m in messages]


def info(data: str) -> tuple[str, dict[str, Any]]:
    return ("notifications/message", {"level": "info", "data": data})


def progress(token: str, value: int, message: str | None = None) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"progressToken": token, "progress": value, "total": 3}
    if message is not None:
        params["message"] = message
    return ("notifications/progress", params)


def json_answer(response: httpx2.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    answer: dict[str, Any] = response.json()
    return answer


# -- tests --------------------------------------------------------------------------------------


async def test_each_round_streams_its_notifications_then_its_answer() -> None:
    async with serving(Probe()) as listening, client(listening) as c:
        with trio.fail_after(TIMEOUT):
            meta1 = {"progressToken": "p1", LOG_LEVEL: "info"}
            first = events(await c.call("export", {"items": 3}, meta1))
            *before, answer = first
            assert notes(before) == [info("scanning 3 items"), progress("p1", 1, "scanned")]
            assert answer["id"] == 1
            result = answer["result"]
            assert result["resultType"] == "input_required"
            ((_, ask),) = result["inputRequests"].items()
            assert ask["params"]["message"] == "Export 3 items?"

            meta2 = {"progressToken": "p2", LOG_LEVEL: "info"}
            second = events(await c.call("export", {"items": 3}, meta2, result))
            *during, final = second
            assert notes(during) == [
                progress("p2", 2, "exporting"),
                info("exported"),
                ("notifications/progress", {"progressToken": "p2", "progress": 3, "total": 3}),
            ]
            assert final["id"] == 2
            assert final["result"]["resultType"] == "complete"
            assert final["result"]["content"][0]["text"] == "exported 3"
        registry = listening.transport.continuations
        assert registry is not None
        assert registry.counters["notifications_sent"] == 5
        assert registry.counters["notifications_dropped"] == 0


async def test_a_call_that_sends_nothing_is_answered_as_json() -> None:
    async with serving(Probe()) as listening, client(listening) as c:
        with trio.fail_after(TIMEOUT):
            hush = json_answer(await c.call("quiet"), 200)
            assert hush["result"]["content"][0]["text"] == "hush"
            # the same chatty tool, but the request asks for neither progress nor log messages
            first = json_answer(await c.call("export"), 200)["result"]
            assert first["resultType"] == "input_required"
            final = json_answer(await c.call("export", {}, {}, first), 200)["result"]
            assert final["content"][0]["text"] == "exported 3"


async def test_errors_keep_their_status_until_the_stream_starts() -> None:
    async with serving(Probe()) as listening, client(listening) as c:
        with trio.fail_after(TIMEOUT):
            unknown = json_answer(await c.call("nope"), 400)
            assert unknown["error"]["code"] == jsonrpc.INVALID_PARAMS
            refused = json_answer(await c.call("refuse", {}, {LOG_LEVEL: "info"}), 400)
            assert refused["error"] == {"code": jsonrpc.INVALID_PARAMS, "message": "no, thanks"}
            stale = {"requestState": "not-a-state", "inputRequests": {"k": {}}}
            bad_state = json_answer(await c.call("export", {}, {}, stale), 400)
            assert bad_state["error"]["code"] == jsonrpc.INVALID_PARAMS
            # once a notification went out, the error is the last event under 200
            chatty = events(await c.call("refuse", {"chatty": True}, {LOG_LEVEL: "info"}))
            *before, answer = chatty
            assert notes(before) == [info("about to refuse")]
            assert answer["error"] == {"code": jsonrpc.INVALID_PARAMS, "message": "no, thanks"}


async def test_notifications_arrive_while_the_call_runs() -> None:
    probe = Probe()
    async with serving(probe) as listening, client(listening) as c:
        with trio.fail_after(TIMEOUT):
            async with c.stream("gated", {}, {LOG_LEVEL: "info"}) as reader:
                first = await reader.next()
                assert first is not None
                assert notes([first]) == [info("waiting")]
                probe.gate.set()  # only now can the tool go on and finish
                rest = await reader.rest()
            *during, answer = rest
            assert notes(during) == [info("let through")]
            assert answer["result"]["content"][0]["text"] == "through"


async def test_notifications_past_the_stream_queue_are_dropped_not_the_answer() -> None:
    """A client that does not keep up: past ``stream_queue`` frames waiting to be written, the
    notification and every later one are dropped (and counted); the answer is not."""
    config = HttpConfig(stream_queue=2)
    async with serving(Probe(), config) as listening, client(listening) as c:
        with trio.fail_after(TIMEOUT):
            *during, answer = events(await c.call("burst", {"n": 5}, {LOG_LEVEL: "info"}))
        assert notes(during) == [info("line 0"), info("line 1")]
        assert answer["result"]["content"][0]["text"] == "burst"
        registry = listening.transport.continuations
        assert registry is not None
        assert registry.counters["notifications_sent"] == 2
        assert registry.counters["notifications_dropped"] == 3


async def test_a_client_leaving_mid_stream_cancels_the_call_and_nothing_else() -> None:
    probe = Probe()
    async with serving(probe) as listening, client(listening) as c:
        with trio.fail_after(TIMEOUT):
            async with c.stream("gated", {}, {LOG_LEVEL: "info"}) as reader:
                assert notes([await reader.next() or {}]) == [info("waiting")]
            # the POST is closed: the request, and with it the call, is cancelled
            await probe.ended.wait()
            await trio.testing.wait_all_tasks_blocked(0.01)
        registry = listening.transport.continuations
        assert registry is not None
        assert registry.counters["notifications_sent"] == 1
        assert len(registry) == 0
        with trio.fail_after(TIMEOUT):  # the server goes on serving
            again = events(await c.call("export", {}, {LOG_LEVEL: "info"}))
            assert notes(again[:-1]) == [info("scanning 3 items")]
            assert again[-1]["result"]["resultType"] == "input_required"


async def test_an_unexpected_error_is_answered_internal_error_and_serving_goes_on(
    monkeypatch: Any,
) -> None:
    """A bug while answering one 2026-07-28 POST is answered -32603 (not an HTTP 500 from the
    ASGI server); nothing of the exception reaches the client, and the next POST is served."""
    from erlmcp_py.mcp.stateless import StatelessEndpoint

    real = StatelessEndpoint.accept

    def buggy(self: StatelessEndpoint, request: Any, **kwargs: Any) -> Any:
        if request.params["name"] == "quiet" and request.params["arguments"].get("boom"):
            raise RuntimeError("a secret bug detail")
        return real(self, request, **kwargs)

    monkeypatch.setattr(StatelessEndpoint, "accept", buggy)
    async with serving(Probe()) as listening, client(listening) as c:
        with trio.fail_after(TIMEOUT):
            answer = json_answer(await c.call("quiet", {"boom": True}), 200)
            assert answer["error"]["code"] == jsonrpc.INTERNAL_ERROR
            assert "secret" not in json.dumps(answer)
            after = json_answer(await c.call("quiet"), 200)
            assert after["result"]["content"][0]["text"] == "hush"


async def test_the_official_client_gets_progress_from_the_sse_answers_of_each_round() -> None:
    """``mcp==2.3.0``'s ``Client`` in 2026-07-28 mode reads the SSE answers: progress from the
    first call and from the retry reaches its callback, and the call completes."""
    from mcp import Client, types

    progress: list[tuple[float, float | None, str | None]] = []

    async def on_elicit(_ctx: Any, _params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=YES["content"])

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with serving(Probe()) as listening:
        with trio.fail_after(TIMEOUT):
            async with Client(listening.url, mode=VERSION, elicitation_callback=on_elicit) as sdk:
                result = await sdk.call_tool("export", {"items": 2}, progress_callback=on_progress)
    assert not result.is_error
    assert result.content[0].text == "exported 2"  # type: ignore[union-attr]
    assert progress == [(1.0, 3.0, "scanned"), (2.0, 3.0, "exporting"), (3.0, 3.0, None)]
