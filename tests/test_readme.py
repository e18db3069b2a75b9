"""README.md runs as written: every fenced block is run by a test named in ``RUN_BY``, and the
python snippets of the other documents are compiled and checked for undefined names.

A block is known by its language and its first non-blank line; each line of a ``sh`` block is a
command of its own, known by the command without its comment. The tests take each block from
README.md by that key and run it for real: the quick start's plan (``make -n``), the ``orders``
server as a script and under ``erlmcp-py serve --server``, the ASGI snippet under hypercorn,
each ``erlmcp-py connect`` command line, and the two terminal transcripts replayed through a
pseudo-terminal. Every server is a subprocess on 127.0.0.1.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pexpect
import pytest
import trio
import trio.testing
from mcp import Client, StdioServerParameters, types

import erlmcp_py
from erlmcp_py.client import ServerRequest, connect_http
from erlmcp_py.connect import session_options
from erlmcp_py.core.versions import V_2026_07_28
from erlmcp_py.testing import open_memory_client
from tests.deploy.support import events_named, free_port, poll
from tests.transports.test_auth import issuer
from tests.transports.test_http import McpHttp

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent  # the venv's commands: erlmcp-py, hypercorn, ruff
LIMIT = 60.0  # seconds, for any one step; the steps take one or two


# -- the blocks -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One fenced block of a Markdown file."""

    path: Path
    line: int  # of its opening fence
    language: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    text = path.read_text()
    return [
        Block(path, text.count("\n", 0, found.start()) + 1, found.group(1), found.group(2))
        for found in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)
    ]


def without_comment(line: str) -> str:
    """A shell line without its trailing ``# comment``."""
    return re.sub(r"(^|\s+)#.*$", "", line).strip()


def readme_units() -> dict[tuple[str, str], tuple[Block, str]]:
    """What README.md shows to run, by key: each command of a ``sh`` block, each other block
    whole; with its block and its text."""
    units: dict[tuple[str, str], tuple[Block, str]] = {}
    for block in fenced_blocks(README):
        if block.language == "sh":
            pieces = [without_comment(line) for line in block.text.splitlines()]
            found = [((block.language, piece), piece) for piece in pieces if piece]
        else:
            first = next(line.strip() for line in block.text.splitlines() if line.strip())
            found = [((block.language, first), block.text)]
        for key, text in found:
            assert key not in units, f"{block.where}: a second block keyed {key}"
            units[key] = (block, text)
    return units


def readme(language: str, key: str) -> str:
    """README.md's ``language`` block (or ``sh`` command) known by ``key``, as written."""
    units = readme_units()
    assert (language, key) in units, f"README.md has no {language} block {key!r}"
    return units[language, key][1]


ORDERS = ("python", "from pydantic import BaseModel")
ORDERS_HTTP = ("python", "# orders_http.py, beside orders.py")
PYTEST_CONFIG = ("toml", "# pyproject.toml")
ORDERS_TEST = ("python", "import pytest")
CONNECT_STDIO = ("sh", "erlmcp-py connect -- erlmcp-py serve")
CONNECT_HTTP = ("sh", "erlmcp-py connect http://127.0.0.1:8000/mcp")
CONNECT_BEARER = (
    "sh",
    'erlmcp-py connect --header "Authorization: Bearer $TOKEN" https://example.com/mcp',
)
CONNECT_CALL = ("sh", "erlmcp-py connect --call demo_confirm -- CMD ARGS")
CONNECT_TASK = ("sh", "erlmcp-py connect --task TASK_ID http://127.0.0.1:8000/mcp")
GATEWAY_SERVER = (
    "python",
    "# server.py: an MCP server on the official SDK, with nothing of erlmcp-py in it",
)
GATEWAY_STDIO = ("sh", "erlmcp-py gateway -- python server.py")
GATEWAY_DESKTOP = ("json", "{")
SESSION_EN = ("text", "Connected to erlmcp-py-example 0.1.0 (protocol 2025-11-25, stdio).")
SESSION_PT = ("text", "mcp> call demo_titled_multi_choice")

