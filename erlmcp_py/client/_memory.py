"""The in-memory wire: a :class:`~erlmcp_py.mcp.server.Server` in the same process.

Theory of operation
-------------------
:func:`open_memory_wire` opens the server's runtime (unless it is running), one server session
and a :class:`MemoryWire`, joined by two trio memory channels that carry encoded JSON-RPC
frames, exactly the bytes a stdio line would hold. The server side's reader task hands each
frame to :meth:`ServerSession.feed <erlmcp_py.mcp.session.ServerSession.feed>`, the same entry
point (size limit, JSON parse, envelope check) every server transport uses; the session writes
its frames to the wire's channel, and :meth:`MemoryWire.receive` checks each one with
:func:`~erlmcp_py.mcp.jsonrpc.parse`.

The client → server channel is unbounded and the server → client one bounded, so the client's
sends never block on the server (an answer to ``elicitation/create`` is written at once) and
the server's writes get back-pressure from a client that does not read: neither side can
deadlock the other. A send that cannot block has nothing to wait for: it is a cancel point
(a cancelled caller sends nothing) but does not yield to the scheduler.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import trio

from erlmcp_py.client._stdio import MAX_INBOUND_BYTES
from erlmcp_py.client._wire import ConnectionLost, FramedWire, Inbound, read_frame
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import ServerSession, open_session

__all__ = ["MemoryWire", "open_memory_wire"]


class MemoryWire(FramedWire):
    """The client end of an in-memory connection. Open with :func:`open_memory_wire`.

    Attributes:
        server_session: The server's side of the connection (for inspection in tests).
    """

    def __init__(
        self,
        server_session: ServerSession,
        to_server: trio.MemorySendChannel[bytes],
        from_server: trio.MemoryReceiveChannel[bytes],
    ) -> None:
        self.server_session = server_session
        self._to_server = to_server
        self._from_server = from_server

    async def send_frame(self, frame: bytes) -> None:
        """Send one frame as it is, unchecked (for tests of bad input).

        Raises:
            ConnectionLost: the server side is gone.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self._to_server.send_nowait(frame)  # unbounded: never blocks
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ConnectionLost("the in-memory server is gone") from None

    async def receive(self) -> Inbound:
        """The next frame the server wrote, checked."""
        try:
            frame = await self._from_server.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise ConnectionLost("the in-memory server is gone") from None
        return read_frame(frame, MAX_INBOUND_BYTES)

    async def aclose(self) -> None:
        """Close both directions."""
        self._to_server.close()
        self._from_server.close()
        await trio.lowlevel.checkpoint()


@asynccontextmanager
async def open_memory_wire(
    server: Server,
    *,
    runtime: Any = None,
    peer_id: str | None = None,
    buffer: int = 16,
    continuations: Mapping[str, Any] | None = None,
) -> AsyncIterator[MemoryWire]:
    """Connect to ``server`` in this process (see the module docstring).

    Args:
        server: The server.
        runtime: The elicitation runtime to use; default: ``server.runtime`` if it is running,
            else one opened (and closed) here.
        peer_id: The server session's id (the rate-limit key); default: a fresh one.
        buffer: Capacity of the server → client channel (frames).
        continuations: Keyword arguments of the server session's 2026-07-28 continuation
            registry (:class:`~erlmcp_py.mcp.mrtr.ContinuationRegistry`: ``mrtr``,
            ``keyring``…).

    On exit the server session closes (its tool calls are cancelled; their elicitations end
    ``abandoned``) and the runtime, if opened here.
    """
    to_server, from_client = trio.open_memory_channel[bytes](math.inf)
    to_client, from_server = trio.open_memory_channel[bytes](buffer)
    async with AsyncExitStack() as stack:
        if runtime is None:
            runtime = server.runtime
        if runtime is None:
            runtime = await stack.enter_async_context(server.running())
        session = await stack.enter_async_context(
            open_session(
                server, runtime, to_client.send, peer_id=peer_id, continuations=continuations
            )
        )
        # The server side's reader: cancelled first on exit, then the session closes.
        tasks = await stack.enter_async_context(trio.open_nursery())

        async def serve() -> None:
            async for frame in from_client:
                await session.feed(frame)

        tasks.start_soon(serve)
        wire = MemoryWire(session, to_server, from_server)
        try:
            yield wire
        finally:
            tasks.cancel_scope.cancel()
            to_server.close()
            from_server.close()
