"""``erlmcp-py`` command-line options turn into runtime policy, and bad values are refused."""

from __future__ import annotations

import base64
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

from erlmcp_py.app import (
    STATE_KEYS_ENV,
    STORE_ENV,
    auth_config,
    build_parser,
    http_config,
    is_loopback,
    parse_args,
    runtime_config,
    state_keyring,
    store_url,
)
from erlmcp_py.core.state_token import TOKEN_VERSION
from erlmcp_py.transports.http import PrincipalLimits
from tests.deploy.support import free_port, serve_command
from tests.transports.test_http_mrtr import META, StatelessPoster


def test_serve_rate_option_sets_the_per_client_rate() -> None:
    args = build_parser().parse_args(["serve", "--rate", "600", "--elicitation-timeout", "20"])
    config = runtime_config(args.elicitation_timeout, args.dev, args.rate)
    assert config.rate == 600
    assert config.to_policy().rate.capacity == 600
    assert (config.form_deadline_s, config.warn_before_s) == (20, 5)
    assert runtime_config(None, False).rate == 10  # the policy default (docs/architecture.md)


def test_serve_locale_option_sets_the_default_language_of_the_servers_texts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(["serve", "--locale", "pt-BR"])
    assert runtime_config(args.elicitation_timeout, args.dev, args.rate, args.locale).locale == (
        "pt-BR"
    )
    assert runtime_config(None, False).locale == "en-US"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--locale", "fr-FR"])


def test_serve_task_options_set_the_task_policy() -> None:
    args = build_parser().parse_args(["serve", "--task-timeout", "7200", "--task-ttl", "9000"])
    config = runtime_config(None, False, task_timeout=args.task_timeout, task_ttl=args.task_ttl)
    assert (config.task_form_deadline_s, config.task_url_deadline_s) == (7200, 7200)
    assert config.task_warn_before_s == 900  # a quarter of it, at most 15 min
    assert config.task_ttl_s == 9000
    policy = runtime_config(None, False).to_policy()  # the defaults (docs/tasks.md)
    assert (policy.task_lifecycle.form_deadline_s, policy.tasks.ttl_s) == (14400, 86400)
    assert runtime_config(None, False, task_timeout=60).task_warn_before_s == 15


def test_serve_gives_task_questions_links_unless_told_not_to(tmp_path: Path) -> None:
    from erlmcp_py.app._startup import check_serve

    for argv, links in ((["serve"], True), (["serve", "--no-task-links"], False)):
        server = check_serve(build_parser().parse_args(argv), {}).server
        assert server.runtime_config.task_page_links is links
    path = tmp_path / "serve.toml"
    path.write_text("no_task_links = true\n")
    args = parse_args(["serve", "--config", str(path)], {})
    assert check_serve(args, {}).server.runtime_config.task_page_links is False


def test_serve_refuses_a_task_life_shorter_than_a_tasks_question_deadline() -> None:
    command = serve_command("--task-timeout", "600", "--task-ttl", "300")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "erlmcp-py: --task-ttl: a task's life (300 s) must be at least the deadline of its "
        "questions (600 s)"
    )


@pytest.mark.parametrize("bad", ["0", "-3", "1.5", "lots"])
def test_serve_rate_option_refuses_bad_values(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["serve", "--rate", bad])
    assert exited.value.code == 2
    assert "--rate" in capsys.readouterr().err


def test_serve_store_comes_from_the_option_else_the_environment_else_memory() -> None:
    args = build_parser().parse_args(["serve", "--store", "redis://127.0.0.1:6380/2"])
    store = store_url(args.store, {STORE_ENV: "redis://elsewhere:6379/0"})
    assert runtime_config(None, False, None, store=store).store == "redis://127.0.0.1:6380/2"
    from_env = store_url(None, {STORE_ENV: "redis://elsewhere:6379/0"})
    assert from_env == "redis://elsewhere:6379/0"
    assert store_url(None, {}) is None
    assert runtime_config(None, False).store == "memory"
    with pytest.raises(ValueError, match="redis://HOST:PORT/DB"):
        store_url("mysql://db", {})


def test_serve_refuses_a_bad_store_url() -> None:
    command = serve_command("--transport", "http", "--store", "redis://")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert "erlmcp-py: --store: " in done.stderr


