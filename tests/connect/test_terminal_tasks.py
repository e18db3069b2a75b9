"""``erlmcp-py connect`` following tasks, end to end: a real pseudo-terminal (pexpect) driving
the client against ``erlmcp-py serve --transport http`` (the example server's task tools,
``confirm_delete`` and ``multi_input``), on 2026-07-28 with the tasks extension.

A task's questions are asked like any elicitation and answered with ``tasks/update``; its link
to the hosted page is shown, and an answer given there by someone else takes the question off
the screen; Ctrl-C offers to cancel the task or leave it running; a client that quits, or is
killed, while a task waits resumes it in a new process from its id (``--task TASK_ID``, or the
``task`` command).

Deterministic: every step waits for the output it expects, within a bounded timeout.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator

import httpx2
import pexpect
import pytest

from erlmcp_py.core.versions import V_2026_07_28
from tests.connect.test_terminal import TIMEOUT, _http_server, _run, connect, leave
from tests.transports.test_page import CSRF

FOLLOWING = re.compile(r"Following task ([0-9a-f]{32}) \(Ctrl-C: cancel it or leave it")
LINK = re.compile(
    r"Anyone with this link can answer it instead: (http://127\.0\.0\.1:\d+/elicit/\S+)"
)
MENU = "[1] cancel the task  [2] leave it running  [3] keep following "


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The example server over HTTP (its task tools poll every 2 s)."""
    yield from _http_server()


def following(child: pexpect.spawn) -> str:
    """The id of the task the client says it follows."""
    child.expect(FOLLOWING)
    return str(child.match.group(1))


def answer_reviewer(child: pexpect.spawn, name: str, confirm: str) -> str:
    """Answer one ``multi_input`` question; which reviewer it asked."""
    child.expect(r"Reviewer (first|second): your name\?")
    reviewer = str(child.match.group(1))
    child.expect_exact("name *")
    child.expect_exact("> ")
    child.sendline(name)
    child.expect_exact("[y/n] > ")
    child.sendline(confirm)
    child.expect_exact("[1] Submit  [2] Reject  [3] Cancel ")
    child.sendline("1")
    child.expect_exact("Answer sent.")
    return reviewer


def test_a_task_tools_question_is_asked_answered_and_its_result_shown(http_url: str) -> None:
    child = connect([http_url], V_2026_07_28)
    child.expect_exact("mcp> ")
    child.sendline("call confirm_delete filename=a.txt")
    following(child)
    child.expect_exact("Task working.")
    child.expect_exact("Task waiting for an answer.")
    child.expect(LINK)
    child.expect_exact("Delete a.txt?")
    child.expect_exact("confirm *")
    child.expect_exact("[y/n] > ")
    child.sendline("y")
    child.expect_exact("[1] Submit  [2] Reject  [3] Cancel ")
    child.sendline("1")
    child.expect_exact("Answer sent.")
    child.expect_exact("Task completed.")
    child.expect_exact("Result:")
    child.expect_exact("  Deleted a.txt")
    assert leave(child) == 0


def test_a_question_answered_through_its_link_leaves_the_terminal(http_url: str) -> None:
    child = connect([http_url], V_2026_07_28)
    child.expect_exact("mcp> ")
    child.sendline("call confirm_delete filename=b.txt")
    child.expect(LINK)
    link = str(child.match.group(1))
    child.expect_exact("[y/n] > ")
    # The approver, in a browser elsewhere: no MCP client, just the link.
    with httpx2.Client(timeout=TIMEOUT) as browser:
        page = browser.get(link)
        assert page.status_code == 200
        assert "Delete b.txt?" in page.text
        (csrf,) = CSRF.findall(page.text)
        done = browser.post(link, data={"_csrf": csrf, "_action": "accept", "confirm": "true"})
        assert done.status_code == 200, done.text
    child.expect_exact("This question was answered or closed elsewhere.")
    child.expect_exact("Task completed.")
    child.expect_exact("  Deleted b.txt")
    assert leave(child) == 0


def test_a_task_is_resumed_by_a_new_client_after_the_first_one_was_killed(http_url: str) -> None:
    first = connect([http_url], V_2026_07_28, options=["--call", "multi_input"])
    task_id = following(first)
    answered = answer_reviewer(first, "Ada", "y")
    first.expect(r"Reviewer (first|second): your name\?")  # the other one, on screen
    first.kill(signal.SIGKILL)
    first.expect(pexpect.EOF)
    first.close()
    # A new process, knowing only the id: the question left is asked, and only it.
    again = connect([http_url], V_2026_07_28, options=["--task", task_id])
    assert following(again) == task_id
    other = answer_reviewer(again, "Bob", "n")
    assert {answered, other} == {"first", "second"}
    again.expect_exact("Task completed.")
    names = {answered: "Ada", other: "Bob"}
    again.expect_exact(f"  Reviewed by {names['first']} and {names['second']}")
    again.expect(pexpect.EOF)
    again.close()
    assert again.exitstatus == 0
    assert "Reviewer" not in again.before  # nothing asked after the end


