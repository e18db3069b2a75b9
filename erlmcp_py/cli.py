"""The ``erlmcp-py`` command: ``serve`` the example server, or run the ``demo``.

Theory of operation of ``serve``'s graceful stop
-------------------------------------------------
``serve`` runs under process supervisors (systemd, supervisord; see ``deploy/``), which stop
it with SIGTERM and kill it some seconds later. The runtime is opened here, outside the
transport, so that it can be stopped while the sessions still stand. On the first SIGTERM or
SIGINT (received with ``trio.open_signal_receiver``, so SIGINT raises no
``KeyboardInterrupt``):

1. HTTP stops accepting connections (hypercorn's graceful shutdown; idle ones are closed).
2. The elicitation runtime stops (its supervision tree, in reverse order): every pending
   elicitation ends ``failed: runtime_restarted`` — the tool waiting on it gets that outcome
   and answers its call — and the client is sent ``notifications/cancelled`` for its open
   ``elicitation/create``.
3. Whatever can still run settles — the tools finish and their answers are written — until
   every task waits (at most 1 s; ``trio.testing.wait_all_tasks_blocked``).
4. A request still in progress (a tool waiting on time or I/O) is cancelled and answered
   with a JSON-RPC internal error, "The server is shutting down" (``ServerSession.stop_calls``),
   and those answers settle the same way.
5. The sessions end. The transport returns, one ``shutdown`` line is logged (with
   ``calls_stopped``), the exit status is 0.

All of it is bounded by ``--shutdown-timeout``: past it, the ``shutdown`` line says
``clean: false`` and the process exits at once with status 1. A second signal during the
stop exits at once (status 128 + signal). End of input on stdio ends the server
(status 0).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from functools import partial
from typing import TYPE_CHECKING, NoReturn

import structlog
import trio
import trio.testing

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.logging import configure_logging

if TYPE_CHECKING:
    from erlmcp_py.actors.runtime import Runtime
    from erlmcp_py.mcp.server import Server
    from erlmcp_py.transports.http import Listening

__all__ = ["DEFAULT_SHUTDOWN_TIMEOUT", "load_server", "main", "runtime_config"]

#: Seconds ``serve`` may take to stop after SIGTERM (``--shutdown-timeout``); keep the process
#: supervisor's own limit (systemd ``TimeoutStopSec``, supervisord ``stopwaitsecs``) above it.
DEFAULT_SHUTDOWN_TIMEOUT = 10.0
SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_SETTLE_S = 1.0  # longest wait for the tools' last answers once the runtime has stopped

log = structlog.get_logger("erlmcp.serve")


def runtime_config(
    elicitation_timeout: float | None, dev: bool, rate: int | None = None
) -> RuntimeConfig:
    """The runtime policy for ``serve``'s options.

    Args:
        elicitation_timeout: Deadline of every elicitation (form and URL), or ``None`` for the
            defaults (300 s / 600 s); the expiry warning comes at most a quarter of it early.
        dev: Allow ``http://`` URLs to loopback hosts in URL mode.
        rate: New elicitations per client per minute, or ``None`` for the default (10).
    """
    fields: dict[str, object] = {"url_dev": dev}
    if rate is not None:
        fields["rate"] = rate
    if elicitation_timeout is not None:
        fields.update(
            form_deadline_s=elicitation_timeout,
            url_deadline_s=elicitation_timeout,
            warn_before_s=min(60.0, elicitation_timeout / 4),
        )
    return RuntimeConfig.model_validate(fields)


def load_server(spec: str, config: RuntimeConfig) -> Server:
    """The server named by ``--server MODULE:NAME``.

    ``NAME`` is a :class:`~erlmcp_py.mcp.server.Server`, or a function that takes the
    :class:`RuntimeConfig` built from the command's options (``--rate``,
    ``--elicitation-timeout``, ``--dev``) and returns one, like the bundled
    ``erlmcp_py.example_server:build_server``. A ``Server`` object keeps its own policy, except
    for what those options set. The current directory is importable.

    Raises:
        ValueError: ``spec`` is not ``MODULE:NAME``, or does not name a server or a factory.
        ImportError: the module cannot be imported.
    """
    from erlmcp_py.mcp.server import Server

    module_name, sep, name = spec.partition(":")
    if not sep or not module_name or not name.isidentifier():
        raise ValueError(f"--server must be MODULE:NAME, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    target = getattr(importlib.import_module(module_name), name, None)
    if isinstance(target, Server):
        given = {k: getattr(config, k) for k in config.model_fields_set if k != "url_dev"}
        if config.url_dev:
            given["url_dev"] = True
        if given:
            target.runtime_config = target.runtime_config.model_copy(update=given)
        return target
    if callable(target):
        server = target(config)
        if isinstance(server, Server):
            return server
        raise ValueError(f"{spec} returned {type(server).__name__}, not a Server")
    raise ValueError(f"{spec} is neither a Server nor a function returning one")


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="erlmcp-py", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the bundled example server")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--elicitation-timeout",
        type=_positive,
        default=None,
        metavar="SECONDS",
        help="deadline of every elicitation (default: 300 s form, 600 s URL)",
    )
    serve.add_argument("--dev", action="store_true", help="allow http:// loopback URLs in URL mode")
    serve.add_argument(
        "--rate",
        type=_positive_int,
        default=None,
        metavar="N",
        help="new elicitations per client per minute (default: 10)",
    )
    serve.add_argument(
        "--server",
        default=None,
        metavar="MODULE:NAME",
        help="serve your own server: a Server object, or a function taking the runtime "
        "policy built from these options and returning one (default: the bundled example)",
    )
    serve.add_argument(
        "--shutdown-timeout",
        type=_positive,
        default=DEFAULT_SHUTDOWN_TIMEOUT,
        metavar="SECONDS",
        help="on SIGTERM/SIGINT, stop gracefully within this long, else exit 1 "
        f"(default: {DEFAULT_SHUTDOWN_TIMEOUT:g})",
    )
    serve.add_argument(
        "--mrtr",
        choices=("auto", "suspend", "replay"),
        default="auto",
        help="2026-07-28 retries of a call this process does not hold (another replica, a "
        "restart): auto resumes a held call and replays any other; suspend refuses them; "
        "replay keeps no call between rounds (default: auto)",
    )
    serve.add_argument("--log-format", choices=("json", "console"), default="json")
    serve.add_argument("--log-level", default="info")
    demo = sub.add_parser("demo", help="run the example server and drive it with a script")
    demo.add_argument(
        "--elicitation-timeout",
        type=_positive,
        default=2.0,
        metavar="SECONDS",
        help="deadline the demo server uses (the timeout scene waits this long)",
    )
    return parser


def _serve(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, args.log_level)
    config = runtime_config(args.elicitation_timeout, args.dev, args.rate)
    server: Server | None = None
    if args.server is not None:
        try:
            server = load_server(args.server, config)
        except (ValueError, ImportError) as exc:
            print(f"erlmcp-py serve --server {args.server}: {exc}", file=sys.stderr)
            return 2
    if server is None:
        from erlmcp_py.example_server import build_server

        server = build_server(config)
    if args.transport == "http":
        return _run(server, args, stdout_fd=None)
    # stdout belongs to MCP: keep the real one for frames, send stray prints to stderr.
    mcp_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        return _run(server, args, stdout_fd=mcp_out)
    finally:
        os.close(mcp_out)


def _run(server: Server, args: argparse.Namespace, *, stdout_fd: int | None) -> int:
    """Run ``serve`` to its end; the exit status."""
    try:
        return trio.run(partial(_serve_until_stopped, server, args, stdout_fd=stdout_fd))
    except KeyboardInterrupt:  # SIGINT before the signal receiver was installed
        return 130


async def _serve_until_stopped(
    server: Server, args: argparse.Namespace, *, stdout_fd: int | None
) -> int:
    """Serve until end of input (stdio) or a signal; then stop gracefully (module docstring)."""
    with trio.open_signal_receiver(*SHUTDOWN_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:
            stop_runtime = trio.Event()
            runtime_stopped = trio.Event()
            runtime: Runtime = await nursery.start(
                _host_runtime, server, stop_runtime, runtime_stopped
            )
            stop_accepting = trio.Event()
            transport_done = trio.Event()
            serving = trio.CancelScope()
            listening: Listening | None = await nursery.start(
                _host_transport, server, args, stdout_fd, stop_accepting, serving, transport_done
            )
            received = await _first_signal(signals, transport_done)
            if received is None:  # stdio: end of input
                nursery.cancel_scope.cancel()
                return 0
            start = trio.current_time()
            log.info(
                "shutdown_started",
                signal=received.name,
                timeout_s=args.shutdown_timeout,
                sessions=len(server.sessions),
                pending_elicitations=runtime.metrics()["pending"],
            )
            nursery.start_soon(_exit_on_second_signal, signals)
            stopped_calls = 0
            with trio.move_on_at(start + args.shutdown_timeout) as bounded:
                stop_accepting.set()
                stop_runtime.set()
                await runtime_stopped.wait()
                await _settle()
                # Requests still in progress (waiting on time or I/O) get an error answer
                # while the transports still stand; then those answers settle too.
                stopped_calls = sum(session.stop_calls() for session in list(server.sessions))
                if stopped_calls:
                    await _settle()
                if listening is not None:
                    listening.transport.close_all()
                else:
                    serving.cancel()
                await transport_done.wait()
            status = 1 if bounded.cancelled_caught else 0
            log.info(
                "shutdown",
                signal=received.name,
                clean=status == 0,
                exit_status=status,
                calls_stopped=stopped_calls,
                elapsed_s=round(trio.current_time() - start, 3),
                outcomes=runtime.metrics()["outcomes"],
            )
            if status:
                # What is left did not stop in time and may not heed cancellation either (a
                # shielded tool): the bound is the promise, so leave now.
                os._exit(status)
            nursery.cancel_scope.cancel()
            return status
    raise AssertionError("unreachable")  # pragma: no cover - the nursery returns above


async def _settle() -> None:
    """Let whatever can still run finish (answers written) until every task waits, or 1 s."""
    with trio.move_on_after(_SETTLE_S):
        await trio.testing.wait_all_tasks_blocked(cushion=0.02)


async def _host_runtime(
    server: Server,
    stop: trio.Event,
    stopped: trio.Event,
    task_status: trio.TaskStatus[Runtime] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the server's elicitation runtime until ``stop``; ``stopped`` once it has ended."""
    try:
        async with server.running() as runtime:
            task_status.started(runtime)
            await stop.wait()
    finally:
        stopped.set()


