"""``erlmcp-py connect``'s command line: its options, the connection, and the two threads.

Theory of operation
-------------------
:func:`run` hands the process's terminal to a :class:`~._console.Console` in the main thread
(line editing needs it there: see :mod:`~._console`) and runs the client on trio in a second
thread: the connection (a wire and a :class:`~erlmcp_py.client.ClientSession` configured by
:func:`session_options`), then the REPL, the one ``--call`` or the one ``--task``
(:mod:`~._commands`). Ctrl-C comes from the console as a call into trio and goes to
:meth:`~._app.ConnectApp.interrupt`; when there is nothing to stop, the client withdraws its
prompt, says goodbye and leaves with status 130.

The session declares form and URL elicitation and, on 2026-07-28, the tasks extension (unless
``--no-tasks``): a call answered with a task is followed to its end (:mod:`~._tasks`), and
``--task TASK_ID`` (which speaks 2026-07-28 unless told otherwise) follows one started
earlier, then exits. The user's locale (``--lang``, else the POSIX locale variables) is the
client's and is declared to the server: in ``_meta`` (on ``initialize`` in a session, on every
request on 2026-07-28, with the log level ``info``, the level a session starts at) and, over
HTTP, as ``Accept-Language``. On 2026-07-28 a call's rounds are not bounded: a person answers
each one.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Final

import trio

from erlmcp_py.client import (
    ClientRequestError,
    ConnectionLost,
    EndpointNotFound,
    OnNotification,
    ServerExited,
    ServerRequest,
    SessionOptions,
    Wire,
    open_client_session,
    open_http_wire,
    open_stdio_wire,
)
from erlmcp_py.connect._app import ConnectApp
from erlmcp_py.connect._commands import call_once, repl, task_once
from erlmcp_py.connect._console import Console, Terminal, history_file
from erlmcp_py.core.i18n import LOCALES, Texts, choose_locale
from erlmcp_py.core.tasks import TASKS_EXTENSION

__all__ = [
    "CAPABILITIES",
    "CLIENT_INFO",
    "MODERN",
    "PROTOCOLS",
    "SESSION",
    "TASK_CAPABILITIES",
    "add_arguments",
    "run",
    "session_options",
]

SESSION: Final = "2025-11-25"
MODERN: Final = "2026-07-28"
#: The protocol versions ``connect --protocol`` speaks.
PROTOCOLS: Final = (SESSION, MODERN)
#: What the client can show: forms and URL pages.
CAPABILITIES: Final[Mapping[str, Any]] = {"elicitation": {"form": {}, "url": {}}}
#: What it declares on 2026-07-28 besides: it follows tasks (:mod:`~._tasks`).
TASK_CAPABILITIES: Final[Mapping[str, Any]] = {
    **CAPABILITIES,
    "extensions": {TASKS_EXTENSION: {}},
}
CLIENT_INFO: Final[Mapping[str, Any]] = {"name": "erlmcp-py-connect", "version": "0.1.0"}
#: The server log messages a 2026-07-28 request asks for (those of a session by default).
LOG_LEVEL: Final = "info"

_INTERRUPTED = 130

Answer = Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]


def session_options(
    protocol: str,
    answer: Answer,
    on_notification: OnNotification | None = None,
    *,
    locale: str | None = None,
    tasks: bool = True,
) -> SessionOptions:
    """The terminal client's session (see the module docstring).

    Args:
        protocol: ``2025-11-25`` or ``2026-07-28`` (see :data:`PROTOCOLS`).
        answer: Answers a server request or an input request ``(method, params)``
            (:meth:`~._app.ConnectApp.on_request`).
        on_notification: Sees each notification.
        locale: The user's locale, declared to the server.
        tasks: On 2026-07-28, declare the tasks extension (:data:`TASK_CAPABILITIES`).
    """

    async def handler(request: ServerRequest) -> Mapping[str, Any]:
        return await answer(request.method, request.params)

    return SessionOptions(
        protocol_version=protocol,
        capabilities=TASK_CAPABILITIES if tasks and protocol == MODERN else CAPABILITIES,
        client_info=CLIENT_INFO,
        locale=locale,
        log_level=LOG_LEVEL,
        handler=handler,
        on_notification=on_notification,
        max_rounds=None,
    )


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
        default=None,
        help=f"protocol era: {PROTOCOLS[0]} (session, initialize) or {PROTOCOLS[1]} "
        f"(stateless, retried calls, tasks); default {SESSION}, with --task {MODERN}",
    )
    once = parser.add_mutually_exclusive_group()
    once.add_argument(
        "--call",
        nargs="+",
        metavar=("TOOL", "KEY=VALUE"),
        default=None,
        help="call one tool and exit (status 1 on a tool error) instead of the prompt",
    )
    once.add_argument(
        "--task",
        default=None,
        metavar="TASK_ID",
        help=f"follow a task started earlier ({MODERN}) to its end and exit (status 1 "
        "unless it completes without a tool error)",
    )
    parser.add_argument(
        "--no-tasks",
        action="store_true",
        help=f"on {MODERN}, do not declare the tasks extension: a tool that may run as a "
        "task runs as a call",
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
        async with open_http_wire(
            args.target[0], headers=args.header or (), accept_language=app.t.locale
        ) as wire:
            yield wire
        return
    stderr_file = None
    if args.server_stderr:
        stderr_file = await trio.to_thread.run_sync(open, args.server_stderr, "ab")
    try:
        async with open_stdio_wire(
            args.target,
            stderr=stderr_file.fileno() if stderr_file is not None else subprocess.DEVNULL,
            close_timeout=5.0,
            start_new_session=True,  # the terminal's Ctrl-C is for the client, not the server
        ) as stdio:
            yield stdio
    finally:
        if stderr_file is not None:
            stderr_file.close()


_FAILURES = (ConnectionLost, OSError, ValueError, ClientRequestError)


def _leaf(exc: BaseException) -> BaseException:
    """The one exception a chain of single-member nursery groups carries."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _reason(t: Texts, exc: BaseException) -> str:
    """Why the client could not connect, in the user's words."""
    if isinstance(exc, EndpointNotFound):
        if exc.suggestion is None:
            return t("no_endpoint", url=exc.url)
        return t("no_endpoint_hint", url=exc.url, suggestion=exc.suggestion)
    if isinstance(exc, ServerExited):
        return t("server_exited")
    return str(exc)


