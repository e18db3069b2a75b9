"""The shipped examples run: each as a real subprocess, talked to over 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
TCP_CHAT = ROOT / "examples" / "tcp_chat_ask.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
LIMIT = 30  # seconds; the runs take about two


async def read_line(stream: trio.abc.ReceiveStream, buffer: bytearray) -> str:
    while b"\n" not in buffer:
        chunk = await stream.receive_some()
        if not chunk:
            raise EOFError(bytes(buffer))
        buffer += chunk
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line.decode()


async def talk(port: int, answers: list[str]) -> list[str]:
    """One user: answer each question with the next answer (none left: silence); return
    every line until the server hangs up."""
    transcript: list[str] = []
    pending = list(answers)
    buffer = bytearray()
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        while True:
            try:
                line = await read_line(stream, buffer)
            except EOFError:
                return transcript
            transcript.append(line)
            if line.startswith("?") and pending:
                await stream.send_all(pending.pop(0).encode() + b"\n")


async def test_tcp_chat_server_asks_its_users_through_its_own_peer() -> None:
    with trio.fail_after(LIMIT):
        process = await trio.lowlevel.open_process(
            [sys.executable, str(TCP_CHAT), "--port", "0", "--deadline", "1"],
            stdout=subprocess.PIPE,
            env=ENV,
        )
        try:
            assert process.stdout is not None
            first = await read_line(process.stdout, bytearray())
            assert first.startswith("listening on 127.0.0.1:")
            port = int(first.rsplit(":", 1)[1])
            async with trio.open_nursery() as nursery:
                results: dict[str, list[str]] = {}

                async def user(name: str, answers: list[str]) -> None:
                    results[name] = await talk(port, answers)

                nursery.start_soon(user, "answers", ["mars", "eu"])
                nursery.start_soon(user, "declines", ["/decline"])
                nursery.start_soon(user, "silent", [])
        finally:
            process.terminate()
            await process.wait()

    answered = results["answers"]
    assert answered[-1] == "= deploying to eu"
    questions = [line for line in answered if line.startswith("?")]
    assert len(questions) == 2  # "mars" was refused and the question asked again
    assert "  - region: must be one of: eu, us, ap." in answered

    assert results["declines"][-1] == "= not deploying"

    silent = results["silent"]
    assert silent[-1] == "= no answer: giving up"
    assert "(This request expires in 1 second.)" in silent
    assert "(question withdrawn: elicitation timed out)" in silent


async def test_tcp_chat_demo_drives_itself() -> None:
    with trio.fail_after(LIMIT):
        done = await trio.run_process(
            [sys.executable, str(TCP_CHAT), "--demo", "--deadline", "1"],
            capture_stdout=True,
            env=ENV,
        )
    out = done.stdout.decode()
    for expected in ("= deploying to ap", "= not deploying", "= no answer: giving up"):
        assert expected in out
