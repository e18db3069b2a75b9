"""What ``serve`` refuses at start it refuses in one line, and ``check-config`` refuses the
same options with the same line: ``--server`` that names no server, the store, the key ring,
the authentication options, a network ``--host`` without authentication."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.app import load_server
from erlmcp_py.app._load_server import ServerLoadError
from tests.deploy.support import REPO

EXPENSES = textwrap.dedent(
    """
    from erlmcp_py import Server

    VERSION = "1.0"
    server = Server("expenses", VERSION)


    def failing(config):
        raise RuntimeError("no database\\nat all")


    def wrong(config):
        return 3
    """
)


@pytest.fixture
def app_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with the application's modules, the current directory (as for the command)."""
    (tmp_path / "expenses.py").write_text(EXPENSES)
    (tmp_path / "broken.py").write_text("import nosuchdep\n")
    (tmp_path / "badsyntax.py").write_text("server = (\n")
    monkeypatch.chdir(tmp_path)
    for name in ("expenses", "broken", "badsyntax"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    return tmp_path


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "expenses:serverr",
            "no attribute 'serverr' in module 'expenses' (did you mean 'server'?)",
        ),
        ("expenses:nothing_alike", "no attribute 'nothing_alike' in module 'expenses'"),
        (
            "nosuchmod:server",
            "no module named 'nosuchmod' (looked in the current directory and sys.path)",
        ),
        (
            "broken:server",
            "cannot import 'broken': ModuleNotFoundError: No module named 'nosuchdep'",
        ),
        ("badsyntax:server", "cannot import 'badsyntax': SyntaxError: '(' was never closed"),
        (
            "expenses:VERSION",
            "expenses:VERSION is a str, not a Server nor a function returning one",
        ),
        ("expenses:failing", "expenses:failing raised RuntimeError: no database at all"),
        ("expenses:wrong", "expenses:wrong returned int, not a Server"),
        ("expenses", "must be MODULE:NAME, got 'expenses'"),
    ],
)
def test_a_server_that_cannot_be_loaded_is_one_line_saying_why(
    spec: str, message: str, app_folder: Path
) -> None:
    with pytest.raises(ServerLoadError) as info:
        load_server(spec, RuntimeConfig())
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)


def test_a_server_object_is_loaded_by_name(app_folder: Path) -> None:
    assert load_server("expenses:server", RuntimeConfig()).name == "expenses"


def command(
    *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "erlmcp_py.app", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        env=environ,
    )


HTTP = 'transport = "http"\nport = 1\n'


@pytest.mark.parametrize(
    ("config", "env", "line"),
    [
        (
            'server = "nosuchmod:server"\n',
            {},
            "--server nosuchmod:server: no module named 'nosuchmod' (looked in the current "
            "directory and sys.path)",
        ),
        (
            'server = "expenses:serverr"\n',
            {},
            "--server expenses:serverr: no attribute 'serverr' in module 'expenses' (did you "
            "mean 'server'?)",
        ),
        (
            'server = "broken:server"\n',
            {},
            "--server broken:server: cannot import 'broken': ModuleNotFoundError: No module "
            "named 'nosuchdep'",
        ),
        ("", {"ERLMCP_STORE": "mysql://db/0"}, "--store: "),
        (
            HTTP + 'host = "0.0.0.0"\n',
            {},
            "--host 0.0.0.0 is reachable from the network: configure authentication "
            "(--auth-issuer, --auth-resource, --auth-jwks-url) or say --insecure-no-auth",
        ),
        (
            HTTP + 'auth_issuer = "https://id.example"\n',
            {},
            "authentication also needs --auth-resource, --auth-jwks-url",
        ),
        (
            HTTP + 'keyring = "no-such-folder/keyring"\n',
            {},
            "--keyring no-such-folder/keyring: requestState keys: cannot create "
            "no-such-folder/keyring: No such file or directory",
        ),
        (HTTP + 'keyring = "bad-keyring"\n', {}, "--keyring bad-keyring: requestState keys: "),
        (HTTP, {"ERLMCP_STATE_KEYS": "k1=short"}, "$ERLMCP_STATE_KEYS: requestState keys: "),
    ],
)
def test_check_config_refuses_what_serve_refuses_with_the_same_line(
    config: str, env: dict[str, str], line: str, app_folder: Path
) -> None:
    (app_folder / "bad-keyring").write_text("k1=c2hvcnQ=\n")
    path = app_folder / "serve.toml"
    path.write_text(config)
    served = command("serve", "--config", str(path), cwd=app_folder, env=env)
    checked = command("check-config", str(path), cwd=app_folder, env=env)
    for done in (served, checked):
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"erlmcp-py: {line}"), done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
    assert checked.stderr == served.stderr
    assert checked.stdout == ""