async def test_serve_publishes_its_elicitations_to_the_store_it_is_given(tmp_path: Path) -> None:
    from glide import GlideClient, GlideClientConfiguration, NodeAddress

    from tests.components import require
    from tests.store.server import RedisServer

    redis = RedisServer(require("redis-server"), str(tmp_path))
    redis.start()
    port = free_port()
    url = redis.url(prefix="cli")
    command = serve_command("--transport", "http", "--port", str(port), "--store", url)
    try:
        with (tmp_path / "stderr").open("wb") as err, trio.fail_after(30):
            process = await trio.lowlevel.open_process(
                command, stdin=subprocess.DEVNULL, stderr=err
            )
            try:
                async with httpx2.AsyncClient(timeout=5) as http:
                    poster = StatelessPoster(http, f"http://127.0.0.1:{port}/mcp")
                    params = {"name": "demo_confirm", "arguments": {}, "_meta": META}
                    while True:
                        try:
                            answer = await poster.post("tools/call", params)
                            break
                        except httpx2.TransportError:
                            await trio.sleep(0.05)
                assert answer.json()["result"]["resultType"] == "input_required"
                config = GlideClientConfiguration([NodeAddress("127.0.0.1", redis.port)])
                client = await GlideClient.create(config)
                try:
                    records: Any = []
                    for _ in range(100):  # the record is written in the background
                        records = await client.custom_command(["KEYS", "cli:rec:*"])
                        if records:
                            break
                        await trio.sleep(0.05)
                    assert len(records) == 1
                    assert await client.zcard("cli:replicas") == 1
                finally:
                    await client.close()
            finally:
                process.terminate()
                await process.wait()
    finally:
        redis.stop()


def test_demo_prints_every_scene_and_each_outcome() -> None:
    """``erlmcp-py demo`` (the README's first command) over a real stdio subprocess."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "erlmcp_py.app", "demo"],
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
    shown = [line.split()[1] for line in last.splitlines() if line.startswith("  <- ")]
    # in the order they came: the warning and the withdrawn request, then the call's result
    assert shown == ["notifications/message", "notifications/cancelled", "result:"]
    assert '"reason": "elicitation timed out"' in last


def test_demo_gateway_shows_the_sdk_servers_questions_asked_through_the_gateway() -> None:
    """``erlmcp-py demo --gateway`` (``make demo-gateway``): the gateway in front of the
    official SDK's server, over real stdio subprocesses."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "erlmcp_py.app", "demo", "--gateway"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "(the official MCP SDK's MCPServer)" in out
    scenes = out.split("\n== ")[1:]
    assert len(scenes) == 4, out
    asked_again, declined, missing, unanswered = scenes
    assert "- age: must be at most 150." in asked_again
    assert "<- result: registered Ada, 36" in asked_again
    assert "<- result: not registered: the SDK tool received 'decline'" in declined
    assert "'The tool book needs more to run: nights.'  fields: nights*" in missing
    assert "<- result: booked Lisbon for 3 nights" in missing
    shown = [line.split()[1] for line in unanswered.splitlines() if line.startswith("  <- ")]
    assert shown == ["notifications/message", "notifications/cancelled", "result:"]
    assert "the SDK tool received 'cancel'" in unanswered


def test_demo_gateway_without_the_sdk_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    from erlmcp_py.app._demo import run_demo

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    assert run_demo(gateway=True) == 2
    assert "pip install 'erlmcp-py[gateway-demo]'" in capsys.readouterr().err


def test_serve_mrtr_option_defaults_to_auto_and_refuses_other_modes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert build_parser().parse_args(["serve"]).mrtr == "auto"
    args = build_parser().parse_args(["serve", "--mrtr", "replay"])
    assert args.mrtr == "replay"
    assert http_config(args).continuations == {"mrtr": "replay"}
    path = tmp_path / "serve.toml"
    path.write_text('mrtr = "suspend"\n')
    assert parse_args(["serve", "--config", str(path)], {}).mrtr == "suspend"
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["serve", "--mrtr", "sticky"])
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


