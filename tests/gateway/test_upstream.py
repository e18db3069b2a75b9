"""Where the upstream is and how it is run: checked where they are made, each bad value named."""

from __future__ import annotations

from typing import Any

import pytest

from erlmcp_py.gateway import Upstream, UpstreamPolicy, parse_header, upstream_capabilities
from erlmcp_py.mcp.versions import ClientCapabilities


def test_an_upstream_is_a_command_or_a_url() -> None:
    assert Upstream(command=["python", "s.py"]).command == ("python", "s.py")
    url = Upstream(url="https://mcp.example.com/mcp", headers=[("Authorization", "Bearer t")])
    assert url.headers == (("Authorization", "Bearer t"),)
    assert url.describe() == "https://mcp.example.com/mcp"  # never its headers
    for bad in (
        {},
        {"command": ("a",), "url": "https://x.example/mcp"},
        {"url": "ftp://x.example/mcp"},
        {"url": "https:///mcp"},
        {"command": ("a",), "headers": (("A", "b"),)},
        {"url": "https://x.example/mcp", "headers": (("Bad Name", "b"),)},
    ):
        with pytest.raises(ValueError):
            Upstream(**bad)


@pytest.mark.parametrize(
    ("text", "pair"),
    [
        ("Authorization: Bearer abc", ("Authorization", "Bearer abc")),
        ("X-Trace:  t-1 ", ("X-Trace", "t-1")),
        ("Empty:", ("Empty", "")),
    ],
)
def test_a_header_is_name_colon_value(text: str, pair: tuple[str, str]) -> None:
    assert parse_header(text) == pair


@pytest.mark.parametrize(
    "text", ["no colon", ": value", "Bad Name: v", "A: line\nbreak", "A: \x7f"]
)
def test_a_bad_header_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match="header"):
        parse_header(text)


def test_the_backoff_doubles_per_restart_up_to_its_cap() -> None:
    policy = UpstreamPolicy(backoff_s=0.1, max_backoff_s=1.0)
    assert [policy.backoff(n) for n in range(6)] == [0.0, 0.1, 0.2, 0.4, 0.8, 1.0]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_upstreams", 0),
        ("max_restarts", 1.5),
        ("start_timeout_s", 0),
        ("backoff_s", float("inf")),
        ("close_timeout_s", -1),
        ("notification_queue", True),
    ],
)
def test_a_bad_policy_value_is_refused_naming_its_field(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"UpstreamPolicy.{field}"):
        UpstreamPolicy(**{field: value})


@pytest.mark.parametrize(
    ("version", "declared", "upstream"),
    [
        ("2025-11-25", {"elicitation": {"form": {}, "url": {}}},
         {"elicitation": {"form": {}, "url": {}}}),
        ("2025-11-25", {"elicitation": {}}, {"elicitation": {"form": {}}}),
        ("2025-06-18", {"elicitation": {"url": {}}}, {"elicitation": {}}),
        ("2025-11-25", {"sampling": {"context": {}}, "roots": {"listChanged": True}},
         {"sampling": {"context": {}}, "roots": {"listChanged": True}}),
        ("2025-11-25", {"experimental": {"x": {}}, "tasks": {}, "sampling": True}, {}),
    ],
)  # fmt: skip
def test_the_upstream_is_declared_only_what_the_gateway_carries_of_the_client(
    version: str, declared: dict[str, Any], upstream: dict[str, Any]
) -> None:
    client = ClientCapabilities.parse(declared, version)
    assert upstream_capabilities(client, version) == upstream
