"""``serve`` options from a TOML file: validation naming the key, environment overrides."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from erlmcp_py.app import ConfigError, ServeConfig, load_serve_config


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "erlmcp-py.toml"
    path.write_text(text)
    return str(path)


def test_the_keys_present_become_options(tmp_path: Path) -> None:
    path = write(tmp_path, 'transport = "http"\nport = 8123\nshutdown_timeout = 4\ndev = true\n')
    config = load_serve_config(path, {})
    assert config.options() == {
        "transport": "http",
        "port": 8123,
        "shutdown_timeout": 4.0,
        "dev": True,
    }


def command_options(command: str) -> list[argparse.Action]:
    from erlmcp_py.app import build_parser

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    parser = sub.choices[command]
    return [a for a in parser._actions if a.option_strings and a.dest not in ("help", "config")]


def test_every_serve_and_gateway_option_is_a_key_of_its_own_name() -> None:
    """``--shutdown-timeout`` is ``shutdown_timeout`` in the file and
    ``ERLMCP_SERVE_SHUTDOWN_TIMEOUT`` in the environment, for every option of ``serve`` and
    ``gateway``; the gateway's upstream command (after ``--``) is ``upstream_command``, and
    its pool's settings are keys only."""
    keys = {"upstream_command", "pool_size", "pool_idle_s", "pool_wait_s"}
    for command in ("serve", "gateway"):
        for action in command_options(command):
            name = next(o for o in action.option_strings if o.startswith("--"))[2:]
            key = name.replace("-", "_")
            assert action.dest == key, name
            assert key in ServeConfig.model_fields, name
            keys.add(key)
    assert keys == set(ServeConfig.model_fields)


def test_a_gateway_file_names_its_upstream(tmp_path: Path) -> None:
    from erlmcp_py.app import parse_args

    path = write(
        tmp_path,
        'upstream = "https://mcp.example.com/mcp"\n'
        'upstream_header = ["Authorization: Bearer t0k3n"]\nmax_upstreams = 8\n',
    )
    args = parse_args(["gateway", "--config", path], {})
    assert args.upstream == "https://mcp.example.com/mcp"
    assert args.upstream_header == ["Authorization: Bearer t0k3n"]
    assert args.max_upstreams == 8
    command = write(tmp_path, 'upstream_command = ["python", "server.py"]\n')
    assert parse_args(["gateway", "--config", command], {}).upstream_command == [
        "python",
        "server.py",
    ]
    bad = write(tmp_path, 'upstream_header = ["no colon here"]\n')
    with pytest.raises(ConfigError) as info:
        load_serve_config(bad, {})
    (problem,) = info.value.problems
    assert problem.startswith(f"{bad}: upstream_header: ")
    assert "not a header 'Name: value'" in problem


@pytest.mark.parametrize("key", ["keyring", "state_keys"])
def test_the_keyring_key_and_its_alias(key: str, tmp_path: Path) -> None:
    from erlmcp_py.app import parse_args

    path = write(tmp_path, f'transport = "http"\n{key} = "/etc/erlmcp-py/keyring"\n')
    assert parse_args(["serve", "--config", path], {}).keyring == "/etc/erlmcp-py/keyring"
    variable = f"ERLMCP_SERVE_{key.upper()}"
    args = parse_args(["serve", "--config", path], {variable: "/srv/keyring"})
    assert args.keyring == "/srv/keyring"
    both = write(tmp_path, 'keyring = "/a"\nstate_keys = "/b"\n')
    with pytest.raises(ConfigError) as info:
        load_serve_config(both, {})
    assert info.value.problems == [
        f"{both}: state_keys is another name of keyring: give one of them"
    ]


def test_an_unknown_key_is_refused_with_the_nearest_known_one(tmp_path: Path) -> None:
    path = write(tmp_path, 'keyrng = "/etc/erlmcp-py/keyring"\nport = 8000\nzzz = 1\n')
    with pytest.raises(ConfigError) as info:
        load_serve_config(path, {"ERLMCP_SERVE_SHUTDOWN_TIMOUT": "5"})
    assert info.value.problems == [
        f"unknown key 'keyrng' in {path}; did you mean 'keyring'?",
        f"unknown key 'zzz' in {path}",
        f"unknown variable ERLMCP_SERVE_SHUTDOWN_TIMOUT (for {path}); "
        "did you mean ERLMCP_SERVE_SHUTDOWN_TIMEOUT?",
    ]


