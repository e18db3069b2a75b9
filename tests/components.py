"""Components some tests drive for real: OS packages (redis-server, HAProxy, Chromium),
axe-core, the accessibility rules engine the page's browser tests inject (from npm, into a
cache folder outside the repository, by ``.ci/axe-core.sh``), and the MCP servers nobody here
wrote that the gateway's tests put behind it (fastmcp in a virtualenv of its own, the
TypeScript SDK on Node 22, into a cache folder by ``.ci/upstreams.sh``).

`.ci/run` installs them, and under CI (``CI`` set in the environment) a missing one fails the
test that needs it. On a developer's machine without them, those tests skip with what to
install, so ``make test`` still works with nothing but Python.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

#: Executable → the Debian package that provides it.
PACKAGES = {
    "redis-server": "redis-server",
    "haproxy": "haproxy",
    "chromium": "chromium",
    "chromedriver": "chromium-driver",
    "systemd-analyze": "systemd",
}


#: Where system daemons are installed, searched after ``PATH``.
SBIN = os.pathsep.join(("/usr/local/sbin", "/usr/sbin", "/sbin"))


def require(executable: str) -> str:
    """The path of ``executable``; skip the test without it, or fail it under CI."""
    # the sbin directories too: a user's PATH often lacks them (haproxy is /usr/sbin/haproxy)
    path = shutil.which(executable) or shutil.which(executable, path=SBIN)
    if path is not None:
        return path
    package = PACKAGES.get(executable, executable)
    _missing(f"{executable} is not installed (Debian package {package}; .ci/run installs it)")
    raise AssertionError("unreachable")  # pytest.skip and pytest.fail raise


#: The script that installs axe-core and says where its ``axe.min.js`` is.
AXE_CORE = Path(__file__).resolve().parents[1] / ".ci" / "axe-core.sh"


def _missing(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def require_ipv6() -> None:
    """Skip the test on a machine without IPv6, or fail it under CI."""
    import socket

    try:
        socket.socket(socket.AF_INET6).close()
    except OSError:
        _missing("this machine has no IPv6")


def require_axe_core(script: Path = AXE_CORE) -> str:
    """The path of axe-core's ``axe.min.js``; skip the test without it, or fail it under CI."""
    found = subprocess.run(
        ["bash", str(script), "--check"], capture_output=True, text=True, timeout=30, check=False
    )
    path = found.stdout.strip()
    if found.returncode == 0 and os.path.isfile(path):
        return path
    _missing(f"axe-core is not installed (run {script.name} in .ci/, as .ci/run does)")
    raise AssertionError("unreachable")  # pytest.skip and pytest.fail raise


#: The script that installs the foreign upstreams and says where they are.
UPSTREAMS = Path(__file__).resolve().parents[1] / ".ci" / "upstreams.sh"


def require_upstreams(script: Path = UPSTREAMS) -> dict[str, str]:
    """Where the foreign upstreams are: ``python`` (fastmcp's virtualenv), ``node`` (Node 22)
    and ``sdk`` (the TypeScript SDK's ``node_modules``); skip the test without them, or fail it
    under CI."""
    found = subprocess.run(
        ["bash", str(script), "--check"], capture_output=True, text=True, timeout=60, check=False
    )
    paths = dict(line.split("=", 1) for line in found.stdout.splitlines() if "=" in line)
    if found.returncode == 0 and {"python", "node", "sdk"} <= set(paths):
        return paths
    _missing(
        "fastmcp and the TypeScript SDK are not installed "
        f"(run {script.name} in .ci/, as .ci/run does)"
    )
    raise AssertionError("unreachable")  # pytest.skip and pytest.fail raise
