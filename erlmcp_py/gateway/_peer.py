"""The downstream client as one upstream question sees it.

A local tool asks through its call's :class:`~erlmcp_py.mcp.session.RequestPeer`, and so does
a question the upstream asks: the peer of the client request it relates to (the ``tools/call``
or ``prompts/get`` the upstream was answering when it asked, when the gateway can tell; else
none, and on Streamable HTTP the question travels on the session's GET stream).

:class:`WatchedPeer` is any call peer whose client answers are seen as they arrive: a URL-mode
question is answered to the upstream as soon as the user consents, while the runtime goes on
waiting for the completion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from erlmcp_py.actors.peer import PeerResponse
from erlmcp_py.mcp.call_peer import CallPeer
from erlmcp_py.mcp.versions import ClientCapabilities

__all__ = ["WatchedPeer"]


class WatchedPeer:
    """``peer``, with ``on_answer`` seeing each client answer to a request sent through it
    before the runtime does.

    Args:
        peer: The call's peer.
        on_answer: Called with each answer (synchronously, from the task that delivers it).
    """

    __slots__ = ("_on_answer", "_peer")

    def __init__(self, peer: CallPeer, on_answer: Callable[[PeerResponse], None]) -> None:
        self._peer = peer
        self._on_answer = on_answer

    @property
    def peer_id(self) -> str:
        """The peer's id."""
        return self._peer.peer_id

    @property
    def protocol_version(self) -> str:
        """The peer's version."""
        return self._peer.protocol_version

    @property
    def capabilities(self) -> ClientCapabilities:
        """The peer's capabilities."""
        return self._peer.capabilities

    @property
    def progress_token(self) -> str | int | None:
        """The peer's progress token."""
        return self._peer.progress_token

    @property
    def task_id(self) -> str | None:
        """The watched peer's task, if its call runs as one."""
        return self._peer.task_id

    @property
    def keeps_call(self) -> bool:
        """Whether the peer's call stays in this process."""
        return self._peer.keeps_call

    @property
    def asking(self) -> AbstractContextManager[None]:
        """The peer's bookkeeping of a question."""
        return self._peer.asking

    def supports(self, mode: str) -> bool:
        """Whether the client declared elicitation in ``mode``."""
        return self._peer.supports(mode)

    def count_question(self) -> bool:
        """As the peer counts."""
        return self._peer.count_question()

    def with_key(self, key: str) -> WatchedPeer:
        """The peer with ``key``, still watched."""
        return WatchedPeer(self._peer.with_key(key), self._on_answer)

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        request_id: str,
        on_response: Callable[[PeerResponse], None],
    ) -> None:
        """Send through the peer; its answer is seen first."""
        observe = self._on_answer

        def seen(response: PeerResponse) -> None:
            observe(response)
            on_response(response)

        await self._peer.send_request(method, params, request_id=request_id, on_response=seen)

    def forget_request(self, request_id: str) -> None:
        """As the peer forgets."""
        self._peer.forget_request(request_id)

    async def send_notification(self, method: str, params: Mapping[str, Any]) -> None:
        """As the peer sends."""
        await self._peer.send_notification(method, params)

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """As the peer notifies."""
        await self._peer.notify(method, params)
