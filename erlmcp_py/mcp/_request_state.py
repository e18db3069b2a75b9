"""A call's ``requestState`` and a retry's ``inputResponses``: what a state seals (the call, its
round, its holder, and in a replaying mode the journal), what opening one checks and gives
back, the checks of the answers a retry brings, and the refusals of a retry
(:class:`RequestStateRefused`, :class:`ContinuationElsewhere`; docs/mrtr.md lists them).

The token itself (its signature, expiry, principal and request binding) is
:mod:`erlmcp_py.core.state_token`; this module says what a 2026-07-28 call puts in one, and on
which clock.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import trio

from erlmcp_py.core.errors import StateTokenError
from erlmcp_py.core.state_token import KeyRing, open_token, seal
from erlmcp_py.mcp._mrtr_peer import response_problem
from erlmcp_py.mcp._replay import journal_fields
from erlmcp_py.mcp.jsonrpc import INVALID_PARAMS, JsonRpcError

if TYPE_CHECKING:
    from erlmcp_py.mcp._call_record import Continuation

__all__ = [
    "ContinuationElsewhere",
    "RequestStateRefused",
    "check_responses",
    "open_state",
    "refusal_reason",
    "seal_state",
]


_MESSAGES: Final[dict[str, str]] = {
    "invalid": "Invalid requestState: it must be the requestState of the latest "
    "InputRequiredResult, echoed unchanged",
    "expired": "requestState has expired: call the tool again without requestState",
    "wrong_principal": "requestState was issued to another principal",
    "request_mismatch": "requestState belongs to a different request (method, tool or "
    "arguments differ from the call that returned it)",
    "unknown_continuation": "requestState refers to no suspended call on this server (it "
    "ended, was cancelled, or the server restarted): call the tool again",
    "superseded": "requestState was already used: a later InputRequiredResult replaced it",
    "in_use": "requestState is being used by another request right now",
    "bad_input_responses": "Invalid inputResponses",
}


class RequestStateRefused(JsonRpcError):
    """A retry was refused (``-32602``); ``reason`` is a stable code, also in ``data.reason``.

    Reasons: ``invalid`` (malformed, unknown key, bad signature, too large — the log has the
    precise one), ``expired``, ``wrong_principal``, ``request_mismatch``,
    ``unknown_continuation``, ``superseded``, ``in_use``, ``bad_input_responses``.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        message = _MESSAGES[reason] + (f": {detail}" if detail else "")
        super().__init__(INVALID_PARAMS, message, {"reason": reason})
        self.reason = reason


class ContinuationElsewhere(RequestStateRefused):
    """A retry whose valid state names another holder (:attr:`ContinuationRegistry.holder`):
    the call is held there, and this registry neither holds nor replays it. Answered as it is,
    it is ``unknown_continuation``; an endpoint that can reach the holder forwards the retry.

    Attributes:
        holder: The holder the state names.
    """

    def __init__(self, holder: str) -> None:
        super().__init__("unknown_continuation", "held by another process")
        self.holder = holder


def seal_state(
    cont: Continuation,
    *,
    holder: str | None,
    replayable: bool,
    now: float,
    ttl: float,
    keyring: KeyRing,
    max_chars: int,
) -> str:
    """The ``requestState`` of the round ``cont`` is in, sealed at ``now`` (the trio clock) for
    ``ttl`` seconds: the call (``c``) and its round (``r``), the holder (``h``) when one is
    named, and when ``replayable`` what a replay needs (see
    :func:`~erlmcp_py.mcp._replay.replay_plan`).

    Raises:
        StateTokenTooLarge: the state is longer than ``max_chars``.
    """
    payload: dict[str, Any] = {"c": cont.id, "r": cont.round}
    if holder is not None:
        payload["h"] = holder
    if replayable:  # what a replay needs (see replay_plan)
        asked = [(key, r.method, r.question) for key, r in cont.outstanding.items()]
        charged = max(cont.questions, cont.asked)
        payload.update(journal_fields(cont.journal, asked, charged))
    return seal(
        payload,
        principal=cont.principal,
        request_digest=cont.digest,
        now=now + _wall_offset(),
        ttl=ttl,
        keyring=keyring,
        max_chars=max_chars,
    )


def open_state(
    state: str, *, principal: str, digest: str, now: float, keyring: KeyRing, max_chars: int
) -> dict[str, Any]:
    """The payload :func:`seal_state` sealed in ``state``, once checked: sealed by a key of
    ``keyring``, issued to ``principal`` for the request of ``digest``, not expired at ``now``
    (the trio clock), at most ``max_chars`` long.

    Raises:
        StateTokenError: the state is refused (:func:`refusal_reason` names the refusal).
    """
    return open_token(
        state,
        principal=principal,
        request_digest=digest,
        now=now + _wall_offset(),
        keyring=keyring,
        max_chars=max_chars,
    )


def refusal_reason(exc: StateTokenError) -> str:
    """The :class:`RequestStateRefused` reason of a state :func:`open_state` refused: its own,
    or ``invalid`` (the log has the precise one)."""
    return exc.reason if exc.reason in _MESSAGES else "invalid"


def check_responses(raw: object, methods: Mapping[str, str]) -> dict[str, Mapping[str, Any]]:
    """The answers to the outstanding requests (their methods by key), checked (nothing is
    delivered on error)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise RequestStateRefused("bad_input_responses", "inputResponses must be an object")
    answers: dict[str, Mapping[str, Any]] = {}
    for key, value in raw.items():
        method = methods.get(key)
        if method is None:
            continue  # unknown, or answered already: ignored (spec)
        problem = response_problem(method, value)
        if problem is not None:
            where = f"inputResponses.{str(key)[:64]}"
            raise RequestStateRefused("bad_input_responses", f"{where}{problem}")
        answers[key] = value
    return answers


_WALL_OFFSET: Final = trio.lowlevel.RunVar[float]("erlmcp_mrtr_wall_offset")


def _wall_offset() -> float:
    """What turns this run's trio clock into the time states are sealed and opened on.

    A state's issue and expiry times are read by other processes (replicas, the next process
    after a restart), and trio's clock is this process's own: states use the trio clock
    shifted, once per run, to the wall clock that every process shares.
    """
    try:
        return _WALL_OFFSET.get()
    except LookupError:
        offset = time.time() - trio.current_time()
        _WALL_OFFSET.set(offset)
        return offset
