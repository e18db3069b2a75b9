"""The shipped systemd unit: checked by systemd's own tools where they exist.

There is no systemd as PID 1 here (nor in CI containers), so the unit is not started; what
can be checked for real is: ``systemd-analyze verify`` accepts it (with its ``ExecStart``
pointed at this venv's ``erlmcp-py``), ``systemd-analyze security --offline`` rates its
hardening, and its command line, expanded as systemd would with the shipped EnvironmentFile,
is one ``erlmcp-py serve`` accepts, bound to loopback, with a shutdown bound below
``TimeoutStopSec``. The tests needing ``systemd-analyze`` use it through ``tests/components.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from erlmcp_py.app import build_parser
from tests.components import require
from tests.deploy.support import REPO

UNIT = REPO / "deploy" / "systemd" / "erlmcp-py.service"
ENV_FILE = REPO / "deploy" / "systemd" / "erlmcp-py.env"


def service_settings(text: str) -> list[tuple[str, str]]:
    """``(key, value)`` of the ``[Service]`` section, in order (keys repeat)."""
    out: list[tuple[str, str]] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
        elif section == "[Service]":
            key, _, value = line.partition("=")
            out.append((key.strip(), value.strip()))
    return out


def setting(text: str, key: str) -> str:
    values = [v for k, v in service_settings(text) if k == key]
    assert len(values) == 1, f"{key}: {values}"
    return values[0]


def local_unit(tmp_path: Path) -> Path:
    """The shipped unit with ``ExecStart`` on this venv's console script (verify checks it)."""
    script = Path(sys.executable).parent / "erlmcp-py"
    assert script.exists()
    text = UNIT.read_text()
    for old, new in {
        "ExecStart=/opt/erlmcp-py/.venv/bin/erlmcp-py ": f"ExecStart={script} ",
        "WorkingDirectory=/opt/erlmcp-py\n": f"WorkingDirectory={REPO}\n",
    }.items():
        assert old in text, f"{old!r} is no longer in {UNIT}: update this test"
        text = text.replace(old, new)
    path = tmp_path / UNIT.name
    path.write_text(text)
    return path


def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    analyze = require("systemd-analyze")
    unit = local_unit(tmp_path)
    done = subprocess.run(
        [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    # verify exits 0 on settings it ignores ("Failed to parse ..., ignoring"): any line about
    # our unit is a failure too.
    complaints = [line for line in (done.stdout + done.stderr).splitlines() if unit.name in line]
    assert done.returncode == 0, done
    assert complaints == []


def test_the_unit_is_hardened(tmp_path: Path) -> None:
    analyze = require("systemd-analyze")
    version = subprocess.run(
        [analyze, "--version"], capture_output=True, text=True, timeout=60, check=False
    ).stdout
    found = re.match(r"systemd (\d+)", version)
    assert found is not None, version
    assert int(found.group(1)) >= 250, f"security --offline needs systemd 250+: {version!r}"
    rated = subprocess.run(
        # exposure 0-10 shown, 0-100 for the threshold: 20 = "2.0 OK" (unhardened is ~9.2)
        [analyze, "security", "--offline=true", "--threshold=20", str(local_unit(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert rated.returncode == 0, rated.stdout[-2000:]
    assert "Overall exposure level" in rated.stdout


def expand(command: str, env: dict[str, str]) -> list[str]:
    """systemd's ExecStart expansion: ``${VAR}`` is one word (an empty one too), ``$VAR``
    splits on whitespace."""
    out: list[str] = []
    for word in command.split():
        if re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", word):
            out.extend(env.get(word[1:], "").split())
        else:
            out.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env[m.group(1)], word))
    return out


def env_file(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if line and line[0] != "#")
    return {key.strip(): value.strip() for key, value in pairs}


def test_the_unit_command_line_is_a_loopback_serve_that_stops_before_systemd_kills_it() -> None:
    text = UNIT.read_text()
    defaults = dict(v.split("=", 1) for k, v in service_settings(text) if k == "Environment")
    shipped_env = env_file(ENV_FILE.read_text())
    assert set(shipped_env) <= set(defaults), "the EnvironmentFile names an unknown option"
    assert setting(text, "EnvironmentFile") == "-/etc/erlmcp-py/erlmcp-py.env"
    for env in (defaults, {**defaults, **shipped_env}):
        argv = expand(setting(text, "ExecStart"), env)
        assert argv[0].endswith("/erlmcp-py")
        args = build_parser().parse_args(argv[1:])
        assert (args.command, args.transport, args.host) == ("serve", "http", "127.0.0.1")
        assert args.shutdown_timeout < float(setting(text, "TimeoutStopSec"))
        # the reverse proxy or balancer in front, on this host, names the client
        assert args.forwarded_allow_ips == ("127.0.0.1",)
    extra = expand(setting(text, "ExecStart"), {**defaults, "ERLMCP_OPTS": "--rate 50 --dev"})
    assert extra[-3:] == ["--rate", "50", "--dev"]
    no_one = expand(setting(text, "ExecStart"), {**defaults, "ERLMCP_FORWARDED_ALLOW_IPS": ""})
    assert build_parser().parse_args(no_one[1:]).forwarded_allow_ips == ()
    assert setting(text, "Type") in ("exec", "simple")
    assert setting(text, "KillSignal") == "SIGTERM"
    assert setting(text, "Restart") == "on-failure"
    for key in ("NoNewPrivileges", "PrivateTmp"):
        assert setting(text, key) == "yes"
    assert setting(text, "ProtectSystem") == "strict"


def test_the_unit_raises_the_file_descriptor_limit_above_the_default() -> None:
    limit = setting(UNIT.read_text(), "LimitNOFILE")
    assert limit.isdigit(), limit
    assert int(limit) >= 8192  # the default soft limit is 1024: a connect flood exhausts it
