"""``erlmcp-py connect``: a terminal MCP client that shows every elicitation as prompts.

It reaches a server over stdio (``erlmcp-py connect -- CMD ARGS``) or Streamable HTTP
(``erlmcp-py connect URL``) through the library's client (:mod:`erlmcp_py.client`: the wires and
the session), in either protocol era (2025-11-25 sessions, 2026-07-28 stateless
calls), lists and calls tools (following those that run as tasks on 2026-07-28), lists and
reads resources, lists and gets prompts, and renders
each elicitation (of a tool or of a prompt) inline: a typed prompt per field, validated with
the runtime's own rules before it is sent, then Submit, Reject or Cancel; URL-mode pages are
shown and opened in the browser on request. Lines are edited with readline, with a command
history kept across sessions. Text is in en-US or pt-BR, from the one catalog of
:mod:`erlmcp_py.core.i18n`.

Each job lives in its own private module:

* ``_console`` -- the terminal: line editing, history, Ctrl-C (the main thread), and its
  trio-side face, the ``Terminal``;
* ``_render`` -- the prompts of a form, per field kind, and of a URL-mode page;
* ``_arguments`` -- ``key=value`` arguments and their check against the tool or prompt;
* ``_app`` -- elicitations, notifications and Ctrl-C on screen;
* ``_tasks`` -- following a task (the tasks extension): polling, its questions, Ctrl-C;
* ``_commands`` -- the REPL, its commands and what they show;
* ``_cli`` -- the command-line options, the session it opens, and the two threads.
"""

from __future__ import annotations

from erlmcp_py.connect._app import ConnectApp
from erlmcp_py.connect._arguments import (
    ArgumentError,
    check_arguments,
    check_prompt_arguments,
    parse_arguments,
    parse_value,
    prompt_schema,
)
from erlmcp_py.connect._cli import (
    CAPABILITIES,
    CLIENT_INFO,
    MODERN,
    PROTOCOLS,
    SESSION,
    TASK_CAPABILITIES,
    add_arguments,
    run,
    session_options,
)
from erlmcp_py.connect._console import Console, Screen, Terminal, history_file
from erlmcp_py.connect._render import (
    ANSWERS,
    COMMANDS,
    MISSING,
    Answer,
    FieldError,
    FormField,
    Prompter,
    ask_field,
    ask_form,
    ask_url,
    error_text,
    form_field,
    parse_field,
)
from erlmcp_py.connect._tasks import follow_task, poll_interval
from erlmcp_py.core.i18n import CATALOG, LOCALES, Texts, choose_locale, placeholders

__all__ = [
    "ANSWERS",
    "CAPABILITIES",
    "CATALOG",
    "CLIENT_INFO",
    "COMMANDS",
    "LOCALES",
    "MISSING",
    "MODERN",
    "PROTOCOLS",
    "SESSION",
    "TASK_CAPABILITIES",
    "Answer",
    "ArgumentError",
    "ConnectApp",
    "Console",
    "FieldError",
    "FormField",
    "Prompter",
    "Screen",
    "Terminal",
    "Texts",
    "add_arguments",
    "ask_field",
    "ask_form",
    "ask_url",
    "check_arguments",
    "check_prompt_arguments",
    "choose_locale",
    "error_text",
    "follow_task",
    "form_field",
    "history_file",
    "parse_arguments",
    "parse_field",
    "parse_value",
    "placeholders",
    "poll_interval",
    "prompt_schema",
    "run",
    "session_options",
]
