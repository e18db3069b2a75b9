"""``ServerSession._write``'s fast path for message frames (the in-memory pair).

When nobody holds the write lock, a message frame is handed to the transport's
``send_nowait`` in the writer's turn instead of taking the lock and awaiting
``send_message``. These tests pin that the two paths cannot be told apart: the same messages
in the same order, the same fallback when the transport is full, the same ``PeerGone`` and
log event when it is gone, no schedule point either way — and that bytes frames (stdio,
Streamable HTTP, encoded 2026-07-28 answers) never take it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pydantic_core
import pytest
import structlog.testing
import trio
import trio.lowlevel
import trio.testing
from hypothesis import given, settings, strategies as st

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.actors.peer import PeerGone
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import ServerSession, open_session

LIMIT = 5  # seconds any test may take


class Transport:
    """Records which of the session's three writers got each frame, in order.

    ``full``: how many ``send_nowait`` calls raise ``trio.WouldBlock`` next (nothing sent);
    ``broken``: every send raises ``trio.BrokenResourceError``; ``gate``: ``send_message``
    waits on it (a writer holding the lock).
    """

    def __init__(self) -> None:
        self.out: list[tuple[str, Any]] = []
        self.full = 0
        self.broken = False
        self.gate: trio.Event | None = None

    async def send(self, frame: bytes) -> None:
        if self.broken:
            raise trio.BrokenResourceError
        self.out.append(("send", pydantic_core.from_json(frame)))

    async def send_message(self, message: dict[str, Any]) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.broken:
            raise trio.BrokenResourceError
        self.out.append(("send_message", message))

    def send_nowait(self, frame: bytes | dict[str, Any]) -> None:
        if self.broken:
            raise trio.BrokenResourceError
        if self.full:
            self.full -= 1
            raise trio.WouldBlock
        assert type(frame) is dict
        self.out.append(("send_nowait", frame))

    def messages(self) -> list[Any]:
        return [message for _, message in self.out]


@asynccontextmanager
async def opened(*, nowait: bool = True) -> AsyncIterator[tuple[ServerSession, Transport]]:
    """A ready session over ``Transport`` (without ``send_nowait`` when not ``nowait``)."""
    transport = Transport()
    server = Server(
        "write-test", "1.0.0", runtime_config=RuntimeConfig.model_validate({"rate": 1000})
    )
    with trio.fail_after(LIMIT):
        async with (
            server.running() as runtime,
            open_session(
                server,
                runtime,
                transport.send,
                send_message=transport.send_message,
                send_nowait=transport.send_nowait if nowait else None,
            ) as session,
        ):
            init = {"protocolVersion": "2025-11-25", "capabilities": {}}
            await session.feed_message(
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
            )
            await session.feed_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
            transport.out.clear()
            yield session, transport
            session.close()


async def test_a_message_frame_goes_to_send_nowait_without_a_schedule_point() -> None:
    async with opened() as (session, transport):
        with trio.testing.assert_no_checkpoints():
            await session.send_notification("notifications/message", {"level": "error", "data": 1})
        assert transport.out == [
            (
                "send_nowait",
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "error", "data": 1},
                },
            )
        ]


async def test_the_locked_path_has_no_schedule_point_either() -> None:
    """What the fast path must match: without ``send_nowait`` a message write is inline too."""
    async with opened(nowait=False) as (session, transport):
        with trio.testing.assert_no_checkpoints():
            await session.send_notification("notifications/message", {"level": "error", "data": 1})
        assert [kind for kind, _ in transport.out] == ["send_message"]


async def test_a_full_transport_falls_back_to_send_message_once() -> None:
    async with opened() as (session, transport):
        transport.full = 1
        await session.send_notification("notifications/tools/list_changed", {})
        assert transport.out == [
            (
                "send_message",
                {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}},
            )
        ]


async def test_a_write_while_another_holds_the_lock_waits_its_turn() -> None:
    async with opened() as (session, transport), trio.open_nursery() as nursery:
        transport.gate = trio.Event()
        transport.full = 1  # the first writer takes the lock and parks in send_message
        nursery.start_soon(session.send_notification, "first", {})
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(session.send_notification, "second", {})
        await trio.testing.wait_all_tasks_blocked()
        assert transport.out == []  # the second did not overtake the parked first
        transport.gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert [(kind, m["method"]) for kind, m in transport.out] == [
            ("send_message", "first"),
            ("send_message", "second"),
        ]


@pytest.mark.parametrize("nowait", [True, False])
async def test_a_broken_transport_closes_the_session_either_way(nowait: bool) -> None:
    async with opened(nowait=nowait) as (session, transport):
        transport.broken = True
        with structlog.testing.capture_logs() as events, pytest.raises(PeerGone):
            await session.send_notification("notifications/tools/list_changed", {})
        assert session.closed
        failed = [e for e in events if e["event"] == "transport_write_failed"]
        assert failed == [
            {
                "event": "transport_write_failed",
                "error": "BrokenResourceError",
                "log_level": "info",
                "peer": session.peer_id,
                "version": "2025-11-25",
            }
        ]
        with pytest.raises(PeerGone):
            await session.send_notification("notifications/tools/list_changed", {})


async def test_bytes_frames_never_take_the_fast_path() -> None:
    async with opened() as (session, transport):
        await session.send_raw(b'{"jsonrpc":"2.0","method":"raw"}')
        assert transport.out == [("send", {"jsonrpc": "2.0", "method": "raw"})]


_methods = st.sampled_from(["a", "b/c", "notifications/tools/list_changed"])
_params = st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=3), max_size=3)
_writer = st.lists(st.tuples(_methods, _params), max_size=6)


async def _through_channel(
    nowait: bool, capacity: int, writers: list[list[tuple[str, dict[str, Any]]]]
) -> list[tuple[int, str, dict[str, Any]]]:
    """Each writer (a task) writes its messages in turn through a session whose transport is
    a bounded trio channel drained by a reader; what the reader got, as (writer, method,
    params)."""
    send_channel, receive_channel = trio.open_memory_channel[dict[str, Any]](capacity)
    got: list[tuple[int, str, dict[str, Any]]] = []
    server = Server("write-test", "1.0.0")

    async def never(frame: bytes) -> None:
        raise AssertionError("no bytes frame here")

    async with (
        server.running() as runtime,
        open_session(
            server,
            runtime,
            never,
            send_message=send_channel.send,
            send_nowait=send_channel.send_nowait if nowait else None,  # type: ignore[arg-type]
        ) as session,
        trio.open_nursery() as nursery,
    ):

        async def read() -> None:
            async for message in receive_channel:
                if "method" not in message:
                    continue  # the initialize response
                params = dict(message["params"])
                got.append((params.pop("writer"), message["method"], params))

        async def write(n: int, messages: list[tuple[str, dict[str, Any]]]) -> None:
            for method, params in messages:
                await session.send_notification(method, {**params, "writer": n})
                await trio.lowlevel.checkpoint()  # let other writers and the reader in between

        nursery.start_soon(read)
        init = {"protocolVersion": "2025-11-25", "capabilities": {}}
        await session.feed_message(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
        )
        await session.feed_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
        async with trio.open_nursery() as writing:
            for n, messages in enumerate(writers):
                writing.start_soon(write, n, messages)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    return got


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 2), st.lists(_writer, min_size=1, max_size=3))
def test_both_paths_deliver_every_message_once_in_each_writers_order(
    capacity: int, writers: list[list[tuple[str, dict[str, Any]]]]
) -> None:
    """Agreement through a real bounded channel (full now and then, a reader draining it):
    with and without the fast path every message arrives once, each writer's in its order;
    with one writer the two sequences are identical. (Which of two concurrent writers goes
    first is trio's scheduling choice, randomised by trio itself, on both paths.)"""

    def per_writer(got: list[tuple[int, str, dict[str, Any]]]) -> list[list[Any]]:
        return [[(m, p) for w, m, p in got if w == n] for n in range(len(writers))]

    fast = trio.run(_through_channel, True, capacity, writers)
    slow = trio.run(_through_channel, False, capacity, writers)
    expected = [list(messages) for messages in writers]
    assert per_writer(fast) == expected
    assert per_writer(slow) == expected
    if len(writers) == 1:
        assert fast == slow


async def test_with_send_message_send_nowait_only_ever_gets_message_objects() -> None:
    """The in-memory pair hands its lane's send_nowait to the session as it is: it relies on
    the session never passing bytes to send_nowait when it has send_message."""
    async with opened() as (session, transport):
        session.send_request_nowait(
            "elicitation/create", {"message": "?"}, request_id="s1", on_response=print
        )
        await session.send_notification("notifications/tools/list_changed", {})
        await session.send_raw(b'{"jsonrpc":"2.0","method":"raw"}')  # bytes: send, never nowait
        assert [(kind, type(m)) for kind, m in transport.out] == [
            ("send_nowait", dict),
            ("send_nowait", dict),
            ("send", dict),
        ]
        session.forget_request("s1")
