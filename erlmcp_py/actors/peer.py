"""The runtime's view of one connected client: the :class:`Peer` interface.

The protocol layer (``erlmcp_py.mcp``) implements it for real sessions; tests use
:class:`erlmcp_py.testing.MemoryPeer`. The runtime allocates the JSON-RPC id of every request it
sends, so it can later send ``notifications/cancelled`` for it.

A peer may also offer ``send_request_nowait`` (same arguments as :meth:`Peer.send_request`,
synchronous; raises ``trio.WouldBlock`` when the transport cannot take the request without
waiting). The elicitation child then sends in its own turn, without a cancel scope; when the
method is missing or would block it awaits ``send_request`` under its deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["Peer", "PeerError", "PeerGone", "PeerResponse", "SendRequestNowait"]


class PeerGone(Exception):
    """The client disconnected (or its session ended) before the message could be sent."""


@dataclass(frozen=True, slots=True)
class PeerError:
    """The client answered our request with a JSON-RPC error."""

    code: int
    message: str
    data: Any = None


PeerResponse = Mapping[str, Any] | PeerError | PeerGone
"""What ``on_response`` receives: the ``result`` object, the client's error, or ``PeerGone``
if the session ended while the request was outstanding."""


class SendRequestNowait(Protocol):
    """The optional ``Peer.send_request_nowait``: hand the request over now or raise
    ``trio.WouldBlock`` (nothing sent); ``PeerGone`` as for ``send_request``."""

    def __call__(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        request_id: str,
        on_response: Callable[[PeerResponse], None],
    ) -> None: ...


@runtime_checkable
class Peer(Protocol):
    """One connected client, as the elicitation runtime needs it."""

    @property
    def peer_id(self) -> str:
        """Stable id of the connection; the default rate-limit key."""
        ...

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol version (decides which requestedSchema subset is allowed)."""
        ...

    def supports(self, mode: str) -> bool:
        """Whether the client declared the elicitation capability for ``mode`` (form/url)."""
        ...

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        request_id: str,
        on_response: Callable[[PeerResponse], None],
    ) -> None:
        """Send a request; return once it is handed to the transport.

        ``on_response`` is called exactly once, synchronously, from a trio task, with the
        response — unless :meth:`forget_request` was called first.

        Raises:
            PeerGone: the client is gone; nothing was sent.
        """
        ...

    def forget_request(self, request_id: str) -> None:
        """Drop the correlation of a request we no longer wait for (a late answer is ignored)."""
        ...

    async def send_notification(self, method: str, params: Mapping[str, Any]) -> None:
        """Send a notification (best effort).

        Raises:
            PeerGone: the client is gone.
        """
        ...
