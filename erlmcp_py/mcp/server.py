"""``Server``: tools, resources, prompts and completers; the initialize answer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Literal, TypeVar

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.actors.runtime import Runtime, open_runtime
from erlmcp_py.actors.urlcheck import Resolver
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.urlpolicy import UrlPolicy
from erlmcp_py.mcp._asked_forms import check_asked_forms
from erlmcp_py.mcp._prompts import PromptFunction, PromptSpec, make_prompt
from erlmcp_py.mcp._tools import TaskStart, ToolFunction, ToolSpec, make_tool
from erlmcp_py.mcp.completion import Completer, CompletionRegistry
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.mrtr import ContinuationRegistry
from erlmcp_py.mcp.resources import (
    ResourceFunction,
    ResourceRegistry,
    ResourceSpec,
    ResourceTemplateSpec,
    make_resource,
    make_resource_template,
)
from erlmcp_py.mcp.session import ServerSession
from erlmcp_py.mcp.stateless import StatelessEndpoint

__all__ = ["Server"]

F = TypeVar("F", bound=ToolFunction)
R = TypeVar("R", bound=ResourceFunction)
P = TypeVar("P", bound=PromptFunction)
C = TypeVar("C", bound=Completer)


def _default_tenant(session: ServerSession) -> Tenant:
    # One connection, one conversation; a transport with authentication supplies the user.
    return Tenant(user=session.user or "local", workspace="", conversation=session.peer_id)


class Server:
    """An MCP server: a name, a version, tools that may ask the user for input, resources,
    prompts and argument completion.

    Example:
        >>> server = Server("demo", "1.0.0")
        >>> @server.tool()
        ... async def greet(ctx: Context) -> str:
        ...     outcome = await ctx.elicit_string("Your name?")
        ...     return f"hello {outcome}"
        >>> @server.resource("demo://motd", mime_type="text/plain")
        ... def motd() -> str:
        ...     return "Welcome."
        >>> @server.prompt()
        ... def review(code: str) -> str:
        ...     return f"Please review:\n{code}"

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        title: Optional ``serverInfo.title``.
        instructions: Optional ``instructions`` in the initialize result.
        runtime_config: Policy of the elicitation runtime opened by ``serve_*`` helpers: a
            :class:`RuntimeConfig`, or a mapping of its fields (as ``open_runtime`` takes).
        url_policy: Policy of every URL check: URL-mode URLs, and the ``url`` fields of
            answers (``https`` to public hosts by default; ``http`` to loopback hosts too
            when ``runtime_config.url_dev``). The runtime opened by :meth:`running` applies
            this one policy.
        url_resolver: Resolver used by the URL checks (tests inject one).
        tenant: Maps a session to its tenant scope; default: user ``local``, one
            conversation per connection.

    Raises:
        pydantic.ValidationError: ``runtime_config`` is a mapping that is not a valid
            :class:`RuntimeConfig` (the error names the field).
    """

    #: The class of this server's session-era connections (:func:`open_session` makes one
    #: per connection): a server that answers requests otherwise (the gateway) names its own.
    session_class: ClassVar[type[ServerSession]] = ServerSession

    def __init__(
        self,
        name: str,
        version: str,
        *,
        title: str | None = None,
        instructions: str | None = None,
        runtime_config: RuntimeConfig | Mapping[str, Any] | None = None,
        url_policy: UrlPolicy | None = None,
        url_resolver: Resolver | None = None,
        tenant: Callable[[ServerSession], Tenant] | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        if not isinstance(runtime_config, RuntimeConfig):
            runtime_config = RuntimeConfig.model_validate(dict(runtime_config or {}))
        self.runtime_config = runtime_config
        self.url_policy = url_policy or UrlPolicy(
            allow_http_loopback_dev=self.runtime_config.url_dev
        )
        self.url_resolver = url_resolver
        self.tenant_for: Callable[[ServerSession], Tenant] = tenant or _default_tenant
        self.tools: dict[str, ToolSpec] = {}
        self.resources = ResourceRegistry()
        self.prompts: dict[str, PromptSpec] = {}
        self.completions = CompletionRegistry()
        self.sessions: set[ServerSession] = set()  # open session-era connections
        self.runtime: Runtime | None = None

    def tool(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        title: str | None = None,
        timeout: float | None = None,
        task: bool | Literal["required"] = False,
        task_start: TaskStart = "call",
    ) -> Callable[[F], F]:
        """Register a function as a tool (decorator).

        The input schema comes from the type hints; a parameter annotated ``Context`` is
        injected. Bad arguments give an ``isError`` result naming each problem; an exception
        raised by the tool gives an ``isError`` result with its message;
        :class:`~erlmcp_py.mcp.errors.UrlElicitationRequired` gives the ``-32042`` error.

        A tool that may take long or wait for people (an approval, a sign-off) can run as a
        *task* (the ``io.modelcontextprotocol/tasks`` extension of 2026-07-28,
        ``docs/tasks.md``): the client gets a task handle at once, polls it, answers its
        questions when it likes, and reads the result at the end; the questions have the
        task policy's deadlines (hours).

        Args:
            name: Wire name; default: the function name.
            description: Default: the docstring.
            title: Display title.
            timeout: Seconds of tool time; the clock pauses while an elicitation is pending.
            task: ``True``: run as a task when the request's client declared the extension,
                else as an ordinary call; ``"required"``: only as a task (a 2026-07-28 client
                that did not declare it gets ``-32021``); ``False`` (default): never.
            task_start: ``"call"`` (default): the task begins before the tool runs;
                ``"tool"``: the tool begins it with ``await ctx.start_task()``, after
                questions asked in the call's own rounds.
        """

        def register(fn: F) -> F:
            self.add_tool(
                fn,
                name=name,
                description=description,
                title=title,
                timeout=timeout,
                task=task,
                task_start=task_start,
            )
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
        task: bool | Literal["required"] = False,
        task_start: TaskStart = "call",
    ) -> ToolSpec:
        """Register ``fn`` as a tool (see :meth:`tool`); returns its spec.

        Raises:
            ValueError: a tool with that name exists, the name is invalid, or ``task`` /
                ``task_start`` is not one of its values (``task_start="tool"`` needs a task
                and a ``Context`` parameter).
            TypeError: the signature cannot be turned into an input schema, or a form the
                tool's code asks for cannot be sent (see
                :mod:`~erlmcp_py.mcp._asked_forms`).
        """
        spec = make_tool(
            fn,
            context_type=Context,
            name=name,
            description=description,
            title=title,
            timeout=timeout,
            task=task,
            task_start=task_start,
        )
        if spec.name in self.tools:
            raise ValueError(f"tool {spec.name!r} is already registered")
        if spec.context_param is not None:
            check_asked_forms("tool", spec.name, fn, spec.context_param)
        self.tools[spec.name] = spec
        return spec

    # -- resources ----------------------------------------------------------------------------

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> Callable[[R], R]:
        """Register a function of no arguments as the resource ``uri`` (decorator).

        It returns the contents: ``str`` (text), ``bytes`` (a base64 blob),
        :class:`~erlmcp_py.mcp.resources.Contents` (or a list of them), or any JSON value
        (sent as ``application/json`` text). Raising
        :class:`~erlmcp_py.mcp.resources.ResourceNotFound` answers ``-32002``.

        Args:
            uri: The resource's absolute URI.
            name: Default: the function name.
            title: Display title.
            description: Default: the docstring.
            mime_type: The contents' MIME type.
        """

        def register(fn: R) -> R:
            self.add_resource(
                fn, uri, name=name, title=title, description=description, mime_type=mime_type
            )
            return fn

        return register

    def add_resource(self, fn: ResourceFunction, uri: str, **options: Any) -> ResourceSpec:
        """Register ``fn`` as the resource ``uri`` (see :meth:`resource`); returns its spec.

        Raises:
            ValueError: the URI is taken or not absolute.
            TypeError: ``fn`` has a required parameter.
        """
        spec = make_resource(fn, uri, **options)
        self.resources.add(spec)
        return spec

    def resource_template(
        self,
        uri_template: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> Callable[[R], R]:
        """Register a function as a family of resources named by a URI template (decorator).

        ``uri_template`` is RFC 6570 level 1 (``test://items/{id}``); the function takes one
        keyword parameter per variable (a type hint converts the value, e.g. ``id: int``; a
        value it refuses means "no such resource", ``-32002``). It returns contents as for
        :meth:`resource`.

        Args:
            uri_template: The template.
            name: Default: the function name.
            title: Display title.
            description: Default: the docstring.
            mime_type: The contents' MIME type.
        """

        def register(fn: R) -> R:
            self.add_resource_template(
                fn,
                uri_template,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
            )
            return fn

        return register

    def add_resource_template(
        self, fn: ResourceFunction, uri_template: str, **options: Any
    ) -> ResourceTemplateSpec:
        """Register ``fn`` for ``uri_template`` (see :meth:`resource_template`).

        Raises:
            ValueError: not a level-1 template, or already registered.
            TypeError: the parameters do not match the template's variables.
        """
        spec = make_resource_template(fn, uri_template, **options)
        self.resources.add_template(spec)
        return spec

    def tool_title(self, name: str) -> str | None:
        """The display title of the tool ``name``; ``None`` when it has none or there is no
        such tool."""
        spec = self.tools.get(name)
        return None if spec is None else spec.title

    async def notify_resource_updated(self, uri: str) -> int:
        """Send ``notifications/resources/updated`` to every client subscribed to ``uri``.

        Returns:
            How many sessions were told.
        """
        told = 0
        for session in list(self.sessions):
            if await session.resource_updated(uri):
                told += 1
        return told

    # -- prompts ------------------------------------------------------------------------------

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
    ) -> Callable[[P], P]:
        """Register a function as a prompt (decorator).

        Its parameters are the prompt's arguments (``str``, ``str | None`` or a ``Literal``
        of strings; required when without a default; described with
        ``Annotated[str, Field(description=...)]``). It returns the messages: a string (one
        user message), a content block, a ``{"role", "content"}`` message, or a list of those.
        A parameter annotated with :class:`Context` receives one: the prompt may ask the
        client (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``) as a tool does, in a
        session and on 2026-07-28 (``InputRequiredResult``, see ``docs/mrtr.md``).

        Args:
            name: Wire name; default: the function name.
            title: Display title.
            description: Default: the docstring.
        """

        def register(fn: P) -> P:
            self.add_prompt(fn, name=name, title=title, description=description)
            return fn

        return register

    def add_prompt(
        self,
        fn: PromptFunction,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
    ) -> PromptSpec:
        """Register ``fn`` as a prompt (see :meth:`prompt`); returns its spec.

        Raises:
            ValueError: a prompt with that name exists.
            TypeError: a parameter is not string-typed, or a form the prompt's code asks for
                cannot be sent.
        """
        spec = make_prompt(
            fn, name=name, title=title, description=description, context_type=Context
        )
        if spec.name in self.prompts:
            raise ValueError(f"prompt {spec.name!r} is already registered")
        if spec.context_param is not None:
            check_asked_forms("prompt", spec.name, fn, spec.context_param)
        self.prompts[spec.name] = spec
        return spec

    # -- completion ---------------------------------------------------------------------------

    def completion(
        self,
        *,
        prompt: str | None = None,
        resource_template: str | None = None,
        argument: str | None = None,
    ) -> Callable[[C], C]:
        """Register a completer (decorator): for one argument, or for everything else.

        A completer takes a :class:`~erlmcp_py.mcp.completion.CompletionRequest` and returns
        the suggested values (strings; sync or async). Prompt arguments typed ``Literal``
        complete by themselves.

        Args:
            prompt: The prompt whose ``argument`` this completes.
            resource_template: Or the template whose variable ``argument`` this completes.
            argument: The argument (or variable) name; with none of the three, the completer
                answers every request no other completer does.

        Example:
            >>> @server.completion(prompt="review", argument="language")
            ... def languages(request):
            ...     return [x for x in ("python", "rust") if x.startswith(request.value)]
        """

        def register(fn: C) -> C:
            self.completions.add(
                fn, prompt=prompt, resource_template=resource_template, argument=argument
            )
            return fn

        return register

    # -- protocol -----------------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """The server capabilities: each feature only when something is registered."""
        caps: dict[str, Any] = {"tools": {"listChanged": False}, "logging": {}}
        if self.resources:
            caps["resources"] = {"subscribe": True, "listChanged": False}
        if self.prompts:
            caps["prompts"] = {"listChanged": False}
        if self.completions or any(
            arg.choices for spec in self.prompts.values() for arg in spec.arguments
        ):
            caps["completions"] = {}
        return caps

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
            "capabilities": self.capabilities(),
            "serverInfo": info,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def stateless_endpoint(
        self, runtime: Runtime, registry: ContinuationRegistry, **options: Any
    ) -> StatelessEndpoint:
        """What answers this server's 2026-07-28 requests, for one continuation registry (the
        transports make one: Streamable HTTP per transport, stdio per connection): its tools,
        resources and prompts. A server that answers them otherwise (the gateway) returns its
        own. ``options`` are :class:`~erlmcp_py.mcp.stateless.StatelessEndpoint`'s."""
        return StatelessEndpoint(self, runtime, registry, **options)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Runtime]:
        """Open the elicitation runtime for this server (sets :attr:`runtime`), with the
        server's URL policy and resolver."""
        async with open_runtime(
            self.runtime_config, resolver=self.url_resolver, url_policy=self.url_policy
        ) as runtime:
            self.runtime = runtime
            try:
                yield runtime
            finally:
                self.runtime = None
