"""Resources: static ones (one URI) and templated ones (an RFC 6570 level-1 URI template).

Theory of operation
-------------------
``@server.resource(uri)`` registers a function of no arguments; ``@server.resource_template(
template)`` one whose parameters are the template's variables (checked at registration; the
values are validated, and converted, through the type hints: ``id: int`` gets an ``int``).
:meth:`ResourceRegistry.read` finds the resource for a URI (static first, then the templates in
registration order), calls the function (sync or async) and turns what it returned into the
``contents`` of a ``resources/read`` result:

* ``str`` → one text item (``mimeType`` default ``text/plain``);
* ``bytes`` → one base64 ``blob`` item (default ``application/octet-stream``);
* :class:`Contents` (or a list of them) → exactly those items;
* anything else (a dict, a list, a pydantic model…) → its JSON as text (``application/json``).

A URI nothing matches, or template values the type hints refuse, raise
:class:`ResourceNotFound` (JSON-RPC ``-32002``); so may the function itself.

Pure apart from calling the registered functions: no I/O of its own.
"""

from __future__ import annotations

import base64
import inspect
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pydantic
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from erlmcp_py.core.errors import ErlmcpError
from erlmcp_py.mcp._uritemplate import UriTemplate
from erlmcp_py.mcp.jsonrpc import JsonRpcError

__all__ = [
    "RESOURCE_NOT_FOUND",
    "Contents",
    "ResourceFunction",
    "ResourceNotFound",
    "ResourceRegistry",
    "ResourceSpec",
    "ResourceTemplateSpec",
    "make_resource",
    "make_resource_template",
]

#: MCP error code of ``resources/read`` (and ``subscribe``) for an unknown URI.
RESOURCE_NOT_FOUND: Final = -32002

ResourceFunction = Callable[..., Awaitable[Any]] | Callable[..., Any]

_SHOWN: Final = 200  # characters of a client-supplied URI quoted back in an error


class ResourceNotFound(ErlmcpError):
    """No resource has this URI (answered with the JSON-RPC error ``-32002``).

    Raise it from a resource function when the thing it would describe does not exist.

    Args:
        uri: The URI asked for.
    """

    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri[:_SHOWN]}")
        self.uri = uri

    def to_jsonrpc(self) -> JsonRpcError:
        """The ``-32002`` error (``data.uri`` names the URI)."""
        return JsonRpcError(RESOURCE_NOT_FOUND, str(self), {"uri": self.uri[:_SHOWN]})


@dataclass(frozen=True, slots=True)
class Contents:
    """One item of a ``resources/read`` result, when a function wants to say exactly what.

    Attributes:
        data: Text (sent as ``text``) or bytes (sent base64 as ``blob``).
        mime_type: Default: the resource's, else ``text/plain`` / ``application/octet-stream``.
        uri: Default: the URI that was read.
    """

    data: str | bytes
    mime_type: str | None = None
    uri: str | None = None


def _item(uri: str, data: str | bytes, mime_type: str | None) -> dict[str, Any]:
    if isinstance(data, str):
        return {"uri": uri, "mimeType": mime_type or "text/plain", "text": data}
    blob = base64.b64encode(bytes(data)).decode("ascii")
    return {"uri": uri, "mimeType": mime_type or "application/octet-stream", "blob": blob}


def to_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """Turn what a resource function returned into ``contents`` (see the module docstring)."""
    if isinstance(value, str | bytes | bytearray | memoryview):
        return [_item(uri, value if isinstance(value, str) else bytes(value), mime_type)]
    if isinstance(value, Contents):
        return [_item(value.uri or uri, value.data, value.mime_type or mime_type)]
    if isinstance(value, Sequence) and value and all(isinstance(v, Contents) for v in value):
        return [_item(v.uri or uri, v.data, v.mime_type or mime_type) for v in value]
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    text = pydantic.TypeAdapter(Any).dump_json(value).decode()
    return [{"uri": uri, "mimeType": mime_type or "application/json", "text": text}]


async def _call(fn: ResourceFunction, kwargs: Mapping[str, Any]) -> Any:
    value = fn(**kwargs)
    if inspect.isawaitable(value):
        value = await value
    return value


