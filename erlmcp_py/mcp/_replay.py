"""Replay: the journal a replayable ``requestState`` carries, and what a request is
recognized by when its call runs again (docs/mrtr.md, "Replay: restarts and replicas").

A call's *journal* is every answer its tool received, in order, each under its *question*
(:func:`question_of`). A state sealed in a replaying mode (``mrtr`` not ``"suspend"``)
carries it beside the requests the round asked and the elicitations already charged
(:func:`journal_fields`); a retry that reaches a process not holding the call reads them back
(:func:`replay_plan`) and runs the tool again, each request answered from the journal while
it has an answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from erlmcp_py.core.schema import schema_digest
from erlmcp_py.core.state_token import request_digest
from erlmcp_py.mcp.versions import ClientCapabilities

__all__ = ["ReplayCall", "journal_fields", "question_of", "replay_plan"]


def question_of(method: str, params: Mapping[str, Any]) -> str:
    """What a replay recognizes a request by: a digest of its method and params (for an
    elicitation: its message, mode and schema, the schema by its own canonical digest, which
    a schema the runtime built carries already). A tool run again asks the same questions, in
    whatever order its tasks get to them; a question whose text changed is asked anew."""
    schema = params.get("requestedSchema")
    if isinstance(schema, Mapping):
        params = {**params, "requestedSchema": schema_digest(schema)}
    return request_digest(method, params)[:24]


@dataclass(frozen=True, slots=True)
class ReplayCall:
    """Who a replayed call is for: what :meth:`ContinuationRegistry.start` takes."""

    principal: str
    digest: str
    capabilities: ClientCapabilities
    protocol_version: str
    client_id: str


def journal_fields(
    journal: Iterable[tuple[str, Mapping[str, Any]]],
    asked: Iterable[tuple[str, str, str]],
    charged: int,
) -> dict[str, Any]:
    """What a replayable state's payload carries besides the call and its round: the answers
    so far, ``(question, response)`` in order (``a``); the requests this round asks,
    ``(key, method, question)`` (``q``); how many elicitations the client was charged for
    (``n``). :func:`replay_plan` reads them back."""
    return {
        "a": [[question, dict(response)] for question, response in journal],
        "q": [[key, method, question] for key, method, question in asked],
        "n": charged,
    }


def replay_plan(
    payload: Mapping[str, Any],
) -> tuple[list[tuple[str, Mapping[str, Any]]], dict[str, tuple[str, str]], int, int]:
    """A replayable state's payload: the answers so far, ``(question, response)`` in order;
    the requests it asked, ``{key: (method, question)}``; how many elicitations the client
    was charged for; the round.

    Raises:
        TypeError: not a replayable payload.
    """
    answers, asked, charged, round_ = (payload.get(k) for k in ("a", "q", "n", "r"))
    if not (isinstance(answers, list) and isinstance(asked, list)):
        raise TypeError("a and q must be lists")
    if type(charged) is not int or type(round_) is not int:
        raise TypeError("n and r must be integers")
    earlier: list[tuple[str, Mapping[str, Any]]] = []
    for item in answers:
        if not (isinstance(item, list) and len(item) == 2 and type(item[0]) is str):
            raise TypeError("an answer must be [question, response]")
        if not isinstance(item[1], Mapping):
            raise TypeError("a response must be an object")
        earlier.append((item[0], item[1]))
    requests: dict[str, tuple[str, str]] = {}
    for item in asked:
        if not (isinstance(item, list) and len(item) == 3 and all(type(x) is str for x in item)):
            raise TypeError("a request must be [key, method, question]")
        requests[item[0]] = (item[1], item[2])
    return earlier, requests, charged, round_
