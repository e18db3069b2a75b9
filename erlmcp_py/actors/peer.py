"""The runtime's view of one connected client: the :class:`Peer` interface.

The protocol layer (``erlmcp_py.mcp``) implements it for real MCP sessions; tests use
:class:`erlmcp_py.testing.MemoryPeer`; an application that is not an MCP server implements it
over its own connection (see ``docs/embedding.md``). The runtime allocates the id of every
request it sends, so it can later send ``notifications/cancelled`` for it.

The conversation, seen from a peer:

1. ``send_request("elicitation/create", params, request_id=..., on_response=...)``. For a
   form, ``params`` is ``{"message": str, "requestedSchema": {...}}``; for URL mode it is
   ``{"mode": "url", "message": str, "url": str, "elicitationId": str}``. A re-prompt after
   an invalid answer is a new request with a new id, whose message lists the errors.
2. When the user answers, call ``on_response`` once with one of (:data:`PeerResponse`):

   * the result mapping ``{"action": "accept", "content": {...}}`` — ``content`` holds the
     form's field values by property name, as plain JSON values;
   * ``{"action": "decline"}`` or ``{"action": "cancel"}`` (no ``content``);
   * :class:`PeerError` — the client answered with an error (the elicitation fails with
     reason ``"transport"``);
   * :class:`AnswerTooLarge` — the client answered, but its answer was over the transport's
     frame limit and was discarded unread (the elicitation fails with reason
     ``"answer_too_large"``);
   * a :class:`PeerGone` instance — the connection ended while the request was open;
   * :class:`Recorded` — an answer the client gave before this request was sent (a
     2026-07-28 retry that re-runs a tool hands back the answers it recorded): the client's
     answer all the same, but nobody answered it now (it is no human answer time).

   Any other shape (no ``action``, an unknown action) fails the elicitation as an invalid
   response. Answers after :meth:`Peer.forget_request` must be dropped by the peer.
3. Notifications the peer may receive: ``notifications/cancelled`` (``{"requestId",
   "reason"}``: stop showing that request), ``notifications/message`` (the expiry warning)
   and ``notifications/elicitation/complete`` (URL mode).

A peer that keeps a record of the answers it hands on (a task's journal) also implements
:class:`RecordsAnswers`: an answer given beside it -- ``complete_elicitation`` and
``answer_elicitation``, the hosted page's -- is handed to it, once valid, before the
elicitation ends with it, so that the record holds every answer, however it came.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "AnswerTooLarge",
    "Peer",
    "PeerError",
    "PeerGone",
    "PeerResponse",
    "Recorded",
    "RecordsAnswers",
]


class PeerGone(Exception):
    """The client disconnected (or its session ended) before the message could be sent."""


@dataclass(frozen=True, slots=True)
class PeerError:
    """The client answered our request with an error (a JSON-RPC error for MCP)."""

    code: int
    message: str
    data: Any = None


@dataclass(frozen=True, slots=True)
class AnswerTooLarge:
    """The client's answer to our request was over the transport's frame limit: it was
    discarded without being read (its content is unknown).

    Attributes:
        size: Bytes of the answer seen (a lower bound when the rest was never read).
        limit: The frame limit, in bytes.
    """

    size: int
    limit: int


@dataclass(frozen=True, slots=True)
class Recorded:
    """An answer the client gave before the request was sent, handed back from a record (a
    2026-07-28 replay, or an answer the first call brought): taken as the client's answer,
    but no human answered it now."""

    result: Mapping[str, Any]


PeerResponse = Mapping[str, Any] | PeerError | PeerGone | AnswerTooLarge | Recorded
"""What ``on_response`` receives: the result mapping ``{"action": "accept" | "decline" |
"cancel", "content": {...}}``, the client's :class:`PeerError`, :class:`AnswerTooLarge` when
the answer was over the frame limit, a :class:`PeerGone` if the connection ended while the
request was outstanding, or a :class:`Recorded` result given before the request was sent."""


@runtime_checkable
class Peer(Protocol):
    """One connected client, as the elicitation runtime needs it."""

    @property
    def peer_id(self) -> str:
        """Stable id of the connection; the default rate-limit key."""
        ...

    @property
    def protocol_version(self) -> str | None:
        """The negotiated MCP protocol version, which decides the requestedSchema subset.

        ``None`` — or no such attribute at all — for a peer that does not speak MCP: the
        newest subset applies.
        """
        ...

    def supports(self, mode: str) -> bool:
        """Whether the client can answer elicitations of ``mode`` (``"form"``/``"url"``)."""
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
        response (see :data:`PeerResponse`) — unless :meth:`forget_request` was called first.

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


@runtime_checkable
class RecordsAnswers(Protocol):
    """A :class:`Peer` that records the answers to its requests (a task's journal), those
    given beside it too."""

    async def record_answer(self, request_id: str, response: Mapping[str, Any]) -> None:
        """Record ``response`` (``{"action": ..., "content": ...}``, valid) as the answer to
        the request ``request_id``, given beside the peer (the application completed or
        dismissed the elicitation): the elicitation ends with it once this returns, and the
        request is answered (an answer the peer gets to it later is ignored).

        Raises:
            StoreUnavailable: it cannot be recorded now; the elicitation goes on unanswered.
            AnswerInFlight: the request is being answered otherwise (or is not asked yet);
                the elicitation goes on as that answer takes it.
        """
        ...
