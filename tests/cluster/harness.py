"""A cluster on real parts: ``redis-server``, three ``erlmcp-py serve --transport http``
replicas sharing one key ring and that Redis as their store, and HAProxy in front, configured
by the shipped ``deploy/haproxy/erlmcp-py.cfg`` with only its ports and paths replaced. The
replicas are started as behind a public name: ``--public-url`` is HAProxy's address; and they
trust HAProxy to name the client as the shipped program files do (``--forwarded-allow-ips``).

Every process is a child of the test process, started from the main thread with its output in
a file of the cluster's temporary directory and ``PR_SET_PDEATHSIG`` (SIGKILL) set, so that
none outlives the test run even when pytest itself is killed. :func:`open_cluster` stops them
all in a ``finally`` (SIGTERM, then SIGKILL past a bound) and checks that none is left.
Waits poll under bounds; nothing sleeps a fixed time.
"""

from __future__ import annotations

import configparser
import contextlib
import csv
import ctypes
import ctypes.util
import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from tests.components import require
from tests.deploy.support import REPO, free_port, log_events

SHIPPED_HAPROXY = REPO / "deploy" / "haproxy" / "erlmcp-py.cfg"
#: The shipped TCP-mode configuration (PROXY protocol v2 to the replicas).
SHIPPED_HAPROXY_TCP = REPO / "deploy" / "haproxy" / "erlmcp-py-tcp.cfg"
#: What a connection opens with to a replica that takes the PROXY protocol from 127.0.0.1
#: (the harness's own probes: a header that names no client, the peer stays the client).
PROXY_UNKNOWN = b"PROXY UNKNOWN\r\n"
SHIPPED_PROGRAM = REPO / "deploy" / "supervisord" / "erlmcp-py.conf"
BACKEND = "erlmcp-py"
REPLICAS = ("r1", "r2", "r3")  # the server names of the shipped backend
START_LIMIT = 30.0  # seconds for a process to be ready (a busy machine imports slowly)
STOP_LIMIT = 10.0  # seconds for a process to exit on SIGTERM before it is killed
POLL = 0.05  # seconds between two looks


def store_args(redis_url: str) -> tuple[str, ...]:
    """The replicas' shared-store options, given the cluster's Redis URL: the one place
    that says what the replicas share besides the key ring.

    Every replica uses the cluster's Redis (``--store redis://127.0.0.1:PORT/0``): rate
    buckets and pending caps, elicitation records, and calls forwarded to the replica that
    holds an elicitation are shared.
    """
    return ("--store", redis_url)


def trusted_balancer_args() -> tuple[str, ...]:
    """The replicas' trust in the balancer, as ``deploy/`` ships it: the
    ``--forwarded-allow-ips`` of the shipped supervisord program (HAProxy, on the replicas'
    host, connects to them from 127.0.0.1). A module's ``REPLICA_ARGS`` come after, so a
    module can give another value."""
    program = configparser.ConfigParser(inline_comment_prefixes=(";",), interpolation=None)
    program.read_string(SHIPPED_PROGRAM.read_text())
    command = program["program:erlmcp-py"]["command"].split()
    return ("--forwarded-allow-ips", command[command.index("--forwarded-allow-ips") + 1])


def shipped_haproxy_config(
    frontend: int,
    replicas: Mapping[str, int],
    stats_socket: Path,
    shipped: Path = SHIPPED_HAPROXY,
) -> str:
    """A shipped HAProxy configuration with this cluster's ports and stats socket.

    Each replaced string must be in the shipped file (so the test follows the file): its
    frontend address, its replicas' addresses and its stats socket path.
    """
    text = shipped.read_text()
    replacements = {
        "bind 127.0.0.1:8000\n": f"bind 127.0.0.1:{frontend}\n",
        "stats socket /run/haproxy/erlmcp-py.sock ": f"stats socket {stats_socket} ",
    }
    for n, name in enumerate(REPLICAS):
        replacements[f"server {name} 127.0.0.1:{8001 + n}\n"] = (
            f"server {name} 127.0.0.1:{replicas[name]}\n"
        )
    for old, new in replacements.items():
        assert text.count(old) == 1, f"{old!r} is no longer in {shipped}: update this"
        text = text.replace(old, new)
    settings = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not any("/run/" in line for line in settings)
    return text


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the parent (thread) dies."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