def test_serve_http_options_set_idle_expiry_and_per_client_shares() -> None:
    defaults = http_config(build_parser().parse_args(["serve"]))
    assert defaults.idle_timeout == 300
    assert defaults.limits == PrincipalLimits()
    argv = ["serve", "--session-idle-timeout", "60", "--sessions-per-client", "4"]
    argv += ["--requests-per-client", "8", "--suspended-per-client", "16"]
    config = http_config(build_parser().parse_args(argv))
    assert config.idle_timeout == 60
    assert config.limits == PrincipalLimits(sessions=4, requests=8, suspended=16)
    assert defaults.ops_port is None
    assert http_config(build_parser().parse_args(["serve", "--ops-port", "9100"])).ops_port == 9100


def test_serve_public_url_option_sets_the_transports_public_url() -> None:
    assert http_config(build_parser().parse_args(["serve"])).public_url is None
    argv = ["serve", "--public-url", "https://mcp.example.com:8443/"]
    config = http_config(build_parser().parse_args(argv))
    assert config.public_url == "https://mcp.example.com:8443/"


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("mcp.example.com", "must be an http:// or https:// URL"),
        ("ftp://mcp.example.com", "must be an http:// or https:// URL"),
        ("https://", "must name a host"),
        ("https://mcp.example.com/mcp", "must not have a path"),
        ("https://mcp.example.com/?a=1", "must not have a query or a fragment"),
        ("https://mcp.example.com#top", "must not have a query or a fragment"),
        ("https://ada:secret@mcp.example.com", "must not carry credentials"),
        ("https://mcp.example.com:99999", "not a URL"),
    ],
)
def test_serve_public_url_option_refuses_anything_but_an_origin(
    bad: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["serve", "--public-url", bad])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --public-url:" in err
    assert why in err


def test_serve_forwarded_allow_ips_option_sets_the_trusted_proxies() -> None:
    assert http_config(build_parser().parse_args(["serve"])).forwarded_allow_ips == ()
    argv = ["serve", "--forwarded-allow-ips", " 127.0.0.1, 10.0.0.0/8,[::1]"]
    config = http_config(build_parser().parse_args(argv))
    assert config.forwarded_allow_ips == ("127.0.0.1", "10.0.0.0/8", "::1")
    nobody = build_parser().parse_args(["serve", "--forwarded-allow-ips", ""])
    assert http_config(nobody).forwarded_allow_ips == ()
    anyone = build_parser().parse_args(["serve", "--forwarded-allow-ips", "*"])
    assert http_config(anyone).forwarded_allow_ips == ("*",)


def test_serve_proxy_protocol_option_and_key_need_a_trusted_balancer(tmp_path: Path) -> None:
    from erlmcp_py.app._startup import StartupError, check_serve

    assert http_config(build_parser().parse_args(["serve"])).proxy_protocol is False
    argv = ["serve", "--transport", "http", "--proxy-protocol"]
    args = build_parser().parse_args([*argv, "--forwarded-allow-ips", "10.0.0.0/8"])
    assert check_serve(args, {}, create_keyring=False).http == http_config(args)
    assert http_config(args).proxy_protocol is True
    with pytest.raises(StartupError, match="--proxy-protocol: name the balancers"):
        check_serve(build_parser().parse_args(argv), {}, create_keyring=False)
    command = [*serve_command()[:-1], "check-config"]
    path = tmp_path / "serve.toml"
    path.write_text('transport = "http"\nproxy_protocol = true\nforwarded_allow_ips = "10.0.0.1"\n')
    ok = subprocess.run([*command, str(path)], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    assert "proxy_protocol = True\n" in ok.stdout
    assert parse_args(["serve", "--config", str(path)], {}).proxy_protocol is True
    path.write_text('transport = "http"\nproxy_protocol = true\n')
    refused = subprocess.run([*command, str(path)], capture_output=True, text=True, check=False)
    assert refused.returncode == 2
    assert "--proxy-protocol: name the balancers" in refused.stderr, refused.stderr
    path.write_text("proxy_protocl = true\n")
    refused = subprocess.run([*command, str(path)], capture_output=True, text=True, check=False)
    assert "did you mean 'proxy_protocol'?" in refused.stderr, refused.stderr


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("10.0.0.1/8", "'10.0.0.1/8' has host bits set (the network is 10.0.0.0/8)"),
        ("127.0.0.1,haproxy", "'haproxy' is not an IP address, a CIDR network or *"),
    ],
)
def test_serve_forwarded_allow_ips_option_refuses_a_bad_entry_by_name(
    bad: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["serve", "--forwarded-allow-ips", bad])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --forwarded-allow-ips:" in err
    assert why in err


