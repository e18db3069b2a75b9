"""``erlmcp-py connect``'s commands: the REPL, and what each command shows.

Theory of operation
-------------------
The REPL reads one command line (the ``mcp>`` prompt, whose lines are the command history),
splits it like a shell (:func:`shlex.split`) and runs it:

* ``tools`` and ``call TOOL key=value …``: list the tools; call one, its arguments checked
  against its ``inputSchema`` first (:mod:`~._arguments`);
* ``resources`` and ``read URI``: list the resources and resource templates; show one
  resource's contents (text as it is; binary as a one-line summary: mime type and size);
* ``prompts`` and ``prompt NAME key=value …``: list the prompts with their arguments; get one,
  its arguments (strings) checked against the ones it declares, and show its messages;
* ``task TASK_ID``: follow a task started earlier (2026-07-28, the tasks extension) to its
  end, as a ``call`` answered with a task is followed (:mod:`~._tasks`); ``cancel TASK_ID``:
  cancel one (``tasks/cancel``), then follow it to its end;
* ``help``, ``quit``.

``call``, ``prompt`` and ``read`` run under :meth:`~._app.ConnectApp.stoppable` (Ctrl-C stops
them). A ``prompts/get`` may ask the user as a ``tools/call`` does: its elicitations come to
the same :meth:`~._app.ConnectApp.on_request` (session era) or input rounds (2026-07-28), and
a ``-32042`` (a URL-mode page to complete first) is shown the same way. The tool and prompt
lists are fetched once, for ``call`` and ``prompt``, and again by ``tools`` and ``prompts``.
A server that offers no resources or prompts (``-32601``) is said to offer none.

Content (a tool's result, a prompt's messages, a resource's contents) is shown as text where
it is text, and as a one-line summary otherwise (an image's mime type and size, an embedded
resource's URI), never as base64.
"""

from __future__ import annotations

import base64
import binascii
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from erlmcp_py.client import ClientRequestError, ClientSession
from erlmcp_py.connect._app import ConnectApp
from erlmcp_py.connect._arguments import (
    ArgumentError,
    check_arguments,
    check_prompt_arguments,
    parse_arguments,
    prompt_schema,
)
from erlmcp_py.connect._console import Terminal
from erlmcp_py.connect._render import COMMANDS
from erlmcp_py.connect._tasks import follow_task
from erlmcp_py.core.i18n import Texts
from erlmcp_py.core.tasks import TASKS_EXTENSION

__all__ = ["call_once", "repl", "task_once"]

#: JSON-RPC error of a call that needs URL-mode elicitations completed first.
URL_ELICITATION_REQUIRED: Final = -32042
_METHOD_NOT_FOUND: Final = -32601


@dataclass(eq=False)
class _Lists:
    """The tools and prompts, once fetched (``call`` and ``prompt`` look names up in them)."""

    tools: list[dict[str, Any]] | None = None
    prompts: list[dict[str, Any]] | None = None


async def repl(client: ClientSession, app: ConnectApp) -> int:
    """Read and run commands until ``quit`` or the end of input; the exit status (0)."""
    io, t = app.io, app.t
    io.say(t("type_help"))
    lists = _Lists()
    while True:
        try:
            line = await io.ask(t("prompt"), history=COMMANDS)
        except EOFError:
            io.say(t("bye"))
            return 0
        try:
            words = shlex.split(line)
        except ValueError as exc:
            io.say(str(exc))
            continue
        if not words:
            continue
        command, rest = words[0].lower(), words[1:]
        if command in ("quit", "exit"):
            io.say(t("bye"))
            return 0
        try:
            if not await _run(client, app, lists, command, rest):
                io.say(t("unknown_command", command=words[0]))
        except ClientRequestError as exc:
            io.say(t("rpc_error", code=exc.code, message=exc.message))


async def call_once(client: ClientSession, app: ConnectApp, words: Sequence[str]) -> int:
    """``--call TOOL key=value …``: 0 when the call succeeded, else 1."""
    tools = await client.list_tools()
    return 0 if await _call(client, app, tools, words) else 1


