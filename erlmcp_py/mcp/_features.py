"""Answers to ``resources/*``, ``prompts/*`` and ``completion/complete`` (both protocol eras).

Theory of operation
-------------------
:func:`answer` checks the params at the boundary (pydantic, ``-32602`` naming the member),
asks the server's registries and maps their failures onto JSON-RPC errors:

* unknown resource URI → ``-32002`` (``data.uri``);
* unknown prompt, missing or invalid prompt arguments, unknown completion reference or argument,
  a cursor we never handed out → ``-32602``;
* a method whose capability the server does not offer (nothing registered) → ``-32601``;
* an exception of a registered function → ``-32603`` (logged; its text is not sent), except
  the errors of asking the client from a prompt (``CapabilityMissing``, ``ClientRequestError``,
  a timeout…: ``-32603`` saying what happened) and ``UrlElicitationRequired`` (``-32042``).

``resources/subscribe`` and ``resources/unsubscribe`` need per-connection state: the session
era answers them itself, with :func:`subscribable` as the check. Lists are not paginated: every
item fits one page, so no cursor is ever handed out.

A prompt function may take a ``Context`` and ask the client: the caller of :func:`answer`
passes a :data:`ContextFor` that builds one for the prompt (a session's peer, or a 2026-07-28
call's :class:`~erlmcp_py.mcp.mrtr.MrtrPeer`). :func:`check_prompt` checks a ``prompts/get``
before anything runs (what the stateless era does before it starts a continuation).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import structlog
import trio

from erlmcp_py.core.errors import ErlmcpError
from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp._prompts import PromptArgumentsError, PromptSpec
from erlmcp_py.mcp.completion import CompletionRequest, UnknownReference
from erlmcp_py.mcp.errors import UrlElicitationRequired
from erlmcp_py.mcp.jsonrpc import JsonRpcError, Request, RequestId
from erlmcp_py.mcp.params import (
    CompleteParams,
    GetPromptParams,
    ListParams,
    PromptReference,
    ResourceUriParams,
    parse_params,
)
from erlmcp_py.mcp.resources import ResourceNotFound

if TYPE_CHECKING:
    from erlmcp_py.mcp.server import Server

__all__ = [
    "METHODS",
    "SUBSCRIPTION_METHODS",
    "ContextFor",
    "answer",
    "offered",
    "check_prompt",
    "subscribable",
]

log = structlog.get_logger("erlmcp.features")

_SHOWN: Final = 200

ContextFor = Callable[[str], object]
"""Builds the ``Context`` of one ``prompts/get`` from the prompt's name."""


def _check_cursor(request: Request) -> None:
    params = parse_params(ListParams, request.params, request.id)
    if params.cursor is not None:
        raise jsonrpc.invalid_params(
            "Invalid params: unknown cursor (every list fits one page)", None, request.id
        )


def _internal(what: str, exc: Exception, id: RequestId) -> JsonRpcError:
    log.warning("feature_function_failed", what=what[:_SHOWN], error=type(exc).__name__)
    return jsonrpc.internal_error(f"Internal error while {what[:_SHOWN]}", None, id)


async def _resources_list(
    server: Server, request: Request, context: ContextFor | None
) -> dict[str, Any]:
    _check_cursor(request)
    return {"resources": server.resources.definitions()}


async def _templates_list(
    server: Server, request: Request, context: ContextFor | None
) -> dict[str, Any]:
    _check_cursor(request)
    return {"resourceTemplates": server.resources.template_definitions()}


async def _resources_read(
    server: Server, request: Request, context: ContextFor | None
) -> dict[str, Any]:
    params = parse_params(ResourceUriParams, request.params, request.id)
    try:
        contents = await server.resources.read(params.uri)
    except ResourceNotFound as exc:
        raise exc.to_jsonrpc().with_id(request.id) from None
    except JsonRpcError:
        raise
    except Exception as exc:
        raise _internal(f"reading resource {params.uri}", exc, request.id) from None
    return {"contents": contents}


async def _prompts_list(
    server: Server, request: Request, context: ContextFor | None
) -> dict[str, Any]:
    _check_cursor(request)
    return {"prompts": [spec.definition() for spec in server.prompts.values()]}


def check_prompt(server: Server, request: Request) -> PromptSpec:
    """The prompt a ``prompts/get`` names, its arguments checked (nothing runs).

    Raises:
        JsonRpcError: ``-32601`` (no prompts offered), ``-32602`` (bad params, unknown prompt,
            missing or invalid arguments).
    """
    spec, params = _prompt_of(server, request)
    try:
        spec.bind(params.arguments)
    except PromptArgumentsError as exc:
        raise jsonrpc.invalid_params(str(exc), {"name": spec.name}, request.id) from None
    return spec


