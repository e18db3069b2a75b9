"""Tool definitions from Python functions: input schema from type hints, argument checking,
an output schema from the return annotation, and the conversion of a return value into a
``CallToolResult``.

A tool whose return annotation is object-shaped (a pydantic model, a dataclass, a
``TypedDict``, a ``dict[str, T]`` other than ``dict[str, Any]``) declares its
``outputSchema`` (MCP 2025-06-18 and later): each result carries the value as
``structuredContent`` (and as JSON text, for clients that read only the content), checked
against that type first, since a client may reject a result that does not match the schema it
was given. Any other annotation declares nothing.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pydantic
import typing_extensions
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from erlmcp_py.mcp.errors import UrlElicitationRequired
from erlmcp_py.mcp.jsonrpc import JsonRpcError

__all__ = [
    "OutputMismatch",
    "TaskStart",
    "TaskSupport",
    "ToolArgumentsError",
    "ToolSpec",
    "budget_exceeded",
    "call_tool_fn",
    "make_tool",
    "text_result",
    "to_call_result",
]

ToolFunction = Callable[..., Awaitable[Any]] | Callable[..., Any]

TaskSupport = Literal["never", "optional", "required"]
"""Whether a tool runs as a task (the ``io.modelcontextprotocol/tasks`` extension): never; for
every 2026-07-28 request whose client declared the extension (``optional``), else as a call;
or only so (``required``: a client without it gets ``-32021``)."""

TaskStart = Literal["call", "tool"]
"""When a tool that runs as a task becomes one: before it runs (``call``), or where its code
says (``tool``: ``await ctx.start_task()``, after questions asked in the call's own rounds)."""

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


class ToolArgumentsError(ValueError):
    """The arguments of a call do not fit the tool's input schema (an ``isError`` result)."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A registered tool.

    Attributes:
        name: Wire name (``tools/call`` ``name``).
        description: Shown to the model.
        title: Human-readable name, when given.
        fn: The function (sync or async).
        arguments_model: The pydantic model checking ``arguments``.
        input_schema: The JSON Schema sent in ``tools/list``.
        context_param: The name of the injected ``Context`` parameter, if any.
        timeout: Seconds of tool time (paused while an elicitation is pending), or ``None``.
        output: The checked return type (an object-shaped annotation), or ``None``.
        output_schema: Its JSON Schema, sent in ``tools/list`` as ``outputSchema``.
        task: Whether it runs as a task (see :data:`TaskSupport`).
        task_start: When it becomes one (see :data:`TaskStart`).
    """

    name: str
    description: str
    title: str | None
    fn: ToolFunction
    arguments_model: type[BaseModel]
    input_schema: Mapping[str, Any]
    context_param: str | None
    timeout: float | None
    output: pydantic.TypeAdapter[Any] | None = None
    output_schema: Mapping[str, Any] | None = None
    task: TaskSupport = "never"
    task_start: TaskStart = "call"

    def definition(self) -> dict[str, Any]:
        """The entry of this tool in a ``tools/list`` result."""
        out: dict[str, Any] = {"name": self.name}
        if self.title:
            out["title"] = self.title
        out["description"] = self.description
        out["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        return out

    def bind(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Check ``arguments`` and return the keyword arguments of the call (without Context).

        Raises:
            ToolArgumentsError: naming each bad argument and why (never its value).
        """
        names = self.argument_names
        if not names:
            return {}  # no parameters, nothing to check: the model ignores unknown arguments
        try:
            model = self.arguments_model.model_validate(dict(arguments or {}))
        except ValidationError as exc:
            raise ToolArgumentsError(
                f"Invalid arguments for tool {self.name!r}: {_problems(exc, 'arguments')}"
            ) from None
        return {name: getattr(model, name) for name in names}

    @property
    def argument_names(self) -> tuple[str, ...]:
        """The tool's parameters, without the injected ``Context``."""
        return tuple(self.arguments_model.model_fields)


class OutputMismatch(ValueError):
    """What a tool returned does not fit its declared return type (an ``isError`` result)."""


def _problems(exc: ValidationError, whole: str = "value") -> str:
    """Each problem of a pydantic refusal as ``location: message`` (never the value)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or whole}: {err['msg']}"
        for err in exc.errors(include_url=False, include_input=False)
    )


def _is_context(annotation: Any, context_type: type) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, context_type)


def make_tool(
    fn: ToolFunction,
    *,
    context_type: type,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    timeout: float | None = None,
    task: bool | Literal["required"] = False,
    task_start: TaskStart = "call",
) -> ToolSpec:
    """Build a :class:`ToolSpec` from a function's signature and type hints.

    Args:
        fn: The tool function; every parameter but the ``Context`` one needs a type hint.
        context_type: The Context class (parameters annotated with it are injected).
        name: Wire name; default: the function's name.
        description: Default: the function's docstring.
        title: Optional display title.
        timeout: Tool-time budget in seconds (paused while a human is asked).
        task: ``True``: it runs as a task for a client that declared the tasks extension
            (``optional``); ``"required"``: only so; ``False``: never.
        task_start: When it becomes a task: ``"call"`` (before it runs) or ``"tool"``
            (where it calls ``await ctx.start_task()``; it needs a ``Context`` parameter).

    Raises:
        TypeError: a parameter has no type hint, is positional-only or variadic, or its type
            cannot be expressed as JSON Schema; ``task`` or ``task_start`` is of the wrong
            type.
        ValueError: invalid name, timeout, ``task`` or ``task_start``; ``task_start="tool"``
            for a tool that never runs as a task or takes no ``Context``.
    """
    tool_name: str = name or str(getattr(fn, "__name__", ""))
    if not _NAME.fullmatch(tool_name):
        raise ValueError(f"invalid tool name {tool_name!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError("timeout must be positive")
    support = _task_support(tool_name, task)
    if task_start not in ("call", "tool"):
        raise ValueError(f"tool {tool_name!r}: task_start must be 'call' or 'tool'")
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"tool {tool_name!r}: parameter {param.name!r} must be named")
        annotation = hints.get(param.name, inspect.Parameter.empty)
        if annotation is inspect.Parameter.empty:
            raise TypeError(f"tool {tool_name!r}: parameter {param.name!r} needs a type hint")
        if _is_context(annotation, context_type):
            context_param = param.name
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    model = create_model(
        f"{tool_name}_arguments",
        __config__=ConfigDict(extra="ignore"),
        **fields,
    )
    try:
        schema = model.model_json_schema()
    except pydantic.errors.PydanticUserError as exc:  # pragma: no cover - exotic types
        raise TypeError(f"tool {tool_name!r}: {exc}") from None
    schema.pop("title", None)
    schema.setdefault("properties", {})
    schema["type"] = "object"
    output, output_schema = _output_of(tool_name, hints.get("return"))
    doc = description if description is not None else inspect.getdoc(fn) or ""
    if task_start == "tool" and (support == "never" or context_param is None):
        raise ValueError(
            f"tool {tool_name!r}: task_start='tool' needs task=True or task='required' and a "
            "Context parameter (the tool starts its task with await ctx.start_task())"
        )
    return ToolSpec(
        name=tool_name,
        description=doc,
        title=title,
        fn=fn,
        arguments_model=model,
        input_schema=schema,
        context_param=context_param,
        timeout=timeout,
        output=output,
        output_schema=output_schema,
        task=support,
        task_start=task_start,
    )


def _task_support(tool_name: str, task: object) -> TaskSupport:
    """The :data:`TaskSupport` of a tool's ``task=`` argument."""
    if task is False:
        return "never"
    if task is True:
        return "optional"
    if task == "required":
        return "required"
    raise ValueError(f"tool {tool_name!r}: task must be True, False or 'required', got {task!r}")


def _object_shaped(annotation: Any) -> bool:
    """Whether values of ``annotation`` are JSON objects (what ``structuredContent`` holds).

    ``dict[str, Any]`` is not: it is how a tool that builds its whole ``CallToolResult``
    types its return value.
    """
    if isinstance(annotation, type):
        return (
            issubclass(annotation, BaseModel)
            or dataclasses.is_dataclass(annotation)
            or typing_extensions.is_typeddict(annotation)
        )
    if typing.get_origin(annotation) in (dict, Mapping):
        key, value = typing.get_args(annotation) or (Any, Any)
        return key is str and value is not Any
    return False


def _output_of(
    tool_name: str, annotation: Any
) -> tuple[pydantic.TypeAdapter[Any] | None, dict[str, Any] | None]:
    """The checked return type of a tool and its ``outputSchema``, for an object-shaped
    return annotation (``Annotated`` metadata kept); ``(None, None)`` otherwise.

    Raises:
        TypeError: the type cannot be expressed as JSON Schema.
    """
    bare = (
        typing.get_args(annotation)[0] if typing.get_origin(annotation) is Annotated else annotation
    )
    if not _object_shaped(bare):
        return None, None
    try:
        adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(annotation)
        schema = adapter.json_schema(mode="serialization")
    except pydantic.errors.PydanticUserError as exc:
        raise TypeError(f"tool {tool_name!r}: return type: {exc}") from None
    schema["type"] = "object"
    return adapter, schema


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    """A ``CallToolResult`` with one text block."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def to_call_result(value: Any, output: pydantic.TypeAdapter[Any] | None = None) -> dict[str, Any]:
    """Turn what a tool returned into a ``CallToolResult``.

    ``str`` → one text block; ``None`` → no content; a mapping with a ``content`` list → used
    as the result itself; a list of content blocks (mappings with ``type``) → the content; any
    other value → its JSON as text, and as ``structuredContent`` when it is an object.

    With ``output`` (the tool's declared return type), a value that is not a whole result is
    checked against that type and written as ``structuredContent`` and JSON text.

    Raises:
        OutputMismatch: the value does not fit ``output``.
    """
    if output is not None and not (
        isinstance(value, Mapping) and isinstance(value.get("content"), list)
    ):
        try:
            structured = output.dump_python(output.validate_python(value), mode="json")
        except ValidationError as exc:
            raise OutputMismatch(_problems(exc)) from None
        result = text_result(_ANY.dump_json(structured).decode())
        result["structuredContent"] = structured
        return result
    if isinstance(value, str):
        return text_result(value)
    if value is None:
        return {"content": []}
    if isinstance(value, Mapping) and isinstance(value.get("content"), list):
        return dict(value)
    if isinstance(value, list) and all(isinstance(v, Mapping) and "type" in v for v in value):
        return {"content": list(value)}
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    text = _ANY.dump_json(value).decode()
    result = text_result(text)
    if isinstance(value, Mapping):
        result["structuredContent"] = dict(value)
    return result


_ANY: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(Any)  # built once: not per result


async def call_tool_fn(spec: ToolSpec, kwargs: dict[str, Any], log: Any) -> dict[str, Any]:
    """Run the tool's function with its bound arguments; the ``CallToolResult``.

    Shared by both protocol eras. The tool's own exception becomes an ``isError`` result;
    ``JsonRpcError`` and ``UrlElicitationRequired`` propagate, for the caller to answer as
    its era says.
    """
    try:
        value = spec.fn(**kwargs)
        if hasattr(value, "__await__"):
            value = await value
    except (UrlElicitationRequired, JsonRpcError):
        raise
    except Exception as exc:
        return _tool_failed(spec, exc, log)
    return _tool_returned(spec, value, log)


def _tool_failed(spec: ToolSpec, exc: Exception, log: Any) -> dict[str, Any]:
    """The ``isError`` result of a tool that raised ``exc`` (logged as ``tool_error``)."""
    log.info("tool_error", tool=spec.name, error=type(exc).__name__)
    return text_result(str(exc) or type(exc).__name__, is_error=True)


def _tool_returned(spec: ToolSpec, value: Any, log: Any) -> dict[str, Any]:
    """The ``CallToolResult`` of what a tool returned (an ``isError`` result, logged as
    ``tool_result_unencodable``, when it cannot be one)."""
    try:
        return to_call_result(value, spec.output)
    except OutputMismatch as exc:
        log.warning("tool_result_mismatch", tool=spec.name, problems=str(exc))
        return text_result(
            f"Tool {spec.name!r} returned a value that does not fit its declared output: {exc}",
            is_error=True,
        )
    except Exception as exc:
        log.warning("tool_result_unencodable", tool=spec.name, error=type(exc).__name__)
        return text_result(f"Tool {spec.name!r} returned an unencodable value", is_error=True)


def budget_exceeded(spec: ToolSpec) -> dict[str, Any]:
    """The ``isError`` result of a tool whose ``timeout`` ran out."""
    return text_result(
        f"Tool {spec.name!r} ran out of its {spec.timeout:g} s budget "
        "(time spent waiting for the user is not counted).",
        is_error=True,
    )
