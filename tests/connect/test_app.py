"""The terminal client's screen: notifications, Ctrl-C, a question the server withdraws, server
requests; and the console without a terminal (lines read whole, text above the open prompt)."""

from __future__ import annotations

import argparse
import io
import os
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py.client import ClientRequestError
from erlmcp_py.connect import (
    ANSWERS,
    ConnectApp,
    Console,
    Terminal,
    Texts,
    add_arguments,
)


@dataclass
class Screen:
    """A console double: records what the terminal asks, withdraws and says, in order; the
    test types each line."""

    events: list[tuple[str, str]] = field(default_factory=list)
    open: dict[int, str] = field(default_factory=dict)
    terminal: Terminal | None = None

    def ask(self, ticket: int, prompt: str, history: str | None = ANSWERS) -> None:
        self.open[ticket] = prompt
        self.events.append(("ask", prompt))

    def withdraw(self, ticket: int) -> None:
        self.events.append(("withdraw", self.open.pop(ticket)))

    def write(self, text: str) -> None:
        self.events.append(("say", text))

    def type(self, line: str) -> None:
        assert self.terminal is not None
        ticket = max(self.open)
        del self.open[ticket]
        self.terminal.deliver(ticket, line)

    def said(self) -> list[str]:
        return [text for kind, text in self.events if kind == "say"]


def app(locale: str = "en-US") -> tuple[ConnectApp, Screen]:
    screen = Screen()
    screen.terminal = Terminal(screen)
    return ConnectApp(screen.terminal, Texts(locale), open_page=lambda url: True), screen


def test_the_deadline_warning_is_one_line_in_the_servers_words() -> None:
    client, screen = app("pt-BR")
    warning = {
        "elicitationId": "e",
        "remainingSeconds": 30,
        "message": "Este pedido expira em 30 segundos.",  # in the locale the client declared
    }
    client.on_notification("notifications/message", {"level": "warning", "data": warning})
    assert screen.events == [("say", "⚠ Este pedido expira em 30 segundos.")]


@pytest.mark.parametrize(
    ("locale", "line"), [("en-US", "⚠ Closing in 30s"), ("pt-BR", "⚠ Fechando em 30s")]
)
def test_a_deadline_warning_without_words_is_the_clients_countdown(locale: str, line: str) -> None:
    client, screen = app(locale)
    warning = {"elicitationId": "e", "remainingSeconds": 29.2}
    client.on_notification("notifications/message", {"level": "warning", "data": warning})
    assert screen.said() == [line]


def test_log_messages_and_progress_are_printed() -> None:
    client, screen = app()
    client.on_notification("notifications/message", {"level": "info", "data": "step 1"})
    client.on_notification("notifications/message", {"level": "info", "data": {"k": 1}})
    client.on_notification("notifications/progress", {"progress": 50, "total": 100})
    assert screen.said() == ["[info] step 1", '[info] {"k": 1}', "progress 50/100"]


CONFIRM = {
    "message": "Sure?",
    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
}


async def test_ctrl_c_cancels_the_elicitation_on_screen_and_answers_cancel() -> None:
    client, screen = app()
    results: list[object] = []
    async with trio.open_nursery() as nursery:

        async def elicit() -> None:
            results.append(await client.on_request("elicitation/create", CONFIRM))

        nursery.start_soon(elicit)
        await trio.testing.wait_all_tasks_blocked()
        assert client.interrupt() is True
    assert results == [{"action": "cancel"}]
    # its prompt is withdrawn before anything else is said
    assert screen.events[-4:] == [
        ("ask", "  [y/n] > "),
        ("withdraw", "  [y/n] > "),
        ("say", "Cancelled."),
        ("say", "(Ctrl-C again leaves.)"),
    ]
    assert client.interrupt() is False  # nothing on screen: the caller leaves


async def test_a_question_the_server_withdraws_ends_its_prompt_and_says_so() -> None:
    client, screen = app()
    async with trio.open_nursery() as nursery:

        async def asked_by_the_server() -> None:
            with trio.CancelScope() as scope:  # the wire's scope for this server request
                serving.append(scope)
                await client.on_request("elicitation/create", CONFIRM)

        serving: list[trio.CancelScope] = []
        nursery.start_soon(asked_by_the_server)
        await trio.testing.wait_all_tasks_blocked()
        serving[0].cancel()  # the wire, on notifications/cancelled, then:
        client.on_notification("notifications/cancelled", {"requestId": 1})
    assert screen.events[-2:] == [
        ("withdraw", "  [y/n] > "),
        ("say", "The server closed the question."),
    ]


