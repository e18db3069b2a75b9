"""``erlmcp-py`` command-line options turn into runtime policy, and bad values are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

from erlmcp_py.cli import _parser, runtime_config


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


def test_serve_mrtr_option_defaults_to_auto_and_refuses_other_modes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _parser().parse_args(["serve"]).mrtr == "auto"
    assert _parser().parse_args(["serve", "--mrtr", "replay"]).mrtr == "replay"
    with pytest.raises(SystemExit) as exited:
        _parser().parse_args(["serve", "--mrtr", "sticky"])
    assert exited.value.code == 2
    assert "--mrtr" in capsys.readouterr().err


async def test_serve_mrtr_replay_answers_the_official_client_by_replay(tmp_path: Path) -> None:
    """``erlmcp-py serve --transport http --mrtr replay``, driven by the official ``mcp``
    client on 2026-07-28: every retry re-runs the tool (the log says so)."""
    from mcp import Client, types

    from tests.deploy.support import events_named, wait_serving
    from tests.deploy.test_signals import STUBBORN, http_server

    answers = [
        types.ElicitResult(action="accept", content={"name": "Ada"}),
        types.ElicitResult(action="accept", content={"confirm": True}),
    ]

    async def on_elicit(_ctx: Any, _params: Any) -> types.ElicitResult:
        return answers.pop(0)

    stderr = tmp_path / "stderr.log"
    extra = ("--mrtr", "replay", "--log-level", "debug", *STUBBORN)
    async with http_server(stderr, *extra) as (_process, url):
        async with httpx2.AsyncClient(timeout=5) as http:
            await wait_serving(http, url, 15)
        with trio.fail_after(20):
            connect = Client(url, mode="2026-07-28", elicitation_callback=on_elicit)  # type: ignore[arg-type]
            async with connect as client:
                result = await client.call_tool("signup", {})
    assert result.content[0].text == "Ada: confirmed=True, runs=3"  # type: ignore[union-attr]
    assert len(events_named(stderr, "replayed")) == 2


async def test_serve_mrtr_replay_over_stdio_with_the_official_client() -> None:
    """``erlmcp-py serve --mrtr replay`` on stdio: the connection's registry replays too."""
    from mcp import Client, types
    from mcp.client.stdio import StdioServerParameters

    from tests.deploy.support import REPO, serve_command
    from tests.deploy.test_signals import STUBBORN

    answers = [
        types.ElicitResult(action="accept", content={"name": "Ada"}),
        types.ElicitResult(action="accept", content={"confirm": False}),
    ]

    async def on_elicit(_ctx: Any, _params: Any) -> types.ElicitResult:
        return answers.pop(0)

    command = serve_command("--mrtr", "replay", "--log-level", "warning", *STUBBORN)
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO))
    with trio.fail_after(30):
        connect = Client(params, mode="2026-07-28", elicitation_callback=on_elicit)  # type: ignore[arg-type]
        async with connect as client:
            result = await client.call_tool("signup", {})
    # started, then replayed by each of the two retries
    assert result.content[0].text == "Ada: confirmed=False, runs=3"  # type: ignore[union-attr]