async def task_once(client: ClientSession, app: ConnectApp, task_id: str) -> int:
    """``--task TASK_ID``: 0 when the task completed without a tool error, else 1."""
    return 0 if await _task(client, app, [task_id]) else 1


async def _run(
    client: ClientSession, app: ConnectApp, lists: _Lists, command: str, rest: Sequence[str]
) -> bool:
    """Run one command; ``False`` when there is no such command."""
    io, t = app.io, app.t
    if command == "help":
        io.say(t("help"))
    elif command == "tools":
        lists.tools = await client.list_tools()
        _show_tools(io, t, lists.tools)
    elif command == "call":
        if lists.tools is None:
            lists.tools = await client.list_tools()
        await _call(client, app, lists.tools, rest)
    elif command == "resources":
        await _resources(client, app)
    elif command == "read":
        await _read(client, app, rest)
    elif command == "prompts":
        lists.prompts = await _prompt_list(client, app)
        if lists.prompts is not None:
            _show_prompts(io, t, lists.prompts)
    elif command == "prompt":
        if lists.prompts is None:
            lists.prompts = await _prompt_list(client, app)
        if lists.prompts is not None:
            await _prompt(client, app, lists.prompts, rest)
    elif command in ("task", "cancel"):
        await _task(client, app, rest, cancel=command == "cancel")
    else:
        return False
    return True


# --------------------------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------------------------


def _first_line(text: object) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0] if lines else ""


def _with_description(line: str, description: object) -> str:
    first = _first_line(description)
    return f"{line}  — {first}" if first else line


def _show_tools(io: Terminal, t: Texts, tools: Sequence[Mapping[str, Any]]) -> None:
    if not tools:
        io.say(t("no_tools"))
        return
    io.say(t("tools_heading", count=len(tools)))
    for tool in tools:
        schema = tool.get("inputSchema")
        io.say(_with_description(_usage(tool.get("name"), schema), tool.get("description")))


