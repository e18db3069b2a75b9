"""2026-07-28: a suspended tool's notifications travel with the request attached to it.

Unit tests of :class:`~erlmcp_py.mcp.mrtr.ContinuationRegistry` with fake sinks (no runtime,
no transport): a "tool" is a coroutine that talks to its :class:`MrtrPeer` directly. Every
test runs under trio's autojump clock; nothing sleeps, and ``trio.fail_after`` bounds every
wait that could hang.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py.actors.peer import PeerGone, PeerResponse
from erlmcp_py.mcp import _mrtr_peer
from erlmcp_py.mcp.mrtr import ContinuationRegistry, MrtrPeer, open_continuations
from erlmcp_py.mcp.versions import ClientCapabilities

Wire = list[tuple[str, str, Any]]
"""What every fake channel saw, in order: ``(channel, method or "response", params)``."""


class Sink:
    """A request's channel: records into the shared wire; can fail or block on demand."""

    def __init__(self, name: str, wire: Wire) -> None:
        self.name = name
        self.wire = wire
        self.fail: BaseException | None = None
        self.gate: trio.Event | None = None  # when set: each call waits for it
        self.entered = trio.Event()

    async def __call__(self, method: str, params: Mapping[str, Any]) -> None:
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        await trio.lowlevel.checkpoint()
        if self.fail is not None:
            raise self.fail
        self.wire.append((self.name, method, dict(params)))

    def got(self) -> list[tuple[str, Any]]:
        return [
            (method, params)
            for name, method, params in self.wire
            if name == self.name and method != "response"
        ]


class LogRecorder(list[dict[str, Any]]):
    """Stands in for the peer module's structlog logger: records ``(level, event, fields)``."""

    def __getattr__(self, level: str) -> Callable[..., None]:
        def record(event: str, **fields: Any) -> None:
            self.append({"log_level": level, "event": event, **fields})

        return record


async def ask(peer: MrtrPeer, message: str) -> Mapping[str, Any]:
    """What ``ctx.elicit`` does underneath: one input request, then wait for its answer."""
    answered = trio.Event()
    box: list[PeerResponse] = []

    def on_response(response: PeerResponse) -> None:
        box.append(response)
        answered.set()

    await peer.send_request(
        "elicitation/create",
        {"message": message, "requestedSchema": {"type": "object", "properties": {}}},
        request_id=f"r-{message}",
        on_response=on_response,
    )
    await answered.wait()
    peer.forget_request(f"r-{message}")
    (response,) = box
    assert isinstance(response, Mapping)
    return response


async def log(peer: MrtrPeer, data: str, level: str = "info") -> None:
    await peer.notify("notifications/message", {"level": level, "data": data})


async def progress(peer: MrtrPeer, value: float) -> None:
    await peer.notify(
        "notifications/progress", {"progressToken": peer.progress_token, "progress": value}
    )


ACCEPT = {"action": "accept", "content": {}}


class Calls:
    """Drives one call through ``start`` and ``resume`` like a transport would."""

    def __init__(self, registry: ContinuationRegistry, wire: Wire) -> None:
        self.registry = registry
        self.wire = wire
        self.params: dict[str, Any] = {"name": "t", "arguments": {}}

    async def start(
        self,
        run: Callable[[MrtrPeer], Awaitable[Mapping[str, Any]]],
        sink: Sink | None,
        **channel: Any,
    ) -> dict[str, Any]:
        with trio.fail_after(60):
            result = await self.registry.start(
                principal="p",
                method="tools/call",
                params=self.params,
                capabilities=ClientCapabilities(),
                protocol_version="2026-07-28",
                client_id="c",
                run=run,
                sink=sink,
                **channel,
            )
        self.wire.append((sink.name if sink else "-", "response", result["resultType"]))
        return result

    async def resume(
        self, previous: Mapping[str, Any], sink: Sink | None, **channel: Any
    ) -> dict[str, Any]:
        keys = list(previous.get("inputRequests", {}))
        params = {
            **self.params,
            "requestState": previous["requestState"],
            "inputResponses": {key: ACCEPT for key in keys},
        }
        with trio.fail_after(60):
            result = await self.registry.resume(
                principal="p",
                method="tools/call",
                params=params,
                capabilities=ClientCapabilities(),
                sink=sink,
                **channel,
            )
        self.wire.append((sink.name if sink else "-", "response", result["resultType"]))
        return result


@asynccontextmanager
async def calls() -> AsyncIterator[Calls]:
    async with open_continuations(hold_s=30.0) as registry:
        yield Calls(registry, [])


