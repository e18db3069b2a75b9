"""One call from a command, a URL or a server object to a session that has shaken hands.

Each opener is a wire's opener and :func:`~._session.open_client_session` in one block, plus
:meth:`~._session.ClientSession.handshake` (``initialize`` in a session era, ``server/discover``
on 2026-07-28) unless ``handshake=False``. Leaving the block ends the session first (waiting
requests fail), then the wire (stdin closed and the process waited for; DELETE; the in-memory
server session closed).
"""

from __future__ import annotations

import os
import ssl
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from typing_extensions import Unpack

from erlmcp_py.client._http import open_http_wire
from erlmcp_py.client._memory import open_memory_wire
from erlmcp_py.client._session import ClientSession, SessionOptions, open_client_session
from erlmcp_py.client._stdio import open_stdio_wire
from erlmcp_py.client._wire import Wire
from erlmcp_py.mcp.server import Server

__all__ = ["connect_http", "connect_in_memory", "connect_stdio"]


@asynccontextmanager
async def _session_over(
    opening: AbstractAsyncContextManager[Wire], handshake: bool, options: SessionOptions
) -> AsyncIterator[ClientSession]:
    async with opening as wire, open_client_session(wire, **options) as session:
        if handshake:
            await session.handshake()
        yield session


@asynccontextmanager
async def connect_stdio(
    command: Sequence[str],
    *,
    stderr: int | None = subprocess.DEVNULL,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    close_timeout: float = 10.0,
    handshake: bool = True,
    **options: Unpack[SessionOptions],
) -> AsyncIterator[ClientSession]:
    """A session with the stdio server ``command`` starts (see the module docstring).

    Args:
        command: The server command line.
        stderr: Where the server's stderr goes (``None``: this process's; default: nowhere;
            ``PIPE``: captured, ``session.wire.stderr_tail()``).
        cwd: The server's working directory.
        env: The server's environment (default: this process's).
        close_timeout: Seconds to wait for the server to exit after its stdin is closed.
        handshake: Shake hands first (``initialize`` or ``server/discover``).
        options: The session's options (:class:`~._session.SessionOptions`).

    Raises:
        OSError: the command cannot be started.
    """
    opening = open_stdio_wire(command, stderr=stderr, cwd=cwd, env=env, close_timeout=close_timeout)
    async with _session_over(opening, handshake, options) as session:
        yield session


@asynccontextmanager
async def connect_http(
    url: str,
    *,
    headers: Sequence[tuple[str, str]] = (),
    accept_language: str | None = None,
    timeout: float = 30.0,
    ssl_context: ssl.SSLContext | None = None,
    handshake: bool = True,
    **options: Unpack[SessionOptions],
) -> AsyncIterator[ClientSession]:
    """A session with the Streamable HTTP endpoint ``url`` (see the module docstring).

    Args:
        url: ``http://`` or ``https://`` endpoint.
        headers: Sent on every request (``Authorization``…).
        accept_language: Sent as ``Accept-Language`` (unless ``headers`` names one).
        timeout: Seconds to connect, and to end the session on the way out.
        ssl_context: For ``https``: the TLS settings (default: the system's trust store).
        handshake: Shake hands first (``initialize`` or ``server/discover``).
        options: The session's options (:class:`~._session.SessionOptions`).

    Raises:
        ValueError: ``url`` is not an http(s) URL.
    """
    opening = open_http_wire(
        url,
        headers=headers,
        accept_language=accept_language,
        timeout=timeout,
        ssl_context=ssl_context,
    )
    async with _session_over(opening, handshake, options) as session:
        yield session


@asynccontextmanager
async def connect_in_memory(
    server: Server,
    *,
    runtime: Any = None,
    peer_id: str | None = None,
    buffer: int = 16,
    continuations: Mapping[str, Any] | None = None,
    handshake: bool = True,
    **options: Unpack[SessionOptions],
) -> AsyncIterator[ClientSession]:
    """A session with ``server`` in this process, through the boundary stdio uses.

    Args:
        server: The server.
        runtime: Its elicitation runtime; default: ``server.runtime`` if it is running, else
            one opened (and closed) here.
        peer_id: The server session's id; default: a fresh one.
        buffer: Capacity of the server → client channel (frames).
        continuations: Options of the server session's 2026-07-28 continuation registry.
        handshake: Shake hands first (``initialize`` or ``server/discover``).
        options: The session's options (:class:`~._session.SessionOptions`).
    """
    opening = open_memory_wire(
        server, runtime=runtime, peer_id=peer_id, buffer=buffer, continuations=continuations
    )
    async with _session_over(opening, handshake, options) as session:
        yield session