async def test_a_request_ctrl_c_stops_says_so_and_returns_none() -> None:
    client, screen = app()
    async with trio.open_nursery() as nursery:
        results: list[object] = []

        async def slow() -> str:
            await trio.sleep_forever()
            return "never"

        async def run() -> None:
            results.append(await client.stoppable("request_stopped", slow))

        nursery.start_soon(run)
        await trio.testing.wait_all_tasks_blocked()
        assert client.interrupt() is True
    assert results == [None]
    assert screen.said() == ["Request stopped.", "(Ctrl-C again leaves.)"]


async def test_ping_and_roots_are_answered_and_other_requests_refused() -> None:
    client, screen = app()
    assert await client.on_request("ping", {}) == {}
    assert await client.on_request("roots/list", {}) == {"roots": []}
    with pytest.raises(ClientRequestError) as info:
        await client.on_request("sampling/createMessage", {})
    assert info.value.code == -32601
    assert "sampling/createMessage" in screen.said()[0]


async def test_an_accepted_page_is_followed_until_the_server_says_it_is_done() -> None:
    client, screen = app()
    page = {
        "mode": "url",
        "message": "Sign in",
        "url": "https://x.example/a",
        "elicitationId": "p1",
    }
    async with trio.open_nursery() as nursery:
        answers: list[object] = []

        async def elicit() -> None:
            answers.append(await client.on_request("elicitation/create", page))

        nursery.start_soon(elicit)
        await trio.testing.wait_all_tasks_blocked()
        screen.type("2")
    assert answers == [{"action": "accept"}]
    assert screen.said()[-1] == "Waiting for the page to finish (Ctrl-C stops the call)."
    client.on_notification("notifications/elicitation/complete", {"elicitationId": "other"})
    client.on_notification("notifications/elicitation/complete", {"elicitationId": "p1"})
    client.on_notification("notifications/elicitation/complete", {"elicitationId": "p1"})
    assert screen.said().count("The page is done.") == 1


def test_headers_are_name_colon_value_and_repeatable() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        ["--header", "Authorization: Bearer t:1", "--header", "X-A:b", "http://h/mcp"]
    )
    assert args.header == [("Authorization", "Bearer t:1"), ("X-A", "b")]
    assert args.target == ["http://h/mcp"]
    with pytest.raises(SystemExit):
        parser.parse_args(["--header", "no colon", "http://h/mcp"])


# --------------------------------------------------------------------------------------------
# The console without a terminal (its loop in this, the main, thread; trio in another)
# --------------------------------------------------------------------------------------------


def serve(console: Console, client: Any) -> Any:
    async def main() -> Any:
        terminal = Terminal(console)
        console.attach(trio.lowlevel.current_trio_token(), terminal.deliver, lambda: None)
        try:
            return await client(terminal)
        finally:
            console.stop()

    return console.run(lambda: trio.run(main))


def test_without_a_terminal_lines_are_read_whole_and_the_end_of_input_ends_every_prompt() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, "um\r\ndois\ntrês".encode())
    os.close(write_fd)
    out = io.StringIO()
    console = Console(Texts(), None, fd=read_fd, out=out)
    assert not console.edits

    async def client(terminal: Terminal) -> list[str | None]:
        got: list[str | None] = []
        for _ in range(5):
            try:
                got.append(await terminal.ask("> "))
            except EOFError:
                got.append(None)
        return got

    try:
        assert serve(console, client) == ["um", "dois", "três", None, None]
    finally:
        os.close(read_fd)
    assert out.getvalue() == "> > > > \n"  # the end of input ends the open prompt's line once


def test_without_a_terminal_text_goes_above_the_open_prompt_which_is_shown_again() -> None:
    read_fd, write_fd = os.pipe()
    out = io.StringIO()
    console = Console(Texts(), None, fd=read_fd, out=out)

    async def client(terminal: Terminal) -> str:
        async with trio.open_nursery() as nursery:
            answers: list[str] = []

            async def ask() -> None:
                answers.append(await terminal.ask("name> "))

            nursery.start_soon(ask)
            await trio.testing.wait_all_tasks_blocked()
            terminal.say("[info] hello")
            os.write(write_fd, b"Ada\n")
        terminal.say("done")
        return answers[0]

    try:
        assert serve(console, client) == "Ada"
    finally:
        os.close(write_fd)
        os.close(read_fd)
    assert out.getvalue() == "name> \n[info] hello\nname> done\n"