def _describe(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A resource with one fixed URI.

    Attributes:
        uri: Its URI.
        name: Its name (``resources/list``).
        title: Display title, when given.
        description: What it is, when given.
        mime_type: Its MIME type, when known.
        fn: Returns its contents (no arguments).
    """

    uri: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    fn: ResourceFunction

    def definition(self) -> dict[str, Any]:
        """The entry of this resource in a ``resources/list`` result."""
        return _describe(
            {
                "uri": self.uri,
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "mimeType": self.mime_type,
            }
        )

    async def read(self) -> list[dict[str, Any]]:
        """Call the function; the ``contents`` of the result."""
        return to_contents(self.uri, await _call(self.fn, {}), self.mime_type)


@dataclass(frozen=True, slots=True)
class ResourceTemplateSpec:
    """A family of resources named by a URI template.

    Attributes:
        template: The parsed template.
        name: Its name (``resources/templates/list``).
        title: Display title, when given.
        description: What the resources are, when given.
        mime_type: Their MIME type, when known.
        fn: Returns the contents of one resource; called with the template's variables.
        arguments_model: Validates (and converts) the variables for ``fn``.
    """

    template: UriTemplate
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    fn: ResourceFunction
    arguments_model: type[BaseModel]

    @property
    def uri_template(self) -> str:
        """The template as written."""
        return self.template.template

    def definition(self) -> dict[str, Any]:
        """The entry of this template in a ``resources/templates/list`` result."""
        return _describe(
            {
                "uriTemplate": self.uri_template,
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "mimeType": self.mime_type,
            }
        )

    def bind(self, uri: str) -> dict[str, Any] | None:
        """The keyword arguments of ``fn`` for ``uri``; ``None`` if it is not one of ours."""
        variables = self.template.match(uri)
        if variables is None:
            return None
        try:
            model = self.arguments_model.model_validate(variables)
        except ValidationError:
            return None
        return {name: getattr(model, name) for name in type(model).model_fields}

    async def read(self, uri: str, arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Call the function for ``uri`` (``arguments`` from :meth:`bind`)."""
        return to_contents(uri, await _call(self.fn, arguments), self.mime_type)


def _name_of(fn: ResourceFunction, name: str | None) -> str:
    resolved = name or str(getattr(fn, "__name__", ""))
    if not resolved or resolved == "<lambda>":
        raise ValueError("a resource needs a name (pass name=...)")
    return resolved


def make_resource(
    fn: ResourceFunction,
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
) -> ResourceSpec:
    """Build a :class:`ResourceSpec`.

    Args:
        fn: A function without required parameters, returning the contents.
        uri: The resource's URI (absolute, with a scheme).
        name: Default: the function's name.
        title: Optional display title.
        description: Default: the function's docstring.
        mime_type: The contents' MIME type.

    Raises:
        ValueError: the URI has no scheme or contains a template expression.
        TypeError: ``fn`` has a required parameter.
    """
    if ":" not in uri or "{" in uri or "}" in uri:
        raise ValueError(f"resource URI {uri!r} must be absolute (use resource_template for {{}})")
    for param in inspect.signature(fn).parameters.values():
        if param.default is inspect.Parameter.empty and param.kind not in (
            param.VAR_POSITIONAL,
            param.VAR_KEYWORD,
        ):
            raise TypeError(f"resource {uri!r}: parameter {param.name!r} would have no value")
    return ResourceSpec(
        uri=uri,
        name=_name_of(fn, name),
        title=title,
        description=description if description is not None else inspect.getdoc(fn),
        mime_type=mime_type,
        fn=fn,
    )


def make_resource_template(
    fn: ResourceFunction,
    uri_template: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
) -> ResourceTemplateSpec:
    """Build a :class:`ResourceTemplateSpec`.

    Args:
        fn: Takes one keyword parameter per template variable (type hints optional: ``str``
            by default; a hinted type validates and converts the value, in lax mode).
        uri_template: An RFC 6570 level-1 template, e.g. ``test://template/{id}/data``.
        name: Default: the function's name.
        title: Optional display title.
        description: Default: the function's docstring.
        mime_type: The contents' MIME type.

    Raises:
        ValueError: not a level-1 template (:class:`UriTemplateError`), or no scheme.
        TypeError: the parameters and the template's variables do not correspond.
    """
    template = UriTemplate.parse(uri_template)
    if ":" not in uri_template.partition("{")[0]:
        raise ValueError(f"resource template {uri_template!r} must start with a scheme")
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"resource template {uri_template!r}: {param.name!r} must be named")
        if param.name not in template.variables:
            if param.default is inspect.Parameter.empty:
                raise TypeError(
                    f"resource template {uri_template!r}: parameter {param.name!r} "
                    "is not a template variable"
                )
            continue
        fields[param.name] = (hints.get(param.name, str), ...)
    missing = [v for v in template.variables if v not in fields]
    if missing:
        raise TypeError(
            f"resource template {uri_template!r}: no parameter for {', '.join(missing)}"
        )
    model = create_model(
        f"{_name_of(fn, name)}_variables",
        __config__=ConfigDict(extra="ignore"),
        **fields,
    )
    return ResourceTemplateSpec(
        template=template,
        name=_name_of(fn, name),
        title=title,
        description=description if description is not None else inspect.getdoc(fn),
        mime_type=mime_type,
        fn=fn,
        arguments_model=model,
    )


class ResourceRegistry:
    """The resources and resource templates of one server."""

    def __init__(self) -> None:
        self.resources: dict[str, ResourceSpec] = {}
        self.templates: dict[str, ResourceTemplateSpec] = {}

    def __bool__(self) -> bool:
        return bool(self.resources or self.templates)

    def add(self, spec: ResourceSpec) -> None:
        """Register a static resource.

        Raises:
            ValueError: its URI is taken.
        """
        if spec.uri in self.resources:
            raise ValueError(f"resource {spec.uri!r} is already registered")
        self.resources[spec.uri] = spec

    def add_template(self, spec: ResourceTemplateSpec) -> None:
        """Register a resource template.

        Raises:
            ValueError: the same template is registered.
        """
        if spec.uri_template in self.templates:
            raise ValueError(f"resource template {spec.uri_template!r} is already registered")
        self.templates[spec.uri_template] = spec

    def definitions(self) -> list[dict[str, Any]]:
        """The ``resources`` of a ``resources/list`` result."""
        return [spec.definition() for spec in self.resources.values()]

    def template_definitions(self) -> list[dict[str, Any]]:
        """The ``resourceTemplates`` of a ``resources/templates/list`` result."""
        return [spec.definition() for spec in self.templates.values()]

    def exists(self, uri: str) -> bool:
        """Whether ``uri`` names a static resource or fits a template."""
        if uri in self.resources:
            return True
        return any(spec.bind(uri) is not None for spec in self.templates.values())

    async def read(self, uri: str) -> list[dict[str, Any]]:
        """The ``contents`` of ``uri``.

        Raises:
            ResourceNotFound: no resource has this URI (or its function says so).
            Exception: whatever the resource function raised.
        """
        static = self.resources.get(uri)
        if static is not None:
            return await static.read()
        for spec in self.templates.values():
            arguments = spec.bind(uri)
            if arguments is not None:
                return await spec.read(uri, arguments)
        raise ResourceNotFound(uri)
