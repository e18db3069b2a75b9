"""The terminal client end to end: a real pseudo-terminal (pexpect) driving ``erlmcp-py
connect`` against the example server (``erlmcp-py serve``), over stdio and Streamable HTTP, in
both protocol eras: forms, Ctrl-C, deadline warnings, URL pages, line editing and history,
resources and prompts, argument checks, and what a wrong URL or a missing browser says.

Deterministic: every step waits for the output it expects, within a bounded timeout; nothing
sleeps. Each test has its own state directory (the command history file).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pexpect
import pytest

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
CLI = [PY, "-m", "erlmcp_py.app"]
TIMEOUT = 30
ERAS = ("2025-11-25", "2026-07-28")


UP = "\x1b[A"  # the Up arrow, as a terminal sends it
CTRL_L = "\x0c"


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's ``$XDG_STATE_HOME`` (where the command history is kept)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def _env(lang: str = "C.UTF-8", browser: str = "echo BROWSER-OPENED %s") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_")}
    env.update(LANG=lang, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", TERM="xterm")
    # webbrowser runs $BROWSER: it writes the URL on the terminal instead of opening a page.
    env["BROWSER"] = browser
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env


def stdio(*serve_args: str) -> list[str]:
    """``connect``'s target for the example server over stdio."""
    return ["--", *CLI, "serve", *serve_args]


def connect(
    target: Sequence[str],
    protocol: str = ERAS[0],
    *,
    lang: str = "C.UTF-8",
    options: Sequence[str] = (),
    browser: str = "echo BROWSER-OPENED %s",
) -> pexpect.spawn:
    """``erlmcp-py connect`` in a pseudo-terminal, once it has connected."""
    child = pexpect.spawn(
        PY,
        ["-m", "erlmcp_py.app", "connect", "--protocol", protocol, *options, *target],
        env=_env(lang, browser),
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(60, 200),
    )
    child.expect_exact(f" {protocol}, ")  # the banner: "Connected to … (protocol …, stdio)."
    return child


def leave(child: pexpect.spawn) -> int | None:
    child.expect_exact("mcp> ")
    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def _http_server(*serve_args: str) -> Iterator[str]:
    """The example server over Streamable HTTP on a free loopback port (``--dev``: its
    URL-mode demo page is on loopback; ``--rate``: every test client shares one address, so
    one rate-limit bucket); yields its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = pexpect.spawn(
        PY,
        [
            "-m",
            "erlmcp_py.app",
            "serve",
            "--transport",
            "http",
            "--port",
            str(port),
            "--dev",
            "--rate",
            "1000",
            *serve_args,
        ],
        env=_env(),
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=TIMEOUT,
    )
    try:
        server.expect("http_listening")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.kill(15)
        server.expect(pexpect.EOF)
        server.close()


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The example server over HTTP, with its default deadlines."""
    yield from _http_server()


@pytest.fixture(scope="module")
def http_url_4s() -> Iterator[str]:
    """The example server over HTTP, every question's deadline 4 s (its warning at 1 s left)."""
    yield from _http_server("--elicitation-timeout", "4")


def _target(transport: str, http_url: str) -> list[str]:
    return [http_url] if transport == "http" else stdio()


