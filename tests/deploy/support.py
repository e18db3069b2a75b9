"""Helpers of the deploy tests: free ports, the server's JSON log lines, HTTP readiness.

Every wait polls with a short interval under an overall bound; nothing sleeps a fixed time.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import trio

from tests.transports.test_http import McpHttp

REPO = Path(__file__).resolve().parents[2]
POLL = 0.02  # seconds between two looks


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve_command(*extra: str) -> list[str]:
    """``erlmcp-py serve`` with this interpreter (the project's venv)."""
    return [sys.executable, "-m", "erlmcp_py.app", "serve", *extra]


def log_events(path: Path) -> list[dict[str, Any]]:
    """The JSON log lines in ``path`` (other lines skipped)."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def events_named(path: Path, name: str) -> list[dict[str, Any]]:
    return [e for e in log_events(path) if e.get("event") == name]


async def poll(predicate: Callable[[], bool], what: str, timeout: float) -> None:
    """Wait until ``predicate()``; fail with ``what`` after ``timeout`` seconds."""
    with trio.move_on_after(timeout):
        while True:  # the state is another process's: nothing to wait on but time
            if predicate():
                return
            await trio.sleep(POLL)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


async def wait_serving(http: httpx2.AsyncClient, url: str, timeout: float) -> McpHttp:
    """Poll ``initialize`` at ``url`` until it answers; the initialized client."""
    with trio.move_on_after(timeout):
        while True:
            client = McpHttp(http, url)
            try:
                await client.initialize()
            except (httpx2.TransportError, AssertionError):
                await trio.sleep(POLL)
                continue
            return client
    raise AssertionError(f"nothing answered initialize at {url} within {timeout:g} s")


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs: kill(0) said it exists
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