HERE = "tests/test_readme.py::"
#: The tests that run each README block (or ``sh`` command).
RUN_BY: dict[tuple[str, str], tuple[str, ...]] = {
    ("sh", "make demo"): (
        HERE + "test_make_demo_and_make_test_plan_what_the_quick_start_says",
        "tests/app/test_command.py::test_demo_prints_every_scene_and_each_outcome",
    ),
    ("sh", "make test"): (HERE + "test_make_demo_and_make_test_plan_what_the_quick_start_says",),
    ("sh", "make demo-gateway"): (
        HERE + "test_make_demo_gateway_installs_the_sdk_and_runs_the_gateway_demo",
        "tests/app/test_command.py::test_demo_gateway_shows_the_sdk_servers_questions_asked_through_the_gateway",
    ),
    ("python", "import trio"): (
        "tests/client/test_example.py::test_the_example_runs_as_written",
        "tests/client/test_example.py::test_the_readme_and_the_docstring_show_the_same_example",
    ),
    ORDERS: (
        HERE + "test_the_orders_server_run_as_a_script_serves_stdio",
        HERE + "test_the_orders_server_is_served_by_erlmcp_py_serve_server",
        HERE + "test_the_orders_server_answers_through_the_memory_client",
    ),
    ORDERS_HTTP: (HERE + "test_the_asgi_snippet_serves_orders_under_hypercorn_until_sigint",),
    PYTEST_CONFIG: (
        HERE + "test_the_testing_example_passes_as_written",
        HERE + "test_without_trio_mode_pytest_fails_the_async_tests_as_the_readme_says",
    ),
    ORDERS_TEST: (HERE + "test_the_testing_example_passes_as_written",),
    CONNECT_STDIO: (HERE + "test_connect_spawns_a_stdio_server",),
    CONNECT_HTTP: (HERE + "test_connect_reaches_a_streamable_http_endpoint",),
    CONNECT_BEARER: (HERE + "test_connect_sends_the_bearer_header_the_server_checks",),
    CONNECT_CALL: (HERE + "test_connect_call_makes_one_call_and_exits_by_its_outcome",),
    CONNECT_TASK: (HERE + "test_connect_task_follows_a_task_another_client_started",),
    GATEWAY_SERVER: (
        HERE + "test_the_gateway_command_serves_the_sdk_server_and_validates_its_answers",
        HERE + "test_the_desktop_configuration_runs_the_gateway_for_the_official_client",
    ),
    GATEWAY_STDIO: (
        HERE + "test_the_gateway_command_serves_the_sdk_server_and_validates_its_answers",
    ),
    GATEWAY_DESKTOP: (
        HERE + "test_the_desktop_configuration_runs_the_gateway_for_the_official_client",
    ),
    SESSION_EN: (HERE + "test_the_transcripts_replay_line_for_line_in_a_terminal",),
    SESSION_PT: (HERE + "test_the_transcripts_replay_line_for_line_in_a_terminal",),
}


