"""The terminal client's screen: notifications above the open prompt, Ctrl-C, server requests."""

from __future__ import annotations

import argparse
import io
import os

import pytest
import trio
import trio.testing

from erlmcp_py.connect import ConnectApp, RpcError, Terminal, Texts, add_arguments, read_lines


def app(
    locale: str = "en-US",
) -> tuple[ConnectApp, trio.MemorySendChannel[str | None], io.StringIO]:
    send, receive = trio.open_memory_channel[str | None](8)
    out = io.StringIO()
    return ConnectApp(Terminal(receive, out), Texts(locale), open_page=lambda url: None), send, out


def test_the_deadline_warning_is_one_line_in_the_servers_words() -> None:
    screen, _, out = app("pt-BR")
    warning = {
        "elicitationId": "e",
        "remainingSeconds": 30,
        "message": "Este pedido expira em 30 segundos.",  # in the locale the client declared
    }
    screen.on_notification("notifications/message", {"level": "warning", "data": warning})
    assert out.getvalue() == "⚠ Este pedido expira em 30 segundos.\n"


@pytest.mark.parametrize(
    ("locale", "line"), [("en-US", "⚠ Closing in 30s"), ("pt-BR", "⚠ Fechando em 30s")]
)
def test_a_deadline_warning_without_words_is_the_clients_countdown(locale: str, line: str) -> None:
    screen, _, out = app(locale)
    warning = {"elicitationId": "e", "remainingSeconds": 29.2}
    screen.on_notification("notifications/message", {"level": "warning", "data": warning})
    assert out.getvalue() == f"{line}\n"


def test_log_messages_and_progress_are_printed() -> None:
    screen, _, out = app()
    screen.on_notification("notifications/message", {"level": "info", "data": "step 1"})
    screen.on_notification("notifications/message", {"level": "info", "data": {"k": 1}})
    screen.on_notification("notifications/progress", {"progress": 50, "total": 100})
    assert out.getvalue() == '[info] step 1\n[info] {"k": 1}\nprogress 50/100\n'


async def test_a_notice_goes_above_the_open_prompt_which_is_shown_again() -> None:
    screen, send, out = app()
    async with trio.open_nursery() as nursery:
        answers: list[str] = []

        async def ask() -> None:
            answers.append(await screen.io.ask("name> "))

        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        screen.on_notification("notifications/message", {"level": "info", "data": "hello"})
        await send.send("Ada")
    assert answers == ["Ada"]
    assert out.getvalue() == "name> \n[info] hello\nname> "


async def test_ctrl_c_cancels_the_elicitation_on_screen_and_answers_cancel() -> None:
    screen, _, out = app()
    async with trio.open_nursery() as nursery:
        results: list[object] = []

        async def elicit() -> None:
            schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
            results.append(
                await screen.on_request(
                    "elicitation/create", {"message": "Sure?", "requestedSchema": schema}
                )
            )

        nursery.start_soon(elicit)
        await trio.testing.wait_all_tasks_blocked()
        assert screen.interrupt() is True
    assert results == [{"action": "cancel"}]
    assert out.getvalue().endswith("\nCancelled.\n(Ctrl-C again leaves.)\n")
    assert screen.interrupt() is False  # nothing on screen: the caller leaves


async def test_ping_and_roots_are_answered_and_other_requests_refused() -> None:
    screen, _, out = app()
    assert await screen.on_request("ping", {}) == {}
    assert await screen.on_request("roots/list", {}) == {"roots": []}
    with pytest.raises(RpcError) as info:
        await screen.on_request("sampling/createMessage", {})
    assert info.value.code == -32601
    assert "sampling/createMessage" in out.getvalue()


async def test_lines_are_read_whole_and_the_end_of_input_is_sent_once() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, "um\r\ndois\ntrês".encode())
    os.close(write_fd)
    send, receive = trio.open_memory_channel[str | None](8)
    await read_lines(send, read_fd)
    os.close(read_fd)
    assert [line async for line in receive] == ["um", "dois", "três", None]


async def test_an_accepted_page_is_followed_until_the_server_says_it_is_done() -> None:
    screen, send, out = app()
    page = {
        "mode": "url",
        "message": "Sign in",
        "url": "https://x.example/a",
        "elicitationId": "p1",
    }
    await send.send("2")
    assert await screen.on_request("elicitation/create", page) == {"action": "accept"}
    assert out.getvalue().endswith("Waiting for the page to finish (Ctrl-C stops the call).\n")
    screen.on_notification("notifications/elicitation/complete", {"elicitationId": "other"})
    screen.on_notification("notifications/elicitation/complete", {"elicitationId": "p1"})
    screen.on_notification("notifications/elicitation/complete", {"elicitationId": "p1"})
    assert out.getvalue().count("The page is done.") == 1


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
