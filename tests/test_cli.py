"""``erlmcp-py`` command-line options turn into runtime policy, and bad values are refused."""

from __future__ import annotations

import pytest

from erlmcp_py.cli import _parser, http_config, runtime_config
from erlmcp_py.transports.http import PrincipalLimits


def test_serve_rate_option_sets_the_per_client_rate() -> None:
    args = _parser().parse_args(["serve", "--rate", "600", "--elicitation-timeout", "20"])
    config = runtime_config(args.elicitation_timeout, args.dev, args.rate)
    assert config.rate == 600
    assert config.to_policy().rate.capacity == 600
    assert (config.form_deadline_s, config.warn_before_s) == (20, 5)
    assert runtime_config(None, False).rate == 10  # the policy default (docs/architecture.md)


@pytest.mark.parametrize("bad", ["0", "-3", "1.5", "lots"])
def test_serve_rate_option_refuses_bad_values(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _parser().parse_args(["serve", "--rate", bad])
    assert exited.value.code == 2
    assert "--rate" in capsys.readouterr().err


def test_demo_prints_every_scene_and_each_outcome() -> None:
    """``erlmcp-py demo`` (the README's first command) over a real stdio subprocess."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "erlmcp_py.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    scenes = [line for line in out.splitlines() if line.startswith("== ")]
    assert len(scenes) == 12, scenes
    for expected in (
        "re-prompted",
        "declined",
        "cancelled",
        "notifications/elicitation/complete",
        "-32042",
        "refused",
        "(the elicitation was abandoned)",
        "timed out",
    ):
        assert expected in out, expected
    # The timeout scene shows what the server sent during it, and only that: the warning,
    # then the notice withdrawing its own request.
    last = out.split("== Nobody answers")[1]
    notices = [line for line in last.splitlines() if line.startswith("  <- notifications/")]
    assert [n.split()[1] for n in notices] == ["notifications/message", "notifications/cancelled"]
    assert '"reason": "elicitation timed out"' in notices[1]


def test_serve_http_options_set_idle_expiry_and_per_client_shares() -> None:
    defaults = http_config(_parser().parse_args(["serve"]))
    assert defaults.idle_timeout == 300
    assert defaults.limits == PrincipalLimits()
    argv = ["serve", "--session-idle-timeout", "60", "--sessions-per-client", "4"]
    argv += ["--requests-per-client", "8", "--suspended-per-client", "16"]
    config = http_config(_parser().parse_args(argv))
    assert config.idle_timeout == 60
    assert config.limits == PrincipalLimits(sessions=4, requests=8, suspended=16)