async def _session(args: argparse.Namespace, app: ConnectApp) -> int:
    io, t = app.io, app.t
    connected = False
    try:
        options = session_options(
            args.protocol,
            app.on_request,
            app.on_notification,
            locale=t.locale,
            tasks=not args.no_tasks,
        )
        async with (
            _open_wire(args, app) as wire,
            open_client_session(wire, **options) as client,
        ):
            await client.handshake()
            connected = True
            transport = "HTTP" if _is_url(args.target) else "stdio"
            info = client.server_info
            server = f"{info.get('name', '?')} {info.get('version', '')}".strip()
            protocol = client.protocol_version
            io.say(t("connected", server=server, protocol=protocol, transport=transport))
            if args.task is not None:
                return await task_once(client, app, args.task)
            if args.call is None:
                return await repl(client, app)
            return await call_once(client, app, args.call)
    except (*_FAILURES, BaseExceptionGroup) as raised:
        exc = _leaf(raised)
        if not isinstance(exc, _FAILURES):
            raise
        if connected and isinstance(exc, ConnectionLost):
            io.say(t("connection_lost"))
        else:
            io.say(t("connect_failed", reason=_reason(t, exc)))
        return 1


async def _main(args: argparse.Namespace, console: Console, t: Texts) -> int:
    terminal = Terminal(console)
    interrupts_in, interrupts = trio.open_memory_channel[None](math.inf)
    console.attach(
        trio.lowlevel.current_trio_token(),
        terminal.deliver,
        partial(interrupts_in.send_nowait, None),
    )
    app = ConnectApp(terminal, t)
    status = _INTERRUPTED
    try:
        async with trio.open_nursery() as nursery:

            async def on_interrupts() -> None:
                async for _ in interrupts:
                    if not app.interrupt():
                        terminal.close_prompts()
                        terminal.say(t("bye"))
                        nursery.cancel_scope.cancel()
                        return

            nursery.start_soon(on_interrupts)
            status = await _session(args, app)
            nursery.cancel_scope.cancel()
    finally:
        console.stop()
    return status


def run(args: argparse.Namespace) -> int:
    """Run ``erlmcp-py connect`` with parsed options; the exit status (2: no server named)."""
    if not args.target and args.call and _is_url(args.call[-1:]):
        args.target = [args.call.pop()]  # ``--call TOOL k=v URL``: the URL ends the call
    if not args.target or (args.call is not None and not args.call):
        print("erlmcp-py connect: name a server: URL, or -- CMD ARGS", file=sys.stderr)
        return 2
    if args.protocol is None:
        args.protocol = MODERN if args.task is not None else SESSION
    if args.task is not None and (args.protocol != MODERN or args.no_tasks):
        print(
            f"erlmcp-py connect: --task needs --protocol {MODERN} and the tasks extension "
            "(no --no-tasks)",
            file=sys.stderr,
        )
        return 2
    t = Texts(choose_locale(args.lang, os.environ))
    console = Console(t, history_file(os.environ))
    return console.run(partial(trio.run, _main, args, console, t))
