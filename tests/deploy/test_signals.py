"""``erlmcp-py serve`` stops gracefully on SIGTERM/SIGINT: a plain subprocess, both transports.

What a client sees: a pending elicitation ends ``failed: runtime_restarted`` (the tool answers
its call with it) and the client is sent ``notifications/cancelled`` for its
``elicitation/create``; then end of stream, and exit status 0 with one ``shutdown`` log line.
Past ``--shutdown-timeout`` the exit status is 1; a second signal exits at once.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

from erlmcp_py.app import DEFAULT_SHUTDOWN_TIMEOUT, build_parser
from erlmcp_py.client import StdioClient, open_stdio_client
from tests.deploy.support import (
    REPO,
    alive,
    events_named,
    free_port,
    poll,
    serve_command,
    wait_serving,
)
from tests.transports.test_http import INIT, McpHttp, call, message

LIMIT = 20.0  # seconds any test here may take
STUBBORN = ("--server", "tests.deploy.servers:build")


@asynccontextmanager
async def stdio_server(stderr: Path, *extra: str) -> AsyncIterator[StdioClient]:
    with stderr.open("wb") as err, trio.fail_after(LIMIT):
        command = serve_command("--log-level", "info", *extra)
        async with open_stdio_client(command, stderr=err.fileno(), cwd=REPO) as client:
            yield client


@asynccontextmanager
async def http_server(stderr: Path, *extra: str) -> AsyncIterator[tuple[trio.Process, str]]:
    port = free_port()
    command = serve_command("--transport", "http", "--host", "127.0.0.1", "--port", str(port))
    with stderr.open("wb") as err, trio.fail_after(LIMIT):
        process = await trio.lowlevel.open_process(
            [*command, *extra], stdin=subprocess.DEVNULL, stderr=err, cwd=REPO
        )
        try:
            yield process, f"http://127.0.0.1:{port}/mcp"
        finally:
            if process.returncode is None:
                process.kill()
                with trio.CancelScope(shield=True):
                    await process.wait()


def shutdown_line(stderr: Path) -> dict[str, Any]:
    lines = events_named(stderr, "shutdown")
    assert len(lines) == 1, stderr.read_text()
    return lines[0]


async def wait_exit(process: trio.Process, timeout: float) -> float:
    """Wait for the process to exit; the seconds it took."""
    start = trio.current_time()
    with trio.fail_after(timeout):
        await process.wait()
    return trio.current_time() - start


# -- stdio ---------------------------------------------------------------------------------------


async def test_stdio_sigterm_answers_the_pending_elicitation_then_exits_0(tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.log"
    async with stdio_server(stderr) as client:
        await client.initialize()
        await client.send(
            {
                "jsonrpc": "2.0",
                "id": 50,
                "method": "tools/call",
                "params": {"name": "demo_confirm", "arguments": {}},
            }
        )
        asked = await client.next_server_request(0)
        assert asked.method == "elicitation/create"
        client.process.send_signal(signal.SIGTERM)
        assert await wait_exit(client.process, 10) < 10
        assert client.process.returncode == 0
        # the reader saw the end of stdout after these frames
        await poll(lambda: any(f.get("id") == 50 for f in client.frames), "the answer", 5)
    answer = next(f for f in client.frames if f.get("id") == 50)
    assert answer["result"]["content"][0]["text"] == "confirm: failed: runtime_restarted"
    cancelled = [p for m, p in client.notifications if m == "notifications/cancelled"]
    assert [p["requestId"] for p in cancelled] == [asked.id]
    started = events_named(stderr, "shutdown_started")
    assert [(s["signal"], s["pending_elicitations"]) for s in started] == [("SIGTERM", 1)]
    line = shutdown_line(stderr)
    assert (line["signal"], line["clean"], line["exit_status"]) == ("SIGTERM", True, 0)
    assert line["outcomes"] == {"Failed": {"form": 1}}


async def test_stdio_sigterm_lets_a_tool_finish_its_answer_after_the_outcome(
    tmp_path: Path,
) -> None:
    # long_tail takes 500 scheduler turns between its outcome and its answer: the stop lets
    # what can still run finish before it ends the session.
    stderr = tmp_path / "stderr.log"
    async with stdio_server(stderr, *STUBBORN) as client:
        await client.initialize()
        await client.send(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "long_tail", "arguments": {}},
            }
        )
        await client.next_server_request(0)
        client.process.send_signal(signal.SIGTERM)
        await wait_exit(client.process, 10)
        assert client.process.returncode == 0
        await poll(lambda: any(f.get("id") == 5 for f in client.frames), "the answer", 5)
    answer = next(f for f in client.frames if f.get("id") == 5)
    text = answer["result"]["content"][0]["text"]
    assert text.startswith("not accepted: Failed")
    assert "runtime_restarted" in text


async def test_stdio_sigterm_answers_a_tool_still_running_with_an_error(tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.log"
    async with stdio_server(stderr, *STUBBORN) as client:
        await client.initialize()
        await client.send(
            {
                "jsonrpc": "2.0",
                "id": 11,
                "method": "tools/call",
                "params": {"name": "slow", "arguments": {}},
            }
        )
        await poll(lambda: bool(events_named(stderr, "slow_started")), "the tool", 10)
        client.process.send_signal(signal.SIGTERM)
        await wait_exit(client.process, 10)
        assert client.process.returncode == 0
        await poll(lambda: any(f.get("id") == 11 for f in client.frames), "the answer", 5)
    answer = next(f for f in client.frames if f.get("id") == 11)
    assert answer["error"] == {"code": -32603, "message": "The server is shutting down"}
    line = shutdown_line(stderr)
    assert (line["clean"], line["exit_status"], line["calls_stopped"]) == (True, 0, 1)


async def test_stdio_sigint_when_idle_exits_0(tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.log"
    async with stdio_server(stderr) as client:
        await client.initialize()
        assert (await client.request("ping")) == {}
        client.process.send_signal(signal.SIGINT)
        await wait_exit(client.process, 10)
        assert client.process.returncode == 0  # not 130: SIGINT is a graceful stop too
    line = shutdown_line(stderr)
    assert (line["signal"], line["clean"], line["exit_status"]) == ("SIGINT", True, 0)


async def test_stdio_shutdown_timeout_bounds_the_stop_with_exit_1(tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.log"
    async with stdio_server(stderr, *STUBBORN, "--shutdown-timeout", "1") as client:
        await client.initialize()
        await client.send(
            {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "tools/call",
                "params": {"name": "stubborn", "arguments": {}},
            }
        )
        await poll(lambda: bool(events_named(stderr, "stubborn_started")), "the tool", 10)
        client.process.send_signal(signal.SIGTERM)
        took = await wait_exit(client.process, 10)
        assert client.process.returncode == 1
        assert 0.9 <= took < 5, took  # the bound, not sooner and not much later
    line = shutdown_line(stderr)
    assert (line["clean"], line["exit_status"]) == (False, 1)


# -- Streamable HTTP -----------------------------------------------------------------------------


def ops(url: str, path: str) -> str:
    return url.rsplit("/", 1)[0] + path


async def test_http_sigterm_drains_the_user_answers_and_new_work_is_refused(
    tmp_path: Path,
) -> None:
    stderr = tmp_path / "stderr.log"
    async with (
        http_server(stderr, "--shutdown-timeout", "15") as (process, url),
        httpx2.AsyncClient(timeout=10) as http,
    ):
        client = await wait_serving(http, url, 10)
        assert (await http.get(ops(url, "/readyz"))).status_code == 200
        async with client.stream(call(7, "demo_confirm")) as sse:
            asked = await sse.next()
            assert asked is not None
            assert asked["method"] == "elicitation/create"
            process.send_signal(signal.SIGTERM)
            await poll(lambda: bool(events_named(stderr, "drain_started")), "the drain", 10)
            # draining: no new session, no new call; readiness fails, liveness holds
            fresh = await McpHttp(http, url).post(message("initialize", INIT, id=0))
            assert fresh.status_code == 503
            assert int(fresh.headers["retry-after"]) > 0
            again = await client.post(call(8, "demo_confirm"))
            assert again.status_code == 503
            assert (await http.get(ops(url, "/readyz"))).status_code == 503
            assert (await http.get(ops(url, "/healthz"))).status_code == 200
            # the running call goes on: the user's answer still reaches it
            await client.answer(asked, {"action": "accept", "content": {"confirm": True}})
            on_post = await sse.rest()
        text = on_post[-1]["result"]["content"][0]["text"]
        assert text.startswith("confirm: action=accept"), text
        took = await wait_exit(process, 10)
        assert process.returncode == 0
        assert took < 5  # no call left: the stop does not wait for the timeout
    line = shutdown_line(stderr)
    assert (line["clean"], line["exit_status"], line["calls_left_by_drain"]) == (True, 0, 0)
    assert line["outcomes"] == {"Accepted": {"form": 1}}


async def test_http_sigterm_ends_an_unanswered_elicitation_after_the_drain_and_exits_0(
    tmp_path: Path,
) -> None:
    stderr = tmp_path / "stderr.log"
    async with (
        http_server(stderr, "--shutdown-timeout", "3") as (process, url),
        httpx2.AsyncClient(timeout=10) as http,
        trio.open_nursery() as nursery,
    ):
        client = await wait_serving(http, url, 10)
        on_get: list[dict[str, Any]] = []
        get_open = trio.Event()

        async def get_stream() -> None:
            async with client.get_stream() as sse:
                get_open.set()
                on_get.extend(await sse.rest())

        nursery.start_soon(get_stream)
        await get_open.wait()
        async with client.stream(call(7, "demo_confirm")) as sse:
            asked = await sse.next()
            assert asked is not None
            assert asked["method"] == "elicitation/create"
            start = trio.current_time()
            process.send_signal(signal.SIGTERM)
            on_post = await sse.rest()  # the stream ends: it does not hang
            drained = trio.current_time() - start
        assert on_post[-1]["id"] == 7
        assert on_post[-1]["result"]["content"][0]["text"] == "confirm: failed: runtime_restarted"
        assert 1.9 <= drained < 3.0, drained  # the drain window: the timeout less its reserve
        await wait_exit(process, 10)
        assert process.returncode == 0
    # The runtime tells the client before it wakes the tool, so the notice rides the call's
    # own stream, ahead of the tool's answer that ends it.
    notices = [m for m in on_post[:-1] if m.get("method") == "notifications/cancelled"]
    assert [n["params"]["requestId"] for n in notices] == [asked["id"]]
    assert not [m for m in on_get if m.get("method") == "notifications/cancelled"]
    line = shutdown_line(stderr)
    assert (line["signal"], line["clean"], line["exit_status"]) == ("SIGTERM", True, 0)
    assert line["calls_left_by_drain"] == 1


async def test_http_stop_refuses_new_work_and_a_second_signal_forces_exit(
    tmp_path: Path,
) -> None:
    stderr = tmp_path / "stderr.log"
    async with (
        http_server(stderr, *STUBBORN, "--shutdown-timeout", "30") as (process, url),
        httpx2.AsyncClient(timeout=10) as http,
        trio.open_nursery() as nursery,
    ):
        client = await wait_serving(http, url, 10)

        async def stubborn_call() -> None:
            with contextlib.suppress(httpx2.TransportError):  # cut when the process exits
                await client.post(call(1, "stubborn"))

        nursery.start_soon(stubborn_call)
        await poll(lambda: bool(events_named(stderr, "stubborn_started")), "the tool", 10)
        process.send_signal(signal.SIGTERM)
        await poll(lambda: bool(events_named(stderr, "drain_started")), "the drain", 10)
        # Stopping: a new session is refused, while the process still runs.
        async with httpx2.AsyncClient(timeout=2) as fresh:
            refused = await McpHttp(fresh, url).post(message("initialize", INIT, id=0))
        assert refused.status_code == 503
        assert alive(process.pid)
        assert process.returncode is None
        process.send_signal(signal.SIGTERM)
        assert await wait_exit(process, 5) < 5
        assert process.returncode == 128 + signal.SIGTERM
    forced = events_named(stderr, "shutdown_forced")
    assert [(f["signal"], f["exit_status"]) for f in forced] == [("SIGTERM", 143)]
    assert events_named(stderr, "shutdown") == []  # it did not finish the graceful stop


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "soon"])
def test_shutdown_timeout_must_be_positive(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["serve", "--shutdown-timeout", bad])
    assert exited.value.code == 2
    assert "--shutdown-timeout" in capsys.readouterr().err
    assert build_parser().parse_args(["serve"]).shutdown_timeout == DEFAULT_SHUTDOWN_TIMEOUT


async def test_http_sigterm_under_load_answers_every_request_and_exits_0(tmp_path: Path) -> None:
    """30 clients calling a tool in a loop: at SIGTERM each call under way finishes, each
    client's next request gets 503 + Retry-After (it then stops, as behind a load
    balancer), and no request meets a closed connection."""
    stderr = tmp_path / "stderr.log"
    async with (
        http_server(stderr, *STUBBORN, "--shutdown-timeout", "10") as (process, url),
        httpx2.AsyncClient(timeout=10) as http,
    ):
        first = await wait_serving(http, url, 10)
        clients = [first]
        for _ in range(29):
            client = McpHttp(httpx2.AsyncClient(timeout=10), url)
            await client.initialize()
            clients.append(client)
        answered: list[int] = []
        refused: list[str] = []
        broken: list[str] = []
        going = trio.Event()

        async def work(client: McpHttp) -> None:
            for i in range(1000):
                try:
                    response = await client.post(call(i, "brief"))
                except httpx2.TransportError as exc:
                    broken.append(type(exc).__name__)
                    return
                if response.status_code == 503:
                    refused.append(response.headers.get("retry-after", ""))
                    return
                assert response.status_code == 200, response.text
                assert '"text":"done"' in response.text.replace(" ", ""), response.text
                answered.append(i)
                going.set()

        async with trio.open_nursery() as nursery:
            for client in clients:
                nursery.start_soon(work, client)
            await going.wait()
            await trio.sleep(0.5)  # under way: every client has a call in flight
            process.send_signal(signal.SIGTERM)
        for client in clients[1:]:
            await client.http.aclose()
        await wait_exit(process, 10)
        assert process.returncode == 0
    assert broken == []
    assert len(refused) == 30
    assert all(int(after) > 0 for after in refused)
    assert len(answered) >= 30
    line = shutdown_line(stderr)
    assert (line["clean"], line["exit_status"], line["calls_left_by_drain"]) == (True, 0, 0)
