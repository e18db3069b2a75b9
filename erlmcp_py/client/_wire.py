"""What a transport is to a client session: a :class:`Wire`, and what it hands the session.

A wire carries whole JSON-RPC messages: :meth:`Wire.send` writes one, :meth:`Wire.receive`
returns the next thing the server said. That is a :data:`~erlmcp_py.mcp.jsonrpc.Message`
checked by :func:`~erlmcp_py.mcp.jsonrpc.parse`, or one of two notices only the transport can
give: :class:`Refused` (a frame that is no JSON-RPC message) and :class:`Undeliverable` (a
request the transport could not carry to its answer: an HTTP exchange that failed or ended
early). When nothing more can come, :meth:`Wire.receive` raises :class:`ConnectionLost`.

A wire also tells its session what the transport knows: the HTTP session id
(:attr:`Wire.session_id`), and learns the protocol version in use (:meth:`Wire.set_protocol`),
which Streamable HTTP writes in its headers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeAlias

from erlmcp_py.mcp.jsonrpc import JsonRpcError, Message, RequestId, encode, parse

__all__ = [
    "ConnectionLost",
    "Inbound",
    "Refused",
    "ServerExited",
    "Undeliverable",
    "FramedWire",
    "Wire",
    "read_frame",
]


class ConnectionLost(Exception):
    """The server can no longer answer: its output ended, the session was closed, or an HTTP
    exchange failed (the message says how)."""


class ServerExited(ConnectionLost):
    """The server process is gone: its output ended or its input is closed (it exited, or
    closed its stdio)."""


@dataclass(frozen=True, slots=True)
class Refused:
    """A frame from the server that is no JSON-RPC message.

    Attributes:
        frame: The frame as it came.
        error: Why (:attr:`~erlmcp_py.mcp.jsonrpc.JsonRpcError.response_id` names the request
            of ours a malformed response was meant to answer, when it could be read).
    """

    frame: bytes
    error: JsonRpcError


@dataclass(frozen=True, slots=True)
class Undeliverable:
    """The transport could not carry request ``id`` to its answer; none will come.

    Attributes:
        id: The request's id.
        error: What happened.
    """

    id: RequestId
    error: ConnectionLost


Inbound: TypeAlias = Message | Refused | Undeliverable
"""What :meth:`Wire.receive` returns."""


class Wire(Protocol):
    """One connection to one server, message by message (see the module docstring)."""

    @property
    def session_id(self) -> str | None:
        """The transport's session id (Streamable HTTP's ``Mcp-Session-Id``), if it has one."""
        ...

    def set_protocol(self, version: str) -> None:
        """The protocol version now in use (sent as a header where the transport has one)."""
        ...

    async def send(self, message: Message) -> None:
        """Send one message.

        Raises:
            ConnectionLost: it cannot be sent (or, on HTTP, the exchange failed before an
                answer began).
        """
        ...

    async def receive(self) -> Inbound:
        """The next message or notice from the server.

        Raises:
            ConnectionLost: nothing more can come.
        """
        ...

    async def aclose(self) -> None:
        """Close the connection (ends the transport's session, where it has one)."""
        ...


def read_frame(frame: bytes, max_bytes: int) -> Message | Refused:
    """One frame from the server, checked (:func:`~erlmcp_py.mcp.jsonrpc.parse`)."""
    try:
        return parse(frame, max_bytes=max_bytes)
    except JsonRpcError as exc:
        return Refused(frame, exc)


class FramedWire:
    """What the stdio and in-memory wires share: every message is one frame of its own, and the
    connection itself is the session (no id, no header to carry the version)."""

    @property
    def session_id(self) -> str | None:
        """No session id: the connection is the session."""
        return None

    def set_protocol(self, version: str) -> None:
        """No header to carry it: nothing to do."""

    async def send(self, message: Message) -> None:
        """Send one message."""
        await self.send_frame(encode(message))

    async def send_frame(self, frame: bytes) -> None:
        """Send one frame as it is, unchecked (for tests of bad input).

        Raises:
            ConnectionLost: the server side is gone.
        """
        raise NotImplementedError
