"""``Server``: tools, the initialize answer, and how to serve them on a transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.actors.tree import Runtime, open_runtime
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.urlpolicy import UrlPolicy
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.session import ServerSession
from erlmcp_py.mcp.tools import ToolFunction, ToolSpec, make_tool
from erlmcp_py.urlcheck import Resolver

__all__ = ["Server"]

F = TypeVar("F", bound=ToolFunction)


def _default_tenant(session: ServerSession) -> Tenant:
    # One connection, one conversation; a transport with authentication supplies the user.
    return Tenant(user="local", workspace="", conversation=session.peer_id)


class Server:
    """An MCP server: a name, a version and tools that may ask the user for input.

    Example:
        >>> server = Server("demo", "1.0.0")
        >>> @server.tool()
        ... async def greet(ctx: Context) -> str:
        ...     outcome = await ctx.elicit_string("Your name?")
        ...     return f"hello {outcome}"

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        title: Optional ``serverInfo.title``.
        instructions: Optional ``instructions`` in the initialize result.
        runtime_config: Policy of the elicitation runtime opened by ``serve_*`` helpers.
        url_policy: Policy for URL-mode URLs (``https`` to public hosts by default).
        url_resolver: Resolver used by the URL check (tests inject one).
        tenant: Maps a session to its tenant scope; default: user ``local``, one
            conversation per connection.
    """

    def __init__(
        self,
        name: str,
        version: str,
        *,
        title: str | None = None,
        instructions: str | None = None,
        runtime_config: RuntimeConfig | None = None,
        url_policy: UrlPolicy | None = None,
        url_resolver: Resolver | None = None,
        tenant: Callable[[ServerSession], Tenant] | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.runtime_config = runtime_config or RuntimeConfig.model_validate({})
        self.url_policy = url_policy or UrlPolicy(
            allow_http_loopback_dev=self.runtime_config.url_dev
        )
        self.url_resolver = url_resolver
        self.tenant_for: Callable[[ServerSession], Tenant] = tenant or _default_tenant
        self.tools: dict[str, ToolSpec] = {}
        self.runtime: Runtime | None = None

    def tool(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        title: str | None = None,
        timeout: float | None = None,
    ) -> Callable[[F], F]:
        """Register a function as a tool (decorator).

        The input schema comes from the type hints; a parameter annotated ``Context`` is
        injected. Bad arguments give an ``isError`` result naming each problem; an exception
        raised by the tool gives an ``isError`` result with its message;
        :class:`~erlmcp_py.mcp.errors.UrlElicitationRequired` gives the ``-32042`` error.

        Args:
            name: Wire name; default: the function name.
            description: Default: the docstring.
            title: Display title.
            timeout: Seconds of tool time; the clock pauses while an elicitation is pending.
        """

        def register(fn: F) -> F:
            self.add_tool(fn, name=name, description=description, title=title, timeout=timeout)
            return fn

        return register

    def add_tool(
        self,
        fn: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        timeout: float | None = None,
    ) -> ToolSpec:
        """Register ``fn`` as a tool (see :meth:`tool`); returns its spec.

        Raises:
            ValueError: a tool with that name exists, or the name is invalid.
            TypeError: the signature cannot be turned into an input schema.
        """
        spec = make_tool(
            fn,
            context_type=Context,
            name=name,
            description=description,
            title=title,
            timeout=timeout,
        )
        if spec.name in self.tools:
            raise ValueError(f"tool {spec.name!r} is already registered")
        self.tools[spec.name] = spec
        return spec

    def tool_definitions(self) -> list[dict[str, Any]]:
        """The ``tools`` of a ``tools/list`` result."""
        return [spec.definition() for spec in self.tools.values()]

    def initialize_result(self, version: str) -> dict[str, Any]:
        """The result of ``initialize`` for a negotiated ``version``."""
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title:
            info["title"] = self.title
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}, "logging": {}},
            "serverInfo": info,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Runtime]:
        """Open the elicitation runtime for this server (sets :attr:`runtime`)."""
        async with open_runtime(self.runtime_config) as runtime:
            self.runtime = runtime
            try:
                yield runtime
            finally:
                self.runtime = None
