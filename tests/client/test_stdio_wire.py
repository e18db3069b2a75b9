"""The stdio wire against small real subprocesses: what a server writes that is no message, an
oversized line, stderr captured, a server with much to say on its way out, and its exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import trio

from erlmcp_py.client import (
    ConnectionLost,
    Refused,
    ServerExited,
    connect_stdio,
    open_stdio_wire,
)
from erlmcp_py.mcp.jsonrpc import FrameTooLarge, Notification, Request

LIMIT = 20.0  # seconds any test here may take


def script(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "server.py"
    path.write_text(text)
    return [sys.executable, str(path)]


ECHO_AFTER_NOISE = r"""
import sys
sys.stdout.write("not json\n\n")
sys.stdout.write('{"jsonrpc": "2.0", "id": 1, "result": 7}\n')
sys.stdout.write("x" * 5000 + "\n")
sys.stdout.write("y" * 200000 + "\n")  # more than one read: skipped as it comes
sys.stdout.write('{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"é"}}\n')
sys.stdout.flush()
for line in sys.stdin:
    sys.stdout.write(line)  # an echo: the request comes back as a request
    sys.stdout.flush()
"""


async def test_lines_that_are_no_message_are_refused_and_the_next_ones_read(
    tmp_path: Path,
) -> None:
    with trio.fail_after(LIMIT):
        async with open_stdio_wire(
            script(tmp_path, ECHO_AFTER_NOISE), max_frame_bytes=1000
        ) as wire:
            garbage = await wire.receive()
            assert isinstance(garbage, Refused)
            assert (garbage.frame, garbage.error.code) == (b"not json", -32700)
            shapeless = await wire.receive()  # a result that is no object
            assert isinstance(shapeless, Refused)
            assert shapeless.error.response_id == 1
            oversized = await wire.receive()
            assert isinstance(oversized, Refused)
            assert isinstance(oversized.error, FrameTooLarge)
            assert oversized.error.size == 5000
            assert oversized.frame == b"x" * 256
            skipped = await wire.receive()
            assert isinstance(skipped, Refused)
            assert isinstance(skipped.error, FrameTooLarge)
            assert (skipped.error.size, skipped.frame) == (200000, b"y" * 256)
            note = await wire.receive()
            assert note == Notification("notifications/message", {"data": "é"})
            await wire.send(Request(5, "ping"))
            assert await wire.receive() == Request(5, "ping")
        assert wire.process.returncode == 0  # its stdin closed: it ended


async def test_the_end_of_the_output_is_the_server_exiting(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with open_stdio_wire(script(tmp_path, "print('{\"x\"', end='')")) as wire:
            with pytest.raises(ServerExited):
                await wire.receive()
            with pytest.raises(ConnectionLost):
                await wire.receive()


async def test_writing_to_a_server_that_has_exited_is_the_server_exiting(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with open_stdio_wire(script(tmp_path, "pass")) as wire:
            await wire.process.wait()
            with pytest.raises(ServerExited, match="input is closed"):
                await wire.send(Request(1, "initialize", {}))


async def test_stderr_can_be_captured(tmp_path: Path) -> None:
    noisy = (
        "import sys\nsys.stderr.write('boom ' * 20000 + 'END')\nsys.stderr.flush()\n"
        "sys.stdin.read()\n"
    )
    with trio.fail_after(LIMIT):
        async with open_stdio_wire(script(tmp_path, noisy), stderr=subprocess.PIPE) as wire:
            # the subprocess writes when it will: look again until all of it has been read
            while not wire.stderr_tail().endswith(b"END"):  # noqa: ASYNC110
                await trio.sleep(0.01)
            written = b"boom " * 20000 + b"END"
            assert wire.stderr_tail() == written[-(64 << 10) :]  # the tail, bounded
    assert wire.process.returncode == 0


LOUD_GOODBYE = r"""
import sys
sys.stdin.read()
sys.stdout.write("x" * (1 << 20) + "\n")  # far more than a pipe holds
sys.stdout.flush()
"""


async def test_a_server_with_much_to_say_on_its_way_out_exits_on_its_own(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with open_stdio_wire(script(tmp_path, LOUD_GOODBYE), close_timeout=10) as wire:
            pass
    assert wire.process.returncode == 0  # not killed: its last words were read


DIES_MID_REQUEST = r"""
import sys
sys.stdin.readline()
sys.exit(3)
"""


async def test_a_handshake_with_a_server_that_dies_raises_server_exited(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT), pytest.raises(ExceptionGroup) as caught:
        async with connect_stdio(script(tmp_path, DIES_MID_REQUEST)):
            raise AssertionError("the handshake cannot succeed")
    assert caught.group_contains(ServerExited)


async def test_a_request_to_a_server_that_answers_then_dies(tmp_path: Path) -> None:
    answers_once = (
        "import sys, json\n"
        "line = json.loads(sys.stdin.readline())\n"
        "print(json.dumps({'jsonrpc': '2.0', 'id': line['id'], 'result': {}}), flush=True)\n"
        "sys.stdin.readline()\n"
    )
    with trio.fail_after(LIMIT):
        async with connect_stdio(script(tmp_path, answers_once), handshake=False) as session:
            assert await session.request("ping") == {}
            with pytest.raises(ServerExited):
                await session.request("tools/list")
            assert session.closed
