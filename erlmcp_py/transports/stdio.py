"""stdio transport: newline-delimited JSON-RPC on stdin/stdout.

Frames are split on ``b"\\n"`` only (a JSON text never contains a raw newline, and ``\\r`` is
JSON whitespace). Nothing but MCP frames is written to stdout; logs go to stderr. End of input
ends the session: tool calls are cancelled, so their elicitations end ``abandoned``.

The frame limit is the server's ``frame_bytes`` policy (``RuntimeConfig.frame_bytes``; a
smaller ``max_frame_bytes`` may narrow it). A line longer than that is never buffered: only
its first bytes are kept while the rest is skipped up to its newline, and the server goes on
reading. It is refused with ``-32600`` (``data.reason = "frame_too_large"``), carrying the id
of a request when its head names one. When its head shows the answer to one of our
``elicitation/create`` requests (the ``id`` before the ``result``: see
:mod:`~erlmcp_py.transports._frame_head`), that elicitation ends at once,
``Failed("answer_too_large")``, instead of waiting for its deadline.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
import trio

from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import ServerSession, open_session
from erlmcp_py.transports._frame_head import HEAD_BYTES, frame_head
from erlmcp_py.transports._limits import frame_limit
from erlmcp_py.transports._plain_errors import plain_errors

__all__ = ["LineSplitter", "Oversize", "serve_stdio", "serve_stream"]

log = structlog.get_logger("erlmcp.stdio")

_READ_SIZE = 64 * 1024


@dataclass(frozen=True, slots=True)
class Oversize:
    """A line exceeded the limit (it was skipped).

    Attributes:
        size: Its length in bytes, newline excluded.
        head: Its first bytes (at most :data:`~erlmcp_py.transports._frame_head.HEAD_BYTES`),
            to tell whose answer it was.
    """

    size: int
    head: bytes = b""


class LineSplitter:
    """Split a byte stream into lines, bounded by ``max_bytes`` per line (sans-IO).

    Args:
        max_bytes: Longest accepted line, newline excluded.
    """

    __slots__ = ("_buf", "_head", "_skipping", "max_bytes")

    def __init__(self, max_bytes: int = jsonrpc.MAX_FRAME_BYTES) -> None:
        self.max_bytes = max_bytes
        self._buf = bytearray()
        self._skipping = 0  # > 0: bytes of an oversize line seen so far
        self._head = b""  # the first bytes of the oversize line being skipped

    def feed(self, data: bytes | bytearray) -> list[bytes | Oversize]:
        """Add bytes; return the complete lines (blank lines dropped) and oversize markers."""
        out: list[bytes | Oversize] = []
        start = 0
        n = len(data)
        while start < n:
            nl = data.find(b"\n", start)
            end = n if nl < 0 else nl
            if self._skipping:
                self._skipping += end - start
            else:
                self._buf += data[start:end]
                if len(self._buf) > self.max_bytes:
                    self._skipping = len(self._buf)
                    self._head = bytes(self._buf[:HEAD_BYTES])
                    self._buf.clear()
            if nl < 0:
                break
            if self._skipping:
                out.append(Oversize(self._skipping, self._head))
                self._skipping = 0
                self._head = b""
            elif self._buf.strip():
                out.append(bytes(self._buf))
            self._buf.clear()
            start = nl + 1
        return out

    @property
    def partial(self) -> bool:
        """True when bytes of an unfinished line are buffered."""
        return bool(self._buf.strip()) or bool(self._skipping)


async def serve_stream(
    server: Server,
    runtime: Runtime,
    receive: trio.abc.ReceiveStream,
    send: trio.abc.SendStream,
    *,
    peer_id: str = "stdio",
    max_frame_bytes: int | None = None,
    continuations: Mapping[str, Any] | None = None,
) -> None:
    """Serve one client over a pair of byte streams until end of input.

    Args:
        server: The server.
        runtime: Its elicitation runtime.
        receive: Client → server bytes.
        send: Server → client bytes.
        peer_id: Connection id.
        max_frame_bytes: Longest accepted frame; default and ceiling: the server's
            ``frame_bytes`` policy.
        continuations: Keyword arguments of the 2026-07-28 continuation registry
            (:class:`~erlmcp_py.mcp.mrtr.ContinuationRegistry`: ``mrtr``, ``keyring``…).
    """

    async def write(frame: bytes) -> None:
        await send.send_all(frame + b"\n")

    limit = frame_limit(server, max_frame_bytes)
    splitter = LineSplitter(limit)
    async with open_session(
        server,
        runtime,
        write,
        peer_id=peer_id,
        max_frame_bytes=limit,
        continuations=continuations,
    ) as session:
        try:
            async for chunk in receive:
                for item in splitter.feed(chunk):
                    if isinstance(item, Oversize):
                        await _refuse(session, item, limit)
                    else:
                        await session.feed(item)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.info("stdin_error", error=type(exc).__name__)
        if splitter.partial:
            log.info("eof_inside_frame")
        log.info("eof", peer=peer_id)


async def _refuse(session: ServerSession, item: Oversize, limit: int) -> None:
    head = frame_head(item.head)
    error: jsonrpc.JsonRpcError = jsonrpc.FrameTooLarge(item.size, limit)
    if head.kind == "response" and head.id is not None:
        # the answer to one of our requests: its elicitation ends now, not at its deadline
        known = session.answer_too_large(head.id, item.size, limit)
        log.info("answer_too_large", size=item.size, limit=limit, open_request=known)
    elif head.kind == "request" and head.id is not None:
        error = error.with_id(head.id)  # the client's request gets its answer
    log.info("frame_too_large", size=item.size, limit=limit, kind=head.kind)
    try:
        await session.send_raw(error.encode())
    except Exception:  # the client may be gone; nothing else to do
        log.debug("refusal_not_sent")


async def serve_stdio(
    server: Server,
    *,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    max_frame_bytes: int | None = None,
    continuations: Mapping[str, Any] | None = None,
) -> None:
    """Serve one client on this process's stdin/stdout until EOF.

    Opens the server's elicitation runtime unless it is already running. When serving the
    process's real stdout (fd 1), stdout belongs to MCP for the duration: frames go to a
    private duplicate of it, while fd 1 and ``sys.stdout`` point at stderr, so a stray
    ``print`` or a logger writing to stdout cannot corrupt the stream (the library's own log
    lines go to stderr unless the application configures otherwise: see
    :mod:`erlmcp_py.logging`).

    Args:
        server: The server.
        stdin_fd: File descriptor to read frames from.
        stdout_fd: File descriptor to write frames to (nothing else is written there).
        max_frame_bytes: Longest accepted frame; default and ceiling: the server's
            ``frame_bytes`` policy.
        continuations: Keyword arguments of the 2026-07-28 continuation registry
            (:class:`~erlmcp_py.mcp.mrtr.ContinuationRegistry`: ``mrtr``, ``keyring``…).

    Raises:
        KeyboardInterrupt: Ctrl-C, as itself, not in an exception group.
    """
    claim_stdout = stdout_fd == 1
    saved_stdout = sys.stdout
    if claim_stdout:
        stdout_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    try:
        receive = trio.lowlevel.FdStream(os.dup(stdin_fd))
        send = trio.lowlevel.FdStream(os.dup(stdout_fd))
        with plain_errors():
            async with receive, send:
                if server.runtime is not None:
                    await serve_stream(
                        server,
                        server.runtime,
                        receive,
                        send,
                        max_frame_bytes=max_frame_bytes,
                        continuations=continuations,
                    )
                    return
                async with server.running() as runtime:
                    await serve_stream(
                        server,
                        runtime,
                        receive,
                        send,
                        max_frame_bytes=max_frame_bytes,
                        continuations=continuations,
                    )
    finally:
        if claim_stdout:
            os.dup2(stdout_fd, 1)
            os.close(stdout_fd)
            sys.stdout = saved_stdout