def test_check_config_passes_what_serve_starts_with_and_creates_no_key_file(
    app_folder: Path,
) -> None:
    path = app_folder / "serve.toml"
    path.write_text(HTTP + 'server = "expenses:server"\nkeyring = "keyring"\n')
    checked = command("check-config", str(path), cwd=app_folder)
    assert checked.returncode == 0, checked.stderr
    assert "server = 'expenses:server'" in checked.stdout
    assert not (app_folder / "keyring").exists()  # serve creates it; a check does not


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["gateway"],
            "no upstream: give its command after -- (erlmcp-py gateway -- python server.py) "
            "or --upstream URL",
        ),
        (
            ["gateway", "--upstream", "https://mcp.example.com/mcp", "--", "python", "s.py"],
            "the upstream is a command after -- or --upstream URL, not both",
        ),
        (
            ["gateway", "--upstream", "ftp://mcp.example.com/mcp"],
            "--upstream: the upstream URL is not an http(s) URL: ftp://mcp.example.com/mcp",
        ),
        (
            ["gateway", "--upstream", "https://x.example/mcp", "--upstream-header", "Bearer t"],
            "--upstream-header: not a header 'Name: value': 'Bearer t'",
        ),
        (
            ["gateway", "--upstream-header", "A: b", "--", "python", "s.py"],
            "--upstream-header: upstream headers go with an upstream URL, not a command",
        ),
    ],
)
def test_gateway_refuses_a_missing_or_bad_upstream_in_one_line(
    argv: list[str], line: str, tmp_path: Path
) -> None:
    done = command(*argv, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"erlmcp-py: {line}\n"


@pytest.mark.parametrize(
    ("config", "command_name", "line"),
    [
        ('upstream = "https://x.example/mcp"\n', "serve", "upstream: the upstream is an option "
         "of erlmcp-py gateway"),
        ('upstream = "https://x.example/mcp"\nserver = "expenses:server"\n', "gateway",
         "server: the gateway serves its upstream, not --server"),
        ("ask_missing_arguments = true\n", "serve", "ask_missing_arguments: an option of "
         "erlmcp-py gateway"),
    ],
)  # fmt: skip
def test_serve_and_gateway_refuse_each_others_keys(
    config: str, command_name: str, line: str, app_folder: Path
) -> None:
    path = app_folder / "both.toml"
    path.write_text(config)
    done = command(command_name, "--config", str(path), cwd=app_folder)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"erlmcp-py: {line}\n"


def test_check_config_checks_a_gateway_file_as_the_gateway_starts(app_folder: Path) -> None:
    path = app_folder / "gateway.toml"
    path.write_text(
        'upstream = "https://x.example/mcp"\nupstream_header = ["Authorization: Bearer s3"]\n'
        "ask_missing_arguments = true\n"
    )
    checked = command("check-config", str(path), cwd=app_folder)
    assert checked.returncode == 0, checked.stderr
    assert "upstream = 'https://x.example/mcp'" in checked.stdout
    assert "ask_missing_arguments = True" in checked.stdout
    assert "upstream_header = ['Authorization: (hidden)']" in checked.stdout
    assert "s3" not in checked.stdout  # a header's value may be a credential
    path.write_text('upstream = "ftp://x.example/mcp"\n')
    refused = command("check-config", str(path), cwd=app_folder)
    assert refused.returncode == 2
    assert refused.stderr == (
        "erlmcp-py: --upstream: the upstream URL is not an http(s) URL: ftp://x.example/mcp\n"
    )
    path.write_text('upstream = "https://x.example/mcp"\nask_missing_arguments = "yes"\n')
    not_a_flag = command("check-config", str(path), cwd=app_folder)
    assert not_a_flag.returncode == 2
    assert "ask_missing_arguments" in not_a_flag.stderr
