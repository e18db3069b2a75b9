"""The in-memory pair's inline delivery, end to end (``open_memory_client`` + a ``Server``).

A message is taken in the sender's turn when the receiving side is idle; these tests check
that the fast path is really taken (task steps), that order stays that of a wire, that errors
and context variables stay on their own side, and that the slow paths (an ``async def``
handler, 2026-07-28) still work. No sleeps: synchronisation is on messages and on
``wait_all_tasks_blocked``.
"""

from __future__ import annotations

import contextvars
from collections import Counter
from typing import Any

import pytest
import trio
import trio.testing
from pydantic import BaseModel

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.mcp.client import ServerRequest
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.testing import MemoryClient, open_memory_client

LIMIT = 5  # seconds any test may take
MODERN = "2026-07-28"

#: A context variable the client task sets; the server side must not see the caller's value.
WHO: contextvars.ContextVar[str] = contextvars.ContextVar("inline_test_who", default="nobody")


class Person(BaseModel):
    name: str
    age: int


class Gates:
    """Events a test's tools and resources wait on."""

    def __init__(self) -> None:
        self.release = trio.Event()
        self.reads_started = 0


def build(gates: Gates | None = None) -> Server:
    gates = gates or Gates()
    server = Server(
        "inline-test", "1.0.0", runtime_config=RuntimeConfig.model_validate({"rate": 1000})
    )

    @server.tool()
    async def ask(ctx: Context) -> str:
        outcome = await ctx.elicit("Who are you?", Person)
        if isinstance(outcome, Accepted):
            return f"hello {outcome.content.name} ({outcome.content.age})"
        return type(outcome).__name__

    @server.tool()
    async def add(a: int, b: int = 1) -> int:
        return a + b

    @server.tool()
    async def whoami() -> str:
        return WHO.get()

    @server.resource("test://held")
    async def held() -> str:
        gates.reads_started += 1
        await gates.release.wait()
        return "read"

    return server