def _usage(name: object, schema: object) -> str:
    """``  NAME key*= other=``: the arguments a tool or prompt takes (``*``: required)."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    listed = schema.get("required") if isinstance(schema, Mapping) else None
    required = set(listed) if isinstance(listed, list) else set()
    args = " ".join(
        f"{key}{'*' if key in required else ''}="
        for key in (props if isinstance(props, Mapping) else {})
    )
    return f"  {name}{(' ' + args) if args else ''}"


def _show_result(io: Terminal, t: Texts, result: Mapping[str, Any]) -> bool:
    """Print a tool result; whether it is an error."""
    error = bool(result.get("isError"))
    io.say(t("tool_error") if error else t("result"))
    content = result.get("content")
    items = content if isinstance(content, list) else []
    for item in items:
        for line in _content_lines(t, item):
            io.say(f"  {line}")
    if not items and "structuredContent" in result:
        io.say(f"  {json.dumps(result['structuredContent'], ensure_ascii=False)}")
    return error


async def _call(
    client: ClientSession, app: ConnectApp, tools: Sequence[Mapping[str, Any]], words: Sequence[str]
) -> bool:
    """``call TOOL key=value ...``; whether it succeeded."""
    io, t = app.io, app.t
    if not words:
        io.say(t("call_usage"))
        return False
    name, tokens = words[0], words[1:]
    tool = next((x for x in tools if x.get("name") == name), None)
    if tool is None:
        io.say(t("unknown_tool", name=name))
        return False
    schema = tool.get("inputSchema")
    schema = schema if isinstance(schema, Mapping) else None
    try:
        arguments = parse_arguments(tokens, schema, t)
        check_arguments(name, arguments, schema, t)
    except ArgumentError as exc:
        for line in exc.lines:
            io.say(line)
        return False
    try:
        result = await app.stoppable("call_stopped", client.call_tool, name, arguments)
    except ClientRequestError as exc:
        await _failed(app, exc)
        return False
    if result is not None and result.get("resultType") == "task":
        return await _follow(client, app, result)
    return result is not None and not _show_result(io, t, result)


# --------------------------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------------------------


async def _task(
    client: ClientSession, app: ConnectApp, words: Sequence[str], *, cancel: bool = False
) -> bool:
    """``task TASK_ID`` (``cancel TASK_ID`` with ``cancel``); whether the task completed
    without a tool error."""
    io, t = app.io, app.t
    if len(words) != 1:
        io.say(t("cancel_usage" if cancel else "task_usage"))
        return False
    extensions = client.capabilities.get("extensions")
    if (
        not client.modern
        or not isinstance(extensions, Mapping)
        or TASKS_EXTENSION not in extensions
    ):
        io.say(t("tasks_unavailable"))
        return False
    try:
        if cancel:
            io.say(t("task_cancelling"))
            await client.request("tasks/cancel", {"taskId": words[0]})
        task = await client.request("tasks/get", {"taskId": words[0]})
    except ClientRequestError as exc:
        io.say(t("rpc_error", code=exc.code, message=exc.message))
        return False
    return await _follow(client, app, task)


async def _follow(client: ClientSession, app: ConnectApp, task: Mapping[str, Any]) -> bool:
    """Follow a task to its end and show it; whether it completed without a tool error."""
    io, t = app.io, app.t
    try:
        ended = await follow_task(client, app, task)
    except ClientRequestError as exc:
        io.say(t("rpc_error", code=exc.code, message=exc.message))
        return False
    if ended is None:  # left running
        return False
    result, error = ended.get("result"), ended.get("error")
    if ended.get("status") == "completed" and isinstance(result, Mapping):
        return not _show_result(io, t, result)
    if ended.get("status") == "failed" and isinstance(error, Mapping):
        io.say(t("task_error", code=error.get("code"), message=error.get("message")))
    return False


async def _failed(app: ConnectApp, exc: ClientRequestError) -> None:
    """Say a call's (or a prompt's) error; a ``-32042`` shows the pages it needs first."""
    io, t = app.io, app.t
    if exc.code == URL_ELICITATION_REQUIRED and isinstance(exc.data, Mapping):
        io.say(t("url_required"))
        for page in exc.data.get("elicitations") or ():
            if isinstance(page, Mapping):
                await app.elicit({**page, "mode": "url"}, follow=False)
    io.say(t("rpc_error", code=exc.code, message=exc.message))


# --------------------------------------------------------------------------------------------
# Resources
# --------------------------------------------------------------------------------------------


async def _resources(client: ClientSession, app: ConnectApp) -> None:
    io, t = app.io, app.t
    try:
        resources = await client.list_resources()
    except ClientRequestError as exc:
        if exc.code != _METHOD_NOT_FOUND:
            raise
        io.say(t("resources_not_offered"))
        return
    try:
        templates = await client.list_resource_templates()
    except ClientRequestError as exc:
        if exc.code != _METHOD_NOT_FOUND:
            raise
        templates = []
    if not resources and not templates:
        io.say(t("no_resources"))
        return
    if resources:
        io.say(t("resources_heading", count=len(resources)))
        for resource in resources:
            io.say(_resource_line(resource, "uri"))
    if templates:
        io.say(t("templates_heading", count=len(templates)))
        for template in templates:
            io.say(_resource_line(template, "uriTemplate"))


def _resource_line(entry: Mapping[str, Any], key: str) -> str:
    mime = entry.get("mimeType")
    line = f"  {entry.get(key)}{f' ({mime})' if isinstance(mime, str) and mime else ''}"
    title = entry.get("title") or entry.get("name")
    described = entry.get("description") or title
    return _with_description(line, described)


async def _read(client: ClientSession, app: ConnectApp, words: Sequence[str]) -> None:
    io, t = app.io, app.t
    if len(words) != 1:
        io.say(t("read_usage"))
        return
    result = await app.stoppable("request_stopped", client.read_resource, words[0])
    if result is None:
        return
    contents = result.get("contents")
    for item in contents if isinstance(contents, list) else ():
        if not isinstance(item, Mapping):
            continue
        mime = item.get("mimeType")
        if "text" in item:
            io.say(f"{item.get('uri')}{f' ({mime})' if mime else ''}:")
            for line in str(item["text"]).splitlines() or [""]:
                io.say(f"  {line}")
        else:
            io.say(f"{item.get('uri')}: {_binary(t, 'content_blob', mime, item.get('blob'))}")


def _size(data: object) -> int:
    """How many bytes base64 ``data`` holds."""
    try:
        return len(base64.b64decode(str(data or ""), validate=False))
    except (binascii.Error, ValueError):
        return len(str(data or "")) * 3 // 4


def _binary(t: Texts, kind: str, mime: object, data: object) -> str:
    """``image, image/png, 68 bytes``: what binary content is, never its bytes."""
    shown = mime if isinstance(mime, str) and mime else t("type_unknown")
    return t("binary_summary", kind=t(kind), mime=shown, size=_size(data))


def _content_lines(t: Texts, item: object) -> list[str]:
    """One content block (text, image, audio, resource, resource link) as lines to show."""
    if not isinstance(item, Mapping):
        return [json.dumps(item, ensure_ascii=False)]
    kind = item.get("type")
    if kind == "text":
        return str(item.get("text", "")).splitlines() or [""]
    if kind in ("image", "audio"):
        return [f"[{_binary(t, f'content_{kind}', item.get('mimeType'), item.get('data'))}]"]
    if kind == "resource" and isinstance(item.get("resource"), Mapping):
        resource = item["resource"]
        head = t("content_resource", uri=resource.get("uri"))
        if "text" in resource:
            return [f"[{head}]", *(str(resource["text"]).splitlines() or [""])]
        blob = _binary(t, "content_blob", resource.get("mimeType"), resource.get("blob"))
        return [f"[{head}: {blob}]"]
    if kind == "resource_link":
        return [f"[{t('content_link', uri=item.get('uri'))}]"]
    return [json.dumps(item, ensure_ascii=False)]


# --------------------------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------------------------


async def _prompt_list(client: ClientSession, app: ConnectApp) -> list[dict[str, Any]] | None:
    """The server's prompts; ``None`` (and said so) when it offers none."""
    try:
        return await client.list_prompts()
    except ClientRequestError as exc:
        if exc.code != _METHOD_NOT_FOUND:
            raise
        app.io.say(app.t("prompts_not_offered"))
        return None


