"""``erlmcp-py connect``: a terminal MCP client that shows every elicitation as prompts.

It reaches a server over stdio (``erlmcp-py connect -- CMD ARGS``) or Streamable HTTP
(``erlmcp-py connect URL``), in either protocol era (2025-11-25 sessions, 2026-07-28 stateless
calls), lists and calls tools, and renders each elicitation inline: a typed prompt per field,
validated with the runtime's own rules before it is sent, then Submit, Reject or Cancel;
URL-mode pages are shown and opened in the browser on request. Text is in en-US or pt-BR,
from the one catalog of :mod:`erlmcp_py.core.i18n`.

Each job lives in its own private module:

* ``_render`` -- the prompts of a form, per field kind, and of a URL-mode page;
* ``_arguments`` -- ``key=value`` tool arguments and their check against the tool;
* ``_wire`` -- stdio and Streamable HTTP connections;
* ``_client`` -- the two protocol eras over a wire;
* ``_app`` -- the terminal, Ctrl-C, the REPL and the command-line options.
"""

from __future__ import annotations

from erlmcp_py.connect._app import ConnectApp, Terminal, add_arguments, read_lines, run
from erlmcp_py.connect._arguments import (
    ArgumentError,
    check_arguments,
    parse_arguments,
    parse_value,
)
from erlmcp_py.connect._client import CAPABILITIES, MODERN, PROTOCOLS, SESSION, McpClient
from erlmcp_py.connect._render import (
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
from erlmcp_py.connect._wire import (
    ConnectionLost,
    HttpWire,
    RpcError,
    StdioWire,
    Wire,
    open_http_wire,
    open_stdio_wire,
)
from erlmcp_py.core.i18n import CATALOG, LOCALES, Texts, choose_locale, placeholders

__all__ = [
    "CAPABILITIES",
    "CATALOG",
    "LOCALES",
    "MISSING",
    "MODERN",
    "PROTOCOLS",
    "SESSION",
    "Answer",
    "ArgumentError",
    "ConnectApp",
    "ConnectionLost",
    "FieldError",
    "FormField",
    "HttpWire",
    "McpClient",
    "Prompter",
    "RpcError",
    "StdioWire",
    "Terminal",
    "Texts",
    "Wire",
    "add_arguments",
    "ask_field",
    "ask_form",
    "ask_url",
    "check_arguments",
    "choose_locale",
    "error_text",
    "form_field",
    "open_http_wire",
    "open_stdio_wire",
    "parse_arguments",
    "parse_field",
    "parse_value",
    "placeholders",
    "read_lines",
    "run",
]