def test_ctrl_c_leaves_a_task_running_and_the_task_command_resumes_it(http_url: str) -> None:
    child = connect([http_url], V_2026_07_28)
    child.expect_exact("mcp> ")
    child.sendline("call confirm_delete filename=c.txt")
    task_id = following(child)
    child.expect_exact("[y/n] > ")
    child.sendintr()
    child.expect_exact(MENU)
    child.sendline("3")  # keep following: the question comes back
    child.expect_exact("Delete c.txt?")
    child.expect_exact("[y/n] > ")
    child.sendintr()
    child.expect_exact(MENU)
    child.sendline("2")
    child.expect_exact(f"Task {task_id} goes on running; follow it again with: task {task_id}")
    assert leave(child) == 0
    again = connect([http_url], V_2026_07_28)
    again.expect_exact("mcp> ")
    again.sendline(f"task {task_id}")
    assert following(again) == task_id
    again.expect_exact("Delete c.txt?")
    again.expect_exact("[y/n] > ")
    again.sendline("n")
    again.expect_exact("[1] Submit  [2] Reject  [3] Cancel ")
    again.sendline("1")
    again.expect_exact("Task completed.")
    again.expect_exact("  Kept c.txt (Accepted)")
    assert leave(again) == 0


def test_ctrl_c_then_cancel_ends_the_task_cancelled(http_url: str) -> None:
    child = connect(
        [http_url], V_2026_07_28, options=["--call", "confirm_delete", "filename=d.txt"]
    )
    task_id = following(child)
    child.expect_exact("[y/n] > ")
    child.sendintr()
    child.expect_exact(MENU)
    child.sendline("1")
    child.expect_exact("Asking the server to cancel the task.")
    child.expect_exact("Task cancelled.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    # Ended: following it again shows its end at once, and cancelling it is a no-op.
    again = _run("--task", task_id, http_url)
    assert again.returncode == 1
    assert "Task cancelled." in again.stdout


def test_the_cancel_command_cancels_a_task_left_running(http_url: str) -> None:
    child = connect([http_url], V_2026_07_28)
    child.expect_exact("mcp> ")
    child.sendline("call slow_compute seconds=600")
    task_id = following(child)
    child.expect_exact("Task working.")
    child.sendintr()
    child.expect_exact(MENU)
    child.sendintr()  # Ctrl-C again at the choice: left running
    child.expect_exact(f"Task {task_id} goes on running")
    child.expect_exact("mcp> ")
    child.sendline("cancel")
    child.expect_exact("Usage: cancel TASK_ID")
    child.expect_exact("mcp> ")
    child.sendline(f"cancel {task_id}")
    child.expect_exact("Asking the server to cancel the task.")
    child.expect_exact("Task cancelled.")
    assert leave(child) == 0


def test_an_unknown_task_id_is_the_servers_error_and_exit_status_1(http_url: str) -> None:
    done = _run("--task", "no-such-task-id", http_url)
    assert done.returncode == 1
    assert f"(protocol {V_2026_07_28}, HTTP)" in done.stdout  # --task speaks 2026-07-28 by itself
    assert "The server answered with error -32602: Failed to retrieve task: Task not found" in (
        done.stdout
    )
    refused = _run("--protocol", "2025-11-25", "--task", "x", http_url)
    assert refused.returncode == 2
    assert "--task needs --protocol 2026-07-28" in refused.stderr


def test_without_the_extension_a_task_tool_runs_as_an_ordinary_call(http_url: str) -> None:
    child = connect([http_url], V_2026_07_28, options=["--no-tasks"])
    child.expect_exact("mcp> ")
    child.sendline("call confirm_delete filename=e.txt")
    child.expect_exact("Delete e.txt?")
    child.expect_exact("[y/n] > ")
    child.sendline("y")
    child.expect_exact("[1] Submit  [2] Reject  [3] Cancel ")
    child.sendline("1")
    child.expect_exact("  Deleted e.txt")
    assert "Following task" not in child.before
    assert "Anyone with this link" not in child.before
    child.expect_exact("mcp> ")
    child.sendline("task abc")
    child.expect_exact("Tasks need --protocol 2026-07-28 (and no --no-tasks).")
    assert leave(child) == 0
