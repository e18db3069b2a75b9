"""Test helpers shipped with the library.

``MemoryPeer`` is an in-memory :class:`Peer` you can script: it records every request and
notification and lets a test answer now, late, twice, with garbage, with an error, or never —
or disconnect. It stands in for a session, below the protocol.

``open_memory_client(server, handler=...)`` is a whole in-memory client/server pair: a
:class:`MemoryClient` (``initialize``, ``list_tools``, ``call_tool``, ``list_resources``,
``list_resource_templates``, ``read_resource``, ``list_prompts``, ``get_prompt``, an
elicitation handler, ``notifications``; both protocol eras) sending JSON-RPC frames to a real
session of ``server`` (see :mod:`erlmcp_py.client`).

Its tests are async: run them with pytest-trio in trio mode (``trio_mode = true`` under
``[tool.pytest.ini_options]``; the README shows the whole set-up).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import trio

from erlmcp_py.actors.peer import PeerError, PeerGone, PeerResponse
from erlmcp_py.core.versions import LATEST_SESSION_VERSION

__all__ = ["MemoryClient", "MemoryHandler", "MemoryPeer", "SentRequest", "open_memory_client"]


@dataclass(slots=True)
class SentRequest:
    id: str
    method: str
    params: Mapping[str, Any]
    on_response: Callable[[PeerResponse], None]
    answered: bool = False


@dataclass
class MemoryPeer:
    """A scriptable client. ``auto`` (if set) answers each request as it arrives."""

    peer_id: str = "memory-peer"
    modes: frozenset[str] = frozenset({"form", "url"})
    protocol_version: str = LATEST_SESSION_VERSION
    auto: Callable[[SentRequest], Mapping[str, Any] | PeerError | None] | None = None
    requests: list[SentRequest] = field(default_factory=list)
    notifications: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    pending: dict[str, SentRequest] = field(default_factory=dict)
    gone: bool = False
    _arrived: trio.Event | None = None  # made by a waiting wait_request

    def supports(self, mode: str) -> bool:
        return mode in self.modes

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        request_id: str,
        on_response: Callable[[PeerResponse], None],
    ) -> None:
        await trio.lowlevel.checkpoint()
        self._deliver(method, params, request_id, on_response)

    def _deliver(
        self,
        method: str,
        params: Mapping[str, Any],
        request_id: str,
        on_response: Callable[[PeerResponse], None],
    ) -> None:
        if self.gone:
            raise PeerGone(self.peer_id)
        sent = SentRequest(request_id, method, params, on_response)
        self.requests.append(sent)
        self.pending[request_id] = sent
        if self._arrived is not None:
            self._arrived.set()
            self._arrived = None
        if self.auto is not None:
            reply = self.auto(sent)
            if reply is not None:
                self.answer(request_id, reply)

    def forget_request(self, request_id: str) -> None:
        self.pending.pop(request_id, None)

    async def send_notification(self, method: str, params: Mapping[str, Any]) -> None:
        await trio.lowlevel.checkpoint()
        if self.gone:
            raise PeerGone(self.peer_id)
        self.notifications.append((method, params))

    # -- scripting ---------------------------------------------------------------------------

    def answer(self, request_id: str, result: Mapping[str, Any] | PeerError) -> bool:
        """Deliver a response as the session would: only if the runtime still waits for it."""
        sent = self.pending.pop(request_id, None)
        if sent is None:
            return False  # unknown, forgotten or duplicate: the session drops it
        sent.answered = True
        sent.on_response(result)
        return True

    def last(self) -> SentRequest:
        return self.requests[-1]

    async def wait_request(self, count: int = 1) -> SentRequest:
        """Wait until ``count`` requests have arrived; return the latest."""
        while len(self.requests) < count:
            if self._arrived is None:
                self._arrived = trio.Event()
            await self._arrived.wait()
        return self.requests[count - 1]

    def disconnect(self) -> None:
        """The client goes away: outstanding requests fail with ``PeerGone``."""
        self.gone = True
        for request_id in list(self.pending):
            sent = self.pending.pop(request_id)
            sent.on_response(PeerGone(self.peer_id))


# The in-memory client/server pair is a client of the library's; re-exported here for tests.
from erlmcp_py.client import (  # noqa: E402
    Handler as MemoryHandler,
    MemoryClient,
    open_memory_client,
)
