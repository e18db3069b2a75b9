"""The client side of a 2026-07-28 request: its per-request ``_meta``, and the input rounds.

Pure protocol logic: no transport, no trio. The caller injects how one request is sent and how
one input request is answered; :class:`~erlmcp_py.client.ClientSession` injects its own, so
every client of the library drives the rounds the same way.

Theory of operation
-------------------
In 2026-07-28 a server asks nothing of its own: a ``tools/call`` (or ``prompts/get``) whose
function needs the client answers an ``InputRequiredResult``
(``resultType: "input_required"``) with ``inputRequests`` (key → ``{method, params}``) and a
sealed ``requestState``. :func:`call_until_complete` answers each input request through the
injected ``answer`` and sends the request again with the same params plus the
``inputResponses`` and the exact ``requestState``, until the result is anything but
``input_required`` (see docs/mrtr.md):

* a request ``answer`` leaves unanswered (it returns ``None``) is left out of
  ``inputResponses``: the server asks it again;
* a state-only result (the server held the retry and has nothing to ask) is retried with its
  state alone; a result without a string state is retried without one;
* ``max_rounds`` bounds the rounds: a server that never completes ends the call with
  :class:`InputRoundsExhausted` instead of a loop without end.

A JSON-RPC error on any round is whatever ``send`` raises: it reaches the caller as it is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from erlmcp_py.mcp.meta import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION

__all__ = [
    "INPUT_REQUIRED",
    "AnswerInput",
    "InputRoundsExhausted",
    "SendRequest",
    "call_until_complete",
    "with_request_meta",
]

#: The ``resultType`` of an ``InputRequiredResult``.
INPUT_REQUIRED: Final = "input_required"

SendRequest = Callable[[dict[str, Any]], Awaitable[Mapping[str, Any]]]
"""Sends the request once with these params and returns its result (raises on an error)."""

AnswerInput = Callable[[str, str, Mapping[str, Any]], Awaitable[Mapping[str, Any] | None]]
"""Answers one input request ``(key, method, params)``: its result object, or ``None`` to
leave it unanswered (the server asks again)."""


class InputRoundsExhausted(RuntimeError):
    """The server still asked for input after ``max_rounds`` rounds.

    Attributes:
        rounds: How many times the request was sent.
    """

    def __init__(self, what: str, rounds: int) -> None:
        super().__init__(f"{what}: no complete result after {rounds} rounds")
        self.rounds = rounds


def with_request_meta(
    params: Mapping[str, Any] | None,
    *,
    protocol_version: str,
    capabilities: Mapping[str, Any],
    client_info: Mapping[str, Any],
) -> dict[str, Any]:
    """``params`` with the 2026-07-28 per-request ``_meta`` added: the protocol version, the
    client capabilities and the client info. Members already in ``params["_meta"]`` win.

    Args:
        params: The request's params (not changed).
        protocol_version: The version the request is written in.
        capabilities: What the client declares for this request.
        client_info: ``{"name", "version"}`` of the client.
    """
    out = dict(params or {})
    meta: dict[str, Any] = {
        PROTOCOL_VERSION: protocol_version,
        CLIENT_CAPABILITIES: capabilities,
        CLIENT_INFO: client_info,
    }
    meta.update(out.get("_meta") or {})
    out["_meta"] = meta
    return out


async def call_until_complete(
    send: SendRequest,
    answer: AnswerInput,
    params: Mapping[str, Any],
    *,
    max_rounds: int | None = None,
) -> dict[str, Any]:
    """Send a request and answer its input rounds until its result is complete.

    Args:
        send: Sends the request once (see :data:`SendRequest`); adds the ``_meta`` itself.
        answer: Answers one input request (see :data:`AnswerInput`).
        params: The request's own params (``name``, ``arguments``…), sent on every round.
        max_rounds: Most times the request is sent; ``None``: no bound.

    Returns:
        The first result that is not ``input_required``.

    Raises:
        InputRoundsExhausted: ``max_rounds`` rounds, each answered ``input_required``.
    """
    retry = dict(params)
    rounds = 0
    while max_rounds is None or rounds < max_rounds:
        result = dict(await send(retry))
        rounds += 1
        if result.get("resultType") != INPUT_REQUIRED:
            return result
        responses: dict[str, Any] = {}
        requests = result.get("inputRequests")
        if isinstance(requests, Mapping):
            for key, request in requests.items():
                if not isinstance(request, Mapping):
                    continue
                asked = request.get("params")
                given = await answer(
                    str(key),
                    str(request.get("method", "")),
                    asked if isinstance(asked, Mapping) else {},
                )
                if given is not None:
                    responses[str(key)] = dict(given)
        retry = dict(params)
        state = result.get("requestState")
        if isinstance(state, str):
            retry["requestState"] = state
        if responses:
            retry["inputResponses"] = responses
    name = params.get("name")
    raise InputRoundsExhausted(f"{name!r}" if name is not None else "the request", rounds)