def done(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


# -- delivered while attached, each with its own request ---------------------------------------


async def test_each_round_notifies_on_its_own_request_before_its_response(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def tool(peer: MrtrPeer) -> Mapping[str, Any]:
        await log(peer, "starting")
        await progress(peer, 1)
        await ask(peer, "Go?")
        await log(peer, "resumed")
        await progress(peer, 2)
        await ask(peer, "Sure?")
        await progress(peer, 3)
        return done("ok")

    async with calls() as c:
        first_sink, retry_sink, last_sink = (Sink(n, c.wire) for n in ("first", "retry", "last"))
        first = await c.start(tool, first_sink, progress_token="a", log_level="debug")
        assert first["resultType"] == "input_required"
        second = await c.resume(first, retry_sink, progress_token="b", log_level="info")
        assert second["resultType"] == "input_required"
        final = await c.resume(second, last_sink, progress_token="b", log_level="info")
        assert final["resultType"] == "complete"

        assert c.wire == [
            ("first", "notifications/message", {"level": "info", "data": "starting"}),
            ("first", "notifications/progress", {"progressToken": "a", "progress": 1}),
            ("first", "response", "input_required"),
            ("retry", "notifications/message", {"level": "info", "data": "resumed"}),
            ("retry", "notifications/progress", {"progressToken": "b", "progress": 2}),
            ("retry", "response", "input_required"),
            ("last", "notifications/progress", {"progressToken": "b", "progress": 3}),
            ("last", "response", "complete"),
        ]
        assert c.registry.counters["notifications_sent"] == 5
        assert c.registry.counters["notifications_dropped"] == 0


# -- between rounds: dropped, counted, logged ---------------------------------------------------


async def test_between_rounds_notifications_are_dropped_counted_and_logged(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    tick = trio.Event()
    ticked = trio.Event()
    seen_tokens: list[str | int | None] = []

    async def tool(peer: MrtrPeer) -> Mapping[str, Any]:
        async def ticker() -> None:  # a background task of the tool: runs between rounds
            await tick.wait()
            seen_tokens.append(peer.progress_token)
            await log(peer, "between")
            await progress(peer, 5)
            ticked.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ticker)
            await ask(peer, "Go?")
        await log(peer, "after")
        return done("ok")

    async with calls() as c:
        first_sink, retry_sink = Sink("first", c.wire), Sink("retry", c.wire)
        first = await c.start(tool, first_sink, progress_token="a", log_level="info")
        events = LogRecorder()
        monkeypatch.setattr(_mrtr_peer, "log", events)
        tick.set()
        with trio.fail_after(5):
            await ticked.wait()
        assert seen_tokens == ["a"]  # between rounds: the latest request's token
        assert first_sink.got() == []
        assert retry_sink.got() == []
        assert c.registry.counters["notifications_dropped"] == 2
        dropped = [e for e in events if e["event"] == "notification_dropped"]
        assert [(e["log_level"], e["method"], e["why"]) for e in dropped] == [
            ("debug", "notifications/message", "between rounds"),
            ("debug", "notifications/progress", "between rounds"),
        ]

        final = await c.resume(first, retry_sink, log_level="info")
        assert final["resultType"] == "complete"
        assert retry_sink.got() == [
            ("notifications/message", {"level": "info", "data": "after"}),
        ]
        assert c.registry.counters["notifications_dropped"] == 2


async def test_a_request_without_a_sink_drops_and_counts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def tool(peer: MrtrPeer) -> Mapping[str, Any]:
        await log(peer, "nobody listens")
        return done("ok")

    async with calls() as c:
        final = await c.start(tool, None, log_level="debug")
        assert final["resultType"] == "complete"
        assert c.registry.counters["notifications_dropped"] == 1
        assert c.registry.counters["notifications_sent"] == 0


# -- progress tokens and log levels are the attached request's ----------------------------------


async def test_progress_goes_with_the_attached_requests_token(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tokens: list[str | int | None] = []

    async def tool(peer: MrtrPeer) -> Mapping[str, Any]:
        tokens.append(peer.progress_token)
        await progress(peer, 1)
        await ask(peer, "one")
        tokens.append(peer.progress_token)  # this retry has no token: progress is not sent
        await progress(peer, 2)
        await ask(peer, "two")
        tokens.append(peer.progress_token)
        await progress(peer, 3)
        # a stale token (an earlier request's) never reaches the attached request
        await peer.notify("notifications/progress", {"progressToken": "a", "progress": 4})
        return done("ok")

    async with calls() as c:
        sinks = [Sink(f"s{i}", c.wire) for i in range(3)]
        first = await c.start(tool, sinks[0], progress_token="a")
        second = await c.resume(first, sinks[1])
        final = await c.resume(second, sinks[2], progress_token=7)
        assert final["resultType"] == "complete"
        assert tokens == ["a", None, 7]
        assert sinks[0].got() == [("notifications/progress", {"progressToken": "a", "progress": 1})]
        assert sinks[1].got() == []
        assert sinks[2].got() == [("notifications/progress", {"progressToken": 7, "progress": 3})]
        assert c.registry.counters["notifications_dropped"] == 2  # progress 2 and the stale one


async def test_log_messages_follow_the_attached_requests_level(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def tool(peer: MrtrPeer) -> Mapping[str, Any]:
        await log(peer, "no level asked", "error")
        await ask(peer, "one")
        await log(peer, "too low", "info")
        await log(peer, "high enough", "warning")
        await log(peer, "higher", "error")
        return done("ok")

    async with calls() as c:
        first_sink, retry_sink = Sink("first", c.wire), Sink("retry", c.wire)
        first = await c.start(tool, first_sink)  # no io.modelcontextprotocol/logLevel
        await c.resume(first, retry_sink, log_level="warning")
        assert first_sink.got() == []
        assert [params["data"] for _, params in retry_sink.got()] == ["high enough", "higher"]
        assert c.registry.counters["notifications_dropped"] == 0  # filtered, not lost


async def test_runtime_notices_about_server_requests_are_never_sent(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def tool(peer: MrtrPeer) -> Mapping[str, Any]:
        await peer.send_notification("notifications/cancelled", {"requestId": "r-1"})
        await peer.send_notification("notifications/elicitation/complete", {"elicitationId": "e"})
        await log(peer, "sent")
        return done("ok")

    async with calls() as c:
        sink = Sink("only", c.wire)
        await c.start(tool, sink, log_level="debug")
        assert [method for method, _ in sink.got()] == ["notifications/message"]


# -- failures and ordering ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error", [PeerGone("client gone"), trio.BrokenResourceError(), ValueError("unencodable")]
)
async def test_a_failing_sink_drops_the_notification_and_the_tool_goes_on(
    autojump_clock: trio.testing.MockClock, error: Exception
) -> None:
    after: list[str] = []

    async def tool(peer: MrtrPeer) -> Mapping[str, Any]:
        await log(peer, "lost")
        after.append("went on")
        await log(peer, "lost too")
        await ask(peer, "Go?")
        await log(peer, "delivered")
        return done("finished")

    async with calls() as c:
        broken, fine = Sink("broken", c.wire), Sink("fine", c.wire)
        broken.fail = error
        first = await c.start(tool, broken, log_level="info")
        assert first["resultType"] == "input_required"
        assert after == ["went on"]
        assert c.registry.counters["notifications_dropped"] == 2
        final = await c.resume(first, fine, log_level="info")
        assert final["content"][0]["text"] == "finished"
        assert fine.got() == [("notifications/message", {"level": "info", "data": "delivered"})]
        assert c.registry.counters["notifications_sent"] == 1


async def test_a_notification_under_way_finishes_before_the_response_and_none_follows(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The round is decided while a notification is still being written: the answer waits
    for it; whatever the tool sends after the decision is dropped, never written after."""
    late_sent = trio.Event()

    async def tool(peer: MrtrPeer) -> Mapping[str, Any]:
        async def chatty() -> None:
            await log(peer, "slow")  # blocks in the sink until the test opens the gate
            await log(peer, "late")  # the answer is decided by now: dropped
            late_sent.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(chatty)
            await ask(peer, "Go?")
        return done("ok")

    async with calls() as c:
        slow, retry = Sink("slow", c.wire), Sink("retry", c.wire)
        slow.gate = trio.Event()
        answer: list[dict[str, Any]] = []

        async with trio.open_nursery() as nursery:

            async def first_request() -> None:
                answer.append(await c.start(tool, slow, log_level="info"))

            nursery.start_soon(first_request)
            with trio.fail_after(5):
                await slow.entered.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert answer == []  # decided (the input request is there), but not answered yet
            assert c.wire == []
            slow.gate.set()
        with trio.fail_after(5):
            await late_sent.wait()
        assert answer[0]["resultType"] == "input_required"
        assert c.wire == [
            ("slow", "notifications/message", {"level": "info", "data": "slow"}),
            ("slow", "response", "input_required"),
        ]
        assert c.registry.counters["notifications_dropped"] == 1  # "late"

        final = await c.resume(answer[0], retry, log_level="info")
        assert final["resultType"] == "complete"
        assert retry.got() == []
        assert [w for w in c.wire if w[0] == "slow"][-1][1] == "response"


async def test_a_cancelled_request_cancels_a_tool_blocked_in_its_sink(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cancelled = trio.Event()

    async def tool(peer: MrtrPeer) -> Mapping[str, Any]:
        try:
            await log(peer, "stuck")
        except trio.Cancelled:
            cancelled.set()
            raise
        return done("never")

    async with calls() as c:
        stuck = Sink("stuck", c.wire)
        stuck.gate = trio.Event()  # never opened
        with trio.move_on_after(10):
            await c.registry.start(
                principal="p",
                method="tools/call",
                params=c.params,
                capabilities=ClientCapabilities(),
                protocol_version="2026-07-28",
                client_id="c",
                run=tool,
                sink=stuck,
                log_level="info",
            )
        with trio.fail_after(5):
            await cancelled.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert len(c.registry) == 0
        assert c.wire == []
