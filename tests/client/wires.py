"""Wires for tests: a server scripted result by result, and one a test plays by hand."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import trio

from erlmcp_py.client import ClientRequestError, ConnectionLost, Inbound
from erlmcp_py.mcp.jsonrpc import ErrorResponse, Message, Notification, Request, Response


class ScriptedWire:
    """Answers each request with the next scripted result (a :class:`ClientRequestError`: that
    error answer); records what was sent as ``(method, params)`` and the protocol it was told."""

    def __init__(self, *results: Mapping[str, Any] | ClientRequestError) -> None:
        self.results = list(results)
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.protocol: str | None = None
        self._answers_in, self._answers = trio.open_memory_channel[Inbound](math.inf)

    @property
    def session_id(self) -> str | None:
        return None

    def set_protocol(self, version: str) -> None:
        self.protocol = version

    async def send(self, message: Message) -> None:
        await trio.lowlevel.checkpoint()
        if isinstance(message, Request | Notification):
            self.sent.append((message.method, dict(message.params or {})))  # type: ignore[arg-type]
        if isinstance(message, Request):
            result = self.results.pop(0)
            if isinstance(result, ClientRequestError):
                answer: Inbound = ErrorResponse(
                    message.id, result.code, result.message, result.data
                )
            else:
                answer = Response(message.id, dict(result))
            self._answers_in.send_nowait(answer)

    async def receive(self) -> Inbound:
        try:
            return await self._answers.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise ConnectionLost("the script ended") from None

    async def aclose(self) -> None:
        self._answers_in.close()


class PeerWire:
    """The client's end of a connection whose server is the test (:class:`Peer`)."""

    def __init__(
        self,
        outbound: trio.MemorySendChannel[Message],
        inbound: trio.MemoryReceiveChannel[Inbound],
    ) -> None:
        self.protocols: list[str] = []
        self._outbound = outbound
        self._inbound = inbound

    @property
    def session_id(self) -> str | None:
        return None

    def set_protocol(self, version: str) -> None:
        self.protocols.append(version)

    async def send(self, message: Message) -> None:
        try:
            await self._outbound.send(message)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ConnectionLost("the peer hung up") from None

    async def receive(self) -> Inbound:
        try:
            return await self._inbound.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise ConnectionLost("the peer hung up") from None

    async def aclose(self) -> None:
        self._outbound.close()


class Peer:
    """The server side, played by the test: what the client sent, and what to send it."""

    def __init__(
        self,
        inbound: trio.MemoryReceiveChannel[Message],
        outbound: trio.MemorySendChannel[Inbound],
    ) -> None:
        self._inbound = inbound
        self._outbound = outbound

    async def receive(self, timeout: float = 10) -> Message:
        """The next message the client sent (within ``timeout`` seconds)."""
        with trio.fail_after(timeout):
            return await self._inbound.receive()

    async def next_request(self) -> Request:
        """The next request the client sent (notifications before it are skipped)."""
        while True:
            message = await self.receive()
            if isinstance(message, Request):
                return message

    async def send(self, item: Inbound) -> None:
        await self._outbound.send(item)

    async def answer(self, request: Request, result: Mapping[str, Any]) -> None:
        await self.send(Response(request.id, dict(result)))

    def hang_up(self) -> None:
        """The server dies: nothing more reaches the client."""
        self._outbound.close()


def wire_pair() -> tuple[PeerWire, Peer]:
    to_peer, from_client = trio.open_memory_channel[Message](math.inf)
    to_client, from_peer = trio.open_memory_channel[Inbound](math.inf)
    return PeerWire(to_peer, from_peer), Peer(from_client, to_client)