def _prompt_of(server: Server, request: Request) -> tuple[PromptSpec, GetPromptParams]:
    if not offered(server, request.method):
        raise jsonrpc.method_not_found(request.method, request.id)
    params = parse_params(GetPromptParams, request.params, request.id)
    spec = server.prompts.get(params.name)
    if spec is None:
        raise jsonrpc.invalid_params(
            f"Unknown prompt: {params.name[:_SHOWN]}", {"name": params.name[:_SHOWN]}, request.id
        )
    return spec, params


async def _prompts_get(
    server: Server, request: Request, context: ContextFor | None
) -> dict[str, Any]:
    spec, params = _prompt_of(server, request)
    make = None if context is None else partial(context, spec.name)
    try:
        return await spec.render(params.arguments, make)
    except PromptArgumentsError as exc:
        raise jsonrpc.invalid_params(str(exc), {"name": spec.name}, request.id) from None
    except JsonRpcError:
        raise
    except UrlElicitationRequired as exc:
        raise exc.to_jsonrpc().with_id(request.id) from None
    except (ErlmcpError, trio.TooSlowError) as exc:  # what asking the client may raise
        log.info("prompt_failed", prompt=spec.name[:_SHOWN], error=type(exc).__name__)
        message = f"Prompt {spec.name[:_SHOWN]!r} failed: {exc}"
        raise jsonrpc.internal_error(message, {"name": spec.name[:_SHOWN]}, request.id) from None
    except Exception as exc:
        raise _internal(f"getting prompt {spec.name!r}", exc, request.id) from None


async def _complete(server: Server, request: Request, context: ContextFor | None) -> dict[str, Any]:
    params = parse_params(CompleteParams, request.params, request.id)
    ref = params.ref
    completion = CompletionRequest(
        ref_type=ref.type,
        ref=ref.name if isinstance(ref, PromptReference) else ref.uri,
        argument=params.argument.name,
        value=params.argument.value,
        context=dict((params.context.arguments if params.context else None) or {}),
    )
    try:
        return await server.completions.complete(
            completion, prompts=server.prompts, resources=server.resources
        )
    except UnknownReference as exc:
        raise jsonrpc.invalid_params(str(exc), None, request.id) from None
    except JsonRpcError:
        raise
    except Exception as exc:
        raise _internal(f"completing {completion.argument!r}", exc, request.id) from None


Handler = Callable[["Server", Request, ContextFor | None], Awaitable[dict[str, Any]]]

#: The methods :func:`answer` serves, each with the capability it belongs to.
METHODS: Final[dict[str, tuple[str, Handler]]] = {
    "resources/list": ("resources", _resources_list),
    "resources/templates/list": ("resources", _templates_list),
    "resources/read": ("resources", _resources_read),
    "prompts/list": ("prompts", _prompts_list),
    "prompts/get": ("prompts", _prompts_get),
    "completion/complete": ("completions", _complete),
}

#: Methods that need a connection's state (answered by the session era only).
SUBSCRIPTION_METHODS: Final = frozenset({"resources/subscribe", "resources/unsubscribe"})


def offered(server: Server, method: str) -> bool:
    """Whether ``server`` offers the capability ``method`` belongs to."""
    if method in SUBSCRIPTION_METHODS:
        return "resources" in server.capabilities()
    entry = METHODS.get(method)
    return entry is not None and entry[0] in server.capabilities()


async def answer(
    server: Server, request: Request, context: ContextFor | None = None
) -> dict[str, Any]:
    """The result of one of :data:`METHODS`.

    Args:
        server: The server whose registries answer.
        request: The request.
        context: Builds the ``Context`` of a prompt that takes one (``prompts/get``); a
            prompt that takes one without it is an internal error.

    Raises:
        JsonRpcError: see the module docstring.
    """
    entry = METHODS.get(request.method)
    if entry is None or not offered(server, request.method):
        raise jsonrpc.method_not_found(request.method, request.id)
    return await entry[1](server, request, context)


def subscribable(server: Server, request: Request) -> str:
    """Check a ``resources/subscribe`` or ``unsubscribe``; the URI.

    Raises:
        JsonRpcError: ``-32601`` (no resources offered), ``-32602`` (bad params) or, for
            ``subscribe``, ``-32002`` (no such resource).
    """
    if not offered(server, request.method):
        raise jsonrpc.method_not_found(request.method, request.id)
    uri = parse_params(ResourceUriParams, request.params, request.id).uri
    if request.method == "resources/subscribe" and not server.resources.exists(uri):
        raise ResourceNotFound(uri).to_jsonrpc().with_id(request.id)
    return uri
