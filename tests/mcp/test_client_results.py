"""The typed answers of ``sampling/createMessage`` and ``roots/list``, checked at the boundary."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, strategies as st

from erlmcp_py.mcp.client_results import (
    InvalidClientResult,
    Root,
    SampledMessage,
    parse_create_message_result,
    parse_list_roots_result,
)

TEXT = {"type": "text", "text": "Paris"}


def test_a_create_message_result_becomes_a_sampled_message() -> None:
    raw = {"role": "assistant", "content": TEXT, "model": "m1", "stopReason": "endTurn"}
    sampled = parse_create_message_result(raw)
    assert sampled == SampledMessage(
        role="assistant", content=TEXT, model="m1", stop_reason="endTurn"
    )
    assert sampled.text == "Paris"


def test_several_content_blocks_are_a_tuple_and_text_is_the_first_text_block() -> None:
    image = {"type": "image", "data": "AA==", "mimeType": "image/png"}
    raw = {"role": "assistant", "content": [image, TEXT], "model": "m", "_meta": {"k": 1}}
    sampled = parse_create_message_result(raw)
    assert sampled.content == (image, TEXT)
    assert sampled.text == "Paris"
    assert sampled.stop_reason is None
    assert sampled.meta == {"k": 1}
    assert parse_create_message_result({**raw, "content": image}).text is None


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"content": TEXT, "model": "m"}, "role: Field required"),
        ({"role": "system", "content": TEXT, "model": "m"}, "role:"),
        ({"role": "assistant", "content": "Paris", "model": "m"}, "content:"),
        ({"role": "assistant", "content": {"text": "x"}, "model": "m"}, "content.type"),
        ({"role": "assistant", "content": TEXT}, "model: Field required"),
        ({"role": "assistant", "content": TEXT, "model": 3}, "model:"),
        ({"role": "assistant", "content": TEXT, "model": "m", "stopReason": 1}, "stopReason"),
    ],
)
def test_a_malformed_create_message_result_names_the_member(raw: Any, named: str) -> None:
    with pytest.raises(InvalidClientResult) as caught:
        parse_create_message_result(raw)
    assert caught.value.method == "sampling/createMessage"
    assert named in caught.value.detail
    assert "_Block" not in caught.value.detail  # pydantic's union tags are not shown
    assert str(caught.value).startswith("the client's answer to sampling/createMessage")


def test_roots_keep_their_order_and_optional_names() -> None:
    raw = {"roots": [{"uri": "file:///a", "name": "A"}, {"uri": "file:///b", "extra": 1}]}
    assert parse_list_roots_result(raw) == (Root("file:///a", "A"), Root("file:///b"))
    assert parse_list_roots_result({"roots": []}) == ()


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({}, "roots: Field required"),
        ({"roots": {"uri": "file:///a"}}, "roots:"),
        ({"roots": [{"name": "A"}]}, "roots.0.uri"),
        ({"roots": [{"uri": ""}]}, "roots.0.uri"),
        ({"roots": [{"uri": "file:///a", "name": 7}]}, "roots.0.name"),
    ],
)
def test_a_malformed_roots_result_names_the_member(raw: Any, named: str) -> None:
    with pytest.raises(InvalidClientResult) as caught:
        parse_list_roots_result(raw)
    assert caught.value.method == "roots/list"
    assert named in caught.value.detail


@given(st.dictionaries(st.text(max_size=5), st.recursive(st.none() | st.text(), st.lists)))
def test_any_object_is_either_a_result_or_an_invalid_client_result(raw: dict[str, Any]) -> None:
    for parse in (parse_create_message_result, parse_list_roots_result):
        with contextlib.suppress(InvalidClientResult):
            parse(raw)


def test_the_error_never_repeats_a_submitted_value() -> None:
    secret = "hunter2-secret"
    with pytest.raises(InvalidClientResult) as caught:
        parse_create_message_result({"role": secret, "content": secret, "model": [secret]})
    assert secret not in str(caught.value)
