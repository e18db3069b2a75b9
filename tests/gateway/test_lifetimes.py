"""Upstream lifetimes: one upstream per downstream session, supervised (restarted with backoff,
given up past the restart intensity), capped; an upstream that dies ends its questions and
calls; a client that leaves takes its upstream with it; SIGTERM drains both sides."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from erlmcp_py.client import (
    ClientRequestError,
    ServerRequest,
    connect_http,
    connect_in_memory,
    connect_stdio,
)
from erlmcp_py.gateway import Gateway, GatewaySession, Upstream, UpstreamPolicy
from erlmcp_py.mcp.jsonrpc import ErrorResponse
from tests.gateway.support import (
    LIMIT,
    REPO,
    alive,
    environment,
    free_port,
    gateway_command,
    log_events,
    poll,
    recorded,
    text,
    through_gateway,
    wait_listening,
)

ODD = str(Path(__file__).with_name("odd_upstreams.py"))
QUICK = UpstreamPolicy(max_restarts=2, restart_period_s=30, backoff_s=0.05, start_timeout_s=5)


def odd(mode: str) -> Upstream:
    return Upstream(command=(sys.executable, ODD, mode))


class Waiting:
    """A user who never answers, and what the client was sent."""

    def __init__(self) -> None:
        self.asked: list[ServerRequest] = []
        self.notes: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: ServerRequest) -> None:
        self.asked.append(request)

    def notified(self, method: str, params: Any) -> None:
        self.notes.append((method, dict(params)))

    def cancelled(self) -> list[Any]:
        return [p["requestId"] for m, p in self.notes if m == "notifications/cancelled"]


def the_session(gateway: Any) -> GatewaySession:
    (session,) = gateway.sessions
    assert isinstance(session, GatewaySession)
    return session


async def test_an_upstream_that_dies_ends_its_questions_and_calls_and_is_restarted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_TEST_MARKS", str(tmp_path))
    user = Waiting()
    async with through_gateway(user, on_notification=user.notified) as (gateway, client):
        await client.subscribe("test://motd")
        first = int(text(await client.call_tool("pid")))
        async with trio.open_nursery() as nursery:
            failures: list[ClientRequestError] = []

            async def ask() -> None:
                with pytest.raises(ClientRequestError) as info:
                    await client.call_tool("ask_person")
                failures.append(info.value)

            nursery.start_soon(ask)
            await poll(lambda: user.asked, "the question")
            (asked,) = user.asked
            os.kill(first, signal.SIGKILL)
        (failure,) = failures
        assert failure.data == {"reason": "upstream_lost"}
        assert failure.message.startswith("the upstream server was lost: ")
        await poll(lambda: user.cancelled(), "the question's end")
        assert user.cancelled() == [asked.id]  # the client was told to drop it
        # the supervisor started the upstream again: the session goes on
        second = int(text(await client.call_tool("pid")))
        assert second != first
        assert the_session(gateway).link is not None
        assert the_session(gateway).link.restarts == 1  # type: ignore[union-attr]
        assert not alive(first)
    # the restarted upstream was subscribed again for the client
    assert recorded(tmp_path, "subscribed.jsonl") == ["test://motd", "test://motd"]


async def test_an_upstream_that_keeps_dying_is_given_up_past_the_restart_intensity() -> None:
    async with through_gateway(upstream=odd("exits"), policy=QUICK) as (gateway, client):
        answer: ErrorResponse | None = None

        async def given_up() -> bool:
            nonlocal answer
            reply = await client.request_raw("tools/list", {})
            answer = reply if isinstance(reply, ErrorResponse) else None
            return answer is not None and "gave up" in answer.message

        with trio.fail_after(20):
            while not await given_up():  # noqa: ASYNC110 - the upstream's state, by trying
                await trio.sleep(0.05)
        assert answer is not None
        assert answer.data == {"reason": "upstream_unavailable"}
        assert "lost more than 2 times within 30 s" in answer.message
        link = the_session(gateway).link
        assert link is not None
        assert link.restarts == 2


async def initialize_error(gateway: Gateway) -> ClientRequestError:
    """The error a new client of ``gateway`` gets to its ``initialize``."""
    async with connect_in_memory(gateway, handshake=False) as client:
        with pytest.raises(ClientRequestError) as refused:
            await client.initialize()
    return refused.value


async def test_upstreams_are_capped_and_a_slot_frees_when_a_session_ends() -> None:
    policy = UpstreamPolicy(max_upstreams=1)
    async with through_gateway(policy=policy) as (gateway, first):
        refused = await initialize_error(gateway)
        assert refused.data == {"reason": "upstream_unavailable"}
        assert "runs 1 upstream sessions already, its limit" in refused.message
        assert text(await first.call_tool("echo", {"text": "first"})) == "first"
    async with through_gateway(policy=policy) as (_, again):
        assert text(await again.call_tool("echo", {"text": "again"})) == "again"


@pytest.mark.parametrize(
    ("upstream", "policy", "code", "message"),
    [
        (
            Upstream(command=("/nonexistent/mcp-server",)),
            None,
            -32603,
            "the upstream server could not be started: No such file or directory",
        ),
        (odd("refuses"), None, -32602, "Unsupported protocol version"),
        (
            odd("silent"),
            UpstreamPolicy(start_timeout_s=1),
            -32603,
            "the upstream server did not answer initialize within 1 s",
        ),
    ],
    ids=["not-found", "refuses", "silent"],
)
async def test_an_upstream_that_cannot_start_is_the_clients_initialize_error(
    upstream: Upstream, policy: UpstreamPolicy | None, code: int, message: str
) -> None:
    gateway = Gateway(upstream, policy=policy)
    with trio.fail_after(LIMIT):
        async with gateway.running():
            refused = await initialize_error(gateway)
            assert not gateway.sessions  # nothing is left of the refused session
        assert gateway.upstream_slots.in_use == 0
    assert (refused.code, refused.message) == (code, message)
    if code == -32602:  # the upstream's own error, data and all
        assert refused.data == {"x": 1}


async def test_a_client_that_leaves_takes_its_upstream_and_its_calls_with_it(
    tmp_path: Path,
) -> None:
    with trio.fail_after(LIMIT):
        async with connect_stdio(
            gateway_command("--log-level", "warning"), cwd=REPO, env=environment(tmp_path)
        ) as client:
            upstream = int(text(await client.call_tool("pid")))
            started = trio.Event()
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    await client.call_tool(
                        "slow", {"seconds": 30}, on_progress=lambda _: started.set()
                    )

                nursery.start_soon(call)
                await started.wait()
                nursery.cancel_scope.cancel()
        # the gateway has exited (the client closed its stdin): no upstream is left behind
        await poll(lambda: not alive(upstream), "the upstream's exit")
    assert (tmp_path / "cancelled-slow").exists()


# -- SIGTERM ----------------------------------------------------------------------------------


async def test_sigterm_drains_both_sides_the_upstream_gets_a_cancel_and_nothing_is_left(
    tmp_path: Path,
) -> None:
    port = free_port()
    stderr = tmp_path / "gateway.log"
    user = Waiting()
    command = gateway_command("--transport", "http", "--port", str(port), "--shutdown-timeout", "3")
    with stderr.open("wb") as err, trio.fail_after(LIMIT):
        process = await trio.lowlevel.open_process(
            command, env=environment(tmp_path), cwd=REPO, stdin=subprocess.DEVNULL, stderr=err
        )
        try:
            await trio.to_thread.run_sync(wait_listening, port, process)  # type: ignore[arg-type]
            url = f"http://127.0.0.1:{port}/mcp"
            async with connect_http(url, handler=user, on_notification=user.notified) as client:
                upstream = int(text(await client.call_tool("pid")))
                results: list[str] = []
                async with trio.open_nursery() as nursery:

                    async def ask() -> None:
                        results.append(text(await client.call_tool("ask_person")))

                    running = trio.Event()

                    async def brief() -> None:
                        done = await client.call_tool(
                            "slow", {"seconds": 0.5}, on_progress=lambda _: running.set()
                        )
                        results.append(text(done))

                    nursery.start_soon(ask)
                    await poll(lambda: user.asked, "the question")
                    nursery.start_soon(brief)
                    await running.wait()
                    process.send_signal(signal.SIGTERM)
            await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
    assert process.returncode == 0
    # the running call finished; the unanswered question ended and the upstream got a cancel
    assert sorted(results) == ["cancel", "done"]
    assert user.cancelled() == [user.asked[0].id]
    assert not alive(upstream)
    (line,) = [e for e in log_events(stderr) if e.get("event") == "shutdown"]
    assert (line["clean"], line["exit_status"]) == (True, 0)