@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_form_is_asked_field_by_field_and_its_answer_reaches_the_tool(
    transport: str, protocol: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("http_url") if transport == "http" else ""
    child = connect(_target(transport, url), protocol)
    child.expect_exact("mcp> ")
    child.sendline("call demo_profile_form")
    child.expect_exact("Tell us about yourself")
    child.expect_exact("Full name *")
    child.expect_exact("[1 to 80 characters] > ")
    child.sendline("Ada Lovelace")
    child.expect_exact("[email address] > ")
    child.sendline("not-an-email")
    child.expect_exact("! Not a valid email address.")
    child.sendline("ada@example.com")
    child.expect_exact("[whole number; 13 to 130] > ")
    child.sendline("12")
    child.expect_exact("! Too small: at least 13.")
    child.sendline("36")
    child.expect_exact("[date, YYYY-MM-DD] > ")
    child.sendline("1815-12-10")
    child.expect_exact("3) team")
    child.expect_exact("[number; default: 1] > ")
    child.sendline("2")
    child.expect_exact("[y/n; default: n] > ")
    child.sendline("")
    child.expect_exact("[1] Submit  [2] Reject  [3] Cancel ")
    child.sendline("1")
    child.expect_exact("Answer sent.")
    child.expect_exact(
        'profile: action=accept, content={"name": "Ada Lovelace", "email": "ada@example.com", '
        '"age": 36, "birthday": "1815-12-10", "plan": "pro", "newsletter": false}'
    )
    assert leave(child) == 0


@pytest.mark.parametrize("protocol", ERAS)
def test_a_rejected_form_reaches_the_tool_as_a_decline(protocol: str) -> None:
    child = connect(stdio(), protocol)
    child.expect_exact("mcp> ")
    child.sendline("call test_elicitation_sep1034_defaults")
    for prompt in (
        "[default: John Doe] > ",
        "[whole number; default: 30] > ",
        "[number; default: 95.5] > ",
        "[number; default: 1] > ",
        "[y/n; default: y] > ",
    ):
        child.expect_exact(prompt)
        child.sendline("")
    child.expect_exact("[3] Cancel ")
    child.sendline("2")
    child.expect_exact("Rejected.")
    child.expect_exact("Elicitation completed: action=decline")
    assert leave(child) == 0


def test_ctrl_c_cancels_the_open_form_and_a_second_ctrl_c_leaves() -> None:
    child = connect(stdio())
    child.expect_exact("mcp> ")
    child.sendline("call demo_confirm")
    child.expect_exact("[y/n] > ")
    child.sendintr()
    child.expect_exact("Cancelled.")
    child.expect_exact("(Ctrl-C again leaves.)")
    child.expect_exact("confirm: action=cancel (by client)")
    child.expect_exact("mcp> ")
    child.sendintr()
    child.expect_exact("Bye.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130


@pytest.mark.parametrize("protocol", ERAS)
def test_every_line_is_in_portuguese_under_a_pt_br_locale(protocol: str) -> None:
    child = connect(stdio(), protocol, lang="pt_BR.UTF-8")
    assert "Conectado a erlmcp-py-example 0.1.0 (protocolo" in child.before
    child.expect_exact("mcp> ")
    child.sendline("call demo_multi_choice")
    child.expect_exact("* Obrigatório")
    child.expect_exact("[números separados por vírgula] > ")
    child.sendline("1,1")
    child.expect_exact("! Uma opção está repetida.")
    child.sendline("3,1")
    child.expect_exact("[1] Enviar  [2] Recusar  [3] Cancelar ")
    child.sendline("enviar")
    child.expect_exact("Resposta enviada.")
    child.expect_exact("Resultado:")
    child.expect_exact('topics: action=accept, content=["security", "news"]')
    child.expect_exact("mcp> ")
    child.sendline("quit")
    child.expect_exact("Até mais.")
    child.expect(pexpect.EOF)


def test_the_deadline_warning_shows_and_the_servers_close_ends_the_prompt() -> None:
    # A 4 s deadline: the warning comes 1 s before it.
    child = connect(stdio("--elicitation-timeout", "4"))
    child.expect_exact("mcp> ")
    child.sendline("call demo_string")
    child.expect_exact("What should we call you?")
    child.expect_exact("⚠ This request expires in 1 second.")  # the server's own words
    child.expect_exact("The server closed the question.")
    child.expect_exact("name: timed out")
    assert leave(child) == 0


@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_pt_br_user_gets_the_servers_deadline_warning_in_pt_br(
    transport: str, protocol: str, request: pytest.FixtureRequest
) -> None:
    # The client declares pt-BR (_meta, and Accept-Language on HTTP): the warning is the
    # server's text from its catalog, while the call waits for a URL-mode page (on
    # 2026-07-28, the retry that consented is held, and the warning comes on it).
    if transport == "http":
        target = [request.getfixturevalue("http_url_4s")]
    else:
        target = stdio("--dev", "--elicitation-timeout", "4")
    child = connect(target, protocol, lang="pt_BR.UTF-8")
    child.expect_exact("mcp> ")
    child.sendline("call demo_url_sign_in")
    child.expect_exact("[2] eu mesmo abro")
    child.sendline("2")
    child.expect_exact("Aguardando a página terminar")
    child.expect_exact("⚠ Este pedido expira em 1 segundo.")
    child.expect_exact("sign-in: timed out")
    child.expect_exact("mcp> ")
    child.sendline("quit")
    child.expect_exact("Até mais.")
    child.expect(pexpect.EOF)


@pytest.mark.parametrize("protocol", ERAS)
def test_url_mode_shows_the_page_and_opens_the_browser_only_on_yes(protocol: str) -> None:
    child = connect(
        stdio("--dev", "--elicitation-timeout", "2"),
        protocol,
        options=["--call", "demo_url_sign_in"],
    )
    child.expect_exact("The server asks you to continue on a web page:")
    child.expect_exact("http://127.0.0.1:8765/sign-in")
    child.expect_exact("[1] open it in the browser  [2] I will open it myself")
    child.sendline("1")
    child.expect_exact("BROWSER-OPENED http://127.0.0.1:8765/sign-in")  # $BROWSER ran
    child.expect_exact("Opening external page: http://127.0.0.1:8765/sign-in")
    child.expect_exact("sign-in: timed out")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.parametrize(
    ("transport", "protocol"),
    [("stdio", ERAS[0]), ("stdio", ERAS[1]), ("http", ERAS[0]), ("http", ERAS[1])],
)
def test_ctrl_c_stops_a_call_waiting_for_a_page_and_the_prompt_comes_back(
    transport: str, protocol: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("http_url") if transport == "http" else ""
    target = [url] if transport == "http" else stdio("--dev")
    child = connect(target, protocol)
    child.expect_exact("mcp> ")
    child.sendline("call demo_url_sign_in")
    child.expect_exact("[2] I will open it myself")
    child.sendline("2")
    child.expect_exact("Waiting for the page to finish (Ctrl-C stops the call).")
    child.sendintr()
    child.expect_exact("Call stopped.")
    child.expect_exact("mcp> ")
    child.sendline("call test_simple_text")
    child.expect_exact("This is a simple text response for testing.")
    child.expect_exact("mcp> ")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130


def _run(*args: str, lang: str = "C.UTF-8") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "connect", *args],
        env=_env(lang),
        cwd=str(ROOT),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def test_call_from_a_script_prints_the_result_and_exits_by_its_outcome(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    done = _run("--server-stderr", str(log), "--call", "test_simple_text", *stdio())
    assert done.returncode == 0
    assert "This is a simple text response for testing." in done.stdout
    assert '"event":"initialize"' in log.read_text()  # the server's stderr, kept on request
    failed = _run("--call", "test_error_handling", *stdio())
    assert failed.returncode == 1
    assert "Tool error:" in failed.stdout


def test_call_checks_the_arguments_against_the_tools_input_schema() -> None:
    done = _run("--call", "test_elicitation", *stdio())
    assert done.returncode == 1
    assert "The arguments do not fit test_elicitation's input schema:" in done.stdout
    assert "  message: required, missing" in done.stdout


def test_a_form_asked_with_no_input_left_is_cancelled() -> None:
    done = _run("--protocol", "2026-07-28", "--call", "demo_confirm", *stdio())
    assert done.returncode == 0
    assert "confirm: action=cancel (by client)" in done.stdout


def test_a_server_that_cannot_be_reached_is_reported_in_the_users_language() -> None:
    gone = _run("--", "sh", "-c", "exit 0", lang="pt_BR.UTF-8")
    assert gone.returncode == 1
    assert gone.stdout == "Não foi possível conectar: o servidor encerrou\n"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    refused = _run(f"http://127.0.0.1:{port}/mcp")
    assert refused.returncode == 1
    assert refused.stdout.startswith(f"Could not connect: http://127.0.0.1:{port}/mcp: ")


@pytest.mark.parametrize("protocol", ERAS)
def test_call_takes_the_url_after_its_arguments(protocol: str, http_url: str) -> None:
    done = _run("--protocol", protocol, "--call", "test_elicitation", "message=Hi", http_url)
    assert done.returncode == 0
    assert f"(protocol {protocol}, HTTP)" in done.stdout
    assert "User response: action=cancel (by client)" in done.stdout  # no input left: cancel
    nothing = _run("--call", "test_simple_text")
    assert nothing.returncode == 2
    assert "name a server" in nothing.stderr


# --------------------------------------------------------------------------------------------
# Line editing and history
# --------------------------------------------------------------------------------------------


def test_up_recalls_the_last_command_and_ctrl_l_is_not_typed() -> None:
    child = connect(stdio())
    child.expect_exact("mcp> ")
    child.sendline("tools")
    child.expect_exact("Tools (")
    child.expect_exact("mcp> ")
    child.send(UP)
    child.expect_exact("tools")  # recalled onto the line
    child.send("\r")
    child.expect_exact("Tools (")
    child.expect_exact("mcp> ")
    child.send(CTRL_L + "help\r")  # clears the screen; the line is just "help"
    child.expect_exact("read URI")
    assert leave(child) == 0


def test_ctrl_d_at_an_empty_prompt_leaves() -> None:
    child = connect(stdio())
    child.expect_exact("mcp> ")
    child.send("to")
    child.sendcontrol("a")  # readline: to the start of the line, where ^D deletes a character
    child.sendcontrol("d")
    child.send("\r")  # the line is now "o": not a command
    child.expect_exact("Unknown command: o.")
    child.expect_exact("mcp> ")
    child.sendeof()
    child.expect_exact("Bye.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_forms_history_is_its_answers_not_the_commands() -> None:
    child = connect(stdio())
    child.expect_exact("mcp> ")
    child.sendline("call demo_string")
    child.expect_exact("name *")
    child.sendline("Ada")
    child.expect_exact("[3] Cancel ")
    child.sendline("1")
    child.expect_exact('name: action=accept, content="Ada"')
    child.expect_exact("mcp> ")
    child.send(UP)
    child.expect_exact("call demo_string")
    child.send("\r")
    child.expect_exact("name *")
    child.expect_exact("> ")
    child.send(UP + "\r")  # the answer typed before
    child.expect_exact("[3] Cancel ")
    child.sendline("1")
    child.expect_exact('name: action=accept, content="Ada"')
    assert leave(child) == 0


def test_what_was_typed_survives_a_notice_above_the_prompt() -> None:
    # A 6 s deadline: the warning comes 1.2 s before it, while "Ad" is on the line.
    child = connect(stdio("--elicitation-timeout", "6"))
    child.expect_exact("mcp> ")
    child.sendline("call demo_string")
    child.expect_exact("name *")
    child.expect_exact("> ")
    child.send("Ad")
    child.expect_exact("⚠ This request expires in")
    child.expect_exact("> Ad")  # the prompt again, with what was typed
    child.send("a\r")
    child.expect_exact("[3] Cancel ")
    child.sendline("1")
    child.expect_exact('name: action=accept, content="Ada"')
    assert leave(child) == 0


def test_the_command_history_is_kept_across_sessions(state_home: Path) -> None:
    child = connect(stdio())
    child.expect_exact("mcp> ")
    child.sendline("prompts")
    child.expect_exact("Prompts (")
    assert leave(child) == 0
    history = state_home / "erlmcp-py" / "connect_history"
    assert history.read_text().splitlines() == ["prompts", "quit"]
    assert history.stat().st_mode & 0o077 == 0  # the user's own
    again = connect(stdio())
    again.expect_exact("mcp> ")
    again.send(UP + UP + "\r")  # quit, then prompts
    again.expect_exact("Prompts (")
    assert leave(again) == 0


def test_a_state_directory_that_cannot_be_written_costs_only_the_history(
    state_home: Path,
) -> None:
    state_home.parent.mkdir(parents=True, exist_ok=True)
    state_home.write_text("a file, not a directory")
    child = connect(stdio())
    child.expect_exact("mcp> ")
    child.sendline("tools")
    child.expect_exact("Tools (")
    child.expect_exact("mcp> ")
    child.send(UP + "\r")  # the session's history works all the same
    child.expect_exact("Tools (")
    child.expect_exact("mcp> ")
    child.sendline("quit")
    child.expect_exact("Bye.")
    child.expect_exact(f"Command history not saved to {state_home}/erlmcp-py/connect_history: ")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


# --------------------------------------------------------------------------------------------
# Resources and prompts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_resources_are_listed_and_read_text_as_text_and_binary_as_a_summary(
    transport: str, protocol: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("http_url") if transport == "http" else ""
    child = connect(_target(transport, url), protocol)
    child.expect_exact("mcp> ")
    child.sendline("resources")
    child.expect_exact("Resources (3):")
    child.expect_exact("  test://static-text (text/plain)  — A static text resource")
    child.expect_exact("Resource templates (1):")
    child.expect_exact("  test://template/{id}/data (application/json)")
    child.expect_exact("mcp> ")
    child.sendline("read test://static-text")
    child.expect_exact("test://static-text (text/plain):")
    child.expect_exact("  This is the content of the static text resource.")
    child.expect_exact("mcp> ")
    child.sendline("read test://static-binary")
    child.expect_exact("test://static-binary: binary, image/png, 70 bytes")
    child.expect_exact("mcp> ")
    child.sendline("read test://template/42/data")
    child.expect_exact('"data":"Data for ID: 42"')
    child.expect_exact("mcp> ")
    child.sendline("read test://nothing-here")
    child.expect_exact("The server answered with error -32")
    assert leave(child) == 0


@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_prompts_are_listed_and_got_and_a_prompts_question_is_asked_like_a_tools(
    transport: str, protocol: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("http_url") if transport == "http" else ""
    child = connect(_target(transport, url), protocol)
    child.expect_exact("mcp> ")
    child.sendline("prompts")
    child.expect_exact("Prompts (5):")
    child.expect_exact(
        "  test_prompt_with_arguments arg1*= arg2*=  — A prompt with two required arguments."
    )
    child.expect_exact("mcp> ")
    child.sendline("prompt test_prompt_with_arguments arg1=007 arg2='two words'")
    child.expect_exact("Messages:")
    child.expect_exact("  user: Prompt with arguments: arg1='007', arg2='two words'")
    child.expect_exact("mcp> ")
    child.sendline("prompt test_prompt_with_image")
    child.expect_exact("  user: [image, image/png, 70 bytes]")
    child.expect_exact("mcp> ")
    child.sendline("prompt test_input_required_result_prompt")
    child.expect_exact("What context should the prompt use?")
    child.expect_exact("context *")
    child.expect_exact("> ")
    child.sendline("the billing team")
    child.expect_exact("[1] Submit  [2] Reject  [3] Cancel ")
    child.sendline("1")
    child.expect_exact("Answer sent.")
    child.expect_exact("  user: Use this context: the billing team")
    child.expect_exact("  assistant: Understood.")
    assert leave(child) == 0


def test_help_lists_every_command() -> None:
    child = connect(stdio())
    child.expect_exact("mcp> ")
    child.sendline("help")
    for command in ("tools", "call TOOL", "resources", "read URI", "prompts", "prompt NAME"):
        child.expect_exact(f"  {command}")
    assert leave(child) == 0


# --------------------------------------------------------------------------------------------
# What the user is told
# --------------------------------------------------------------------------------------------


def test_a_misspelt_argument_is_refused_with_the_name_it_resembles_before_sending() -> None:
    child = connect(stdio())
    child.expect_exact("mcp> ")
    # message is optional: a server would drop "mesage" and ask with its default message
    child.sendline("call test_elicitation_url url=https://example.com/x mesage=Hi")
    child.expect_exact("The arguments do not fit test_elicitation_url's input schema:")
    child.expect_exact("  mesage: no such argument; did you mean message?")
    child.expect_exact("mcp> ")  # nothing was sent: no page is offered
    child.sendline("prompt test_prompt_with_arguments ar1=a")
    child.expect_exact("The arguments do not fit prompt test_prompt_with_arguments:")
    child.expect_exact("  ar1: no such argument; did you mean arg1?")
    child.expect_exact("  arg1: required, missing")
    child.expect_exact("  arg2: required, missing")
    assert leave(child) == 0


@pytest.mark.parametrize("browser", ["false", ""])  # a command that fails; no browser at all
def test_when_no_browser_opens_the_user_is_told_to_open_the_page_themselves(
    browser: str,
) -> None:
    child = connect(stdio("--dev"), browser=browser)
    child.expect_exact("mcp> ")
    child.sendline("call demo_url_sign_in")
    child.expect_exact("[1] open it in the browser")
    child.sendline("1")
    child.expect_exact(
        "No browser could be opened; open this URL yourself: http://127.0.0.1:8765/sign-in"
    )
    child.expect_exact("Waiting for the page to finish")
    assert "Opening external page" not in child.before
    child.sendintr()
    child.expect_exact("Call stopped.")
    assert leave(child) == 0


@pytest.mark.parametrize("protocol", ERAS)
def test_a_url_without_the_mcp_path_is_told_where_the_endpoint_is(
    protocol: str, http_url: str
) -> None:
    root = http_url.removesuffix("/mcp") + "/"
    done = _run("--protocol", protocol, root)
    assert done.returncode == 1
    assert done.stdout == (
        f"Could not connect: no MCP endpoint at {root} (the erlmcp-py server's endpoint is "
        f"/mcp; did you mean {http_url}?)\n"
    )
    elsewhere = _run("--protocol", protocol, http_url + "/v2")
    assert f"did you mean {http_url}?" in elsewhere.stdout
