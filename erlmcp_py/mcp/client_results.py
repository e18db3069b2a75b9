"""Typed answers of the client requests a tool makes: ``sampling/createMessage`` and ``roots/list``.

The client's ``result`` is checked at the boundary (pydantic, strict) and turned into a frozen
value: :class:`SampledMessage` for ``ctx.sample``, a tuple of :class:`Root` for
``ctx.list_roots``. An answer that does not fit raises :class:`InvalidClientResult`, naming the
member and what was wrong (never the value). Members the specification may add later are kept
where they belong (``SampledMessage.meta``) or ignored.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from erlmcp_py.core.errors import ErlmcpError

__all__ = [
    "InvalidClientResult",
    "Root",
    "SampledMessage",
    "parse_create_message_result",
    "parse_list_roots_result",
]


class InvalidClientResult(ErlmcpError):
    """The client's answer to a request of ours does not have the shape its method defines.

    Attributes:
        method: The request it answered (``sampling/createMessage``, ``roots/list``).
        detail: What is wrong, member by member (never a submitted value).
    """

    def __init__(self, method: str, detail: str) -> None:
        super().__init__(f"the client's answer to {method} is malformed: {detail}")
        self.method = method
        self.detail = detail


@dataclass(frozen=True, slots=True)
class SampledMessage:
    """What the client's LLM answered to ``ctx.sample`` (a ``CreateMessageResult``).

    Attributes:
        role: ``"assistant"`` (or ``"user"``).
        content: One content block (``{"type": "text", "text": …}``, image, audio…), or a
            tuple of blocks when the client answered with several.
        model: The model that answered.
        stop_reason: ``stopReason`` (``endTurn``, ``stopSequence``, ``maxTokens``…), if given.
        meta: The result's ``_meta``, if any.
    """

    role: Literal["user", "assistant"]
    content: Mapping[str, Any] | tuple[Mapping[str, Any], ...]
    model: str
    stop_reason: str | None = None
    meta: Mapping[str, Any] | None = None

    @property
    def text(self) -> str | None:
        """The text of the first text block, or ``None`` when there is none."""
        blocks = self.content if isinstance(self.content, tuple) else (self.content,)
        for block in blocks:
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                return str(block["text"])
        return None


@dataclass(frozen=True, slots=True)
class Root:
    """One root the client exposes (``roots/list``).

    Attributes:
        uri: The root's URI (a ``file://`` URI in the current specification).
        name: Its display name, if given.
    """

    uri: str
    name: str | None = None


class _Block(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    type: str


class _CreateMessageResult(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    role: Literal["user", "assistant"]
    content: _Block | list[_Block]
    model: str
    stopReason: str | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class _Root(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    uri: str = Field(min_length=1)
    name: str | None = None


class _ListRootsResult(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    roots: list[_Root]


def _problems(exc: ValidationError) -> str:
    """Each error as ``member.path: message``, without pydantic's union-branch tags."""
    return "; ".join(
        f"{'.'.join(_members(err['loc'])) or 'result'}: {_INSTANCE.sub('', err['msg'])}"
        for err in exc.errors(include_url=False, include_input=False)
    )


_INSTANCE = re.compile(r" or instance of _\w+")


def _members(loc: tuple[int | str, ...]) -> list[str]:
    return [str(p) for p in loc if not (isinstance(p, str) and p.startswith(("_", "list[")))]


def parse_create_message_result(result: Mapping[str, Any]) -> SampledMessage:
    """The :class:`SampledMessage` of a ``sampling/createMessage`` result.

    Raises:
        InvalidClientResult: the result is not a ``CreateMessageResult``.
    """
    try:
        parsed = _CreateMessageResult.model_validate(dict(result))
    except ValidationError as exc:
        raise InvalidClientResult("sampling/createMessage", _problems(exc)) from None
    raw = result["content"]
    content: Mapping[str, Any] | tuple[Mapping[str, Any], ...] = (
        tuple(dict(block) for block in raw) if isinstance(raw, list) else dict(raw)
    )
    return SampledMessage(
        role=parsed.role,
        content=content,
        model=parsed.model,
        stop_reason=parsed.stopReason,
        meta=parsed.meta,
    )


def parse_list_roots_result(result: Mapping[str, Any]) -> tuple[Root, ...]:
    """The roots of a ``roots/list`` result, in the client's order.

    Raises:
        InvalidClientResult: the result is not a ``ListRootsResult``.
    """
    try:
        parsed = _ListRootsResult.model_validate(dict(result))
    except ValidationError as exc:
        raise InvalidClientResult("roots/list", _problems(exc)) from None
    return tuple(Root(uri=root.uri, name=root.name) for root in parsed.roots)
