"""erlmcp_py.logging: JSON lines on the given stream, sensitive values redacted at any depth,
and nothing on stdout unless the application configures it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import structlog

from erlmcp_py.logging import REDACTED, configure_logging, redact, stderr_by_default


def test_redact_replaces_sensitive_values_at_any_depth() -> None:
    event = {
        "event": "answered",
        "content": {"name": "Ada"},
        "Authorization": "Bearer x",
        "nested": {"api-key": "k", "ok": 1, "items": [{"password": "p"}]},
    }
    out = redact(None, "info", event)
    assert out["content"] == REDACTED
    assert out["Authorization"] == REDACTED
    assert out["nested"] == {"api-key": REDACTED, "ok": 1, "items": [{"password": REDACTED}]}


def test_configure_logging_writes_json_to_the_stream() -> None:
    stream = io.StringIO()
    configure_logging("json", "info", stream=stream)
    try:
        structlog.get_logger("t").info("hello", token="secret-value", n=1)
        structlog.get_logger("t").debug("hidden")
    finally:
        structlog.reset_defaults()
        stderr_by_default()
    (line,) = stream.getvalue().splitlines()
    record = json.loads(line)
    assert record["event"] == "hello"
    assert record["token"] == REDACTED
    assert record["n"] == 1
    assert "secret-value" not in line


def test_redact_checks_str_subclass_keys_and_leaves_scalars_alone() -> None:
    class Key(str):
        pass

    event = {Key("Password"): "p", "n": 1, "f": 1.5, "b": True, "none": None, "s": "x"}
    out = redact(None, "info", event)
    assert out[Key("Password")] == REDACTED
    assert [out[k] for k in ("n", "f", "b", "none", "s")] == [1, 1.5, True, None, "x"]


def test_every_line_is_one_strict_json_object_whatever_the_values() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    stream = io.StringIO()
    configure_logging("json", "info", stream=stream)
    try:
        log = structlog.get_logger("t")
        log.info("values", inf=float("inf"), odd=Odd(), text="é ☃", pair=(1, 2))
        log.info("bytes", raw=b"\xff")  # not UTF-8: the slow path, still one line
        try:
            _ = 1 / 0
        except ZeroDivisionError:
            log.exception("failed")
    finally:
        structlog.reset_defaults()
        stderr_by_default()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3
    first = json.loads(lines[0], parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    assert first["inf"] == "Infinity"
    assert first["odd"] == "odd"
    assert first["text"] == "é ☃"
    assert first["pair"] == [1, 2]
    assert json.loads(lines[1])["raw"] == repr(b"\xff")
    assert "ZeroDivisionError: division by zero" in json.loads(lines[2])["exception"]


def test_log_stream_waits_instead_of_raising_on_a_full_nonblocking_fd() -> None:
    import os
    import threading

    from erlmcp_py.logging import _robust

    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)  # as FdStream leaves a shared tty/pipe description
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_fd, 65536):
            received.extend(chunk)

    with os.fdopen(write_fd, "w") as raw:
        stream = _robust(raw)
        reader = threading.Thread(target=drain)
        reader.start()
        line = "x" * 1000 + "\n"
        for _ in range(1000):  # 1 MB: far more than a pipe buffer
            stream.write(line)
    reader.join(timeout=10)
    os.close(read_fd)
    assert len(received) == 1001 * 1000


ROOT = Path(__file__).resolve().parents[2]

UNCONFIGURED = textwrap.dedent(
    """
    import trio
    from erlmcp_py import ElicitationRequest, Tenant, open_runtime
    from erlmcp_py.testing import MemoryPeer

    async def main():
        peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": {"name": "Ada"}})
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        request = ElicitationRequest("Your name?", requested_schema=schema)
        async with open_runtime() as runtime:
            handle = await runtime.create_elicitation(
                request, peer=peer, tenant=Tenant("u", "w", "c")
            )
            outcome = await handle.outcome()
        assert type(outcome).__name__ == "Accepted", outcome

    trio.run(main)
    """
)


def test_an_unconfigured_library_writes_no_log_line_to_stdout() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", UNCONFIGURED],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "outcome" in done.stderr  # the runtime's lines went to stderr


def test_the_default_leaves_an_application_configuration_alone() -> None:
    stream = io.StringIO()
    configure_logging("json", "info", stream=stream)
    try:
        stderr_by_default()  # configured already: nothing changes
        structlog.get_logger("t").info("mine")
    finally:
        structlog.reset_defaults()
        stderr_by_default()
    assert json.loads(stream.getvalue())["event"] == "mine"


LOGS_AT_EVERY_LEVEL = textwrap.dedent(
    """
    import structlog
    import erlmcp_py  # noqa: F401  (sets the default)

    log = structlog.get_logger("app")
    log.debug("a debug line")
    log.info("an info line", password="hunter2")
    log.warning("a warning line")
    """
)


def _run_logging_script(**env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", LOGS_AT_EVERY_LEVEL],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    return done.stderr


def test_the_default_logs_info_and_above_without_colour_when_stderr_is_not_a_terminal() -> None:
    stderr = _run_logging_script()
    assert "an info line" in stderr
    assert "a warning line" in stderr
    assert "a debug line" not in stderr
    assert "\x1b[" not in stderr  # no ANSI escapes in a file or a pipe
    assert "hunter2" not in stderr


def test_the_default_level_is_set_by_the_environment() -> None:
    assert "a debug line" in _run_logging_script(ERLMCP_LOG_LEVEL="debug")
    quiet = _run_logging_script(ERLMCP_LOG_LEVEL="warning")
    assert "an info line" not in quiet
    assert "a warning line" in quiet
