"""The notes a forwarded request's handler sends its caller, on their way out of the holder.

A handler on the holder replica passes each note to :meth:`NoteOutbox.put`, which queues it
and returns at once: the handler (a 2026-07-28 call's round, and the upstream behind it) never
waits for the store. :meth:`NoteOutbox.run` publishes the queue, in order, on the caller's
channel; the store publishes the request's answer only once :meth:`NoteOutbox.run` has
returned, so every note is on the channel before the answer (one client, one connection:
Redis keeps their order).

Bounds: at most :data:`NOTES_QUEUED` notes wait; a note past that is dropped (the newest, as a
Streamable HTTP response stream drops the notifications its client does not keep up with:
what was queued still goes out, in order). The first note that cannot be published (the store
is down, or nobody listens on the caller's channel: the caller is gone) ends the relay, and
every note queued or put after it is dropped without another try. What was dropped is logged
once per request (``forwarded_notes_dropped``: how many, and the first reason).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import structlog
import trio

from erlmcp_py.core.errors import StoreUnavailable

__all__ = ["NOTES_QUEUED", "NoteOutbox"]

log = structlog.get_logger("erlmcp_py.store")

#: The notes of one forwarded request that wait on the holder to be published, at most.
NOTES_QUEUED: Final = 256


class NoteOutbox:
    """The notes of one forwarded request, on the holder (see the module docstring).

    Args:
        publish: Publishes one message on the caller's channel; how many listened to it.
        cid: The request's correlation id, named in every note.
        capacity: The notes that may wait at most.
    """

    __slots__ = ("_cid", "_ended", "_publish", "_receive", "_send", "dropped", "why")

    def __init__(
        self,
        publish: Callable[[str], Awaitable[int]],
        cid: str,
        capacity: int = NOTES_QUEUED,
    ) -> None:
        self._publish = publish
        self._cid = cid
        self._send, self._receive = trio.open_memory_channel[str](capacity)
        self._ended = False
        #: The notes dropped so far.
        self.dropped = 0
        #: Why the first of them was (``None`` while none was).
        self.why: str | None = None

    def put(self, note: Mapping[str, Any]) -> None:
        """Queue one note (the handler's :data:`~erlmcp_py.store.NoteSink`): never blocks,
        never raises."""
        if self._ended:
            self._drop("an earlier note could not be published")
            return
        try:
            text = json.dumps({"kind": "note", "cid": self._cid, "note": dict(note)})
            self._send.send_nowait(text)
        except (TypeError, ValueError):
            self._drop("not JSON")
        except trio.WouldBlock:
            self._drop("the queue is full")
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self._drop("the request was answered")

    def close(self) -> None:
        """No more notes: :meth:`run` publishes those queued, then returns."""
        self._send.close()

    async def run(self) -> None:
        """Publish the queued notes in order until :meth:`close` and the queue is empty."""
        async with self._receive:
            async for text in self._receive:
                if self._ended:  # one note could not go: neither can the later ones
                    self._drop("an earlier note could not be published")
                    continue
                try:
                    listened = await self._publish(text)
                except StoreUnavailable:
                    self._end("the store is unavailable")
                else:
                    if not listened:
                        self._end("the caller is gone")

    def report(self) -> None:
        """Log what was dropped, if anything (once per request)."""
        if self.dropped:
            log.warning("forwarded_notes_dropped", count=self.dropped, why=self.why)

    def _end(self, why: str) -> None:
        self._ended = True
        self._drop(why)

    def _drop(self, why: str) -> None:
        self.dropped += 1
        if self.why is None:
            self.why = why
