"""The client as one call sees it: the :class:`CallPeer` a tool's ``Context`` asks through.

A call is a ``tools/call`` or a ``prompts/get`` whose function may ask the client. The runtime
needs a :class:`~erlmcp_py.actors.peer.Peer` to send requests and notifications through; the
``Context`` needs a little more about the call, and gets all of it from this one interface:
the negotiated protocol version, the client's declared capabilities, the progress token of the
request the call works for, the log and progress path, and the bookkeeping of a 2026-07-28
round (which questions are being asked, which were charged already).

Two implementations: :class:`~erlmcp_py.mcp.session.RequestPeer` (the session era: one
connection, requests sent on it) and :class:`~erlmcp_py.mcp.mrtr.MrtrPeer` (2026-07-28: the
requests become input requests of an ``InputRequiredResult``).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from erlmcp_py.actors.peer import Peer
from erlmcp_py.mcp.versions import ClientCapabilities

__all__ = ["CallPeer"]


class CallPeer(Peer, Protocol):
    """The :class:`~erlmcp_py.actors.peer.Peer` of one call, with what its ``Context`` needs."""

    @property
    def protocol_version(self) -> str:
        """The protocol version of the call (negotiated, or named by the request)."""
        ...

    @property
    def capabilities(self) -> ClientCapabilities:
        """What the client declared (``initialize``, or the latest request's ``_meta``)."""
        ...

    @property
    def progress_token(self) -> str | int | None:
        """The ``_meta.progressToken`` of the request the call reports progress to, if any."""
        ...

    @property
    def keeps_call(self) -> bool:
        """Whether the call stays in this process while the client is asked: what the
        server's hosted page needs, whose answer reaches only the call that asked."""
        ...

    @property
    def asking(self) -> AbstractContextManager[None]:
        """Entered around each question, from its start to its answer: a 2026-07-28 round
        ends only once every question begun has its request recorded."""
        ...

    def count_question(self) -> bool:
        """Count one new elicitation of the call; whether the client is charged a rate token
        for it (a replayed 2026-07-28 call asks its earlier questions again, charged already)."""
        ...

    def with_key(self, key: str) -> CallPeer:
        """This peer, its requests named ``key`` where requests are named (a 2026-07-28
        ``inputRequests`` key); itself where they are not."""
        ...

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """Send a progress or log notification related to the call; one that cannot be sent
        (the client is gone, nobody is attached) is dropped, never raised."""
        ...
