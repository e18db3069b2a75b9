"""``erlmcp-py connect``: the terminal client's REPL, its terminal and its Ctrl-C.

Theory of operation
-------------------
One trio run holds three things: a thread that reads the terminal (``os.read`` on fd 0, so a
read left behind at exit holds no lock) and sends whole lines into a channel; the connection
(:mod:`~._wire`, :mod:`~._client`); and the REPL or the one ``--call``. Prompts read from the
channel, so a prompt can be cancelled without losing a line typed later.

Elicitations are shown one at a time (a lock). SIGINT is received as a signal, never as
``KeyboardInterrupt``, and stops the innermost thing running: while an elicitation is on
screen, Ctrl-C cancels that prompt and the elicitation is answered ``cancel``; while a tool call
runs (waiting for a URL-mode page, or a slow tool), it stops the call (the wire tells the
server: ``notifications/cancelled`` on stdio, the POST closed on HTTP) and the REPL prompt comes
back; at the REPL prompt it leaves the client with status 130.

Server notifications are printed as they arrive, on a line of their own above the open prompt,
which is then shown again: the deadline warning (the server's own message, in the locale the
client declared; ``Closing in {seconds}s`` when it sends none), log messages, progress, and
the end of a URL-mode page.

The user's locale (``--lang``, else the POSIX locale variables) is the client's and is
declared to the server: in ``_meta`` (see :mod:`~._client`) and, over HTTP, as
``Accept-Language``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import signal
import subprocess
import sys
import webbrowser
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

import trio

from erlmcp_py.connect._arguments import ArgumentError, check_arguments, parse_arguments
from erlmcp_py.connect._client import PROTOCOLS, SESSION, McpClient
from erlmcp_py.connect._render import Answer, ask_form, ask_url
from erlmcp_py.connect._wire import (
    ConnectionLost,
    RpcError,
    Wire,
    open_http_wire,
    open_stdio_wire,
)
from erlmcp_py.core.i18n import LOCALES, Texts, choose_locale

__all__ = ["ConnectApp", "Terminal", "add_arguments", "read_lines", "run"]

#: JSON-RPC error of a call that needs URL-mode elicitations completed first.
URL_ELICITATION_REQUIRED = -32042
_INTERRUPTED = 130


@dataclass(eq=False)
class Terminal:
    """A :class:`~._render.Prompter` on the process's terminal (see the module docstring)."""

    lines: trio.MemoryReceiveChannel[str | None]
    out: TextIO = field(default_factory=lambda: sys.stdout)
    _prompt: str | None = None
    _ended: bool = False

    async def ask(self, prompt: str) -> str:
        """Show ``prompt``; the next line typed.

        Raises:
            EOFError: the input has ended.
        """
        if self._ended:
            raise EOFError
        self.out.write(prompt)
        self.out.flush()
        self._prompt = prompt
        try:
            line = await self.lines.receive()
        except trio.EndOfChannel:
            line = None
        finally:
            self._prompt = None
        if line is None:
            self._ended = True
            self.out.write("\n")
            raise EOFError
        return line

    def say(self, text: str) -> None:
        """Print ``text``."""
        self.out.write(text + "\n")
        self.out.flush()

    def notice(self, text: str) -> None:
        """Print ``text`` above the open prompt (if any), then show the prompt again."""
        if self._prompt is None:
            self.say(text)
        else:
            self.out.write(f"\n{text}\n{self._prompt}")
            self.out.flush()

    def interrupted(self) -> None:
        """End the line the user was typing on (the terminal echoed ``^C``)."""
        if self._prompt is not None:
            self.out.write("\n")
            self.out.flush()
            self._prompt = None


async def read_lines(send: trio.MemorySendChannel[str | None], fd: int = 0) -> None:
    """Send each line read from ``fd`` (without its line end), then ``None`` at its end."""
    buffer = b""
    async with send:
        while True:
            chunk = await trio.to_thread.run_sync(os.read, fd, 4096, abandon_on_cancel=True)
            if not chunk:
                if buffer:
                    await send.send(buffer.decode("utf-8", "replace"))
                await send.send(None)
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                await send.send(line.rstrip(b"\r").decode("utf-8", "replace"))


