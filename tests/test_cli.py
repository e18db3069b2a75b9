"""``erlmcp-py`` command-line options turn into runtime policy, and bad values are refused."""

from __future__ import annotations

import pytest

from erlmcp_py.cli import _parser, runtime_config


def test_serve_rate_option_sets_the_per_client_rate() -> None:
    args = _parser().parse_args(["serve", "--rate", "600", "--elicitation-timeout", "20"])
    config = runtime_config(args.elicitation_timeout, args.dev, args.rate)
    assert config.rate == 600
    assert config.to_policy().rate.capacity == 600
    assert (config.form_deadline_s, config.warn_before_s) == (20, 5)
    assert runtime_config(None, False).rate == 10  # the DESIGN.md §5 default


@pytest.mark.parametrize("bad", ["0", "-3", "1.5", "lots"])
def test_serve_rate_option_refuses_bad_values(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _parser().parse_args(["serve", "--rate", bad])
    assert exited.value.code == 2
    assert "--rate" in capsys.readouterr().err
