"""The client's 2026-07-28 input rounds and per-request ``_meta``, over a scripted server."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from erlmcp_py.client import (
    InputRoundsExhausted,
    call_until_complete,
    with_request_meta,
)
from erlmcp_py.mcp.meta import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION

ASK = {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?"}}
DONE = {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}


class Script:
    """Answers each round with the next scripted result; records each round's params."""

    def __init__(self, *results: Mapping[str, Any]) -> None:
        self.results = list(results)
        self.sent: list[dict[str, Any]] = []

    async def send(self, params: dict[str, Any]) -> Mapping[str, Any]:
        self.sent.append(dict(params))
        return self.results.pop(0)


async def yes(key: str, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"action": "accept", "content": {"key": key, "message": params.get("message")}}


def asking(state: Any, **requests: Any) -> dict[str, Any]:
    return {"resultType": "input_required", "inputRequests": requests, "requestState": state}


async def test_a_complete_result_is_returned_after_one_round() -> None:
    script = Script(DONE)
    assert await call_until_complete(script.send, yes, {"name": "t"}) == DONE
    assert script.sent == [{"name": "t"}]


async def test_each_input_request_is_answered_and_the_call_retried_with_its_exact_state() -> None:
    script = Script(asking("s1", e1=ASK, e2=ASK), asking("s2", e3=ASK), DONE)
    params = {"name": "t", "arguments": {"x": 1}}
    assert await call_until_complete(script.send, yes, params) == DONE
    first, second, third = script.sent
    assert first == params
    assert second == {
        **params,
        "requestState": "s1",
        "inputResponses": {
            "e1": {"action": "accept", "content": {"key": "e1", "message": "Sure?"}},
            "e2": {"action": "accept", "content": {"key": "e2", "message": "Sure?"}},
        },
    }
    assert third["requestState"] == "s2"
    assert list(third["inputResponses"]) == ["e3"]
    assert params == {"name": "t", "arguments": {"x": 1}}  # the caller's params stay as given


async def test_a_request_left_unanswered_is_left_out_for_the_server_to_ask_again() -> None:
    async def only_forms(key: str, method: str, params: Mapping[str, Any]) -> Any:
        return None if method == "sampling/createMessage" else await yes(key, method, params)

    sample = {"method": "sampling/createMessage", "params": {}}
    script = Script(asking("s1", s=sample), asking("s2", s=sample, e=ASK), DONE)
    await call_until_complete(script.send, only_forms, {"name": "t"})
    assert "inputResponses" not in script.sent[1]
    assert list(script.sent[2]["inputResponses"]) == ["e"]


async def test_a_state_only_result_is_retried_with_its_state_alone() -> None:
    script = Script({"resultType": "input_required", "requestState": "held"}, DONE)
    await call_until_complete(script.send, yes, {"name": "t"})
    assert script.sent[1] == {"name": "t", "requestState": "held"}


async def test_malformed_requests_and_a_state_that_is_no_string_are_not_sent_back() -> None:
    bad = {"resultType": "input_required", "inputRequests": {"x": "no object", "e": {}}}
    script = Script({**bad, "requestState": 7}, DONE)
    seen: list[tuple[str, str, Mapping[str, Any]]] = []

    async def record(key: str, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        seen.append((key, method, params))
        return {"action": "cancel"}

    await call_until_complete(script.send, record, {"name": "t"})
    assert seen == [("e", "", {})]
    assert script.sent[1] == {"name": "t", "inputResponses": {"e": {"action": "cancel"}}}


async def test_a_server_that_never_completes_ends_after_max_rounds() -> None:
    script = Script(*(asking(f"s{i}", e=ASK) for i in range(5)))
    with pytest.raises(InputRoundsExhausted) as exhausted:
        await call_until_complete(script.send, yes, {"name": "pester"}, max_rounds=3)
    assert exhausted.value.rounds == 3
    assert str(exhausted.value) == "'pester': no complete result after 3 rounds"
    assert isinstance(exhausted.value, RuntimeError)
    assert len(script.sent) == 3


async def test_without_max_rounds_the_rounds_go_on_until_the_result_is_complete() -> None:
    script = Script(*(asking(f"s{i}", e=ASK) for i in range(40)), DONE)
    assert await call_until_complete(script.send, yes, {"name": "t"}) == DONE
    assert len(script.sent) == 41


async def test_an_error_on_a_round_reaches_the_caller_as_it_is() -> None:
    class Refused(Exception):
        pass

    rounds = 0

    async def send(params: dict[str, Any]) -> Mapping[str, Any]:
        nonlocal rounds
        rounds += 1
        if rounds == 2:
            raise Refused("-32602: Invalid requestState")
        return asking("s1", e=ASK)

    with pytest.raises(Refused):
        await call_until_complete(send, yes, {"name": "t"}, max_rounds=5)
    assert rounds == 2


def test_request_meta_names_version_capabilities_and_client_and_given_members_win() -> None:
    params = {"name": "t", "_meta": {"progressToken": 1, CLIENT_INFO: {"name": "mine"}}}
    out = with_request_meta(
        params,
        protocol_version="2026-07-28",
        capabilities={"elicitation": {"form": {}}},
        client_info={"name": "c", "version": "1"},
    )
    assert out == {
        "name": "t",
        "_meta": {
            PROTOCOL_VERSION: "2026-07-28",
            CLIENT_CAPABILITIES: {"elicitation": {"form": {}}},
            CLIENT_INFO: {"name": "mine"},
            "progressToken": 1,
        },
    }
    assert params["_meta"] == {"progressToken": 1, CLIENT_INFO: {"name": "mine"}}
    assert (
        with_request_meta(None, protocol_version="v", capabilities={}, client_info={})["_meta"][
            PROTOCOL_VERSION
        ]
        == "v"
    )
