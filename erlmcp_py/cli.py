"""The ``erlmcp-py`` command: ``serve`` the example server, or run the ``demo``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import TYPE_CHECKING

import trio

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.logging import configure_logging

if TYPE_CHECKING:
    from erlmcp_py.mcp.server import Server

__all__ = ["load_server", "main", "runtime_config"]


def runtime_config(
    elicitation_timeout: float | None, dev: bool, rate: int | None = None
) -> RuntimeConfig:
    """The runtime policy for ``serve``'s options.

    Args:
        elicitation_timeout: Deadline of every elicitation (form and URL), or ``None`` for the
            defaults (300 s / 600 s); the expiry warning comes at most a quarter of it early.
        dev: Allow ``http://`` URLs to loopback hosts in URL mode.
        rate: New elicitations per client per minute, or ``None`` for the default (10).
    """
    fields: dict[str, object] = {"url_dev": dev}
    if rate is not None:
        fields["rate"] = rate
    if elicitation_timeout is not None:
        fields.update(
            form_deadline_s=elicitation_timeout,
            url_deadline_s=elicitation_timeout,
            warn_before_s=min(60.0, elicitation_timeout / 4),
        )
    return RuntimeConfig.model_validate(fields)


def load_server(spec: str, config: RuntimeConfig) -> Server:
    """The server named by ``--server MODULE:NAME``.

    ``NAME`` is a :class:`~erlmcp_py.mcp.server.Server`, or a function that takes the
    :class:`RuntimeConfig` built from the command's options (``--rate``,
    ``--elicitation-timeout``, ``--dev``) and returns one, like the bundled
    ``erlmcp_py.example_server:build_server``. A ``Server`` object keeps its own policy, except
    for what those options set. The current directory is importable.

    Raises:
        ValueError: ``spec`` is not ``MODULE:NAME``, or does not name a server or a factory.
        ImportError: the module cannot be imported.
    """
    from erlmcp_py.mcp.server import Server

    module_name, sep, name = spec.partition(":")
    if not sep or not module_name or not name.isidentifier():
        raise ValueError(f"--server must be MODULE:NAME, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    target = getattr(importlib.import_module(module_name), name, None)
    if isinstance(target, Server):
        given = {k: getattr(config, k) for k in config.model_fields_set if k != "url_dev"}
        if config.url_dev:
            given["url_dev"] = True
        if given:
            target.runtime_config = target.runtime_config.model_copy(update=given)
        return target
    if callable(target):
        server = target(config)
        if isinstance(server, Server):
            return server
        raise ValueError(f"{spec} returned {type(server).__name__}, not a Server")
    raise ValueError(f"{spec} is neither a Server nor a function returning one")


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="erlmcp-py", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the bundled example server")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--elicitation-timeout",
        type=_positive,
        default=None,
        metavar="SECONDS",
        help="deadline of every elicitation (default: 300 s form, 600 s URL)",
    )
    serve.add_argument("--dev", action="store_true", help="allow http:// loopback URLs in URL mode")
    serve.add_argument(
        "--rate",
        type=_positive_int,
        default=None,
        metavar="N",
        help="new elicitations per client per minute (default: 10)",
    )
    serve.add_argument(
        "--server",
        default=None,
        metavar="MODULE:NAME",
        help="serve your own server: a Server object, or a function taking the runtime "
        "policy built from these options and returning one (default: the bundled example)",
    )
    serve.add_argument("--log-format", choices=("json", "console"), default="json")
    serve.add_argument("--log-level", default="info")
    demo = sub.add_parser("demo", help="run the example server and drive it with a script")
    demo.add_argument(
        "--elicitation-timeout",
        type=_positive,
        default=2.0,
        metavar="SECONDS",
        help="deadline the demo server uses (the timeout scene waits this long)",
    )
    return parser


def _serve(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, args.log_level)
    config = runtime_config(args.elicitation_timeout, args.dev, args.rate)
    server: Server | None = None
    if args.server is not None:
        try:
            server = load_server(args.server, config)
        except (ValueError, ImportError) as exc:
            print(f"erlmcp-py serve --server {args.server}: {exc}", file=sys.stderr)
            return 2
    if args.transport == "http":
        from erlmcp_py.transports.http import run_http_cli

        return run_http_cli(args.host, args.port, config, server=server)
    from erlmcp_py.transports.stdio import serve_stdio

    if server is None:
        from erlmcp_py.example_server import build_server

        server = build_server(config)
    # stdout belongs to MCP: keep the real one for frames, send stray prints to stderr.
    mcp_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        trio.run(lambda: serve_stdio(server, stdout_fd=mcp_out))
    except KeyboardInterrupt:
        return 130
    finally:
        os.close(mcp_out)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``erlmcp-py`` command."""
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    from erlmcp_py.demo import run_demo

    return run_demo(elicitation_timeout=args.elicitation_timeout)


if __name__ == "__main__":
    sys.exit(main())
