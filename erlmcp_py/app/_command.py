"""``erlmcp-py``: the entry point, and ``check-config``."""

from __future__ import annotations

import os
import sys

from erlmcp_py.app._config_file import ConfigError, load_serve_config
from erlmcp_py.app._parser import build_parser, parse_args
from erlmcp_py.app._serve import serve
from erlmcp_py.app._startup import StartupError, check_serve

__all__ = ["main"]


def _check_config(path: str) -> int:
    """``erlmcp-py check-config FILE``: what ``serve --config FILE`` (``gateway``, when the
    file names an upstream) would check before it starts (the file, and then the options as
    ``serve`` checks them, in this environment; a missing key file is not created). 0 and
    the options when ``serve`` would start, else 2 and one line per problem, as ``serve``
    words them."""
    from erlmcp_py.core.shared import parse_store_url

    try:
        options = load_serve_config(path, os.environ).options()
        command = "gateway" if {"upstream", "upstream_command"} & set(options) else "serve"
        parsed = build_parser(options).parse_args([command])
        check_serve(parsed, os.environ, create_keyring=False)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"erlmcp-py: {problem}", file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"erlmcp-py: {exc}", file=sys.stderr)
        return 2
    for key, value in sorted(options.items()):
        if key == "store":  # without its password
            value = str(parse_store_url(value))
        elif key == "upstream_header":  # their values may be credentials
            value = [f"{text.partition(':')[0]}: (hidden)" for text in value]
        print(f"{key} = {value!r}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``erlmcp-py`` command: the exit status.

    Ctrl-C before ``serve`` is serving (or in ``demo``) is one line, ``erlmcp-py:
    interrupted``, and status 130; once serving, SIGINT is a graceful stop (``app._serve``).
    """
    try:
        return _dispatch(argv)
    except KeyboardInterrupt:
        print("erlmcp-py: interrupted", file=sys.stderr)
        return 130


def _dispatch(argv: list[str] | None) -> int:
    try:
        args = parse_args(argv, os.environ)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"erlmcp-py: {problem}", file=sys.stderr)
        return 2
    if args.command == "check-config":
        return _check_config(args.file)
    if args.command in ("serve", "gateway"):
        return serve(args)
    if args.command == "connect":
        from erlmcp_py.connect import run

        return run(args)
    from erlmcp_py.app._demo import run_demo

    return run_demo(elicitation_timeout=args.elicitation_timeout, gateway=args.gateway)