def accept(request: ServerRequest) -> dict[str, Any]:
    assert request.method == "elicitation/create"
    return {"action": "accept", "content": {"name": "Ada", "age": 36}}


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def request(id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def unmatched_ids(client: MemoryClient, count: int) -> list[Any]:
    """Wait until ``count`` responses nobody waited for arrived; their ids, in arrival order."""
    await client.wait_for(lambda: len(client.unmatched) >= count)
    return [response["id"] for response in client.unmatched]


class Steps(trio.abc.Instrument):
    """Counts task steps by task name."""

    def __init__(self) -> None:
        self.by_task: Counter[str] = Counter()

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.by_task[task.name] += 1

    def of(self, suffix: str) -> int:
        return sum(n for name, n in self.by_task.items() if name.endswith(suffix))


# -- the fast path -------------------------------------------------------------------------------


async def test_a_call_with_an_elicitation_answered_at_once_takes_no_reader_step() -> None:
    handled_in: list[str] = []

    def answer(request: ServerRequest) -> dict[str, Any]:
        handled_in.append(trio.lowlevel.current_task().name)
        return accept(request)

    with trio.fail_after(LIMIT):
        async with open_memory_client(build(), handler=answer) as client:
            assert text(await client.call_tool("ask")) == "hello Ada (36)"  # warm up
            steps = Steps()
            trio.lowlevel.add_instrument(steps)
            try:
                result = await client.call_tool("ask")
            finally:
                trio.lowlevel.remove_instrument(steps)
            assert text(result) == "hello Ada (36)"
    assert steps.of(".serve") == 0, steps.by_task  # the server's reader task took nothing
    assert steps.of("._reader") == 0, steps.by_task  # nor the client's
    assert not any(name.endswith("._reader") for name in handled_in)


# -- order ---------------------------------------------------------------------------------------


async def test_a_call_sent_behind_queued_requests_is_answered_after_them() -> None:
    # ping is never taken inline (it must be answered): it is queued for the server's reader,
    # one per step. The tools/call sent right behind must wait its turn; taken inline, its
    # tool would start at once and answer before the later pings.
    with trio.fail_after(LIMIT):
        async with open_memory_client(build(), handler=accept) as client:
            pings = [f"p{n}" for n in range(5)]
            for rid in pings:
                await client.send(request(rid, "ping"))
            assert client.session._calls == {}
            await client.send(request("t", "tools/call", {"name": "add", "arguments": {"a": 1}}))
            assert client.session._calls == {}  # queued, not started
            assert await unmatched_ids(client, 6) == [*pings, "t"]
            assert text(client.unmatched[-1]["result"]) == "2"


async def test_a_notification_does_not_overtake_a_queued_request() -> None:
    # resources/read is never taken inline; the notifications/cancelled sent right behind it
    # must reach the server after it (and cancel it), as on a wire. Taken inline it would
    # arrive first, find nothing to cancel, and the read would be answered.
    gates = Gates()
    with trio.fail_after(LIMIT):
        async with open_memory_client(build(gates), handler=accept) as client:
            await client.send(request("r", "resources/read", {"uri": "test://held"}))
            await client.notify("notifications/cancelled", {"requestId": "r"})
            await client.ping()  # served by the reader after both
            await trio.testing.wait_all_tasks_blocked()
            gates.release.set()
            await trio.testing.wait_all_tasks_blocked()
            assert client.session._calls == {}
            assert client.unmatched == []  # the read was cancelled: no answer
            assert text(await client.call_tool("add", {"a": 2})) == "3"  # inline again


async def test_concurrent_calls_with_elicitations_each_get_one_answer() -> None:
    # Calls and pings at once (the readers are busy some of the time): every result still
    # arrives and each elicitation got exactly one answer.
    with trio.fail_after(LIMIT):
        async with open_memory_client(build(), handler=accept) as client:
            results: list[str] = []

            async def call() -> None:
                results.append(text(await client.call_tool("ask")))

            async with trio.open_nursery() as nursery:
                for _ in range(4):
                    nursery.start_soon(call)
                    nursery.start_soon(client.ping)
            assert results == ["hello Ada (36)"] * 4
            assert len(client.server_requests) == 4
            assert client.unmatched == []


# -- errors --------------------------------------------------------------------------------------


async def test_a_plain_handler_error_surfaces_from_the_client_block() -> None:
    server = build()
    ended: list[str] = []

    @server.tool()
    async def ask_and_report(ctx: Context) -> str:
        try:
            outcome = await ctx.elicit("Who are you?", Person)
        except BaseException as exc:
            ended.append(type(exc).__name__)
            raise
        ended.append(type(outcome).__name__)
        return "answered"

    def broken(request: ServerRequest) -> dict[str, Any]:
        raise ValueError("the handler has a bug")

    with trio.fail_after(LIMIT):
        async with server.running() as runtime:
            with pytest.raises(ExceptionGroup) as caught:
                async with open_memory_client(server, handler=broken) as client:
                    await client.call_tool("ask_and_report")
            # raised in the client's tasks (as when its reader took requests), not lost
            assert caught.group_contains(ValueError, match="the handler has a bug")
            assert [r.method for r in client.server_requests] == ["elicitation/create"]
            await trio.testing.wait_all_tasks_blocked()
            (info,) = await runtime.list_elicitations(tenant=client.session.tenant)
    # the request was sent (the handler's error is not the server's send failing); the
    # elicitation ends when the session closes and its tool is cancelled: abandoned
    assert info.sent_at is not None
    assert info.status == "abandoned"
    assert info.outcome == "Failed"
    assert ended == ["Cancelled"]


async def test_a_server_failure_on_a_held_answer_is_raised_in_the_pairs_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The client's answer is held while the handler runs and taken right after, inside the
    server task's send: a bug on the server side while taking it is raised in the pair's
    tasks (where the server's reader task raised it before), not into that send."""
    from erlmcp_py.mcp.session import ServerSession

    real = ServerSession._deliver

    def broken_deliver(self: ServerSession, id: Any, response: Any) -> None:
        if isinstance(id, str) and id.endswith(".1"):  # the answer to an elicitation
            raise RuntimeError("server bug while taking the answer")
        real(self, id, response)

    monkeypatch.setattr(ServerSession, "_deliver", broken_deliver)
    server = build()
    with trio.fail_after(LIMIT):
        async with server.running() as runtime:
            with pytest.raises(ExceptionGroup) as caught:
                async with open_memory_client(server, handler=accept) as client:
                    await client.call_tool("ask")
            assert caught.group_contains(RuntimeError, match="server bug")
            await trio.testing.wait_all_tasks_blocked()
            (info,) = await runtime.list_elicitations(tenant=client.session.tenant)
    # the server's send of elicitation/create did not fail (no transport failure): the
    # elicitation ended only when the session closed and cancelled its tool
    assert info.sent_at is not None
    assert info.status == "abandoned"


# -- context -------------------------------------------------------------------------------------


async def test_the_tool_does_not_see_the_calling_tasks_context_variables() -> None:
    seen_by_handler: list[str] = []

    def answer(request: ServerRequest) -> dict[str, Any]:
        seen_by_handler.append(WHO.get())
        return accept(request)

    with trio.fail_after(LIMIT):
        async with open_memory_client(build(), handler=answer) as client:
            token = WHO.set("the client task")
            try:
                assert text(await client.call_tool("whoami")) == "nobody"
                assert text(await client.call_tool("ask")) == "hello Ada (36)"
                assert WHO.get() == "the client task"
            finally:
                WHO.reset(token)
    assert seen_by_handler == ["nobody"]  # the client's handler runs in the client's context


async def test_a_value_set_before_the_pair_opened_is_inherited() -> None:
    # Both sides run in copies of the context the pair was opened in, as their tasks did.
    token = WHO.set("set before opening")
    try:
        with trio.fail_after(LIMIT):
            async with open_memory_client(build(), handler=accept) as client:
                assert text(await client.call_tool("whoami")) == "set before opening"
    finally:
        WHO.reset(token)


# -- the other paths still work ------------------------------------------------------------------


async def test_an_async_handler_answers_from_its_own_task() -> None:
    tasks: dict[str, trio.lowlevel.Task] = {}

    async def answer(request: ServerRequest) -> dict[str, Any]:
        tasks["handler"] = trio.lowlevel.current_task()
        await trio.lowlevel.checkpoint()
        return accept(request)

    with trio.fail_after(LIMIT):
        async with open_memory_client(build(), handler=answer) as client:
            tasks["caller"] = trio.lowlevel.current_task()
            assert text(await client.call_tool("ask")) == "hello Ada (36)"
            assert text(await client.call_tool("ask")) == "hello Ada (36)"
    assert tasks["handler"] is not tasks["caller"]
    assert tasks["handler"].name.endswith("._answer_later")
    assert len(client.server_requests) == 2


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_2026_07_28_through_the_pair(asynchronous: bool) -> None:
    async def answer_later(request: ServerRequest) -> dict[str, Any]:
        await trio.lowlevel.checkpoint()
        return accept(request)

    handler = answer_later if asynchronous else accept
    with trio.fail_after(LIMIT):
        async with open_memory_client(build(), handler=handler, protocol_version=MODERN) as client:
            assert client.modern
            assert text(await client.call_tool("ask")) == "hello Ada (36)"
            assert text(await client.call_tool("add", {"a": 41})) == "42"
            (asked,) = client.server_requests
            assert asked.method == "elicitation/create"
            assert client.unmatched == []
            assert client.refused == []