@dataclass(eq=False)
class ConnectApp:
    """What the user sees of one server: elicitations, notifications and Ctrl-C.

    Attributes:
        io: The terminal.
        t: The catalog in the user's locale.
        open_page: Opens a URL in the browser (``webbrowser.open``).
    """

    io: Terminal
    t: Texts
    open_page: Callable[[str], object] = webbrowser.open
    _lock: trio.Lock = field(default_factory=trio.Lock)
    _current: trio.CancelScope | None = None
    _call: trio.CancelScope | None = None
    _pages: set[str] = field(default_factory=set)

    async def on_request(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Answer a server request: ``elicitation/create`` on screen, ``ping``, ``roots/list``.

        Raises:
            RpcError: any other method (``-32601``).
        """
        if method == "elicitation/create":
            return (await self.elicit(params)).result()
        if method == "ping":
            return {}
        if method == "roots/list":
            return {"roots": []}
        self.io.notice(self.t("server_request_unsupported", method=method))
        raise RpcError(-32601, "Method not found")

    async def elicit(self, params: Mapping[str, Any], *, follow: bool = True) -> Answer:
        """Show one elicitation (form or URL mode) and return the user's answer.

        Args:
            params: The ``elicitation/create`` params.
            follow: After a URL-mode ``accept``, say that the client waits for the page and
                announce its ``notifications/elicitation/complete``; ``False`` for the pages
                of a ``-32042`` error, whose call has already ended.
        """
        message = str(params.get("message", ""))
        async with self._lock:
            with trio.CancelScope() as scope:
                self._current = scope
                try:
                    if params.get("mode") == "url":
                        answer = await ask_url(
                            self.io, self.t, message, str(params.get("url", "")), self.open_page
                        )
                        page = params.get("elicitationId")
                        if follow and answer.action == "accept" and isinstance(page, str):
                            self._pages.add(page)
                            self.io.say(self.t("url_waiting"))
                    else:
                        schema = params.get("requestedSchema")
                        answer = await ask_form(
                            self.io, self.t, message, schema if isinstance(schema, Mapping) else {}
                        )
                finally:
                    self._current = None
            if scope.cancelled_caught:
                self.io.say(self.t("cancelled"))
                self.io.say(self.t("interrupt_exits"))
                return Answer("cancel")
            return answer

    def interrupt(self) -> bool:
        """Ctrl-C: cancel the elicitation on screen, else stop the running call; ``False``
        when there is neither (the client leaves)."""
        self.io.interrupted()
        scope = self._current if self._current is not None else self._call
        if scope is None:
            return False
        scope.cancel()
        return True

    async def call_tool(
        self, client: McpClient, name: str, arguments: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """``client.call_tool`` that Ctrl-C can stop; ``None`` when it was stopped."""
        with trio.CancelScope() as scope:
            self._call = scope
            try:
                return await client.call_tool(name, arguments)
            finally:
                self._call = None
        self.io.say(self.t("call_stopped"))
        self.io.say(self.t("interrupt_exits"))
        return None

    def on_notification(self, method: str, params: Mapping[str, Any]) -> None:
        """Print what a notification tells the user."""
        if method == "notifications/message":
            data = params.get("data")
            if params.get("level") == "warning" and isinstance(data, Mapping):
                seconds = data.get("remainingSeconds")
                if isinstance(seconds, int | float):
                    said = data.get("message")  # the server's words, in the declared locale
                    text = (
                        said
                        if isinstance(said, str) and said.strip()
                        else self.t("mcp.elicitation.timeout_warning", seconds=math.ceil(seconds))
                    )
                    self.io.notice(f"⚠ {text}")
                    return
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            self.io.notice(self.t("server_log", level=params.get("level", "info"), text=text))
        elif method == "notifications/cancelled":
            if self._current is not None:  # the wire has cancelled the question on screen
                self.io.interrupted()
                self.io.say(self.t("closed_by_server"))
        elif method == "notifications/elicitation/complete":
            if params.get("elicitationId") in self._pages:
                self._pages.discard(params["elicitationId"])
                self.io.notice(self.t("url_done"))
        elif method == "notifications/progress":
            total = params.get("total")
            self.io.notice(
                self.t(
                    "progress",
                    progress=params.get("progress"),
                    total="" if total is None else f"/{total}",
                )
            )


# --------------------------------------------------------------------------------------------
# The commands
# --------------------------------------------------------------------------------------------


def _show_tools(io: Terminal, t: Texts, tools: Sequence[Mapping[str, Any]]) -> None:
    if not tools:
        io.say(t("no_tools"))
        return
    io.say(t("tools_heading", count=len(tools)))
    for tool in tools:
        schema = tool.get("inputSchema")
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        required = set(schema.get("required") or ()) if isinstance(schema, Mapping) else set()
        args = " ".join(
            f"{name}{'*' if name in required else ''}="
            for name in (props if isinstance(props, Mapping) else {})
        )
        description = str(tool.get("description") or "").strip().splitlines()
        line = f"  {tool.get('name')}{(' ' + args) if args else ''}"
        io.say(f"{line}  — {description[0]}" if description else line)


def _show_result(io: Terminal, t: Texts, result: Mapping[str, Any]) -> bool:
    """Print a tool result; whether it is an error."""
    error = bool(result.get("isError"))
    io.say(t("tool_error") if error else t("result"))
    content = result.get("content")
    items = content if isinstance(content, list) else []
    for item in items:
        if isinstance(item, Mapping) and item.get("type") == "text":
            for line in str(item.get("text", "")).splitlines() or [""]:
                io.say(f"  {line}")
        else:
            io.say(f"  {json.dumps(item, ensure_ascii=False)}")
    if not items and "structuredContent" in result:
        io.say(f"  {json.dumps(result['structuredContent'], ensure_ascii=False)}")
    return error


async def _call(
    client: McpClient, app: ConnectApp, tools: Sequence[Mapping[str, Any]], words: Sequence[str]
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
        result = await app.call_tool(client, name, arguments)
    except RpcError as exc:
        if exc.code == URL_ELICITATION_REQUIRED and isinstance(exc.data, Mapping):
            io.say(t("url_required"))
            for page in exc.data.get("elicitations") or ():
                if isinstance(page, Mapping):
                    await app.elicit({**page, "mode": "url"}, follow=False)
        io.say(t("rpc_error", code=exc.code, message=exc.message))
        return False
    return result is not None and not _show_result(io, t, result)


async def _repl(client: McpClient, app: ConnectApp) -> int:
    io, t = app.io, app.t
    io.say(t("type_help"))
    tools: list[dict[str, Any]] | None = None
    while True:
        try:
            line = await io.ask(t("prompt"))
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
        try:
            if command in ("quit", "exit"):
                io.say(t("bye"))
                return 0
            if command == "help":
                io.say(t("help"))
            elif command == "tools":
                tools = await client.list_tools()
                _show_tools(io, t, tools)
            elif command == "call":
                if tools is None:
                    tools = await client.list_tools()
                await _call(client, app, tools, rest)
            else:
                io.say(t("unknown_command", command=words[0]))
        except RpcError as exc:
            io.say(t("rpc_error", code=exc.code, message=exc.message))


# --------------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``erlmcp-py connect``."""
    parser.add_argument(
        "target",
        nargs="*",
        metavar="URL | -- CMD ARGS",
        help="a Streamable HTTP endpoint (http[s]://host/mcp), or after -- the command "
        "that starts a stdio server",
    )
    parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default=SESSION,
        help=f"protocol era: {PROTOCOLS[0]} (session, initialize) or {PROTOCOLS[1]} "
        f"(stateless, retried calls); default {SESSION}",
    )
    parser.add_argument(
        "--call",
        nargs="+",
        metavar=("TOOL", "KEY=VALUE"),
        default=None,
        help="call one tool and exit (status 1 on a tool error) instead of the prompt",
    )
    parser.add_argument(
        "--lang",
        choices=LOCALES,
        default=None,
        help="language, also declared to the server for what it says (re-prompts, deadline "
        "warnings); default: from LC_ALL/LANG",
    )
    parser.add_argument(
        "--header",
        type=_header,
        action="append",
        default=None,
        metavar="NAME:VALUE",
        help="with a URL: an HTTP header for every request, e.g. 'Authorization: Bearer "
        "TOKEN' (repeat for several)",
    )
    parser.add_argument(
        "--server-stderr",
        default=None,
        metavar="FILE",
        help="with a command: append the server's stderr to FILE (default: discarded)",
    )


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip() or name.strip() != name or not name.isascii():
        raise argparse.ArgumentTypeError("must be NAME:VALUE")
    return name, value.strip()


