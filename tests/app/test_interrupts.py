"""An interrupted or failed start is one line, not a traceback: Ctrl-C (a real SIGINT to a real
process) while ``erlmcp-py serve`` starts, a port already in use (a real occupied port), and
the library's own ``trio.run(partial(serve_http, server, ...))`` and ``serve_stdio``."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from erlmcp_py import Server, serve_http
from tests.deploy.support import REPO, free_port

LIMIT = 60  # seconds any process here may take


@pytest.fixture
def occupied() -> Iterator[int]:
    """A port on 127.0.0.1 another socket listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def wait_for(predicate: object, what: str) -> None:
    deadline = time.monotonic() + LIMIT
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def human_lines(stderr: str) -> list[str]:
    """stderr's lines that are not JSON log lines."""
    out = []
    for line in stderr.splitlines():
        try:
            json.loads(line)
        except ValueError:
            out.append(line)
    return out


@contextmanager
def process(argv: list[str], cwd: Path, **kwargs: object) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(argv, cwd=cwd, text=True, stderr=subprocess.PIPE, **kwargs)  # type: ignore[call-overload]
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_ctrl_c_while_serve_starts_is_one_line_and_status_130(
    transport: str, tmp_path: Path
) -> None:
    marker = tmp_path / "importing"
    (tmp_path / "slowstart.py").write_text(
        textwrap.dedent(
            f"""
            import pathlib, time
            pathlib.Path({str(marker)!r}).touch()
            time.sleep(60)  # a start that takes long: the user presses Ctrl-C
            """
        )
    )
    argv = [sys.executable, "-m", "erlmcp_py.app", "serve", "--transport", transport]
    argv += ["--port", str(free_port()), "--server", "slowstart:server"]
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    with process(argv, tmp_path, stdin=subprocess.PIPE, env=env) as child:
        wait_for(marker.exists, "the server module's import")
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=LIMIT)
    assert child.returncode == 130, stderr
    assert stderr == "erlmcp-py: interrupted\n"


@pytest.mark.parametrize("option", ["--port", "--ops-port"])
def test_a_port_in_use_is_one_line_and_status_1(option: str, occupied: int) -> None:
    ports = {"--port": "0", "--ops-port": "0", option: str(occupied)}
    argv = [sys.executable, "-m", "erlmcp_py.app", "serve", "--transport", "http"]
    argv += [part for pair in ports.items() for part in pair]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=LIMIT, check=False, cwd=REPO
    )
    assert done.returncode == 1, done.stderr
    assert human_lines(done.stderr) == [
        f"erlmcp-py: cannot listen on 127.0.0.1:{occupied}: address already in use"
    ]


async def test_serve_http_raises_a_plain_oserror_for_a_port_in_use(occupied: int) -> None:
    with pytest.raises(OSError) as info:
        await serve_http(Server("lib", "1.0"), port=occupied)
    assert type(info.value) is OSError  # not an exception group
    assert info.value.strerror == f"cannot listen on 127.0.0.1:{occupied}: address already in use"


LIBRARY_HTTP = """
import sys
from functools import partial

import trio

from erlmcp_py import Server, serve_http

trio.run(partial(serve_http, Server("lib", "1.0"), port=int(sys.argv[1])))
"""

LIBRARY_STDIO = """
import trio

from erlmcp_py import Server, serve_stdio

trio.run(serve_stdio, Server("lib", "1.0"))
"""


def assert_plain_interrupt(child: subprocess.Popen[str], stderr: str) -> None:
    """What Python prints for an uncaught Ctrl-C: a short traceback ending in the bare
    ``KeyboardInterrupt``, and the process ends by SIGINT."""
    assert child.returncode in (-signal.SIGINT, 128 + signal.SIGINT), stderr
    assert stderr.rstrip().splitlines()[-1] == "KeyboardInterrupt", stderr
    assert "ExceptionGroup" not in stderr
    assert len(stderr.splitlines()) <= 20, stderr


def test_ctrl_c_on_the_library_serve_http_is_a_plain_keyboard_interrupt(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(LIBRARY_HTTP)
    port = free_port()

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    with process([sys.executable, str(script), str(port)], REPO) as child:
        wait_for(listening, "the server to listen")
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=LIMIT)
    assert_plain_interrupt(child, stderr)


def test_ctrl_c_on_the_library_serve_stdio_is_a_plain_keyboard_interrupt(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(LIBRARY_STDIO)
    argv = [sys.executable, str(script)]
    with process(argv, REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        init = {"protocolVersion": "2025-11-25", "capabilities": {}}
        child.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}) + "\n"
        )
        child.stdin.flush()
        assert json.loads(child.stdout.readline())["id"] == 1  # serving
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=LIMIT)
    assert_plain_interrupt(child, stderr)
