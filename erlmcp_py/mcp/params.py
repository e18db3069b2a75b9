"""Params of the requests and notifications the server understands, checked at the boundary.

Each model is strict (no coercion: ``"name": 1`` is refused, not turned into ``"1"``) and keeps
unknown members (forward compatibility). :func:`parse_params` turns a pydantic failure into a
``-32602`` error whose message names the offending member, never its value.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from erlmcp_py.mcp.jsonrpc import JsonRpcError, Params, RequestId, invalid_params

__all__ = [
    "LOG_LEVELS",
    "CallToolParams",
    "CancelledParams",
    "CompleteParams",
    "GetPromptParams",
    "InitializeParams",
    "ListParams",
    "ListToolsParams",
    "ProgressParams",
    "ResourceUriParams",
    "SetLevelParams",
    "TaskParams",
    "UpdateTaskParams",
    "parse_params",
]

#: RFC 5424 levels, least to most severe (``logging/setLevel``).
LOG_LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class _Params(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True, populate_by_name=True)

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class Implementation(BaseModel):
    """``clientInfo``: name and version (other members kept)."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    name: str
    version: str


class InitializeParams(_Params):
    """``initialize`` params."""

    protocolVersion: str
    capabilities: dict[str, Any] = Field(default_factory=dict)
    clientInfo: Implementation | None = None


class ListToolsParams(_Params):
    """``tools/list`` params."""

    cursor: str | None = None


class CallToolParams(_Params):
    """``tools/call`` params."""

    name: str
    arguments: dict[str, Any] | None = None

    @property
    def progress_token(self) -> str | int | None:
        """``_meta.progressToken`` when the client asked for progress."""
        token = (self.meta or {}).get("progressToken")
        return token if type(token) in (str, int) else None


class TaskParams(_Params):
    """``tasks/get`` and ``tasks/cancel`` params (the ``io.modelcontextprotocol/tasks``
    extension)."""

    taskId: Annotated[str, Field(min_length=1, max_length=256)]


class UpdateTaskParams(TaskParams):
    """``tasks/update`` params: answers to outstanding input requests, by key."""

    inputResponses: dict[str, Any]


class SetLevelParams(_Params):
    """``logging/setLevel`` params."""

    level: LogLevel


class ListParams(_Params):
    """Params of a paginated list (``resources/list``, ``resources/templates/list``,
    ``prompts/list``)."""

    cursor: str | None = None


class ResourceUriParams(_Params):
    """``resources/read``, ``resources/subscribe`` and ``resources/unsubscribe`` params."""

    uri: str


class GetPromptParams(_Params):
    """``prompts/get`` params (argument values are strings)."""

    name: str
    arguments: dict[str, str] | None = None


class _Part(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)


class PromptReference(_Part):
    """``ref`` of a completion request for a prompt argument."""

    type: Literal["ref/prompt"]
    name: str


class ResourceTemplateReference(_Part):
    """``ref`` of a completion request for a resource template variable."""

    type: Literal["ref/resource"]
    uri: str


class CompletionArgument(_Part):
    """``argument`` of a completion request: which one, and the partial value."""

    name: str
    value: str


class CompletionContext(_Part):
    """``context`` of a completion request: arguments already chosen."""

    arguments: dict[str, str] | None = None


class CompleteParams(_Params):
    """``completion/complete`` params."""

    ref: Annotated[PromptReference | ResourceTemplateReference, Field(discriminator="type")]
    argument: CompletionArgument
    context: CompletionContext | None = None


class CancelledParams(_Params):
    """``notifications/cancelled`` params."""

    requestId: RequestId | None = None
    reason: str | None = None


class ProgressParams(_Params):
    """``notifications/progress`` params."""

    progressToken: RequestId
    progress: float
    total: float | None = None
    message: str | None = None


M = TypeVar("M", bound=_Params)


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc if not str(p).startswith("function-")) or "params"


def parse_params(model: type[M], params: Params | None, id: RequestId | None = None) -> M:
    """Validate ``params`` against ``model``.

    Args:
        model: One of the params models of this module.
        params: The message's ``params`` (``None`` when absent).
        id: The request id, for the error.

    Returns:
        The validated params.

    Raises:
        JsonRpcError: ``-32602`` naming the first offending member (``data.errors`` lists
            each problem with its location; no submitted value is echoed).
    """
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise invalid_params("Invalid params: params must be an object", None, id)
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        problems = [
            {"path": _where(err["loc"]), "problem": err["msg"]}
            for err in exc.errors(include_url=False, include_input=False)
        ]
        first = problems[0]
        error: JsonRpcError = invalid_params(
            f"Invalid params: {first['path']}: {first['problem']}", {"errors": problems}, id
        )
        raise error from None