def _is_url(target: Sequence[str]) -> bool:
    return len(target) == 1 and target[0].startswith(("http://", "https://"))


@asynccontextmanager
async def _open_wire(args: argparse.Namespace, app: ConnectApp) -> AsyncIterator[Wire]:
    if _is_url(args.target):
        modern = args.protocol != SESSION
        async with open_http_wire(
            args.target[0],
            app.on_request,
            app.on_notification,
            modern=modern,
            headers=args.header or (),
            accept_language=app.t.locale,
        ) as wire:
            yield wire
        return
    stderr_file = None
    if args.server_stderr:
        stderr_file = await trio.to_thread.run_sync(open, args.server_stderr, "ab")
    try:
        async with open_stdio_wire(
            args.target,
            app.on_request,
            app.on_notification,
            stderr=stderr_file.fileno() if stderr_file is not None else subprocess.DEVNULL,
        ) as wire:
            yield wire
    finally:
        if stderr_file is not None:
            stderr_file.close()


_FAILURES = (ConnectionLost, OSError, ValueError, RpcError)


def _leaf(exc: BaseException) -> BaseException:
    """The one exception a chain of single-member nursery groups carries."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def _session(args: argparse.Namespace, app: ConnectApp) -> int:
    io, t = app.io, app.t
    connected = False
    try:
        async with _open_wire(args, app) as wire:
            client = McpClient(wire, args.protocol, app.on_request, locale=t.locale)
            await client.open()
            connected = True
            transport = "HTTP" if _is_url(args.target) else "stdio"
            io.say(
                t("connected", server=client.server, protocol=client.protocol, transport=transport)
            )
            if args.call is None:
                return await _repl(client, app)
            tools = await client.list_tools()
            return 0 if await _call(client, app, tools, args.call) else 1
    except (*_FAILURES, BaseExceptionGroup) as raised:
        exc = _leaf(raised)
        if not isinstance(exc, _FAILURES):
            raise
        if connected and isinstance(exc, ConnectionLost):
            io.say(t("connection_lost"))
        else:
            io.say(t("connect_failed", reason=str(exc) or t("server_exited")))
        return 1


async def _main(args: argparse.Namespace) -> int:
    t = Texts(choose_locale(args.lang, os.environ))
    send, receive = trio.open_memory_channel[str | None](64)
    app = ConnectApp(Terminal(receive), t)
    status = _INTERRUPTED
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_lines, send)

            async def on_interrupts() -> None:
                async for _ in signals:
                    if not app.interrupt():
                        app.io.say(t("bye"))
                        nursery.cancel_scope.cancel()
                        return

            nursery.start_soon(on_interrupts)
            status = await _session(args, app)
            nursery.cancel_scope.cancel()
    return status


def run(args: argparse.Namespace) -> int:
    """Run ``erlmcp-py connect`` with parsed options; the exit status (2: no server named)."""
    if not args.target and args.call and _is_url(args.call[-1:]):
        args.target = [args.call.pop()]  # ``--call TOOL k=v URL``: the URL ends the call
    if not args.target or (args.call is not None and not args.call):
        print("erlmcp-py connect: name a server: URL, or -- CMD ARGS", file=sys.stderr)
        return 2
    return trio.run(_main, args)