KEY_A = base64.b64encode(bytes(range(32))).decode()
KEY_B = base64.b64encode(bytes(range(50, 82))).decode()


def test_state_keys_come_from_the_file_else_the_environment(tmp_path: Path) -> None:
    keys = tmp_path / "state-keys"
    keys.write_text(f"# the first key seals\nnew={KEY_A}\nold={KEY_B}\n")
    from_file = state_keyring(str(keys), {STATE_KEYS_ENV: f"env={KEY_A}"})
    assert from_file is not None
    assert from_file.kids == ("new", "old")
    from_env = state_keyring(None, {STATE_KEYS_ENV: f"env={KEY_A}"})
    assert from_env is not None
    assert from_env.kids == ("env",)
    assert state_keyring(None, {}) is None
    args = build_parser().parse_args(["serve", "--state-keys", str(keys)])
    assert args.keyring == str(keys)  # --state-keys: another name of --keyring
    assert http_config(args, from_file).continuations == {"keyring": from_file, "mrtr": "auto"}


def test_a_missing_keyring_file_is_created_with_one_fresh_key_for_its_owner_only(
    tmp_path: Path,
) -> None:
    path = tmp_path / "keyring"
    created = state_keyring(str(path), {})
    assert created is not None
    assert len(created.kids) == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = state_keyring(str(path), {STATE_KEYS_ENV: f"env={KEY_A}"})
    assert again is not None
    assert again.kids == created.kids  # the next process (or replica) reads the same ring
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keyring"]  # nothing left aside
    other = state_keyring(str(tmp_path / "other"), {})
    assert other is not None
    assert other.kids != created.kids  # a fresh key id per file
    args = build_parser().parse_args(["serve", "--keyring", str(path)])
    assert args.keyring == str(path)


