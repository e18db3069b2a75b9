"""The stdio wire: a server subprocess spoken to as newline-delimited JSON on its stdin/stdout.

:func:`open_stdio_wire` starts the command (in a session of its own when asked, so a terminal's
Ctrl-C reaches the client only), and on the way out says goodbye the stdio way: it closes the
server's stdin, waits for it to exit, and kills it after ``close_timeout`` seconds. The
server's stderr goes where the caller says: to this process's stderr (``None``), nowhere
(``DEVNULL``, the default), a file, or captured (``PIPE``: its last bytes are kept and
:meth:`StdioWire.stderr_tail` returns them).

A line longer than ``max_frame_bytes`` is not kept: it comes out as a :class:`~._wire.Refused`
frame too large (its first bytes) once its newline arrives, and the lines after it are read.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Final

import trio

from erlmcp_py.client._wire import (
    ConnectionLost,
    FramedWire,
    Inbound,
    Refused,
    ServerExited,
    read_frame,
)
from erlmcp_py.mcp.jsonrpc import FrameTooLarge

__all__ = ["MAX_INBOUND_BYTES", "StdioWire", "open_stdio_wire", "say_goodbye"]

#: The longest message a client reads from a server (a large resource, base64 and all).
MAX_INBOUND_BYTES: Final = 64 << 20
_READ: Final = 65536
_HEAD: Final = 256  # bytes of an oversized line kept to show what it was
_STDERR_TAIL: Final = 64 << 10


class StdioWire(FramedWire):
    """A server subprocess's stdin/stdout (see the module docstring). Open with
    :func:`open_stdio_wire`.

    Attributes:
        process: The server process.
    """

    def __init__(self, process: trio.Process, max_frame_bytes: int = MAX_INBOUND_BYTES) -> None:
        self.process = process
        self._max = max_frame_bytes
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline
        self._oversized: bytes | None = None  # the head of a line being skipped
        self._skipped = 0
        self._lock = trio.Lock()
        self._stderr = bytearray()

    async def send_frame(self, frame: bytes) -> None:
        """Write one frame as it is, unchecked, and its newline."""
        await self.send_raw(frame + b"\n")

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (the newline is the caller's).

        Raises:
            ServerExited: the server's stdin is closed (it has exited, most likely).
        """
        assert self.process.stdin is not None
        try:
            async with self._lock:
                await self.process.stdin.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ServerExited("the server's input is closed") from None

    async def receive(self) -> Inbound:
        """The next line the server wrote, checked.

        Raises:
            ServerExited: the server's output ended.
        """
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                self._scanned = 0
                head, size = self._oversized or line[:_HEAD], self._skipped + len(line)
                self._oversized, self._skipped = None, 0
                if size > self._max:
                    return Refused(head, FrameTooLarge(size, self._max))
                if line.strip():
                    return read_frame(line, self._max)
                continue
            self._scanned = len(self._buffer)
            if len(self._buffer) > self._max:
                if self._oversized is None:
                    self._oversized = bytes(self._buffer[:_HEAD])
                self._skipped += len(self._buffer)
                self._buffer.clear()
                self._scanned = 0
            self._buffer += await self._read()

    async def _read(self) -> bytes:
        assert self.process.stdout is not None
        try:
            chunk = await self.process.stdout.receive_some(_READ)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            chunk = b""
        if not chunk:
            raise ServerExited("the server's output ended")
        return bytes(chunk)

    async def aclose(self) -> None:
        """Close the server's stdin: the stdio goodbye."""
        assert self.process.stdin is not None
        with trio.CancelScope(shield=True), suppress(trio.BrokenResourceError):
            await self.process.stdin.aclose()

    def stderr_tail(self) -> bytes:
        """The last bytes the server wrote to its stderr (``stderr=PIPE`` only)."""
        return bytes(self._stderr)

    async def _goodbye(self, close_timeout: float) -> None:
        """Say goodbye (:func:`say_goodbye`) while reading what the server still writes, so
        that a server with more to say on its way out is not blocked on a full pipe."""
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._drain)
                await say_goodbye(self.process, close_timeout)
                nursery.cancel_scope.cancel()

    async def _drain(self) -> None:
        with suppress(ConnectionLost):
            while True:
                await self._read()

    async def _keep_stderr(self) -> None:
        assert self.process.stderr is not None
        async for chunk in self.process.stderr:
            self._stderr += chunk
            del self._stderr[:-_STDERR_TAIL]


async def say_goodbye(process: trio.Process, close_timeout: float) -> None:
    """End a stdio server the stdio way: close its stdin, then wait up to ``close_timeout``
    seconds for it to exit (shielded: this runs on the way out, cancelled or not). The caller
    kills a server still running after that."""
    assert process.stdin is not None
    with trio.CancelScope(shield=True):
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await process.stdin.aclose()
        with trio.move_on_after(close_timeout):
            await process.wait()


@asynccontextmanager
async def open_stdio_wire(
    command: Sequence[str],
    *,
    stderr: int | None = subprocess.DEVNULL,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    close_timeout: float = 10.0,
    start_new_session: bool = False,
    max_frame_bytes: int = MAX_INBOUND_BYTES,
) -> AsyncIterator[StdioWire]:
    """Start ``command`` and speak to it over its stdin/stdout (see the module docstring).

    Args:
        command: The server command line.
        stderr: Where the server's stderr goes: ``None`` (this process's), ``DEVNULL``, a
            file descriptor, or ``PIPE`` (captured: :meth:`StdioWire.stderr_tail`).
        cwd: The server's working directory.
        env: The server's environment (default: this process's).
        close_timeout: Seconds to wait for the server to exit after its stdin is closed.
        start_new_session: Run the server in a session of its own (a terminal's Ctrl-C is
            then the client's alone).
        max_frame_bytes: The longest line read as a message.

    Raises:
        OSError: the command cannot be started.
    """
    process = await trio.lowlevel.open_process(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        start_new_session=start_new_session,
    )
    try:
        async with trio.open_nursery() as nursery:
            wire = StdioWire(process, max_frame_bytes)
            if stderr == subprocess.PIPE:
                nursery.start_soon(wire._keep_stderr)
            try:
                yield wire
            finally:
                await wire._goodbye(close_timeout)
                nursery.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
