"""A real ``redis-server`` a test starts, stops and starts again: a free loopback port, a
temporary directory, no persistence."""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import time


class RedisServer:
    """One ``redis-server`` process that a test can stop and start again on the same port."""

    def __init__(self, executable: str, directory: str, *extra: str) -> None:
        self.executable = executable
        self.directory = directory
        self.extra = extra  # more redis-server options
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, credentials: str = "", **options: str) -> str:
        """A store URL on this server with a fresh key prefix (and fast heartbeats);
        ``credentials``: ``USER:PASSWORD@`` or ``:PASSWORD@``."""
        query = {"prefix": f"t{secrets.token_hex(4)}", "timeout": "0.5", "heartbeat": "0.1",
                 "heartbeat_ttl": "0.6", **options}  # fmt: skip
        options_text = "&".join(f"{k}={v}" for k, v in query.items())
        return f"redis://{credentials}127.0.0.1:{self.port}/0?{options_text}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                *(self.executable, "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", self.directory),
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("redis-server did not start")

    def cli(self, *args: str) -> list[str]:
        """One command through ``redis-cli`` (installed with ``redis-server``): the lines of
        its raw answer."""
        executable = shutil.which("redis-cli")
        assert executable is not None, "redis-cli comes with redis-server (redis-tools)"
        done = subprocess.run(
            [executable, "-p", str(self.port), "--raw", *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return [line for line in done.stdout.splitlines() if line]

    def keys(self, pattern: str) -> list[str]:
        """The keys matching ``pattern`` (a full scan: tests only)."""
        return sorted(self.cli("--scan", "--pattern", pattern))

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None
