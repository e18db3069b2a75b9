"""stdio: the line splitter, then the real ``erlmcp-py serve`` subprocess driven by raw frames.

Subprocess tests are bounded by ``fail_after``; they synchronise on frames, never on sleeps.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing

from erlmcp_py.client import ServerRequest, StdioClient, open_stdio_client
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.transports._frame_head import HEAD_BYTES
from erlmcp_py.transports.stdio import LineSplitter, Oversize, serve_stream

SERVE = [sys.executable, "-m", "erlmcp_py.app", "serve", "--dev", "--log-level", "warning"]
LIMIT = 20.0  # seconds any subprocess test may take


# -- the splitter (sans-IO) ----------------------------------------------------------------------


def test_splitter_splits_on_newline_only() -> None:
    s = LineSplitter(100)
    assert s.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert s.partial
    assert s.feed(b":2}\r\n\n  \n") == [b'{"b":2}\r']
    assert not s.partial
    assert s.feed("x\u2028y\n".encode()) == ["x\u2028y".encode()]  # U+2028 does not split


def test_splitter_refuses_oversize_lines_without_buffering_them() -> None:
    s = LineSplitter(10)
    assert s.feed(b"0123456789") == []
    assert s.feed(b"abc") == []
    assert s.feed(b"def\nok\n") == [Oversize(16, b"0123456789abc"), b"ok"]
    assert s.feed(b"x" * 50 + b"\n") == [Oversize(50, b"x" * 50)]
    assert s._buf == bytearray()


def test_splitter_keeps_only_the_head_of_an_oversize_line() -> None:
    s = LineSplitter(10)
    for _ in range(100):  # 6.4 MB of one line, 64 KiB at a time: nothing piles up
        assert s.feed(b"y" * 65536) == []
        assert len(s._buf) == 0
    (item,) = s.feed(b"\n")
    assert item == Oversize(100 * 65536, b"y" * HEAD_BYTES)


# -- the subprocess ------------------------------------------------------------------------------


@asynccontextmanager
async def serve(*extra: str, handler: Any = None) -> AsyncIterator[StdioClient]:
    with trio.fail_after(LIMIT):
        async with open_stdio_client([*SERVE, *extra], handler=handler) as client:
            yield client


async def test_initialize_list_and_clean_exit_on_eof() -> None:
    async with serve() as client:
        init = await client.initialize()
        assert init["protocolVersion"] == "2025-11-25"
        tools = (await client.request("tools/list"))["tools"]
        assert "test_elicitation" in {t["name"] for t in tools}
    assert client.process.returncode == 0


async def test_bad_input_gets_the_right_error_and_the_server_keeps_serving() -> None:
    async with serve() as client:
        await client.initialize()

        async def raw(line: bytes) -> dict[str, Any]:
            before = len(client.frames)
            await client.send_raw(line + b"\n")
            await client.wait_for(lambda: len(client.frames) > before)
            frame: dict[str, Any] = client.frames[before]
            return frame

        assert (await raw(b"{oops"))["error"]["code"] == -32700
        assert (await raw(b'{"jsonrpc":"2.0","id":null,"method":"ping"}'))["error"]["code"] == (
            -32600
        )
        assert (await raw(b"[1,2]"))["error"]["code"] == -32600
        big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (4 << 20) + b'"}}'
        refused = await raw(big)
        assert refused["error"]["code"] == -32600
        assert refused["error"]["data"]["reason"] == "frame_too_large"
        assert refused["id"] == 1  # its head names the request: the client gets its answer
        nameless = b'{"jsonrpc":"2.0","method":"ping","params":{"x":"' + b"a" * (4 << 20) + b'"}}'
        assert (await raw(nameless))["id"] is None
        unknown = await client.request_raw("no/such/method")
        assert unknown["error"]["code"] == -32601
        wrong = await client.request_raw("tools/call", {"name": ["not", "a", "string"]})
        assert wrong["error"]["code"] == -32602
        assert wrong["error"]["message"].startswith("Invalid params: name")
        bad_args = await client.call_tool("test_elicitation", {"message": 3})
        assert bad_args["isError"] is True
        # answers to ids the server never used: no reply, nothing breaks
        await client.answer("no-such-id", {"action": "accept"})
        await client.send({"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "?"}})
        assert (await client.request("ping")) == {}
    assert client.process.returncode == 0


async def test_duplicate_and_late_answers_are_ignored() -> None:
    # 3 s, not 1: the first answer must beat the deadline even on a loaded 2-core CI box.
    async with serve("--elicitation-timeout", "3") as client:
        await client.initialize()
        async with trio.open_nursery() as nursery:
            results: list[dict[str, Any]] = []

            async def call(name: str) -> None:
                results.append(await client.call_tool(name))

            nursery.start_soon(call, "demo_confirm")
            first = await client.next_server_request(0)
            await client.answer(first.id, {"action": "decline"})
            await client.answer(first.id, {"action": "accept", "content": {"confirm": True}})
        assert results[0]["content"][0]["text"] == "confirm: action=decline"
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "demo_confirm")
            second = await client.next_server_request(1)
        # the deadline passed (the call returned): a late answer is ignored
        assert "timed out" in results[1]["content"][0]["text"]
        await client.answer(second.id, {"action": "accept", "content": {"confirm": True}})
        assert (await client.request("ping")) == {}
        cancelled = [p for m, p in client.notifications if m == "notifications/cancelled"]
        assert cancelled[-1]["requestId"] == second.id


async def test_eof_with_a_pending_elicitation_exits_cleanly() -> None:
    async with serve() as client:
        await client.initialize()
        await client.send(
            {
                "jsonrpc": "2.0",
                "id": 50,
                "method": "tools/call",
                "params": {"name": "demo_confirm", "arguments": {}},
            }
        )
        await client.next_server_request(0)
    assert client.process.returncode == 0


async def test_client_cancel_over_stdio() -> None:
    async with serve() as client:
        await client.initialize()
        await client.send(
            {
                "jsonrpc": "2.0",
                "id": 60,
                "method": "tools/call",
                "params": {"name": "demo_choice", "arguments": {}},
            }
        )
        request = await client.next_server_request(0)
        await client.notify("notifications/cancelled", {"requestId": 60})
        await client.wait_for(
            lambda: any(
                m == "notifications/cancelled" and p.get("requestId") == request.id
                for m, p in client.notifications
            )
        )
        assert (await client.request("ping")) == {}
        assert not [f for f in client.frames if f.get("id") == 60]


async def test_requests_are_served_while_a_tool_waits_on_a_human() -> None:
    answered = trio.Event()

    async def handler(req: ServerRequest) -> dict[str, Any] | None:
        await answered.wait()
        return {"action": "accept", "content": {"choice": "us-east"}}

    async with serve(handler=handler) as client:
        await client.initialize()
        async with trio.open_nursery() as nursery:
            out: list[dict[str, Any]] = []

            async def call() -> None:
                out.append(await client.call_tool("demo_choice"))

            nursery.start_soon(call)
            await client.next_server_request(0)
            assert (await client.call_tool("test_simple_text"))["content"]
            answered.set()
        assert out[0]["content"][0]["text"] == 'region: action=accept, content="us-east"'


def test_serve_http_is_refused_cleanly_or_served() -> None:
    proc = subprocess.run(
        [*SERVE[:-2], "--transport", "stdio", "--elicitation-timeout", "-1"],
        capture_output=True,
        timeout=LIMIT,
        check=False,
    )
    assert proc.returncode == 2  # argparse: bad --elicitation-timeout
    assert proc.stdout == b""


LIBRARY_SERVER = """
import trio
from erlmcp_py import Server, serve_stdio

