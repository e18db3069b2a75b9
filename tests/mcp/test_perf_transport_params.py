"""``CallToolParams.progress_token`` without building a dict when there is no ``_meta``:
pinned against the expression it replaced, ``(meta or {}).get("progressToken")`` kept only
when a string or an integer."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from erlmcp_py.mcp.params import CallToolParams

_tokens = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=4)
)
_metas = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(["progressToken", "other"]), _tokens, max_size=2),
)


def reference(meta: dict[str, Any] | None) -> Any:
    token = (meta or {}).get("progressToken")
    return token if type(token) in (str, int) else None


@given(_metas)
def test_progress_token_agrees_with_the_reference(meta: dict[str, Any] | None) -> None:
    raw: dict[str, Any] = {"name": "t"}
    if meta is not None:
        raw["_meta"] = meta
    params = CallToolParams.model_validate(raw)
    assert params.progress_token == reference(params.meta)
    assert type(params.progress_token) is type(reference(params.meta))
