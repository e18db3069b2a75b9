"""MRTR continuations: imperative ``await ctx.elicit(...)`` on the stateless protocol (2026-07-28).

A *call* is a ``tools/call`` or a ``prompts/get``: whatever runs a function that may ask the
client (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``). This module knows only its method,
params and a ``run(peer)`` coroutine; "the tool" below is that function.

The life of such a call is in docs/architecture.md ("The 2026-07-28 (stateless, MRTR)
variant"): :meth:`ContinuationRegistry.start` runs the tool in its own task with an
:class:`MrtrPeer`, :meth:`MrtrPeer.send_request` records each ``elicitation/create`` instead of
writing it, and :meth:`ContinuationRegistry.resume` opens a retry's sealed state and feeds its
``inputResponses`` to the same suspended ``ctx.elicit``. docs/mrtr.md has the wire, the
refusals of a state, keys named by the tool, expiry, the registry's bounds and eviction, and
replay. This docstring keeps what a round does with notifications and when it ends.

Notifications (``notifications/progress``, ``notifications/message``) relate to a request: in
2026-07-28 they travel on the channel of the request they belong to (the POST's SSE stream on
Streamable HTTP, the connection on stdio) and nowhere else. Whoever calls :meth:`start` or
:meth:`resume` passes that request's *sink* (a :data:`NotificationSink`: an async callable
sending one notification related to it — the transport's business, not this module's), its
``_meta.progressToken`` and its ``io.modelcontextprotocol/logLevel``. For the length of the
*attach* — from the moment the request attaches until its answer is decided — :class:`MrtrPeer`
hands the tool's notifications (and the runtime's, for this call) to that sink:

* ``notifications/progress`` goes only with the attached request's token: when that request
  has none, or the notification names another token, it is dropped. A retry may bring its own
  token, the same one, or none. :attr:`MrtrPeer.progress_token` is the attached request's
  token, and between rounds the latest request's (what
  :attr:`~erlmcp_py.mcp.context.Context.progress_token` returns; ``Context.report_progress``
  keeps values increasing per token);
* ``notifications/message`` is sent only when the attached request named a log level and the
  message is at or above it (2026-07-28: no level, no log messages — filtered, not counted);
* the runtime's ``notifications/cancelled`` and ``notifications/elicitation/complete`` name
  server→client requests and elicitation ids this protocol does not have: never sent.

Everything else that cannot be sent is *dropped*: counted (``notifications_dropped``; what was
sent: ``notifications_sent``) and logged at debug, and the tool goes on as if it was sent. That
is every notification between rounds (nobody attached), on a request given no sink, after its
answer is decided, and one whose sink raised (client gone, params that do not encode).

Order: once a round's answer is decided (the tool finished, or asked and settled, or the hold
ran out) the sink is detached, then the sink calls already under way are awaited, and only then
is the answer built (from the state after that wait) and returned to the caller, which sends it.
So on the request's channel every notification precedes the response, and none follows it.

Yield detection: the tool's ``Context`` counts the questions it is asking
(:attr:`MrtrPeer.asking`: ``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``, ``ctx.request``,
from the call to its answer). A round never ends while a question being asked has no request
recorded yet (one on its way through the runtime, or answered at once from a replay and still
being decided): the attached request waits, without polling, until the last of them is
recorded, however long the runtime takes to send each, so questions a tool starts together
go out in one ``InputRequiredResult``. Then:

* when every outstanding request is a question still being asked and no question ended since
  the previous round was decided, the tool is parked on its recorded questions and nothing
  is left to react: the round ends at once;
* otherwise (a question ended, so the tool may still be reacting to its answer or its error —
  cancelling the other questions, asking another —, or a request was recorded by code that
  does not count its questions) the round ends once ``settle_checkpoints`` consecutive
  checkpoints of the attached request pass without a new request (at most ten times that
  many in all).

A question begun after the round ended is asked in the next round (correct, just one more
round trip).

Replay (docs/mrtr.md, "Replay: restarts and replicas"): a replayable state also carries the
call's *journal*, each response under its *question* (a digest of the request's method and
params, :func:`question_of`); :meth:`MrtrPeer.send_request` answers a request whose question
has a queued response at once, through its ``on_response``, and :meth:`MrtrPeer.count_question`
says which elicitations were charged already.

Past ``max_state_chars`` the state cannot be sealed: the call ends with ``state_too_large``.

Where it lives: the registry's calls (start, resume, replay, forward, answer) in
:mod:`~erlmcp_py.mcp._continuations`, on what it holds, its bounds and its timer in
:mod:`~erlmcp_py.mcp._held_calls`; one held call's record in :mod:`~erlmcp_py.mcp._call_record`;
the attached request and when its round ends in :mod:`~erlmcp_py.mcp._attached`; the sealed
state and the refusals of a retry in :mod:`~erlmcp_py.mcp._request_state`; the peer and the
requests a round asks in :mod:`~erlmcp_py.mcp._mrtr_peer`; the journal and
:func:`question_of` in :mod:`~erlmcp_py.mcp._replay`. This module is their public face.
"""

from erlmcp_py.mcp._attached import (
    Attached as Attached,
    Attachment as Attachment,
    Waiter as Waiter,
)
from erlmcp_py.mcp._call_record import Handoff as Handoff, RunCall as RunCall
from erlmcp_py.mcp._continuations import (
    ContinuationRegistry as ContinuationRegistry,
    open_continuations as open_continuations,
)
from erlmcp_py.mcp._held_calls import (
    DEFAULT_STATE_TTL_S as DEFAULT_STATE_TTL_S,
    MRTR_MODES as MRTR_MODES,
    PRINCIPAL_BUSY as PRINCIPAL_BUSY,
)
from erlmcp_py.mcp._mrtr_peer import (
    MrtrPeer as MrtrPeer,
    NotificationSink as NotificationSink,
    response_problem as response_problem,
)
from erlmcp_py.mcp._replay import question_of as question_of
from erlmcp_py.mcp._request_state import (
    ContinuationElsewhere as ContinuationElsewhere,
    RequestStateRefused as RequestStateRefused,
)

__all__ = [
    "Attached",
    "Attachment",
    "ContinuationElsewhere",
    "ContinuationRegistry",
    "DEFAULT_STATE_TTL_S",
    "Handoff",
    "MRTR_MODES",
    "MrtrPeer",
    "NotificationSink",
    "PRINCIPAL_BUSY",
    "RequestStateRefused",
    "RunCall",
    "Waiter",
    "open_continuations",
    "question_of",
    "response_problem",
]