server = Server("lib", "1.0.0")

@server.tool()
async def hello(name: str) -> str:
    print("a stray print from the tool")  # must not reach the MCP stream
    return f"hello {name}"

trio.run(serve_stdio, server)
"""


def test_library_serve_stdio_keeps_stdout_pure_mcp(tmp_path: Any) -> None:
    """The README's plain ``trio.run(serve_stdio, server)`` (no CLI, no logging config):
    logs and prints go to stderr, stdout carries only JSON-RPC frames."""
    import json
    import subprocess
    import sys
    import threading

    script = tmp_path / "server.py"
    script.write_text(LIBRARY_SERVER)
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "hello", "arguments": {"name": "ada"}}},
    ]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(120, process.kill)  # a hang fails the test, never blocks CI
    watchdog.start()
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdin.write("".join(json.dumps(f) + "\n" for f in frames))
        process.stdin.flush()
        messages = []
        while len(messages) < 2:  # EOF would cancel the call: wait for its reply first
            line = process.stdout.readline()
            assert line, "server closed stdout early"
            messages.append(json.loads(line))  # every stdout line is a JSON-RPC frame
        process.stdin.close()  # EOF: the server ends the session and exits
        rest = process.stdout.read()
        errors = process.stderr.read()
        process.wait()
    finally:
        watchdog.cancel()
    assert rest == ""
    assert [m.get("id") for m in messages] == [1, 2]
    assert messages[1]["result"]["content"][0]["text"] == "hello ada"
    assert "a stray print from the tool" in errors
    assert "initialize" in errors  # the runtime's logs went to stderr
    assert process.returncode == 0


# -- serve --server MODULE:NAME ------------------------------------------------------------------


async def _confirm(request: ServerRequest) -> dict[str, Any]:
    return {"action": "accept", "content": {"confirm": True}}


async def test_serve_a_server_of_your_own() -> None:
    factory = ("--server", "tests.transports.custom_server:build", "--rate", "5000")
    async with serve(*factory, handler=_confirm) as client:
        init = await client.initialize()
        assert init["serverInfo"]["name"] == "custom"
        result = await client.call_tool("policy")
        assert result["content"][0]["text"] == "rate=5000 deadline=300"
    assert client.process.returncode == 0
    instance = ("--server", "tests.transports.custom_server:instance")
    async with serve(*instance, "--elicitation-timeout", "9", handler=_confirm) as client:
        await client.initialize()
        result = await client.call_tool("policy")
        assert result["content"][0]["text"] == "rate=7 deadline=9"  # its own rate kept


async def test_serve_refuses_a_bad_server_name() -> None:
    for spec in ("nocolon", "tests.transports.custom_server:not_a_server", "no_such_mod:x"):
        with trio.fail_after(LIMIT):
            done = await trio.run_process(
                [*SERVE, "--server", spec], capture_stderr=True, check=False
            )
        assert done.returncode == 2
        assert f"--server {spec}: ".encode() in done.stderr


async def test_plain_function_handler_is_answered_by_the_reader() -> None:
    seen: list[str] = []

    def contact(request: ServerRequest) -> dict[str, Any]:  # not a coroutine function
        seen.append(request.method)
        return {"action": "accept", "content": {"username": "ada", "email": "a@b.c"}}

    with trio.fail_after(LIMIT):
        async with open_stdio_client(SERVE, handler=contact, keep_history=False) as client:
            await client.initialize()
            for _ in range(3):
                result = await client.call_tool("test_elicitation", {"message": "Who?"})
                assert '"username": "ada"' in result["content"][0]["text"]
            assert client.frames == []  # nothing kept
            assert client.server_requests == []
    assert seen == ["elicitation/create"] * 3


# -- the frame limit of the server's policy, in-process ------------------------------------------

SMALL = {"frame_bytes": 64 << 10, "answer_bytes": 16 << 10, "message_bytes": 4 << 10,
         "schema_bytes": 16 << 10}  # fmt: skip


class Pipe:
    """The client end of :func:`serve_stream` over memory streams: lines in, frames out."""

    def __init__(self, send: trio.abc.SendStream, receive: trio.abc.ReceiveStream) -> None:
        self.send = send
        self.receive = receive
        self.frames: list[dict[str, Any]] = []
        self._splitter = LineSplitter(1 << 30)

    async def line(self, data: bytes) -> None:
        await self.send.send_all(data + b"\n")

    async def message(self, **fields: Any) -> None:
        await self.line(json.dumps({"jsonrpc": "2.0", **fields}).encode())

    async def frame(self, predicate: Any) -> dict[str, Any]:
        """The first frame matching ``predicate`` (fails after an hour of virtual time)."""
        with trio.fail_after(3600):
            return await self._frame(predicate)

    async def _frame(self, predicate: Any) -> dict[str, Any]:
        while True:
            for frame in self.frames:
                if predicate(frame):
                    self.frames.remove(frame)
                    return frame
            chunk = await self.receive.receive_some()
            self.frames.extend(json.loads(line) for line in self._splitter.feed(chunk))  # type: ignore[arg-type]

    async def response(self, id: Any) -> dict[str, Any]:
        return await self.frame(lambda f: f.get("id") == id and "method" not in f)

    async def request(self, method: str) -> dict[str, Any]:
        return await self.frame(lambda f: f.get("method") == method)


def small_server() -> Server:
    server = Server("limits", "1", runtime_config=SMALL)

    @server.tool()
    async def ask(ctx: Context) -> str:
        outcome = await ctx.elicit_string("Paste it")
        return repr(outcome)

    return server


@asynccontextmanager
async def piped(server: Server) -> AsyncIterator[Pipe]:
    to_server, from_client = trio.testing.memory_stream_one_way_pair()
    to_client, from_server = trio.testing.memory_stream_one_way_pair()
    async with server.running() as runtime, trio.open_nursery() as nursery:
        nursery.start_soon(serve_stream, server, runtime, from_client, to_client)
        pipe = Pipe(to_server, from_server)
        await pipe.message(id=0, method="initialize", params={
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}})  # fmt: skip
        await pipe.response(0)
        await pipe.message(method="notifications/initialized")
        yield pipe
        await to_server.aclose()


async def test_the_policy_frame_limit_refuses_a_frame_and_the_server_keeps_serving(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with piped(small_server()) as pipe:
        big = {"x": "a" * (70 << 10)}  # over the policy's 64 KiB, far under the 4 MiB default
        await pipe.message(id=1, method="ping", params=big)
        refused = await pipe.response(1)
        assert refused["error"]["code"] == -32600
        assert refused["error"]["data"] == {"reason": "frame_too_large", "limit": 64 << 10}
        await pipe.message(id=2, method="ping", params={"x": "a" * (60 << 10)})
        assert (await pipe.response(2))["result"] == {}


async def test_an_answer_over_the_frame_limit_fails_its_elicitation_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with piped(small_server()) as pipe:
        await pipe.message(id=1, method="tools/call", params={"name": "ask", "arguments": {}})
        asked = await pipe.request("elicitation/create")
        start = trio.current_time()
        content = {"value": "S3CRET" * (20 << 10)}  # 120 KiB
        await pipe.message(id=asked["id"], result={"action": "accept", "content": content})
        refusal = await pipe.frame(lambda f: f.get("error", {}).get("code") == -32600)
        assert refusal["id"] is None  # an answer to our request: there is no request to answer
        result = (await pipe.response(1))["result"]
        text = result["content"][0]["text"]
        assert text.startswith("Failed(reason='answer_too_large'"), text
        assert "S3CRET" not in text
        assert trio.current_time() - start < 1  # at once, not at the 300 s deadline
        await pipe.message(id=3, method="ping")
        assert (await pipe.response(3))["result"] == {}


async def test_an_oversize_answer_whose_id_comes_last_cannot_be_told_and_fails_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with piped(small_server()) as pipe:
        await pipe.message(id=1, method="tools/call", params={"name": "ask", "arguments": {}})
        asked = await pipe.request("elicitation/create")
        start = trio.current_time()
        result = {"action": "accept", "content": {"value": "a" * (70 << 10)}}
        await pipe.line(
            json.dumps({"jsonrpc": "2.0", "result": result, "id": asked["id"]}).encode()
        )
        await pipe.frame(lambda f: f.get("error", {}).get("code") == -32600)
        text = (await pipe.response(1))["result"]["content"][0]["text"]
        assert text == "TimedOut()"  # nothing guessed: the elicitation waited for its deadline
        assert trio.current_time() - start >= 299
