"""``mcp/meta.py``: the 2026-07-28 per-request metadata and which requests are stateless."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

import pytest

from erlmcp_py.core.versions import SUPPORTED_VERSIONS
from erlmcp_py.mcp.jsonrpc import JsonRpcError, Request
from erlmcp_py.mcp.meta import (
    CLIENT_CAPABILITIES,
    PROTOCOL_VERSION,
    RequestMeta,
    is_stateless_request,
    parse_request_meta,
    request_meta,
)

V = "2026-07-28"


def meta(caps: Any, info: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": info,
        "progressToken": 7,
    }


def test_dicts_and_other_mappings_read_alike() -> None:
    caps = {"elicitation": {"form": {}}}
    info = {"name": "c", "version": "1"}
    plain = parse_request_meta(Request(1, "tools/call", {"_meta": meta(caps, info)}))
    proxied = parse_request_meta(
        Request(
            1,
            "tools/call",
            MappingProxyType({"_meta": meta(MappingProxyType(caps), MappingProxyType(info))}),
        )
    )
    assert plain == proxied
    assert plain.capabilities.supports("form")
    assert plain.client_info == info
    assert type(plain.client_info) is dict
    assert plain.progress_token == 7
    assert plain.log_level is None


@pytest.mark.parametrize("params", [["x"], "x"])
def test_params_that_are_not_an_object_are_refused(params: Any) -> None:
    with pytest.raises(JsonRpcError):
        parse_request_meta(Request(1, "tools/call", params))


@pytest.mark.parametrize("caps", [None, ["form"], "form"])
def test_capabilities_that_are_not_an_object_are_refused(caps: Any) -> None:
    with pytest.raises(JsonRpcError):
        parse_request_meta(Request(1, "tools/call", {"_meta": meta(caps, {})}))


def test_request_meta_is_a_frozen_value() -> None:
    first = parse_request_meta(Request(1, "tools/call", {"_meta": meta({}, "not a mapping")}))
    assert first.client_info == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.log_level = "info"  # type: ignore[misc]
    other = RequestMeta(protocol_version=V, capabilities=first.capabilities)
    assert other.client_info == {}
    assert other.client_info is not RequestMeta(V, first.capabilities).client_info
    assert dataclasses.replace(first, client_info={}) == first


@pytest.mark.parametrize(
    ("method", "params", "stateless"),
    [
        ("server/discover", None, True),
        ("tools/call", None, False),
        ("tools/call", {"name": "t"}, False),
        ("tools/call", {"_meta": None}, False),
        ("tools/call", {"_meta": {"other": 1}}, False),
        ("tools/call", {"_meta": [PROTOCOL_VERSION]}, False),
        ("tools/call", ["x"], False),
        ("tools/call", {"_meta": {PROTOCOL_VERSION: None}}, True),
        ("tools/call", {"_meta": MappingProxyType({PROTOCOL_VERSION: 1})}, True),
        ("tools/call", MappingProxyType({"_meta": {PROTOCOL_VERSION: 1}}), True),
    ],
)
def test_a_request_is_stateless_when_its_meta_names_the_protocol_version(
    method: str, params: Any, stateless: bool
) -> None:
    assert is_stateless_request(Request(1, method, params)) is stateless


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/call", None),
        ("tools/call", {"name": "t"}),
        ("tools/call", {"_meta": None}),
        ("tools/call", {"_meta": {"other": 1}}),
        ("tools/call", {"_meta": [PROTOCOL_VERSION]}),
        ("tools/call", ["x"]),
        ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}),
    ],
)
def test_request_meta_leaves_session_era_requests_unread(method: str, params: Any) -> None:
    assert request_meta(Request(1, method, params)) is None


def test_request_meta_reads_a_stateless_request_as_parse_request_meta_does() -> None:
    request = Request(1, "tools/call", {"_meta": meta({"elicitation": {}}, {"name": "c"})})
    read = request_meta(request)
    assert read == parse_request_meta(request)
    assert read is not None
    assert read.protocol_version == V
    assert read.capabilities.supports("form")
    assert read.progress_token == 7


@pytest.mark.parametrize(
    ("method", "params", "code", "message", "data"),
    [
        (
            "server/discover",
            None,
            -32602,
            "Invalid params: _meta with the protocol version and client capabilities is required",
            {"missing": [PROTOCOL_VERSION, CLIENT_CAPABILITIES]},
        ),
        (
            "server/discover",
            ["x"],
            -32602,
            "Invalid params: params must be an object",
            None,
        ),
        (
            "tools/call",
            {"_meta": {PROTOCOL_VERSION: 1}},
            -32602,
            f"Invalid params: _meta.{PROTOCOL_VERSION} must be a string",
            {"missing": [PROTOCOL_VERSION]},
        ),
        (
            "tools/call",
            {"_meta": {PROTOCOL_VERSION: "2099-01-01", CLIENT_CAPABILITIES: {}}},
            -32022,
            "Unsupported protocol version",
            {"supported": list(SUPPORTED_VERSIONS), "requested": "2099-01-01"},
        ),
        (
            "tools/list",
            {"_meta": {PROTOCOL_VERSION: V}},
            -32602,
            f"Invalid params: _meta.{CLIENT_CAPABILITIES} must be an object",
            {"missing": [CLIENT_CAPABILITIES]},
        ),
    ],
)
def test_a_stateless_request_with_refused_meta_is_refused_by_request_meta(
    method: str, params: Any, code: int, message: str, data: Any
) -> None:
    request = Request(9, method, params)
    for read in (request_meta, parse_request_meta):
        with pytest.raises(JsonRpcError) as caught:
            read(request)
        assert (caught.value.code, caught.value.message) == (code, message)
        assert caught.value.data == data
        assert caught.value.id == 9