def test_every_readme_block_is_run_by_a_named_test() -> None:
    units = readme_units()
    missing = [
        f"{block.where}: the {language} block {key!r} is run by no test; write one in "
        f"tests/test_readme.py that takes it with readme({language!r}, {key!r}) and runs it, "
        f"and add ({language!r}, {key!r}): (its node id,) to RUN_BY"
        for (language, key), (block, _text) in units.items()
        if (language, key) not in RUN_BY
    ]
    assert not missing, "\n".join(missing)
    stale = [key for key in RUN_BY if key not in units]
    assert not stale, f"RUN_BY names blocks README.md no longer has: {stale}"
    for key, node_ids in RUN_BY.items():
        for node_id in node_ids:
            path, name = node_id.split("::")
            tree = ast.parse((ROOT / path).read_text())
            defined = {node.name for node in tree.body if isinstance(node, ast.AsyncFunctionDef)}
            defined |= {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
            assert name in defined, f"RUN_BY[{key}]: {path} has no test {name}"


# -- running things ---------------------------------------------------------------------------


def environment(**extra: str) -> dict[str, str]:
    """This environment with the venv's commands first on PATH, the C locale, and no pytest
    variables of this run."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTEST_", "PYTHONPATH"))
    }
    env.update({"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "LANG": "C.UTF-8", **extra})
    return env


async def sh(command: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[bytes]:
    """``command`` run by ``sh -c`` as a user would type it, ``stdin`` its input."""
    with trio.fail_after(LIMIT):
        return await trio.run_process(
            ["sh", "-c", command],
            stdin=stdin.encode(),
            capture_stdout=True,
            capture_stderr=True,
            env=environment(**env),
            check=False,
        )


async def started(process: trio.Process, log: Path, ready: Callable[[], bool]) -> None:
    """Wait until ``ready()``; fail with the process's ``log`` if it exits first."""
    await poll(lambda: ready() or process.poll() is not None, f"{process.args} to start", LIMIT)
    if process.returncode is not None:
        raise AssertionError(f"exited {process.returncode}: {await trio.Path(log).read_text()}")


@asynccontextmanager
async def serving_http(log: Path, port: int, *options: str) -> AsyncIterator[str]:
    """``erlmcp-py serve --transport http`` on ``port`` of 127.0.0.1; its endpoint's URL."""
    command = ["erlmcp-py", "serve", "--transport", "http", "--port", str(port), *options]
    with log.open("wb") as err:
        process = await trio.lowlevel.open_process(
            command, stdin=subprocess.DEVNULL, stderr=err, env=environment()
        )
        try:
            await started(process, log, lambda: bool(events_named(log, "http_listening")))
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def orders_answers(*answers: types.ElicitResult) -> Any:
    """An elicitation callback giving ``answers`` in turn, each to ``ship``'s question."""
    pending = list(answers)

    async def answer(_ctx: Any, params: Any) -> types.ElicitResult:
        assert params.message == "Where should order 7 go?"
        assert params.requested_schema["required"] == ["address"]
        return pending.pop(0)

    return answer


ADDRESS = types.ElicitResult(action="accept", content={"address": "1 Main St"})
DECLINE = types.ElicitResult(action="decline")


def save_orders(directory: Path) -> Path:
    path = directory / "orders.py"
    path.write_text(readme(*ORDERS))
    return path


# -- quick start ------------------------------------------------------------------------------


def make_plan(directory: Path, target: str) -> list[str]:
    """What ``make target`` would run in ``directory``, as a user's shell would start it (not
    the sub-make of ``make test`` running this test, nor with a ``PYTHON`` of this run)."""
    env = {k: v for k, v in environment().items() if k != "PYTHON" and not k.startswith("MAKE")}
    done = subprocess.run(
        ["make", "-n", target], cwd=directory, env=env, capture_output=True, text=True, check=True
    )
    return [line.strip() for line in done.stdout.splitlines()]


def test_make_demo_and_make_test_plan_what_the_quick_start_says(tmp_path: Path) -> None:
    """In a fresh copy, ``make demo`` creates .venv and runs the demo (which
    tests/app/test_command.py runs), and ``make test`` runs ruff, mypy and the whole suite."""
    quick = [readme("sh", "make demo"), readme("sh", "make test")]
    assert [shlex.split(command) for command in quick] == [["make", "demo"], ["make", "test"]]
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path)
    demo = make_plan(tmp_path, "demo")
    assert demo[0] == "python3 -m venv .venv"
    assert "-e '.[test]'" not in " ".join(demo)  # the demo installs the runtime alone
    assert demo[-1] == ".venv/bin/erlmcp-py demo"
    test = make_plan(tmp_path, "test")
    assert test[0] == "python3 -m venv .venv"
    assert ".venv/bin/python -m pip install -q -e '.[test]'" in test
    linted = "supervisors erlmcp_py tests benchmarks"
    assert test[-4:] == [
        f".venv/bin/ruff check {linted}",
        f".venv/bin/ruff format --check {linted}",
        ".venv/bin/mypy supervisors erlmcp_py",
        ".venv/bin/python -m pytest -p no:cacheprovider",  # no selection: the whole suite
    ]