def _show_prompts(io: Terminal, t: Texts, prompts: Sequence[Mapping[str, Any]]) -> None:
    if not prompts:
        io.say(t("no_prompts"))
        return
    io.say(t("prompts_heading", count=len(prompts)))
    for prompt in prompts:
        schema = prompt_schema(prompt.get("arguments"))
        io.say(_with_description(_usage(prompt.get("name"), schema), prompt.get("description")))


async def _prompt(
    client: ClientSession,
    app: ConnectApp,
    prompts: Sequence[Mapping[str, Any]],
    words: Sequence[str],
) -> bool:
    """``prompt NAME key=value ...``; whether it succeeded."""
    io, t = app.io, app.t
    if not words:
        io.say(t("prompt_usage"))
        return False
    name, tokens = words[0], words[1:]
    prompt = next((x for x in prompts if x.get("name") == name), None)
    if prompt is None:
        io.say(t("unknown_prompt", name=name))
        return False
    try:
        arguments = parse_arguments(tokens, prompt_schema(prompt.get("arguments")), t)
        check_prompt_arguments(name, arguments, prompt.get("arguments"), t)
    except ArgumentError as exc:
        for line in exc.lines:
            io.say(line)
        return False
    try:
        result = await app.stoppable("request_stopped", client.get_prompt, name, arguments)
    except ClientRequestError as exc:
        await _failed(app, exc)
        return False
    if result is None:
        return False
    io.say(t("prompt_messages"))
    messages = result.get("messages")
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, Mapping):
            continue
        first, *more = _content_lines(t, message.get("content"))
        io.say(f"  {message.get('role', '?')}: {first}")
        for line in more:
            io.say(f"    {line}")
    return True
