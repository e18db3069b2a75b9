"""``is_modern_request``'s shortcut for decoded (dict) params: pinned against the general
expression it shortcuts (``_meta_of(params)`` holding the protocol-version key)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from hypothesis import example, given, settings, strategies as st

from erlmcp_py.mcp.jsonrpc import Request
from erlmcp_py.mcp.meta import PROTOCOL_VERSION, _meta_of, is_modern_request


def reference(request: Request) -> bool:
    if request.method == "server/discover":
        return True
    meta = _meta_of(request.params)
    return meta is not None and PROTOCOL_VERSION in meta


_leaf = st.one_of(st.none(), st.integers(), st.text(max_size=3))
_meta_dicts = st.dictionaries(st.sampled_from([PROTOCOL_VERSION, "other"]), _leaf, max_size=2)
_metas = st.one_of(
    _leaf,
    st.lists(_leaf, max_size=2),
    _meta_dicts,
    _meta_dicts.map(MappingProxyType),  # a Mapping that is not a dict
)


def _with_meta(meta: Any, present: bool, other: bool) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "t"} if other else {}
    if present:
        params["_meta"] = meta
    return params


_dict_params = st.builds(_with_meta, _metas, st.booleans(), st.booleans())
_params = st.one_of(
    st.none(),
    st.lists(_leaf, max_size=2),
    _dict_params,
    _dict_params.map(MappingProxyType),
)


@settings(max_examples=400)
@given(st.sampled_from(["tools/call", "server/discover", "ping"]), _params)
@example("tools/call", {"name": "t"})
@example("tools/call", {"_meta": None})
@example("tools/call", {"_meta": {"other": 1}})
@example("tools/call", {"_meta": {PROTOCOL_VERSION: None}})
@example("tools/call", {"_meta": MappingProxyType({PROTOCOL_VERSION: 1})})
@example("tools/call", {"_meta": [PROTOCOL_VERSION]})
@example("tools/call", MappingProxyType({"_meta": {PROTOCOL_VERSION: 1}}))
def test_is_modern_request_agrees_with_the_general_expression(
    method: str, params: Mapping[str, Any] | list[Any] | None
) -> None:
    request = Request(1, method, params)  # type: ignore[arg-type]
    assert is_modern_request(request) is reference(request)