def test_make_demo_gateway_installs_the_sdk_and_runs_the_gateway_demo(tmp_path: Path) -> None:
    """``make demo-gateway`` installs the runtime and the official SDK (not the test tools) and
    runs ``erlmcp-py demo --gateway`` (which tests/app/test_command.py runs)."""
    assert shlex.split(readme("sh", "make demo-gateway")) == ["make", "demo-gateway"]
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path)
    plan = make_plan(tmp_path, "demo-gateway")
    assert plan[0] == "python3 -m venv .venv"
    assert ".venv/bin/python -m pip install -q -e '.[gateway-demo]'" in plan
    assert plan[-1] == ".venv/bin/erlmcp-py demo --gateway"


# -- writing a server -------------------------------------------------------------------------


async def test_the_orders_server_run_as_a_script_serves_stdio(tmp_path: Path) -> None:
    """``python orders.py``: its ``__main__`` serves stdio to the official ``mcp`` client."""
    save_orders(tmp_path)
    script = StdioServerParameters(
        command=sys.executable, args=["orders.py"], cwd=str(tmp_path), env=environment()
    )
    answer = orders_answers(ADDRESS, DECLINE)
    with trio.fail_after(LIMIT):
        async with Client(script, mode="legacy", elicitation_callback=answer) as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == ["ship"]
            shipped = await client.call_tool("ship", {"order_id": "7"})
            assert text_of(shipped) == "shipping to 1 Main St"
            declined = await client.call_tool("ship", {"order_id": "7"})
            assert text_of(declined) == "not shipped: Declined"


async def test_the_orders_server_is_served_by_erlmcp_py_serve_server(tmp_path: Path) -> None:
    """``erlmcp-py serve --server orders:server`` in the directory of ``orders.py``, on
    2026-07-28 (the official client retries the call with the answer)."""
    command = "erlmcp-py serve --server orders:server"
    assert f"`{command}` (this file saved as\n`orders.py`)" in README.read_text()
    save_orders(tmp_path)
    program, *args = shlex.split(command)
    served = StdioServerParameters(
        command=str(BIN / program), args=args, cwd=str(tmp_path), env=environment()
    )
    answer = orders_answers(ADDRESS)
    with trio.fail_after(LIMIT):
        async with Client(served, mode="2026-07-28", elicitation_callback=answer) as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == ["ship"]
            shipped = await client.call_tool("ship", {"order_id": "7"})
            assert text_of(shipped) == "shipping to 1 Main St"


