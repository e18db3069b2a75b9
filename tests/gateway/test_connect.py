"""``erlmcp-py connect`` through ``erlmcp-py gateway``: the terminal client asks the official
SDK server's question, field by field, and the valid answer reaches the server's tool."""

from __future__ import annotations

import os
import sys

import pexpect

from tests.gateway.support import LIMIT, REPO, gateway_command


def test_the_terminal_client_answers_the_sdk_servers_question_through_the_gateway() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_")}
    env.update(LANG="C.UTF-8", PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", TERM="xterm")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "erlmcp_py.app", "connect", "--", *gateway_command("--log-level", "warning")],
        env=env,
        cwd=str(REPO),
        encoding="utf-8",
        timeout=LIMIT,
        dimensions=(60, 200),
    )
    child.expect_exact("Connected to sdk-upstream (protocol 2025-11-25, stdio).")
    child.expect_exact("mcp> ")
    child.sendline("call ask_person")
    child.expect_exact("Who are you?")
    child.expect_exact("Name * — Your name")
    child.sendline("Ada")
    child.expect_exact("[whole number; 0 to 150] > ")
    child.sendline("200")  # out of the bounds the gateway sent: asked again
    child.expect_exact("[whole number; 0 to 150] > ")
    child.sendline("36")
    child.expect_exact("[1] Submit  [2] Reject  [3] Cancel ")
    child.sendline("1")
    child.expect_exact("Answer sent.")
    child.expect_exact("accept: Ada (36)")
    child.expect_exact("mcp> ")
    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