@dataclass
class Child:
    """One process of the cluster: its command and its log (every start appends to it)."""

    name: str
    command: list[str]
    log: Path
    process: subprocess.Popen[bytes] | None = None
    pids: list[int] = field(default_factory=list)

    def start(self) -> None:
        assert threading.current_thread() is threading.main_thread(), (
            "start cluster processes from the main thread (PR_SET_PDEATHSIG is per thread)"
        )
        assert not self.running, f"{self.name} is already running"
        with self.log.open("ab") as out:
            out.write(f"--- {self.name}: {' '.join(self.command)}\n".encode())
            out.flush()
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        self.pids.append(self.process.pid)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL, and reap it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(STOP_LIMIT)

    def terminate(self) -> None:
        """SIGTERM, when it runs."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def wait(self, timeout: float = STOP_LIMIT) -> int:
        """Wait for it to exit; its exit status."""
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self) -> int | None:
        """SIGTERM, SIGKILL past :data:`STOP_LIMIT`; the exit status (``None``: never started)."""
        self.terminate()
        return self.reap()

    def reap(self) -> int | None:
        """Wait for it to exit, SIGKILL past :data:`STOP_LIMIT`; the exit status (``None``:
        never started)."""
        if self.process is None:
            return None
        try:
            self.process.wait(STOP_LIMIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_LIMIT)
        return self.process.returncode

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else "(no log)"

    def check_running(self) -> None:
        if not self.running:
            code = None if self.process is None else self.process.returncode
            raise AssertionError(f"{self.name} exited (status {code}):\n{self.log_text()}")


def poll(predicate: Callable[[], bool], what: str, timeout: float = START_LIMIT) -> None:
    """Wait until ``predicate()``; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(POLL)  # another process's state: nothing to wait on but time


async def until(predicate: Callable[[], bool], what: str, timeout: float = START_LIMIT) -> None:
    """:func:`poll` for a test's trio task: the other tasks (a client's retry) run meanwhile."""
    with trio.fail_after(timeout):
        while True:
            if predicate():
                return
            await trio.sleep(POLL)  # another process's state: nothing to wait on but time


