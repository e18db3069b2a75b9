"""MrtrPeer, the :class:`~erlmcp_py.mcp.call_peer.CallPeer` a 2026-07-28 call's tool asks
through, and what a round asks.

The peer writes nothing to a wire: :meth:`MrtrPeer.send_request` records each request as an
:class:`InputRequest` of the call's next ``InputRequiredResult`` (or answers it at once from
the call's replay or a first call's own ``inputResponses``), and
:meth:`MrtrPeer.send_notification` hands a notification to the sink of the request attached
to the call, or drops it (:mod:`~erlmcp_py.mcp.mrtr` says which goes where). What it records
lives in the call's :class:`~erlmcp_py.mcp._call_record.Continuation`, which the registry
reads to decide a round.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import structlog
import trio

from erlmcp_py.actors.peer import PeerResponse, Recorded
from erlmcp_py.mcp._replay import question_of
from erlmcp_py.mcp.params import LOG_LEVELS
from erlmcp_py.mcp.versions import ClientCapabilities

if TYPE_CHECKING:
    from erlmcp_py.mcp._call_record import Continuation

__all__ = ["Asking", "InputRequest", "MrtrPeer", "NotificationSink", "response_problem"]

log = structlog.get_logger("erlmcp.mrtr")

NotificationSink = Callable[[str, Mapping[str, Any]], Awaitable[None]]
"""``await sink(method, params)`` sends one notification related to one request, on that
request's own channel (e.g. its POST's SSE stream), before its response. It may raise when
the channel is gone; the notification is then dropped."""

#: Runtime notifications about server→client requests and elicitation ids, which 2026-07-28
#: does not have (its input requests are answered by the retry): never sent.
_NOT_IN_MRTR: Final = frozenset({"notifications/cancelled", "notifications/elicitation/complete"})

_ACTIONS: Final = frozenset({"accept", "decline", "cancel"})


@dataclass(slots=True)
class InputRequest:
    """One request the call's next ``InputRequiredResult`` asks, under its key."""

    key: str
    rid: str
    method: str
    params: dict[str, Any]
    on_response: Callable[[PeerResponse], None]
    question: str  # what a replay recognizes it by: see question_of


class Asking:
    """``with peer.asking:`` around one question of the tool (see :attr:`MrtrPeer.asking`)."""

    __slots__ = ("_cont",)

    def __init__(self, cont: Continuation) -> None:
        self._cont = cont

    def __enter__(self) -> None:
        self._cont.asking += 1

    def __exit__(self, *exc: object) -> None:
        cont = self._cont
        cont.asking -= 1
        cont.ended += 1
        if cont.outstanding:  # a round may be waiting for this question
            cont.touch()


