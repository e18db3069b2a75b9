"""A forwarded retry's side of the relay (:class:`ForwardedRetry`): the holder's notes, as the
runtime hands them over, reach the retry's own sink in order before its answer, within the
retry's queue. In-process and deterministic: no clock, no sockets; the holder is a function
that calls the note sink as the runtime would."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import trio
from structlog.testing import capture_logs

from erlmcp_py.gateway._forward import RELAYED_NOTES, ForwardedRetry
from erlmcp_py.store import NoteSink


def progress(n: int) -> dict[str, Any]:
    return {"method": "notifications/progress", "params": {"progressToken": "p", "progress": n}}


class Stream:
    """A retry's sink that writes what it is given; it takes ``room`` at most, then refuses."""

    def __init__(self, room: int = 10_000) -> None:
        self.room = room
        self.seen: list[tuple[str, Any]] = []

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        await trio.lowlevel.checkpoint()
        if len(self.seen) >= self.room:
            raise trio.BrokenResourceError("full")
        self.seen.append((method, params["progress"]))


async def test_a_forwarded_retry_passes_its_holders_notes_in_order_before_its_answer() -> None:
    stream = Stream()

    async def holder(note: NoteSink) -> Mapping[str, Any]:
        for n in range(5):
            note(progress(n))
            await trio.lowlevel.checkpoint()
        note(progress(5))  # the last one just before the answer: still before it
        return {"result": {"content": []}}

    with capture_logs() as logs:
        result = await ForwardedRetry(holder, stream.notify)
        stream.seen.append(("answer", result))
    assert stream.seen == [
        *(("notifications/progress", n) for n in range(6)),
        ("answer", {"content": []}),
    ]
    assert not [e for e in logs if e["event"] == "forwarded_notes_dropped"]


async def test_a_flood_is_bounded_by_the_retrys_queue_the_newest_dropped_and_logged_once() -> None:
    stream = Stream()

    async def holder(note: NoteSink) -> Mapping[str, Any]:
        for n in range(RELAYED_NOTES + 50):  # faster than the retry's sink: none passed yet
            note(progress(n))
        return {"result": {}}

    with capture_logs() as logs:
        assert await ForwardedRetry(holder, stream.notify) == {}
    assert stream.seen == [("notifications/progress", n) for n in range(RELAYED_NOTES)]
    (dropped,) = [e for e in logs if e["event"] == "forwarded_notes_dropped"]
    assert (dropped["count"], dropped["why"]) == (50, "the queue is full")


async def test_notes_the_retrys_stream_refuses_are_dropped_and_the_answer_still_comes() -> None:
    stream = Stream(room=2)

    async def holder(note: NoteSink) -> Mapping[str, Any]:
        for n in range(10):
            note(progress(n))
            await trio.lowlevel.checkpoint()
        return {"result": {"done": True}}

    with capture_logs() as logs:
        assert await ForwardedRetry(holder, stream.notify) == {"done": True}
    assert stream.seen == [("notifications/progress", 0), ("notifications/progress", 1)]
    (dropped,) = [e for e in logs if e["event"] == "forwarded_notes_dropped"]
    assert (dropped["count"], dropped["why"]) == (8, "the retry's stream refused it")


async def test_a_retry_without_a_sink_drops_its_holders_notes_and_gets_its_answer() -> None:
    async def holder(note: NoteSink) -> Mapping[str, Any]:
        note(progress(0))
        return {"result": {"done": True}}

    with capture_logs() as logs:
        assert await ForwardedRetry(holder) == {"done": True}
    (dropped,) = [e for e in logs if e["event"] == "forwarded_notes_dropped"]
    assert dropped["count"] == 1
