"""Prompts from Python functions: arguments from the signature, messages from the return value.

Prompt arguments are strings on the wire, so every parameter is ``str`` (the default when
unhinted), ``str | None`` or a ``Literal`` of strings (whose values :mod:`completion` offers);
a parameter without a default is a required argument. Its description comes from
``Annotated[str, Field(description=...)]``. A parameter annotated with the ``Context`` class
(:class:`~erlmcp_py.mcp.context.Context`) is no argument: the caller injects the request's
context, through which the prompt may ask the client (``ctx.elicit``, ``ctx.sample``,
``ctx.list_roots``) as a tool does.

What a prompt function returns becomes the ``messages`` of a ``prompts/get`` result:

* ``str`` → one user message with that text;
* a content block (a mapping with ``type``: ``text``, ``image``, ``audio``, ``resource``…) → one
  user message with it;
* a message (a mapping with ``role`` and ``content``) → that message;
* a list of any of those → one message each;
* a mapping with ``messages`` → the result itself.

Pure: no I/O.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

__all__ = [
    "PromptArgument",
    "PromptArgumentsError",
    "PromptFunction",
    "PromptSpec",
    "make_prompt",
    "to_prompt_result",
]

PromptFunction = Callable[..., Awaitable[Any]] | Callable[..., Any]

_ROLES = ("user", "assistant")


class PromptArgumentsError(ValueError):
    """The arguments of ``prompts/get`` do not fit the prompt (answered with ``-32602``)."""


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument of a prompt, as ``prompts/list`` shows it."""

    name: str
    description: str | None
    required: bool
    choices: tuple[str, ...] = ()

    def definition(self) -> dict[str, Any]:
        """The entry of this argument in a ``prompts/list`` result."""
        out: dict[str, Any] = {"name": self.name}
        if self.description:
            out["description"] = self.description
        out["required"] = self.required
        return out


@dataclass(frozen=True, slots=True)
class PromptSpec:
    """A registered prompt.

    Attributes:
        name: Wire name (``prompts/get`` ``name``).
        title: Display title, when given.
        description: What the prompt is for.
        fn: Returns the messages (sync or async).
        arguments: Its arguments, in signature order.
        arguments_model: Validates ``arguments``.
        context_param: The name of the injected ``Context`` parameter, if any.
    """

    name: str
    title: str | None
    description: str | None
    fn: PromptFunction
    arguments: tuple[PromptArgument, ...]
    arguments_model: type[BaseModel]
    context_param: str | None = None

    def argument(self, name: str) -> PromptArgument | None:
        """The argument called ``name``, if any."""
        return next((a for a in self.arguments if a.name == name), None)

    def definition(self) -> dict[str, Any]:
        """The entry of this prompt in a ``prompts/list`` result."""
        out: dict[str, Any] = {"name": self.name}
        if self.title:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        if self.arguments:
            out["arguments"] = [a.definition() for a in self.arguments]
        return out

    def bind(self, arguments: Mapping[str, str] | None) -> dict[str, Any]:
        """Check ``arguments``; the keyword arguments of the call.

        Raises:
            PromptArgumentsError: naming the missing or invalid arguments (never a value).
        """
        given = dict(arguments or {})
        missing = [a.name for a in self.arguments if a.required and a.name not in given]
        if missing:
            raise PromptArgumentsError(
                f"Missing required argument{'s' if len(missing) > 1 else ''} for prompt "
                f"{self.name!r}: {', '.join(missing)}"
            )
        try:
            model = self.arguments_model.model_validate(given)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors(include_url=False, include_input=False)
            )
            raise PromptArgumentsError(
                f"Invalid arguments for prompt {self.name!r}: {problems}"
            ) from None
        return {name: getattr(model, name) for name in type(model).model_fields}

    async def render(
        self, arguments: Mapping[str, str] | None, context: Callable[[], object] | None = None
    ) -> dict[str, Any]:
        """Check ``arguments``, call the function; the ``prompts/get`` result.

        Args:
            arguments: The request's ``arguments``.
            context: Builds the ``Context`` injected into a prompt that takes one.

        Raises:
            PromptArgumentsError: bad arguments.
            TypeError: the function returned something that is not messages, or it takes a
                context and none was given.
            Exception: whatever the function raised.
        """
        kwargs = self.bind(arguments)
        if self.context_param is not None:
            if context is None:
                raise TypeError(f"prompt {self.name!r} takes a context and none was given")
            kwargs[self.context_param] = context()
        value = self.fn(**kwargs)
        if inspect.isawaitable(value):
            value = await value
        return to_prompt_result(value, self.description)


