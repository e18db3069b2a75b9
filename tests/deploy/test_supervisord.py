"""``erlmcp-py serve --transport http`` under a real supervisord, from the shipped program file.

The program section is ``deploy/supervisord/erlmcp-py.conf`` itself, with only its install
paths, user and port replaced (each replaced string must be in the shipped file, so the test
follows it). supervisord runs in the foreground as a child of the test, on its own unix
socket; it is always shut down in a ``finally``, and every process it started is checked to
be gone. Waits poll (supervisord's XML-RPC, the HTTP endpoint, the log files) under bounds.
"""

from __future__ import annotations

import configparser
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import xmlrpc.client
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import trio
from supervisor.xmlrpc import SupervisorTransport  # type: ignore[import-untyped]

from erlmcp_py.app import build_parser
from tests.deploy.support import REPO, alive, events_named, free_port, poll, wait_serving
from tests.transports.test_http import INIT, McpHttp, call, message

SHIPPED = REPO / "deploy" / "supervisord" / "erlmcp-py.conf"
PROGRAM = "erlmcp-py"
START_LIMIT = 15.0  # seconds: supervisord up + the server importing and binding


def program_conf(port: int, logdir: Path) -> str:
    """The shipped program section with this machine's paths, user and a free port."""
    script = Path(sys.executable).parent / "erlmcp-py"
    assert script.exists(), f"{script}: the venv's console script (pip install -e .)"
    text = SHIPPED.read_text()
    replacements = {
        "/opt/erlmcp-py/.venv/bin/erlmcp-py ": f"{script} ",
        "--port 8000 ": f"--port {port} ",
        "directory=/opt/erlmcp-py\n": f"directory={REPO}\n",
        "user=erlmcp\n": f"user={pwd.getpwuid(os.getuid()).pw_name}\n",
        "/var/log/erlmcp-py/": f"{logdir}/",
    }
    for old, new in replacements.items():
        assert old in text, f"{old!r} is no longer in {SHIPPED}: update this test"
        text = text.replace(old, new)
    assert "/opt/" not in text
    assert "/var/log" not in text
    return text


@dataclass
class Supervised:
    """A running supervisord with the shipped program."""

    conf: Path
    sock: str
    logdir: Path
    url: str
    process: trio.Process
    pids: set[int] = field(default_factory=set)

    @property
    def stderr_log(self) -> Path:
        return self.logdir / "stderr.log"

    @property
    def supervisord_log(self) -> Path:
        return self.logdir / "supervisord.log"

    async def info(self) -> dict[str, Any]:
        """supervisord's ``getProcessInfo`` of the program (over its XML-RPC socket)."""

        def ask() -> dict[str, Any]:
            transport = SupervisorTransport(None, None, f"unix://{self.sock}")
            proxy = xmlrpc.client.ServerProxy("http://127.0.0.1", transport=transport)
            info = proxy.supervisor.getProcessInfo(PROGRAM)
            assert isinstance(info, dict)
            return info

        info = await trio.to_thread.run_sync(ask)
        if info["pid"]:
            self.pids.add(info["pid"])
        return info

    async def wait_state(self, state: str, timeout: float) -> dict[str, Any]:
        with trio.move_on_after(timeout):
            while True:
                info = await self.info()
                if info["statename"] == state:
                    return info
                await trio.sleep(0.05)
        raise AssertionError(f"{PROGRAM} not {state} after {timeout:g} s: {await self.info()}")

    async def wait_new_pid(self, old: int, timeout: float) -> int:
        """The pid of the program's next process, once supervisord has started one."""
        with trio.move_on_after(timeout):
            while True:
                pid: int = (await self.info())["pid"]
                if pid not in (0, old):
                    return pid
                await trio.sleep(0.05)
        raise AssertionError(f"{PROGRAM} not restarted after {timeout:g} s: {await self.info()}")

    async def ctl(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        """Run ``supervisorctl`` (the operator's tool) against this supervisord."""
        command = [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(self.conf), *args]
        return await trio.run_process(
            command, capture_stdout=True, capture_stderr=True, check=False
        )

    def log_text(self) -> str:
        return self.supervisord_log.read_text() if self.supervisord_log.exists() else ""


@asynccontextmanager
async def supervised(tmp_path: Path) -> AsyncIterator[Supervised]:
    sockdir = tempfile.mkdtemp(prefix="erlmcp-sv-")  # unix socket paths are short
    sock = os.path.join(sockdir, "supervisor.sock")
    logdir = tmp_path / "log"
    confd = tmp_path / "conf.d"
    logdir.mkdir()
    confd.mkdir()
    port = free_port()
    (confd / "erlmcp-py.conf").write_text(program_conf(port, logdir))
    conf = tmp_path / "supervisord.conf"
    conf.write_text(
        f"""[unix_http_server]
file={sock}
chmod=0700

[supervisord]
nodaemon=true
logfile={logdir}/supervisord.log
pidfile={tmp_path}/supervisord.pid
childlogdir={logdir}
loglevel=info

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

[supervisorctl]
serverurl=unix://{sock}

[include]
files = {confd}/*.conf
"""
    )
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "supervisor.supervisord", "-c", str(conf)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sup = Supervised(conf, sock, logdir, f"http://127.0.0.1:{port}/mcp", process)
    try:
        await poll(lambda: os.path.exists(sock), "supervisord's socket", START_LIMIT)
        yield sup
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)  # supervisord stops its programs, then exits
                with trio.move_on_after(20):
                    await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            for pid in sup.pids:  # nothing may outlive the test
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
                    raise AssertionError(f"{PROGRAM} pid {pid} outlived supervisord")
            shutil.rmtree(sockdir, ignore_errors=True)