async def _host_transport(
    server: Server,
    args: argparse.Namespace,
    stdout_fd: int | None,
    stop_accepting: trio.Event,
    scope: trio.CancelScope,
    done: trio.Event,
    task_status: trio.TaskStatus[Listening | None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve over the chosen transport (with the runtime already running); ``done`` at its end."""
    try:
        with scope:
            continuations = {"mrtr": args.mrtr}
            if stdout_fd is None:
                from erlmcp_py.transports.http import HttpConfig, serve_http

                await serve_http(
                    server,
                    host=args.host,
                    port=args.port,
                    config=HttpConfig(continuations=continuations),
                    shutdown_trigger=stop_accepting.wait,
                    task_status=task_status,
                )
            else:
                from erlmcp_py.transports.stdio import serve_stdio

                task_status.started(None)
                await serve_stdio(server, stdout_fd=stdout_fd, continuations=continuations)
    finally:
        done.set()


async def _first_signal(
    signals: AsyncIterator[int], transport_done: trio.Event
) -> signal.Signals | None:
    """The first shutdown signal, or ``None`` if the transport ended first."""
    received: signal.Signals | None = None
    async with trio.open_nursery() as nursery:

        async def on_signal() -> None:
            nonlocal received
            async for signum in signals:
                received = signal.Signals(signum)
                break
            nursery.cancel_scope.cancel()

        async def on_end() -> None:
            await transport_done.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(on_signal)
        nursery.start_soon(on_end)
    return received


async def _exit_on_second_signal(signals: AsyncIterator[int]) -> NoReturn:
    """A second signal while stopping: exit now, without waiting for anything."""
    async for signum in signals:
        name = signal.Signals(signum).name
        log.warning("shutdown_forced", signal=name, exit_status=128 + signum)
        os._exit(128 + signum)
    raise AssertionError("the signal receiver never ends")  # pragma: no cover


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``erlmcp-py`` command."""
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    from erlmcp_py.demo import run_demo

    return run_demo(elicitation_timeout=args.elicitation_timeout)


if __name__ == "__main__":
    sys.exit(main())
