"""Helpers of the gateway's tests: the SDK upstream (over stdio or Streamable HTTP), the
gateway in this process or as ``erlmcp-py gateway``, and what the upstream recorded.

Every wait polls with a short interval under an overall bound; nothing sleeps a fixed time.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import trio

from erlmcp_py.client import ClientSession, Handler, connect_in_memory
from erlmcp_py.gateway import Gateway, Upstream, UpstreamPolicy

REPO = Path(__file__).resolve().parents[2]
SDK_UPSTREAM = Path(__file__).with_name("sdk_upstream.py")
LIMIT = 30.0  # seconds a test may take
POLL = 0.02
PUBLIC = "93.184.215.14"  # a public address, for URLs whose host the tests resolve

#: What a client declares when it can be asked anything.
EVERYTHING = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {},
    "roots": {"listChanged": True},
}


def upstream_command() -> tuple[str, ...]:
    """The SDK upstream over stdio."""
    return (sys.executable, str(SDK_UPSTREAM), "stdio")


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def environment(marks: Path | None) -> dict[str, str]:
    """This process's environment, with the upstream's marks directory."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if marks is not None:
        env["GATEWAY_TEST_MARKS"] = str(marks)
    return env


async def resolve_public(host: str) -> list[str]:
    """A resolver for URL checks: every host is public, but ``*.internal``."""
    return ["10.1.2.3"] if host.endswith(".internal") else [PUBLIC]


def text(result: Mapping[str, Any]) -> str:
    """The text of a ``CallToolResult``."""
    block = result["content"][0]
    assert block["type"] == "text", result
    return str(block["text"])


def recorded(marks: Path, name: str) -> list[Any]:
    """The JSON lines the upstream wrote to ``marks/name``."""
    path = marks / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


async def poll(predicate: Any, what: str, timeout: float = 10.0) -> None:
    """Wait until ``predicate()``; fail with ``what`` after ``timeout`` seconds."""
    with trio.move_on_after(timeout):
        while True:  # another process's state: nothing to wait on but time
            if predicate():
                return
            await trio.sleep(POLL)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@contextmanager
def marks_env(marks: Path) -> Iterator[None]:
    """The upstream subprocesses started in the block write their marks to ``marks``."""
    saved = os.environ.get("GATEWAY_TEST_MARKS")
    os.environ["GATEWAY_TEST_MARKS"] = str(marks)
    try:
        yield
    finally:
        if saved is None:
            del os.environ["GATEWAY_TEST_MARKS"]
        else:
            os.environ["GATEWAY_TEST_MARKS"] = saved


@asynccontextmanager
async def through_gateway(
    handler: Handler | None = None,
    *,
    upstream: Upstream | None = None,
    policy: UpstreamPolicy | None = None,
    capabilities: Mapping[str, Any] = EVERYTHING,
    runtime: Mapping[str, Any] | None = None,
    ask_missing_arguments: bool = False,
    **options: Any,
) -> AsyncIterator[tuple[Gateway, ClientSession]]:
    """A gateway in this process in front of the SDK upstream (a subprocess over stdio unless
    ``upstream`` says otherwise), and a client session with it that has shaken hands."""
    gateway = Gateway(
        upstream or Upstream(command=upstream_command()),
        policy=policy,
        runtime_config=runtime,
        url_resolver=resolve_public,
        ask_missing_arguments=ask_missing_arguments,
    )
    with trio.fail_after(LIMIT):
        async with (
            gateway.running(),
            connect_in_memory(gateway, handler=handler, capabilities=capabilities, **options) as s,
        ):
            yield gateway, s


@contextmanager
def sdk_over_http(marks: Path | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The SDK upstream over Streamable HTTP (uvicorn); its endpoint once it listens."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SDK_UPSTREAM), "http", str(port)],
        env=environment(marks),
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.kill()
        process.wait(10)


def wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float = LIMIT) -> None:
    """Block until something accepts on ``port`` (the process must not exit first)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with status {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(POLL)
    raise AssertionError(f"nothing listened on port {port} within {timeout:g} s")


def gateway_command(*options: str, upstream: tuple[str, ...] | None = None) -> list[str]:
    """``erlmcp-py gateway OPTIONS -- the SDK upstream`` (or ``upstream``: ``--upstream URL``…)."""
    tail = ["--", *upstream_command()] if upstream is None else list(upstream)
    return [sys.executable, "-m", "erlmcp_py.app", "gateway", *options, *tail]


def log_events(path: Path) -> list[dict[str, Any]]:
    """The JSON log lines in ``path``."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out
