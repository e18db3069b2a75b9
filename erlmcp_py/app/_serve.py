"""``erlmcp-py serve``: the serve loop, from the checked options to the exit status.

Theory of operation of the graceful stop
----------------------------------------
``serve`` runs under process supervisors (systemd, supervisord; see ``deploy/``), which stop
it with SIGTERM and kill it some seconds later. The runtime is opened here, outside the
transport, so that it can be stopped while the sessions still stand. On the first SIGTERM or
SIGINT (received with ``trio.open_signal_receiver``, so SIGINT raises no
``KeyboardInterrupt``):

0. HTTP drains: ``initialize`` and every new request are answered 503 with ``Retry-After``
   and ``/readyz`` answers 503, while the calls already running go on: their elicitations
   can still be answered, suspended 2026-07-28 calls retried, and tools finish. The drain
   waits on the transport's event of its last call in flight ending
   (``HttpTransport.calls_ended``), then holds 0.2 s more, and again for as long as requests
   keep being refused, so that a client between the answer to its call and its next request
   gets that request refused (503) rather than its connection closed under it; a call started
   meanwhile (a retry) is waited for the same way. It ends then, or when only the last part
   of ``--shutdown-timeout`` (a third of it, at most 3 s) remains for the steps below.
1. HTTP stops accepting connections (the server's graceful stop; idle ones are closed).
2. The elicitation runtime stops (its supervision tree, in reverse order): every pending
   elicitation ends ``failed: runtime_restarted`` — the tool waiting on it gets that outcome
   and answers its call — and the client is sent ``notifications/cancelled`` for its open
   ``elicitation/create``.
3. The calls settle: the tools finish and their answers are written, until the event of the
   last call ending (the HTTP transport's, or each stdio session's
   ``ServerSession.calls_ended``), or 1 s.
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
import gc
import os
import signal
import sys
from collections.abc import AsyncIterator
from functools import partial
from typing import TYPE_CHECKING, NoReturn

import structlog
import trio

from erlmcp_py.app._startup import StartupError, check_serve
from erlmcp_py.logging import configure_logging

if TYPE_CHECKING:
    from erlmcp_py.actors.runtime import Runtime
    from erlmcp_py.mcp.server import Server
    from erlmcp_py.transports.http import HttpConfig, HttpTransport, Listening

__all__ = ["serve"]

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_SETTLE_S = 1.0  # longest wait for the tools' last answers once the runtime has stopped
# How long the drain holds once no call is left, and again while requests are refused: the
# time a client takes from the answer to its call to its next request (refused then, rather
# than cut off by the end of the drain).
_DRAIN_GRACE_S = 0.2

log = structlog.get_logger("erlmcp.serve")


def serve(args: argparse.Namespace) -> int:
    """``erlmcp-py serve``: check the options, serve until stopped; the exit status."""
    configure_logging(args.log_format, args.log_level)
    try:
        startup = check_serve(args, os.environ)
    except StartupError as exc:
        print(f"erlmcp-py: {exc}", file=sys.stderr)
        return 2
    if startup.http is not None:
        return _run(startup.server, args, http=startup.http, stdout_fd=None)
    # stdout belongs to MCP: keep the real one for frames, send stray prints to stderr.
    mcp_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        return _run(startup.server, args, http=None, stdout_fd=mcp_out)
    finally:
        os.close(mcp_out)


def _run(
    server: Server, args: argparse.Namespace, *, http: HttpConfig | None, stdout_fd: int | None
) -> int:
    """Run ``serve`` to its end (over HTTP with ``http``, else stdio); the exit status."""
    interrupted = False
    try:
        return trio.run(partial(_serve_until_stopped, server, args, http, stdout_fd=stdout_fd))
    except* KeyboardInterrupt:  # SIGINT before the signal receiver was installed
        interrupted = True
    assert interrupted
    raise KeyboardInterrupt  # the command's own message and status (app._command.main)


async def _serve_until_stopped(
    server: Server, args: argparse.Namespace, http: HttpConfig | None, *, stdout_fd: int | None
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
            try:
                listening: Listening | None = await nursery.start(
                    _host_transport,
                    server,
                    args,
                    http,
                    stdout_fd,
                    stop_accepting,
                    serving,
                    transport_done,
                )
            except OSError as exc:  # a port in use: serve_http names it
                print(f"erlmcp-py: {exc.strerror or exc}", file=sys.stderr)
                nursery.cancel_scope.cancel()
                return 1
            # Start-up is over: what is alive now lives as long as the process (modules,
            # schemas, the runtime), so the collector's full passes need not walk it.
            gc.collect()
            gc.freeze()
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
            left_by_drain: int | None = None
            with trio.move_on_at(start + args.shutdown_timeout) as bounded:
                if listening is not None:
                    until = start + args.shutdown_timeout - _stop_reserve(args.shutdown_timeout)
                    left_by_drain = await _drain(listening.transport, until)
                stop_accepting.set()
                stop_runtime.set()
                await runtime_stopped.wait()
                await _settle(server, listening)
                # Requests still in progress (waiting on time or I/O) get an error answer
                # while the transports still stand; then those answers settle too.
                stopped_calls = sum(session.stop_calls() for session in list(server.sessions))
                if stopped_calls:
                    await _settle(server, listening)
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
                calls_left_by_drain=left_by_drain,
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


def _stop_reserve(shutdown_timeout: float) -> float:
    """The part of the shutdown timeout kept for ending what the drain left."""
    return min(3.0, shutdown_timeout / 3)


async def _drain(transport: HttpTransport, until: float) -> int:
    """Refuse new sessions and calls; wait for the running calls to end, at most ``until``.

    Returns:
        The calls still running when the drain ends.
    """
    transport.drain()
    log.info("drain_started", calls=transport.calls_in_progress)
    with trio.move_on_at(until):
        while True:
            await transport.calls_ended().wait()
            # Clients between the answer to a call and their next request: that request gets
            # its 503 before the connections close. Held while such requests keep coming.
            refused = transport.refusals["draining"]
            await trio.sleep(_DRAIN_GRACE_S)
            if not transport.calls_in_progress and transport.refusals["draining"] == refused:
                break
    left = transport.calls_in_progress
    log.info("drain_ended", calls_left=left)
    return left


async def _settle(server: Server, listening: Listening | None) -> None:
    """Let the calls finish and their answers be written: until none is in progress, or 1 s."""
    with trio.move_on_after(_SETTLE_S):
        if listening is not None:
            await listening.transport.calls_ended().wait()
        else:
            for session in list(server.sessions):
                await session.calls_ended().wait()


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
    http: HttpConfig | None,
    stdout_fd: int | None,
    stop_accepting: trio.Event,
    scope: trio.CancelScope,
    done: trio.Event,
    task_status: trio.TaskStatus[Listening | None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve over the chosen transport (with the runtime already running); ``done`` at its end."""
    try:
        with scope:
            if http is not None:
                from erlmcp_py.transports.http import serve_http

                await serve_http(
                    server,
                    host=args.host,
                    port=args.port,
                    config=http,
                    shutdown_trigger=stop_accepting.wait,
                    task_status=task_status,
                )
            else:
                from erlmcp_py.transports.stdio import serve_stdio

                assert stdout_fd is not None
                task_status.started(None)
                await serve_stdio(server, stdout_fd=stdout_fd, continuations={"mrtr": args.mrtr})
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
