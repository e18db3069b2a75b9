"""``Context.elicit`` keeps what ``_prepare`` gives for a class, per protocol version
(``_PREPARED_CLASSES``): pinned against ``_prepare`` computed afresh — the same schema sent and
the same outcome conversion, per version, the first time and every time after; a form that
cannot be expressed for a version stays ``Unsupported`` every time; an unhashable class and
non-class forms still work (and are not kept)."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

import pytest
import trio
from pydantic import BaseModel

from erlmcp_py.core.outcomes import Accepted, Outcome, Unsupported
from erlmcp_py.mcp import context as context_module
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.stopwatch import ToolClock


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Defaults(BaseModel):  # defaults are dropped for 2025-06-18: schemas differ per version
    name: str = "x"
    color: Color = Color.RED


class Multi(BaseModel):  # no multi-select on 2025-06-18: Unsupported there
    tags: list[Literal["a", "b"]] = []


class Unhashable(type(BaseModel)):  # type: ignore[misc]
    __hash__ = None  # type: ignore[assignment]


class Odd(BaseModel, metaclass=Unhashable):
    name: str


class Session:
    def __init__(self, version: str) -> None:
        self.protocol_version = version


class Peer:
    def __init__(self, version: str) -> None:
        self.session = Session(version)

    def supports(self, mode: str) -> bool:
        return True


class Runtime:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.sent: list[Any] = []
        self.answer = answer

    async def ask(self, request: Any, *, peer: Any, tenant: Any) -> Outcome:
        self.sent.append(request.requested_schema)
        return Accepted(dict(self.answer))


def context(version: str, runtime: Runtime) -> Context:
    return Context(
        server=None,  # type: ignore[arg-type]
        peer=Peer(version),  # type: ignore[arg-type]
        runtime=runtime,
        tenant=None,  # type: ignore[arg-type]
        request_id=1,
        tool_name="t",
        clock=ToolClock(trio.CancelScope(), None),
        progress_token=None,
    )


VERSIONS = ("2025-11-25", "2025-06-18")
FORMS: list[tuple[Any, dict[str, Any]]] = [
    (Defaults, {"name": "y", "color": "blue"}),
    (Multi, {"tags": ["a"]}),
    (Odd, {"name": "z"}),
    ({"type": "object", "properties": {"v": {"type": "string"}}}, {"v": "w"}),
]


def fresh(version: str, form: Any) -> Any:
    """What ``_prepare`` computes, with nothing kept."""
    kept = dict(context_module._PREPARED_CLASSES)
    context_module._PREPARED_CLASSES.clear()
    try:
        return context(version, Runtime({}))._prepare(form)
    finally:
        context_module._PREPARED_CLASSES.clear()
        context_module._PREPARED_CLASSES.update(kept)


@pytest.mark.parametrize(("form", "answer"), FORMS)
async def test_kept_forms_ask_and_answer_as_prepared_afresh(form: Any, answer: Any) -> None:
    context_module._PREPARED_CLASSES.clear()
    for _ in range(3):  # the first time fills the store; later times read it
        for version in VERSIONS:
            runtime = Runtime(answer)
            try:
                schema, _, form_type = fresh(version, form)
            except Exception as exc:
                expected: Any = exc
            else:
                expected = None
            outcome = await context(version, runtime).elicit("?", form)
            if expected is not None:
                assert outcome == Unsupported("form")
                assert runtime.sent == []
                continue
            assert runtime.sent == [schema]
            want = Accepted(form_type.from_valid(answer)) if form_type else Accepted(answer)
            assert outcome == want
    kept = {key[0] for key in context_module._PREPARED_CLASSES}
    assert kept == ({form} if form in (Defaults, Multi) else set())


async def test_the_store_is_per_version() -> None:
    context_module._PREPARED_CLASSES.clear()
    new, old = Runtime({"name": "a"}), Runtime({"name": "a"})
    await context("2025-11-25", new).elicit("?", Defaults)
    await context("2025-06-18", old).elicit("?", Defaults)
    await context("2025-11-25", new).elicit("?", Defaults)
    assert new.sent[0] == new.sent[1] != old.sent[0]
    assert "default" not in old.sent[0]["properties"]["name"]