async def test_the_orders_server_answers_through_the_memory_client(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    spec = importlib.util.spec_from_file_location("readme_orders", save_orders(tmp_path))
    assert spec is not None
    assert spec.loader is not None
    orders = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(orders)

    def ship_it(request: ServerRequest) -> dict[str, Any]:
        return {"action": "accept", "content": {"address": "1 Main St"}}

    async with open_memory_client(orders.server, handler=ship_it) as client:
        result = await client.call_tool("ship", {"order_id": "7"})
    assert result["content"][0]["text"] == "shipping to 1 Main St"


# -- under another ASGI server ----------------------------------------------------------------


@pytest.mark.parametrize("how", ["script", "hypercorn command"])
async def test_the_asgi_snippet_serves_orders_under_hypercorn_until_sigint(
    tmp_path: Path, how: str
) -> None:
    """``orders_http.py`` run as a script, and under the hypercorn command its last comment
    names, on a free port: the official client's call is answered (an elicitation on the way)
    and SIGINT (Ctrl-C) while a client is connected stops it gracefully, exit status 0."""
    save_orders(tmp_path)
    port = free_port()
    snippet = readme(*ORDERS_HTTP).replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    (tmp_path / "orders_http.py").write_text(snippet)
    found = re.search(r"# or: (hypercorn .*)$", snippet, re.M)
    assert found is not None
    command = shlex.split(found.group(1)) if how != "script" else [sys.executable, "orders_http.py"]
    log = tmp_path / "stderr.log"
    mode = "legacy" if how == "script" else "2026-07-28"
    with log.open("wb") as err, trio.fail_after(LIMIT):
        process = await trio.lowlevel.open_process(
            command, cwd=tmp_path, stdin=subprocess.DEVNULL, stderr=err, env=environment()
        )
        try:
            running = f"Running on http://127.0.0.1:{port}"
            await started(process, log, lambda: running in log.read_text())
            url = f"http://127.0.0.1:{port}/mcp"
            answer = orders_answers(ADDRESS)
            async with Client(url, mode=mode, elicitation_callback=answer) as client:
                shipped = await client.call_tool("ship", {"order_id": "7"})
            assert text_of(shipped) == "shipping to 1 Main St"
            async with httpx2.AsyncClient() as http:  # Ctrl-C while a client is connected
                await McpHttp(http, url).initialize()
                process.send_signal(signal.SIGINT)
            assert await process.wait() == 0, log.read_text()
        finally:
            if process.returncode is None:
                process.kill()
                with trio.CancelScope(shield=True):
                    await process.wait()
    assert "Traceback" not in log.read_text()


# -- testing a server -------------------------------------------------------------------------


def pytest_in(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=directory,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=LIMIT * 2,
        check=False,
    )


def test_the_testing_example_passes_as_written(tmp_path: Path) -> None:
    """``orders.py``, the test file and the pytest configuration of README.md, put in a
    directory of their own and run by pytest in a subprocess."""
    save_orders(tmp_path)
    (tmp_path / "test_orders.py").write_text(readme(*ORDERS_TEST))
    (tmp_path / "pyproject.toml").write_text(readme(*PYTEST_CONFIG))
    done = pytest_in(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_without_trio_mode_pytest_fails_the_async_tests_as_the_readme_says(
    tmp_path: Path,
) -> None:
    assert "trio_mode = true" in readme(*PYTEST_CONFIG)
    save_orders(tmp_path)
    (tmp_path / "test_orders.py").write_text(readme(*ORDERS_TEST))
    failed = pytest_in(tmp_path)  # no configuration
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "2 failed" in failed.stdout
    said = "async def functions are not natively supported"
    assert said in failed.stdout
    assert said in " ".join(README.read_text().split())


# -- erlmcp-py connect ------------------------------------------------------------------------


def connected(done: subprocess.CompletedProcess[bytes]) -> str:
    """The client's output, once it said it connected to the example server and left."""
    out = done.stdout.decode()
    assert done.returncode == 0, out + done.stderr.decode()
    assert out.startswith("Connected to erlmcp-py-example 0.1.0 (protocol 2025-11-25, "), out
    assert out.endswith("mcp> Bye.\n"), out
    return out


async def test_connect_spawns_a_stdio_server() -> None:
    done = await sh(readme(*CONNECT_STDIO), stdin="quit\n")
    assert "(protocol 2025-11-25, stdio)." in connected(done)


async def test_connect_reaches_a_streamable_http_endpoint(tmp_path: Path) -> None:
    port = free_port()  # the README's port 8000 may be taken here
    command = readme(*CONNECT_HTTP).replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    async with serving_http(tmp_path / "serve.log", port):
        done = await sh(command, stdin="call test_simple_text\nquit\n")
    out = connected(done)
    assert "(protocol 2025-11-25, HTTP)." in out
    assert "This is a simple text response for testing." in out


async def test_connect_sends_the_bearer_header_the_server_checks(tmp_path: Path) -> None:
    """The server checks bearer tokens of an issuer serving its keys on 127.0.0.1; the README's
    https://example.com/mcp is this server's http://127.0.0.1:PORT/mcp (loopback only)."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/mcp"
    command = readme(*CONNECT_BEARER).replace("https://example.com/mcp", endpoint)
    async with issuer() as iss:
        auth = ["--auth-issuer", iss.url, "--auth-resource", endpoint]
        auth += ["--auth-jwks-url", f"{iss.url}/jwks"]
        async with serving_http(tmp_path / "serve.log", port, *auth):
            served = await sh(command, stdin="quit\n", TOKEN=iss.token(endpoint))
            refused = await sh(command, stdin="quit\n", TOKEN=iss.token("http://other/mcp"))
            anonymous = await sh(command, stdin="quit\n", TOKEN="")
    assert "(protocol 2025-11-25, HTTP)." in connected(served)
    for done in (refused, anonymous):
        assert done.returncode == 1
        assert done.stdout.decode().startswith("Could not connect: "), done.stdout


async def test_connect_call_makes_one_call_and_exits_by_its_outcome() -> None:
    """``CMD ARGS`` is the example server (``erlmcp-py serve``); the call's question is
    answered from stdin, and a tool error exits 1 as the README's comment says."""
    command = readme(*CONNECT_CALL).replace("CMD ARGS", "erlmcp-py serve")
    answered = await sh(command, stdin="y\n1\n")  # yes, then Submit
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert "confirm: action=accept" in answered.stdout.decode()
    failing = await sh(command.replace("demo_confirm", "test_error_handling"))
    assert failing.returncode == 1
    assert "Tool error:" in failing.stdout.decode()


async def test_connect_task_follows_a_task_another_client_started(tmp_path: Path) -> None:
    """Another client (this test, through the library) starts ``confirm_delete`` as a task and
    goes away; the README's command, given its id, asks its question and shows its result."""

    async def nobody(method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        raise AssertionError(f"a task's question came as a request: {method}")

    port = free_port()
    async with serving_http(tmp_path / "serve.log", port) as url:
        async with connect_http(url, **session_options(V_2026_07_28, nobody)) as client:
            created = await client.call_tool("confirm_delete", {"filename": "old.log"})
        assert created["resultType"] == "task", created
        command = readme(*CONNECT_TASK).replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        done = await sh(command.replace("TASK_ID", created["taskId"]), stdin="y\n1\n")
        unknown = await sh(command.replace("TASK_ID", "no-such-task"))
    out = done.stdout.decode()
    assert done.returncode == 0, out + done.stderr.decode()
    assert f"Following task {created['taskId']}" in out
    assert "Delete old.log?" in out
    assert out.endswith("Task completed.\nResult:\n  Deleted old.log\n"), out
    assert unknown.returncode == 1
    assert "Task not found" in unknown.stdout.decode()


# -- the terminal transcripts -----------------------------------------------------------------

#: Where a transcript's line waits for the user: the command prompt, a field's prompt, the
#: form's closing choice; what follows on the line is what the user typed.
PROMPT = re.compile(r"^(mcp> |\s+\[[^\]]*\] > |\[1\] .*  \[3\] \S+ )(.*)$")


def replay(transcript: str, lang: str, state: Path) -> tuple[list[str], int | None]:
    """``erlmcp-py connect -- erlmcp-py serve`` in a pseudo-terminal under ``LANG=lang``,
    typed what ``transcript`` shows typed (``^C``: Ctrl-C), then ``quit``; the terminal's
    lines and the exit status."""
    child = pexpect.spawn(
        "erlmcp-py",
        ["connect", "--", "erlmcp-py", "serve"],
        env=environment(LANG=lang, TERM="xterm", XDG_STATE_HOME=str(state)),
        encoding="utf-8",
        timeout=LIMIT,
        dimensions=(60, 200),
    )
    screen = io.StringIO()
    child.logfile_read = screen
    typed = [found.groups() for found in map(PROMPT.match, transcript.splitlines()) if found]
    if typed[-1] != ("mcp> ", "quit"):
        typed.append(("mcp> ", "quit"))
    for prompt, text in typed:
        child.expect_exact(prompt)
        if text == "^C":
            child.sendintr()
        else:
            child.sendline(text)
    child.expect(pexpect.EOF)
    child.close()
    return screen.getvalue().replace("\r\n", "\n").splitlines(), child.exitstatus


@pytest.mark.parametrize(
    ("session", "lang"), [(SESSION_EN, "C.UTF-8"), (SESSION_PT, "pt_BR.UTF-8")]
)
def test_the_transcripts_replay_line_for_line_in_a_terminal(
    session: tuple[str, str], lang: str, tmp_path: Path
) -> None:
    """What README.md shows is what the terminal shows, every line, nothing left to vary."""
    expected = readme(*session).splitlines()
    lines, status = replay("\n".join(expected), lang, tmp_path / "state")
    assert status == 0
    start = lines.index(expected[0]) if expected[0] in lines else 0
    shown = lines[start : start + len(expected)]
    diff = "\n".join(difflib.unified_diff(expected, shown, "README.md", "terminal", lineterm=""))
    assert shown == expected, diff


# -- the python snippets of the documents -----------------------------------------------------

DOCUMENTS = sorted([README, *ROOT.glob("docs/**/*.md"), *ROOT.glob("deploy/**/*.md")])


def snippet_key(block: Block) -> tuple[str, str]:
    """A python snippet's document and the first name it defines (else its first line)."""
    for node in ast.parse(block.text).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return str(block.path.relative_to(ROOT)), node.name
    return str(block.path.relative_to(ROOT)), block.text.strip().splitlines()[0]


#: The names a snippet takes from the text around it: the reader's own objects, never what a
#: library exports (that is imported in the snippet).
TAKEN_FROM_THE_TEXT: dict[tuple[str, str], frozenset[str]] = {
    ("docs/embedding.md", "Deployment"): frozenset({"LinePeer"}),
    ("docs/mrtr.md", "signup"): frozenset({"server", "Person"}),
    ("docs/mrtr.md", "summarize_repo"): frozenset({"server"}),
    ("docs/mrtr.md", "plan_trip"): frozenset({"server", "ask_name", "ask_llm", "ask_roots"}),
    ("docs/mrtr.md", "review"): frozenset({"server", "Reviewer"}),
    ("docs/tasks.md", "provision"): frozenset({"server", "Plan"}),
}

SNIPPETS = [
    block for path in DOCUMENTS for block in fenced_blocks(path) if block.language == "python"
]


async def test_the_gateway_command_serves_the_sdk_server_and_validates_its_answers(
    tmp_path: Path,
) -> None:
    """The README's SDK server, saved as server.py, behind ``erlmcp-py gateway`` as the
    README runs it: an answer out of the server's bounds is asked again by the gateway, and
    only the valid one reaches the server's tool."""
    from erlmcp_py.client import connect_stdio

    (tmp_path / "server.py").write_text(readme(*GATEWAY_SERVER))
    asked: list[ServerRequest] = []
    answers = [{"name": "Ada", "age": 200}, {"name": "Ada", "age": 36}]

    def user(request: ServerRequest) -> dict[str, Any]:
        asked.append(request)
        return {"action": "accept", "content": answers.pop(0)}

    command = ["sh", "-c", readme(*GATEWAY_STDIO)]
    with trio.fail_after(LIMIT):
        async with connect_stdio(command, cwd=tmp_path, env=environment(), handler=user) as s:
            assert s.server_info["name"] == "people"
            result = await s.call_tool("register")
    assert result["content"][0]["text"] == "registered Ada, 36"
    assert len(asked) == 2
    assert "age" in asked[1].params["message"]  # the re-prompt says what was wrong


async def test_the_desktop_configuration_runs_the_gateway_for_the_official_client(
    tmp_path: Path,
) -> None:
    """The README's desktop configuration, started as a desktop client starts it (its
    command and args, in the folder of server.py), with the official client."""
    (tmp_path / "server.py").write_text(readme(*GATEWAY_SERVER))
    (entry,) = json.loads(readme(*GATEWAY_DESKTOP))["mcpServers"].values()
    env = environment()
    command = shutil.which(entry["command"], path=env["PATH"])
    assert command is not None

    async def user(_ctx: Any, params: Any) -> types.ElicitResult:
        assert params.message == "Who are you?"
        return types.ElicitResult(action="accept", content={"name": "Ada", "age": 36})

    server = StdioServerParameters(command=command, args=entry["args"], cwd=tmp_path, env=env)
    with trio.fail_after(LIMIT):
        async with Client(server, mode="legacy", elicitation_callback=user) as client:  # type: ignore[arg-type]
            result = await client.call_tool("register", {})
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert block.text == "registered Ada, 36"


def pyflakes(block: Block) -> list[dict[str, Any]]:
    """ruff's findings of undefined names (F821) and unused imports (F401) in ``block``."""
    done = subprocess.run(
        [str(BIN / "ruff"), "check", "--isolated", "--select", "F821,F401", "--target-version",
         "py311", "--output-format", "json", "--stdin-filename", f"{block.where}.py", "-"],
        input=block.text,
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    findings: list[dict[str, Any]] = json.loads(done.stdout)
    return findings


@pytest.mark.parametrize("block", SNIPPETS, ids=lambda block: block.where)
def test_each_python_snippet_compiles_and_names_only_what_it_imports(block: Block) -> None:
    compile(block.text, block.where, "exec")
    findings = pyflakes(block)
    undefined = {
        re.sub(r"^Undefined name `(.*)`$", r"\1", found["message"])
        for found in findings
        if found["code"] == "F821"
    }
    key = snippet_key(block)
    allowed = TAKEN_FROM_THE_TEXT.get(key, frozenset())
    assert undefined == allowed, (
        f"{block.where} uses {sorted(undefined)} undefined, {sorted(allowed)} allowed: import "
        f"what a library provides; a name the text around the snippet defines goes in "
        f"TAKEN_FROM_THE_TEXT[{key}]"
    )
    unused = [found["message"] for found in findings if found["code"] == "F401"]
    assert not unused, f"{block.where}: {unused}"


def test_every_allowance_names_a_snippet_and_no_library_name() -> None:
    keys = [snippet_key(block) for block in SNIPPETS]
    assert len(keys) == len(set(keys)), keys
    assert set(TAKEN_FROM_THE_TEXT) <= set(keys), set(TAKEN_FROM_THE_TEXT) - set(keys)
    for key, names in TAKEN_FROM_THE_TEXT.items():
        for name in names:
            assert name not in erlmcp_py.__all__, f"{key}: import {name} from erlmcp_py"
            assert importlib.util.find_spec(name) is None, f"{key}: import the module {name}"


async def test_the_embedding_snippet_asks_a_tcp_user_through_the_examples_line_peer(
    tmp_path: Path,
) -> None:
    """docs/embedding.md's program, with the ``LinePeer`` of examples/tcp_chat_ask.py (the
    program the page points to) and a free port: the user is asked, an invalid answer is
    asked again with its error, and a valid one ends the conversation."""
    (block,) = [b for b in SNIPPETS if snippet_key(b) == ("docs/embedding.md", "Deployment")]
    port = free_port()
    snippet = block.text.replace(", 7878)", f", {port})")
    assert snippet != block.text
    program = tmp_path / "embedded.py"
    program.write_text(f"from tcp_chat_ask import LinePeer\n{snippet}\ntrio.run(main)\n")
    env = environment(PYTHONPATH=str(ROOT / "examples"))
    with trio.fail_after(LIMIT):
        process = await trio.lowlevel.open_process([sys.executable, str(program)], env=env)
        try:
            stream = await connected_tcp(port, process)
            async with stream:
                assert await line_from(stream) == "? Where should we deploy? [eu/us/ap]"
                await stream.send_all(b"mars\n")
                assert await line_from(stream) == "? Where should we deploy? [eu/us/ap]"
                await stream.send_all(b"eu\n")
                rest = await rest_of(stream)
        finally:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
    # The second question says what was wrong with the first answer; the valid answer ends the
    # conversation: no other question, the handler returned and the connection closed.
    assert rest == [
        "  Your previous answer was not accepted (attempt 2):",
        "  - region: must be one of: eu, us, ap.",
    ]


async def connected_tcp(port: int, process: trio.Process) -> trio.SocketStream:
    """A connection to ``port`` of 127.0.0.1, once ``process`` listens there."""
    while True:  # the listener is another process's: nothing to wait on but time
        try:
            return await trio.open_tcp_stream("127.0.0.1", port)
        except OSError:
            assert process.poll() is None, f"the program exited {process.returncode}"
            await trio.sleep(0.02)


async def line_from(stream: trio.SocketStream) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = await stream.receive_some(1)
        assert chunk, f"the connection ended after {data!r}"
        data += chunk
    return data.decode().rstrip("\n")


async def rest_of(stream: trio.SocketStream) -> list[str]:
    """The lines ``stream`` brings until its end."""
    data = b""
    while chunk := await stream.receive_some():
        data += chunk
    return data.decode().splitlines()
