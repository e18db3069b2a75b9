"""One held call (a :class:`Continuation`): the record the registry keeps of a 2026-07-28 call
between its rounds — its tool's task, the round it is in, the requests the round asks, the
answers the tool received and those a replay will give it, and the channel of the request
attached to it — and what its function ends with (:data:`RunCall`, :class:`Handoff`).

The registry (:mod:`~erlmcp_py.mcp._continuations`) decides what becomes of the call; its
:class:`~erlmcp_py.mcp._mrtr_peer.MrtrPeer` records into it what the tool asks.
"""

from __future__ import annotations

import itertools
import math
import secrets
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from erlmcp_py.mcp._mrtr_peer import Asking, InputRequest, MrtrPeer, NotificationSink
from erlmcp_py.mcp.jsonrpc import JsonRpcError
from erlmcp_py.mcp.versions import ClientCapabilities

if TYPE_CHECKING:
    from erlmcp_py.mcp._attached import Waiter

__all__ = ["Continuation", "Handoff", "RunCall"]


@dataclass(frozen=True, slots=True)
class Handoff:
    """What a call answers when it became something else than a call: a task (the
    ``io.modelcontextprotocol/tasks`` extension), whose ``CreateTaskResult`` is answered as it
    is, ``resultType: "task"`` included. The call ends there; its function goes on elsewhere.

    Attributes:
        result: The answer, with its own ``resultType``.
    """

    result: Mapping[str, Any]


RunCall = Callable[["MrtrPeer"], Awaitable["Mapping[str, Any] | Handoff"]]
"""Runs the call's function (a tool, a prompt) with the given peer; returns its complete result
(a ``CallToolResult``, a ``GetPromptResult``), or a :class:`Handoff` when the call became a
task, or raises :class:`JsonRpcError` (the answer to the call)."""


class Continuation:
    """One tool call that may suspend; owned by the registry."""

    __slots__ = (
        "asked",
        "asking",
        "asking_scope",
        "attached",
        "capabilities",
        "digest",
        "discarded",
        "done",
        "drained",
        "ended",
        "ended_seen",
        "expires_at",
        "final",
        "held",
        "id",
        "journal",
        "keys",
        "life",
        "log_level",
        "offered",
        "outstanding",
        "peer",
        "principal",
        "progress_token",
        "questions",
        "replay",
        "round",
        "sending",
        "sink",
        "url_asked",
        "version",
        "waiter",
    )

    def __init__(self, principal: str, digest: str, capabilities: ClientCapabilities) -> None:
        self.id = secrets.token_urlsafe(16)
        self.principal = principal
        self.digest = digest
        self.capabilities = capabilities  # as declared on the latest request
        self.outstanding: dict[str, InputRequest] = {}
        self.final: Mapping[str, Any] | Handoff | JsonRpcError | None = None
        self.done = False
        self.attached = False
        self.held = False  # the attached retry waited ``hold_s``: it answers with the state
        self.round = 0
        self.version = 0
        self.expires_at = math.inf
        self.life = trio.CancelScope()
        self.waiter: Waiter | None = None  # the attached request's, woken by ``touch``
        self.keys = itertools.count(1)
        self.peer: MrtrPeer
        # The attached request's channel: its sink (None when nobody is attached, or its answer
        # is decided), its log level, and its progress token (kept between rounds).
        self.sink: NotificationSink | None = None
        self.log_level: str | None = None
        self.progress_token: str | int | None = None
        self.sending = 0  # sink calls under way
        self.drained: trio.Event | None = None  # set when ``sending`` drops to 0
        # Replay: the answers a retry's state brought, per question (see question_of),
        # delivered in order as the tool asks again; every answer the tool received, in order
        # (the next state carries it); how many elicitations the client was charged for
        # already, and how many the tool made so far.
        self.replay: defaultdict[str, deque[Mapping[str, Any]]] = defaultdict(deque)
        self.journal: list[tuple[str, Mapping[str, Any]]] = []
        self.asked = 0
        self.questions = 0
        self.url_asked = False  # a question went out in URL mode: no replay can answer it
        self.asking = 0  # questions of the tool between their start and their answer
        self.asking_scope = Asking(self)  # what counts them (MrtrPeer.asking)
        self.ended = 0  # questions of the tool that ended, in all
        self.ended_seen = 0  # ``ended`` when the latest round was decided
        self.discarded = False
        # A first call's own inputResponses, by key: offered to the requests the tool names
        # with that key (``key=``) until its first answer is decided (see ``start``).
        self.offered: dict[str, Mapping[str, Any]] = {}

    def touch(self) -> None:
        self.version += 1
        if self.waiter is not None:
            self.waiter.wake()

    def unsent(self) -> bool:
        """Whether a question of the tool has no request recorded yet (it is on its way
        through the runtime, or being answered from a replay)."""
        return self.asking > len(self.outstanding)

    def parked(self) -> bool:
        """Whether the tool waits on its recorded questions and nothing else: every
        outstanding request is a question being asked, and none ended since the latest round
        was decided (the tool is not reacting to an answer or an error)."""
        return self.asking == len(self.outstanding) and self.ended == self.ended_seen