class MrtrPeer:
    """The :class:`~erlmcp_py.mcp.call_peer.CallPeer` of one stateless call.

    ``send_request`` records the request as an input request of the pending
    ``InputRequiredResult`` (under this peer's key, when it has one: :meth:`with_key`); the
    retry's ``inputResponses`` answer it. Notifications go to the sink of the request attached
    right now, and are dropped (and counted) between rounds (see :mod:`~erlmcp_py.mcp.mrtr`).

    Attributes:
        protocol_version: The request's protocol version.
        keeps_call: Whether the call stays in this process between rounds (``False`` when
            the registry runs ``mrtr="replay"``): what the server's hosted page needs, whose
            answer reaches only the suspended call that asked.
        asking: ``with peer.asking:`` around each question the tool asks, from its start to
            its answer: a round does not end while a question is on its way to being recorded.
    """

    __slots__ = (
        "_cont",
        "_counters",
        "_key",
        "_peer_id",
        "asking",
        "keeps_call",
        "protocol_version",
    )

    def __init__(
        self,
        cont: Continuation,
        peer_id: str,
        protocol_version: str,
        counters: Counter[str] | None = None,
        *,
        keeps_call: bool = True,
        key: str | None = None,
    ) -> None:
        self._cont = cont
        self._peer_id = peer_id
        self._counters: Counter[str] = Counter() if counters is None else counters
        self._key = key
        self.protocol_version = protocol_version
        self.keeps_call = keeps_call
        self.asking = cont.asking_scope

    @property
    def peer_id(self) -> str:
        """The rate-limit key of this client."""
        return self._peer_id

    @property
    def capabilities(self) -> ClientCapabilities:
        """The client's capabilities, as declared on the latest request of the call."""
        return self._cont.capabilities

    #: A call answered by rounds is no task (one may take it over: ``ctx.start_task()``).
    task_id: Final = None

    @property
    def questions_in_flight(self) -> int:
        """Questions of the tool between their start and their answer, now."""
        return self._cont.asking

    @property
    def progress_token(self) -> str | int | None:
        """The ``_meta.progressToken`` of the request attached now; between rounds, of the
        latest request (progress reported then is dropped); ``None`` if it carried none."""
        return self._cont.progress_token

    def supports(self, mode: str) -> bool:
        """Whether the latest request declared elicitation in ``mode``."""
        return self._cont.capabilities.supports(mode)

    def count_question(self) -> bool:
        """Count one new elicitation of the tool; whether the client is charged a rate token
        for it. A replayed call asks its earlier questions again: those were charged when
        first asked, so only the questions past the state's count are charged."""
        cont = self._cont
        cont.questions += 1
        return cont.questions > cont.asked

    def with_key(self, key: str) -> MrtrPeer:
        """This peer, recording its requests under ``key`` in ``inputRequests``.

        A tool names its input requests this way (``ctx.elicit(..., key="user_name")``); a
        re-prompt of the same elicitation keeps the key. While a request under ``key`` is
        outstanding, another one gets ``<key>-<n>``.
        """
        return MrtrPeer(
            self._cont,
            self._peer_id,
            self.protocol_version,
            self._counters,
            keeps_call=self.keeps_call,
            key=key,
        )

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        request_id: str,
        on_response: Callable[[PeerResponse], None],
    ) -> None:
        """Record the request for the next ``InputRequiredResult``, under this peer's key if
        it has one (default: ``<method prefix>-<n>``, e.g. ``elicitation-1``). In a replay, a
        request the retry's state has an answer for (the same method and params) is answered
        with it at once; so is a request under a key the first call's ``inputResponses``
        answer."""
        # A yield, not only a cancellation point: a question recorded here with nothing else
        # counted can make the call look parked (its round then ends at once), so tasks the
        # tool started just before this one get to begin their own questions first.
        await trio.lowlevel.checkpoint()
        cont = self._cont
        key = self._key
        body = dict(params)
        if method == "elicitation/create" and "requestedSchema" in body:
            body.setdefault("mode", "form")
        question = question_of(method, body)
        replayed = cont.replay.get(question)
        response = replayed.popleft() if replayed else None
        if response is None and key is not None and key in cont.offered:
            offered = cont.offered.pop(key)
            response = offered if response_problem(method, offered) is None else None
        if response is not None:  # answered at once: a replay, or the first call's answer
            cont.journal.append((question, response))
            on_response(Recorded(response))
            return
        key = _free_key(cont, key, method)
        cont.outstanding[key] = InputRequest(key, request_id, method, body, on_response, question)
        cont.url_asked = cont.url_asked or body.get("mode") == "url"
        cont.touch()

    def handover(self) -> tuple[list[tuple[str, Mapping[str, Any]]], int, bool]:
        """What a task this call becomes (``ctx.start_task()``) needs to be replayed later:
        every answer the call received so far, ``(question, response)`` in order, as its
        state carries them; how many of its elicitations the client was charged for; and
        whether it asked a question in URL mode (which no replay can answer)."""
        cont = self._cont
        return list(cont.journal), max(cont.questions, cont.asked), cont.url_asked

    def forget_request(self, request_id: str) -> None:
        """Drop an input request the runtime no longer waits for (deadline, re-prompt)."""
        cont = self._cont
        for key, request in list(cont.outstanding.items()):
            if request.rid == request_id:
                del cont.outstanding[key]
                cont.touch()

    async def send_notification(self, method: str, params: Mapping[str, Any]) -> None:
        """Send a notification on the attached request's channel, or drop it. Never raises
        for a lost notification (see :mod:`~erlmcp_py.mcp.mrtr` for what is sent when)."""
        cont = self._cont
        sink = cont.sink
        if method in _NOT_IN_MRTR:
            log.debug("notification_not_sent", method=method, why="not in 2026-07-28")
        elif sink is None:
            why = "between rounds" if not cont.attached else "no channel (none, or answered)"
            self._dropped(method, why)
        elif method == "notifications/progress" and (
            cont.progress_token is None or params.get("progressToken") != cont.progress_token
        ):
            self._dropped(method, "not the attached request's progressToken")
        elif method == "notifications/message" and not _log_wanted(
            cont.log_level, params.get("level")
        ):
            log.debug("notification_not_sent", method=method, why="below the request's logLevel")
        else:
            cont.sending += 1
            try:
                await sink(method, params)
            except Exception as exc:
                self._dropped(method, "sink failed", error=type(exc).__name__)
            else:
                self._counters["notifications_sent"] += 1
            finally:
                cont.sending -= 1
                if not cont.sending and cont.drained is not None:
                    cont.drained.set()
            return
        await trio.lowlevel.checkpoint()

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """Like :meth:`send_notification` (``Context`` progress and log messages)."""
        await self.send_notification(method, params)

    def _dropped(self, method: str, why: str, **extra: Any) -> None:
        self._counters["notifications_dropped"] += 1
        log.debug(
            "notification_dropped", method=method, why=why, continuation=self._cont.id[:8], **extra
        )


def _free_key(cont: Continuation, key: str | None, method: str) -> str:
    """``key`` when no outstanding request has it, else a fresh ``<prefix>-<n>``."""
    if key is not None and key not in cont.outstanding:
        return key
    prefix = key if key is not None else (method.rpartition("/")[0] or "input")
    while True:
        candidate = f"{prefix}-{next(cont.keys)}"
        if candidate not in cont.outstanding:
            return candidate


def _log_wanted(requested: str | None, level: object) -> bool:
    """Whether a ``notifications/message`` at ``level`` goes to a request that asked for
    ``requested`` (2026-07-28: a request without a log level gets no log messages)."""
    if requested not in LOG_LEVELS:
        return False
    if level not in LOG_LEVELS:
        return True  # as the session era: an unknown level is not filtered
    return LOG_LEVELS.index(str(level)) >= LOG_LEVELS.index(str(requested))


def response_problem(method: str, value: object) -> str | None:
    """What makes ``value`` no answer to a ``method`` request (``None``: it is one): the shape
    an ``inputResponses`` entry must have, here and in a task's ``tasks/update``."""
    if not isinstance(value, Mapping):
        return " must be an object"
    if method == "elicitation/create":
        if value.get("action") not in _ACTIONS:
            return ".action must be accept, decline or cancel"
        content = value.get("content")
        if content is not None and not isinstance(content, Mapping):
            return ".content must be an object"
    return None