@asynccontextmanager
async def http_client() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=10) as http:
        yield http


async def test_serves_and_supervisorctl_stop_is_a_clean_sigterm_exit(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with supervised(tmp_path) as sup, http_client() as http:
            client = await wait_serving(http, sup.url, START_LIMIT)
            assert (await client.post(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')).json()[
                "result"
            ] == {}
            pid = (await sup.info())["pid"]
            assert alive(pid)
            start = trio.current_time()
            stopped = await sup.ctl("stop", PROGRAM)
            took = trio.current_time() - start
            assert stopped.returncode == 0, stopped
            assert f"{PROGRAM}: stopped" in stopped.stdout.decode()
            info = await sup.info()
            assert (info["statename"], info["exitstatus"], info["pid"]) == ("STOPPED", 0, 0)
            assert not alive(pid)
            assert took < 10, took  # graceful: well inside --shutdown-timeout
            assert f"stopped: {PROGRAM} (exit status 0)" in sup.log_text()
            lines = events_named(sup.stderr_log, "shutdown")
            assert [(x["signal"], x["clean"], x["exit_status"]) for x in lines] == [
                ("SIGTERM", True, 0)
            ]
            assert sup.process.returncode is None  # supervisord itself goes on


async def test_a_killed_server_is_restarted_and_serves_again(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with supervised(tmp_path) as sup, http_client() as http:
            await wait_serving(http, sup.url, START_LIMIT)
            first = (await sup.wait_state("RUNNING", START_LIMIT))["pid"]
            os.kill(first, signal.SIGKILL)

            new_pid = await sup.wait_new_pid(first, START_LIMIT)
            assert not alive(first)
            await wait_serving(http, sup.url, START_LIMIT)  # a fresh session on the new process
            assert (await sup.info())["pid"] == new_pid
            assert alive(new_pid)
            assert f"exited: {PROGRAM} (terminated by SIGKILL; not expected)" in sup.log_text()


async def test_stop_drains_the_user_answers_the_pending_elicitation_and_exit_is_0(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        async with (
            supervised(tmp_path) as sup,
            http_client() as http,
            trio.open_nursery() as nursery,
        ):
            client: McpHttp = await wait_serving(http, sup.url, START_LIMIT)
            readyz = sup.url.rsplit("/", 1)[0] + "/readyz"
            assert (await http.get(readyz)).status_code == 200
            stopped: list[subprocess.CompletedProcess[bytes]] = []
            async with client.stream(call(3, "demo_confirm")) as sse:
                asked = await sse.next()
                assert asked is not None
                assert asked["method"] == "elicitation/create"

                async def stop() -> None:
                    stopped.append(await sup.ctl("stop", PROGRAM))

                nursery.start_soon(stop)
                await poll(
                    lambda: bool(events_named(sup.stderr_log, "drain_started")), "the drain", 15
                )
                # draining under supervisord: new sessions refused, not ready, the call runs on
                fresh = await McpHttp(http, sup.url).post(message("initialize", INIT, id=0))
                assert fresh.status_code == 503
                assert "retry-after" in fresh.headers
                assert (await http.get(readyz)).status_code == 503
                await client.answer(asked, {"action": "accept", "content": {"confirm": True}})
                on_post = await sse.rest()
            await poll(lambda: bool(stopped), "supervisorctl stop", 15)
        assert stopped[0].returncode == 0, stopped[0]
        assert on_post[-1]["id"] == 3
        text = on_post[-1]["result"]["content"][0]["text"]
        assert text.startswith("confirm: action=accept"), text
        started = events_named(sup.stderr_log, "shutdown_started")
        assert [(s["signal"], s["pending_elicitations"]) for s in started] == [("SIGTERM", 1)]
        line = events_named(sup.stderr_log, "shutdown")
        assert [(x["clean"], x["exit_status"], x["calls_left_by_drain"]) for x in line] == [
            (True, 0, 0)
        ]
        assert f"stopped: {PROGRAM} (exit status 0)" in sup.log_text()


def test_the_shipped_program_stops_before_supervisord_kills_it() -> None:
    parser = configparser.ConfigParser(inline_comment_prefixes=(";",), interpolation=None)
    parser.read_string(SHIPPED.read_text())
    program = parser[f"program:{PROGRAM}"]
    argv = program["command"].split()
    args = build_parser().parse_args(argv[1:])
    assert (args.command, args.transport, args.host) == ("serve", "http", "127.0.0.1")
    assert args.forwarded_allow_ips == ("127.0.0.1",)  # the proxy in front, on this host
    assert program["stopsignal"] == "TERM"
    assert args.shutdown_timeout < float(program["stopwaitsecs"])
    assert program["autorestart"] == "unexpected"
    assert program["exitcodes"] == "0"
    assert program["stderr_logfile"].endswith(".log")
