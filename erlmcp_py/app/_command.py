"""``erlmcp-py``: the entry point, and ``check-config``."""

from __future__ import annotations

import os
import sys

from erlmcp_py.app._keyring_file import state_keyring
from erlmcp_py.app._parser import parse_args
from erlmcp_py.app._serve import serve

__all__ = ["main"]


def _check_config(path: str) -> int:
    """``erlmcp-py check-config FILE``: 0 and the options when valid, else 2 and each problem."""
    from erlmcp_py.app._config_file import ConfigError, load_serve_config
    from erlmcp_py.core.shared import parse_store_url

    try:
        options = load_serve_config(path, os.environ).options()
        if "keyring" in options:
            state_keyring(options["keyring"], {})
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"erlmcp-py: {problem}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"{path}: keyring: {exc}", file=sys.stderr)
        return 2
    for key, value in sorted(options.items()):
        if key == "store":  # without its password
            value = str(parse_store_url(value))
        print(f"{key} = {value!r}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``erlmcp-py`` command."""
    from erlmcp_py.app._config_file import ConfigError

    try:
        args = parse_args(argv, os.environ)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"erlmcp-py: {problem}", file=sys.stderr)
        return 2
    if args.command == "check-config":
        return _check_config(args.file)
    if args.command == "serve":
        return serve(args)
    if args.command == "connect":
        from erlmcp_py.connect import run

        return run(args)
    from erlmcp_py.app._demo import run_demo

    return run_demo(elicitation_timeout=args.elicitation_timeout)