def test_serve_refuses_unreadable_or_bad_state_keys(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_text(f"k1={KEY_A[:8]}\n")
    for path in (bad, tmp_path / "no-such-directory" / "keyring"):
        command = serve_command("--transport", "http", "--state-keys", str(path))
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2, done.stderr
        assert "requestState keys" in done.stderr
        assert KEY_A[:8] not in done.stderr


async def test_serve_seals_request_state_with_the_configured_key(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = serve_command("--transport", "http", "--port", str(port))
    env = {**os.environ, STATE_KEYS_ENV: f"2026-02={KEY_A},2026-01={KEY_B}"}
    with (tmp_path / "stderr").open("wb") as err, trio.fail_after(20):
        process = await trio.lowlevel.open_process(
            command, stdin=subprocess.DEVNULL, stderr=err, env=env
        )
        try:
            async with httpx2.AsyncClient(timeout=5) as http:
                poster = StatelessPoster(http, url)
                params = {"name": "demo_confirm", "arguments": {}, "_meta": META}
                with trio.move_on_after(15):
                    while True:
                        try:
                            answer = await poster.post("tools/call", params)
                            break
                        except httpx2.TransportError:
                            await trio.sleep(0.05)
            state = answer.json()["result"]["requestState"]
            raw = base64.urlsafe_b64decode(state + "=" * (-len(state) % 4))
            assert raw[0] == TOKEN_VERSION
            assert raw[2 : 2 + raw[1]] == b"2026-02"
        finally:
            process.terminate()
            await process.wait()


def test_serve_config_file_under_environment_under_command_line(tmp_path: Path) -> None:
    path = tmp_path / "serve.toml"
    path.write_text('transport = "http"\nport = 8123\nrate = 5\nshutdown_timeout = 4\n')
    argv = ["serve", "--config", str(path), "--rate", "7"]
    args = parse_args(argv, {"ERLMCP_SERVE_PORT": "9000"})
    assert (args.transport, args.port, args.rate, args.shutdown_timeout) == ("http", 9000, 7, 4.0)
    assert args.host == "127.0.0.1"  # not in the file: the command's default


def test_check_config_prints_the_options_or_names_each_bad_key(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('transport = "http"\nport = 8123\n')
    bad = tmp_path / "bad.toml"
    bad.write_text("port = 70000\nkeyring = 3\n")
    command = [*serve_command()[:-1], "check-config"]
    ok = subprocess.run([*command, str(good)], capture_output=True, text=True, check=False)
    assert (ok.returncode, ok.stdout) == (0, "port = 8123\ntransport = 'http'\n")
    refused = subprocess.run([*command, str(bad)], capture_output=True, text=True, check=False)
    assert refused.returncode == 2
    assert f"{bad}: port: " in refused.stderr
    assert f"{bad}: keyring: " in refused.stderr


def test_the_gateways_pool_and_era_are_keys_that_reach_its_policy_and_are_checked(
    tmp_path: Path,
) -> None:
    from erlmcp_py.app._startup import check_serve
    from erlmcp_py.gateway import Gateway

    path = tmp_path / "gateway.toml"
    path.write_text(
        'upstream = "http://127.0.0.1:9/mcp"\nupstream_era = "2026-07-28"\n'
        "pool_size = 3\npool_idle_s = 5\npool_wait_s = 0.5\n"
    )
    args = parse_args(["gateway", "--config", str(path)], {})
    gateway = check_serve(args, {}, create_keyring=False).server
    assert isinstance(gateway, Gateway)
    policy = gateway.upstream_policy
    assert (policy.pool_size, policy.pool_idle_s, policy.pool_wait_s) == (3, 5.0, 0.5)
    assert gateway.upstream.era == "2026-07-28"
    assert gateway.pool.size == 3
    command = [*serve_command()[:-1], "check-config"]
    ok = subprocess.run([*command, str(path)], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    assert "pool_size = 3\n" in ok.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'upstream_command = ["x"]\npool_size = 0\npool_wait_s = -1\nupstream_era = "x"\n'
    )
    refused = subprocess.run([*command, str(bad)], capture_output=True, text=True, check=False)
    assert refused.returncode == 2
    for key in ("pool_size", "pool_wait_s", "upstream_era"):
        assert f"{bad}: {key}: " in refused.stderr, refused.stderr
    served = tmp_path / "serve.toml"
    served.write_text("pool_size = 2\n")  # no upstream: serve's file, where it means nothing
    refused = subprocess.run([*command, str(served)], capture_output=True, text=True, check=False)
    assert refused.returncode == 2
    assert "pool_size: an option of erlmcp-py gateway" in refused.stderr


def test_auth_options_make_a_resource_server_config_only_when_complete() -> None:
    assert auth_config(build_parser().parse_args(["serve"])) is None
    argv = ["serve", "--auth-issuer", "https://id.example", "--auth-resource"]
    argv += ["https://mcp.example/mcp", "--auth-jwks-url", "https://id.example/jwks"]
    scopes = ["--auth-scope", "mcp", "--auth-tool-scope", "deploy=ops"]
    scopes += ["--auth-tool-scope", "deploy=admin"]
    config = auth_config(build_parser().parse_args([*argv, *scopes]))
    assert config is not None
    assert (config.issuer, config.resource, config.required_scopes) == (
        "https://id.example",
        "https://mcp.example/mcp",
        ("mcp",),
    )
    assert config.tool_scopes == {"deploy": ("ops", "admin")}
    with pytest.raises(ValueError, match="--auth-jwks-url"):
        auth_config(build_parser().parse_args(argv[:5]))
    with pytest.raises(ValueError, match="scopes need"):
        auth_config(build_parser().parse_args(["serve", "--auth-scope", "mcp"]))
    with pytest.raises(ValueError, match="TOOL=SCOPE"):
        auth_config(build_parser().parse_args([*argv, "--auth-tool-scope", "deploy"]))
    introspection = [*argv, "--auth-introspection-url", "https://id.example/introspect"]
    env = {"ERLMCP_AUTH_INTROSPECTION_CLIENT": "mcp:s3cret:with-colon"}
    opaque = auth_config(build_parser().parse_args(introspection), env)
    assert opaque is not None
    assert opaque.introspection_url == "https://id.example/introspect"
    assert opaque.introspection_client == ("mcp", "s3cret:with-colon")
    with pytest.raises(ValueError, match="CLIENT_ID:SECRET"):
        auth_config(
            build_parser().parse_args(introspection), {"ERLMCP_AUTH_INTROSPECTION_CLIENT": "x"}
        )


def test_loopback_hosts() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.0.2.1", "mcp.example.com"):
        assert not is_loopback(host), host


def test_serve_refuses_a_network_bind_without_auth() -> None:
    command = serve_command("--transport", "http", "--host", "0.0.0.0", "--port", "1")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "--insecure-no-auth" in done.stderr
