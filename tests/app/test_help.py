"""``erlmcp-py --help`` and each command's: short, every option explained with its default."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from erlmcp_py.app import SUBCOMMANDS, build_parser

# Commands whose options are the command's own (connect's come from erlmcp_py.connect).
OWN = ("serve", "gateway", "demo", "check-config")
WIDTH = "80"


def commands() -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def shown_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's help as ``--help`` shows it, on one line."""
    formatter = parser.formatter_class(prog=parser.prog)
    formatter.add_argument(action)
    return " ".join(formatter.format_help().split())


def test_every_command_has_a_one_line_description() -> None:
    assert set(commands()) == set(SUBCOMMANDS)
    for name, parser in commands().items():
        assert parser.description == SUBCOMMANDS[name]
        assert "\n" not in SUBCOMMANDS[name]
        assert len(SUBCOMMANDS[name]) <= 80


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_option_has_help_and_shows_its_default(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", WIDTH)
    parser = commands()[name]
    for action in arguments(parser):
        label = "/".join(action.option_strings) or action.dest
        assert action.help, f"{name} {label} has no help"
        text = shown_help(parser, action)
        default = action.default
        if default not in (None, False, (), [], argparse.SUPPRESS):
            value = f"{default:g}" if isinstance(default, float) else str(default)
            assert value in text.split("default", 1)[-1], f"{name} {label}: {text}"
        elif name in OWN and action.option_strings and action.nargs != 0:
            # no value to show: the help says what happens when it is not given
            assert "default" in text, f"{name} {label}: {text}"


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_no_command_help_is_long(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", WIDTH)
    parser = commands()[name]
    assert len(parser.format_help().splitlines()) <= 90
    for action in arguments(parser):
        assert len(action.help or "") <= 200, action.option_strings


def test_the_command_help_lists_the_commands_in_a_screen() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "erlmcp_py.app", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"COLUMNS": WIDTH, "PATH": "/usr/bin:/bin"},
    )
    lines = done.stdout.splitlines()
    assert len(lines) <= 20, done.stdout
    for name, what in SUBCOMMANDS.items():
        assert name in done.stdout
        assert what.split()[0] in done.stdout
    assert "Theory" not in done.stdout