def test_the_command_refuses_an_unknown_key_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = write(tmp_path, 'keyrng = "/etc/erlmcp-py/keyring"\n')
    for command in (["serve", "--config", path], ["check-config", path]):
        done = subprocess.run(
            [sys.executable, "-m", "erlmcp_py.app", *command],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr == (
            f"erlmcp-py: unknown key 'keyrng' in {path}; did you mean 'keyring'?\n"
        )


def test_environment_variables_override_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "port = 8123\nrate = 5\n")
    environ = {
        "ERLMCP_SERVE_PORT": "9000",
        "ERLMCP_SERVE_LOG_LEVEL": "debug",  # a bare word is a string
        "ERLMCP_SERVE_DEV": "true",
        "ERLMCP_PORT": "1",  # not an override (the systemd unit's own variable)
    }
    config = load_serve_config(path, environ)
    assert (config.port, config.rate, config.log_level, config.dev) == (9000, 5, "debug", True)


def test_every_bad_value_is_named_by_its_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'transport = "smoke"\nport = 70000\nshutdown_timeout = -1\nrate = "ten"\nnonsense = 1\n',
    )
    with pytest.raises(ConfigError) as info:
        load_serve_config(path, {"ERLMCP_SERVE_SESSIONS_PER_CLIENT": "0"})
    keys = sorted(
        problem.removeprefix(f"{path}: ").split(":")[0] for problem in info.value.problems
    )
    assert keys == [
        "port",
        "rate",
        "sessions_per_client (from ERLMCP_SERVE_SESSIONS_PER_CLIENT)",
        "shutdown_timeout",
        "transport",
        f"unknown key 'nonsense' in {path}",
    ]


def test_an_unreadable_or_malformed_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_serve_config(str(tmp_path / "missing.toml"), {})
    with pytest.raises(ConfigError, match="not TOML"):
        load_serve_config(write(tmp_path, "port = = 1\n"), {})
    with pytest.raises(ConfigError, match="port: Input should be a valid integer"):
        load_serve_config(write(tmp_path, "port = 8000.5\n"), {})


def test_the_store_key_takes_a_store_url_and_names_a_bad_one(tmp_path: Path) -> None:
    path = write(tmp_path, 'store = "redis://10.0.0.5:6380/2"\n')
    assert load_serve_config(path, {}).options() == {"store": "redis://10.0.0.5:6380/2"}
    with pytest.raises(ConfigError) as info:
        load_serve_config(path, {"ERLMCP_SERVE_STORE": "postgres://db/1"})
    (problem,) = info.value.problems
    assert problem.startswith(f"{path}: store (from ERLMCP_SERVE_STORE): ")
    assert "redis://HOST:PORT/DB" in problem


def test_the_public_url_key_takes_an_origin_and_names_a_bad_one(tmp_path: Path) -> None:
    path = write(tmp_path, 'public_url = "https://mcp.example.com"\n')
    assert load_serve_config(path, {}).options() == {"public_url": "https://mcp.example.com"}
    with pytest.raises(ConfigError) as info:
        load_serve_config(path, {"ERLMCP_SERVE_PUBLIC_URL": "https://mcp.example.com/mcp"})
    (problem,) = info.value.problems
    assert problem.startswith(f"{path}: public_url (from ERLMCP_SERVE_PUBLIC_URL): ")
    assert "must not have a path" in problem


def test_the_forwarded_allow_ips_key_takes_a_list_and_names_a_bad_entry(tmp_path: Path) -> None:
    from erlmcp_py.app import parse_args

    path = write(tmp_path, 'forwarded_allow_ips = "127.0.0.1, 10.0.0.0/8"\n')
    assert load_serve_config(path, {}).options() == {"forwarded_allow_ips": "127.0.0.1, 10.0.0.0/8"}
    args = parse_args(["serve", "--config", path], {})
    assert args.forwarded_allow_ips == ("127.0.0.1", "10.0.0.0/8")
    overridden = parse_args(["serve", "--config", path], {"ERLMCP_SERVE_FORWARDED_ALLOW_IPS": "*"})
    assert overridden.forwarded_allow_ips == ("*",)
    with pytest.raises(ConfigError) as info:
        load_serve_config(path, {"ERLMCP_SERVE_FORWARDED_ALLOW_IPS": "10.0.0.1/8"})
    (problem,) = info.value.problems
    assert problem.startswith(
        f"{path}: forwarded_allow_ips (from ERLMCP_SERVE_FORWARDED_ALLOW_IPS): "
    )
    assert "'10.0.0.1/8' has host bits set (the network is 10.0.0.0/8)" in problem