def _choices(annotation: Any) -> tuple[str, ...] | None:
    """The values of a string ``Literal`` (``None`` when not one)."""
    if typing.get_origin(annotation) is Literal:
        values = typing.get_args(annotation)
        if all(isinstance(v, str) for v in values):
            return tuple(values)
    return None


def _check_argument_type(prompt: str, name: str, annotation: Any) -> tuple[str, ...]:
    bare = annotation
    if typing.get_origin(bare) is typing.Annotated:
        bare = typing.get_args(bare)[0]
    choices = _choices(bare)
    if bare is str or choices is not None:
        return choices or ()
    args = [a for a in typing.get_args(bare) if a is not type(None)]
    if len(args) == 1 and len(typing.get_args(bare)) == 2:  # Optional[...]
        inner = _choices(args[0])
        if args[0] is str or inner is not None:
            return inner or ()
    raise TypeError(
        f"prompt {prompt!r}: argument {name!r} must be str, str | None or a Literal of strings "
        "(prompt arguments are strings)"
    )


def make_prompt(
    fn: PromptFunction,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    context_type: type | None = None,
) -> PromptSpec:
    """Build a :class:`PromptSpec` from a function's signature.

    Args:
        fn: The prompt function (sync or async).
        name: Wire name; default: the function's name.
        title: Optional display title.
        description: Default: the function's docstring.
        context_type: The Context class (a parameter annotated with it is injected).

    Raises:
        TypeError: a parameter is variadic, positional-only or not string-typed.
        ValueError: no usable name.
    """
    prompt = name or str(getattr(fn, "__name__", ""))
    if not prompt or prompt == "<lambda>":
        raise ValueError("a prompt needs a name (pass name=...)")
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    choices: dict[str, tuple[str, ...]] = {}
    context_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"prompt {prompt!r}: parameter {param.name!r} must be named")
        annotation = hints.get(param.name, str)
        if (
            context_type is not None
            and isinstance(annotation, type)
            and issubclass(annotation, context_type)
        ):
            context_param = param.name
            continue
        choices[param.name] = _check_argument_type(prompt, param.name, annotation)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    model = create_model(
        f"{prompt}_arguments",
        __config__=ConfigDict(extra="ignore", strict=True),
        **fields,
    )
    arguments = tuple(
        PromptArgument(
            name=field_name,
            description=info.description,
            required=info.is_required(),
            choices=choices[field_name],
        )
        for field_name, info in model.model_fields.items()
    )
    return PromptSpec(
        name=prompt,
        title=title,
        description=description if description is not None else inspect.getdoc(fn),
        fn=fn,
        arguments=arguments,
        arguments_model=model,
        context_param=context_param,
    )


def _message(item: Any) -> dict[str, Any]:
    if isinstance(item, str):
        return {"role": "user", "content": {"type": "text", "text": item}}
    if isinstance(item, BaseModel):
        item = item.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(item, Mapping):
        if "role" in item:
            if item["role"] not in _ROLES:
                raise TypeError(f"a prompt message's role must be one of {_ROLES}")
            content = item.get("content")
            if not isinstance(content, Mapping) or not isinstance(content.get("type"), str):
                raise TypeError("a prompt message's content must be one content block")
            return dict(item)
        if isinstance(item.get("type"), str):
            return {"role": "user", "content": dict(item)}
    raise TypeError(f"cannot turn a {type(item).__name__} into a prompt message")


def to_prompt_result(value: Any, description: str | None = None) -> dict[str, Any]:
    """Turn what a prompt function returned into a ``prompts/get`` result.

    Raises:
        TypeError: ``value`` is not messages (see the module docstring).
    """
    if isinstance(value, Mapping) and "messages" in value:
        result = dict(value)
        result["messages"] = [_message(m) for m in result["messages"]]
    elif isinstance(value, list | tuple):
        result = {"messages": [_message(m) for m in value]}
    else:
        result = {"messages": [_message(value)]}
    if description and "description" not in result:
        result["description"] = description
    return result