def http_get(port: int, path: str, timeout: float = 2.0, preamble: bytes = b"") -> tuple[int, str]:
    """``GET path`` on 127.0.0.1:port, the connection opened with ``preamble``; the status
    and body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        if preamble:
            connection.connect()
            assert connection.sock is not None
            connection.sock.sendall(preamble)
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        connection.close()


@dataclass
class Replica(Child):
    """An ``erlmcp-py serve --transport http`` replica."""

    port: int = 0
    preamble: bytes = b""  # what each connection opens with (a PROXY protocol header)

    def ready(self) -> bool:
        self.check_running()
        try:
            return http_get(self.port, "/readyz", preamble=self.preamble)[0] == 200
        except OSError:
            return False

    def events(self, **match: Any) -> list[dict[str, Any]]:
        """The JSON log lines (of every incarnation) whose fields include ``match``."""
        return [
            event
            for event in log_events(self.log)
            if all(event.get(key) == value for key, value in match.items())
        ]


@dataclass
class Cluster:
    """The running cluster; ``url`` is the MCP endpoint through HAProxy."""

    tmp: Path
    keyring: Path
    redis: Child
    redis_port: int
    replicas: dict[str, Replica]
    haproxy: Child
    frontend: int
    stats_socket: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.frontend}/mcp"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    def children(self) -> list[Child]:
        return [self.redis, *self.replicas.values(), self.haproxy]

    # -- HAProxy's runtime API -------------------------------------------------------------

    def admin(self, command: str) -> str:
        """One command on HAProxy's stats socket; its answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(self.stats_socket))
            sock.sendall(command.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")

    def admin_ready(self) -> bool:
        """Whether HAProxy answers on its stats socket (the file exists once HAProxy binds
        it, a little before it accepts)."""
        self.haproxy.check_running()
        try:
            return bool(self.admin("show info"))
        except OSError:
            return False

    def stats(self) -> dict[str, dict[str, str]]:
        """HAProxy's ``show stat`` rows of the backend: each replica's, and ``BACKEND``'s."""
        text = self.admin("show stat").lstrip("# ")
        return {
            row["svname"]: row
            for row in csv.DictReader(text.splitlines())
            if row["pxname"] == BACKEND and row["svname"] in (*self.replicas, "BACKEND")
        }

    def server_states(self) -> dict[str, str]:
        """HAProxy's view of each replica (``UP``, ``DOWN``, ``MAINT``, ``UP 1/2`` …)."""
        return {name: row["status"] for name, row in self.stats().items() if name != "BACKEND"}

    def requests(self) -> dict[str, int]:
        """Connections HAProxy opened to each replica so far: one per request (the
        connection to a replica closes after each response)."""
        return {name: int(row["stot"]) for name, row in self.stats().items() if name != "BACKEND"}

    def retried(self) -> int:
        """Requests HAProxy retried (and redispatched) on another replica so far."""
        backend = self.stats()["BACKEND"]
        return int(backend["wretr"] or 0) + int(backend["wredis"] or 0)

    def wait_states(self, wanted: Mapping[str, str], timeout: float = START_LIMIT) -> None:
        self.haproxy.check_running()
        poll(
            lambda: all(self.server_states().get(n) == s for n, s in wanted.items()),
            f"HAProxy to see {dict(wanted)} (it sees {self._states_or_error()})",
            timeout,
        )

    def _states_or_error(self) -> object:
        try:
            return self.server_states()
        except OSError as exc:
            return exc

    def only(self, name: str) -> None:
        """Take every replica but ``name`` out of rotation (maintenance mode)."""
        for other in self.replicas:
            if other != name:
                self.admin(f"set server {BACKEND}/{other} state maint")
        self.wait_states({n: ("UP" if n == name else "MAINT") for n in self.replicas})

    # -- the replicas ------------------------------------------------------------------------

    def kill(self, name: str) -> None:
        """SIGKILL a replica (and reap it)."""
        self.replicas[name].kill()

    def start(self, name: str) -> None:
        """Start a stopped replica again (same port, same key ring); wait until ready."""
        replica = self.replicas[name]
        replica.start()
        poll(replica.ready, f"{name} to be ready")

    def restart(self, name: str) -> int:
        """Stop a replica with SIGTERM (a deploy) and start it again; the new pid."""
        replica = self.replicas[name]
        status = replica.stop()
        assert status == 0, f"{name} exited {status} on SIGTERM:\n{replica.log_text()}"
        self.start(name)
        return replica.pid

    def heal(self) -> None:
        """Every replica running and in rotation, as HAProxy sees it."""
        self.redis.check_running()
        self.haproxy.check_running()
        for name, replica in self.replicas.items():
            if not replica.running:
                self.start(name)
            self.admin(f"set server {BACKEND}/{name} state ready")
        self.wait_states(dict.fromkeys(self.replicas, "UP"))

    def logs(self) -> dict[str, str]:
        return {child.name: child.log_text() for child in self.children()}


def _redis_pong(child: Child, port: int) -> bool:
    child.check_running()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


#: What a replica runs by default: ``erlmcp-py serve`` with the cluster tests' server.
SERVE = ("serve", "--server", "tests.cluster.servers:build")


def _replica_command(
    port: int,
    frontend: int,
    keyring: Path,
    extra: Sequence[str],
    command: Sequence[str] = SERVE,
    tail: Sequence[str] = (),
) -> list[str]:
    """A replica on ``port`` whose public address is HAProxy's ``frontend``: ``command``
    (the subcommand and its own options), the cluster's options, ``extra``, then ``tail``."""
    return [
        sys.executable,
        "-m",
        "erlmcp_py.app",
        *command,
        "--transport",
        "http",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--public-url",
        f"http://127.0.0.1:{frontend}",
        "--keyring",
        str(keyring),
        "--shutdown-timeout",
        "2",
        *extra,
        *tail,
    ]


@contextlib.contextmanager
def open_cluster(
    tmp: Path,
    replica_args: Sequence[str] = (),
    command: Sequence[str] = SERVE,
    tail: Sequence[str] = (),
    proxy_protocol: bool = False,
) -> Iterator[Cluster]:
    """Start Redis, three replicas (``command``, with ``replica_args`` besides the shared key
    ring, :func:`store_args` and :func:`trusted_balancer_args`, then ``tail``) and HAProxy;
    stop them all at the end. With ``proxy_protocol`` HAProxy runs the shipped TCP-mode
    configuration and the replicas take ``--proxy-protocol``.

    Raises:
        AssertionError: a process did not become ready; the message has every log.
    """
    redis_server = require("redis-server")
    haproxy = require("haproxy")
    redis_port, frontend = free_port(), free_port()
    ports = {name: free_port() for name in REPLICAS}
    stats_socket = tmp / "haproxy.sock"
    keyring = tmp / "keyring"  # created by the first replica to start: mode 0600
    config = tmp / "haproxy.cfg"
    shipped = SHIPPED_HAPROXY_TCP if proxy_protocol else SHIPPED_HAPROXY
    config.write_text(shipped_haproxy_config(frontend, ports, stats_socket, shipped))
    redis_dir = tmp / "redis"
    redis_dir.mkdir()
    redis = Child(
        "redis-server",
        [
            redis_server,
            "--port",
            str(redis_port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(redis_dir),
        ],
        tmp / "redis.log",
    )
    cluster = Cluster(
        tmp=tmp,
        keyring=keyring,
        redis=redis,
        redis_port=redis_port,
        replicas={},
        haproxy=Child("haproxy", [haproxy, "-db", "-f", str(config)], tmp / "haproxy.log"),
        frontend=frontend,
        stats_socket=stats_socket,
    )
    extra = (*store_args(cluster.redis_url), *trusted_balancer_args(), *replica_args)
    if proxy_protocol:
        extra = (*extra, "--proxy-protocol")
    preamble = PROXY_UNKNOWN if proxy_protocol else b""
    for name, port in ports.items():
        argv = _replica_command(port, frontend, keyring, extra, command, tail)
        log = tmp / f"{name}.log"
        cluster.replicas[name] = Replica(name, argv, log, port=port, preamble=preamble)
    try:
        try:
            redis.start()
            poll(lambda: _redis_pong(redis, redis_port), "redis-server to answer PING")
            for replica in cluster.replicas.values():
                replica.start()
            for replica in cluster.replicas.values():
                poll(replica.ready, f"{replica.name} to be ready")
            cluster.haproxy.start()
            poll(cluster.admin_ready, "HAProxy's stats socket")
            cluster.wait_states(dict.fromkeys(REPLICAS, "UP"))
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{format_logs(cluster.logs())}") from None
        yield cluster
    finally:
        _stop_all(cluster)


def _stop_all(cluster: Cluster) -> None:
    """Stop HAProxy first (no new requests), then the replicas (all at once: each drains
    its suspended calls), then Redis; every process ever started must be gone."""
    cluster.haproxy.stop()
    running = [replica for replica in cluster.replicas.values() if replica.running]
    for replica in running:
        replica.terminate()
    statuses = {replica.name: replica.reap() for replica in running}
    cluster.redis.stop()
    left = [(child.name, pid) for child in cluster.children() for pid in child.pids if _exists(pid)]
    assert not left, f"processes left behind: {left}"
    unclean = {name: status for name, status in statuses.items() if status != 0}
    assert not unclean, f"replicas that did not stop cleanly on SIGTERM: {unclean}"


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def format_logs(logs: Mapping[str, str], tail: int = 20_000) -> str:
    return "\n".join(f"===== {name} =====\n{text[-tail:]}" for name, text in logs.items())
