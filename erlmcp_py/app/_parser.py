"""The command line of ``erlmcp-py``: its subcommands and their options."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from erlmcp_py.app._keyring_file import STATE_KEYS_ENV
from erlmcp_py.app._options import INTROSPECTION_CLIENT_ENV, STORE_ENV
from erlmcp_py.core.i18n import LOCALES

__all__ = ["DEFAULT_SHUTDOWN_TIMEOUT", "SUBCOMMANDS", "build_parser", "parse_args"]

#: Seconds ``serve`` may take to stop after SIGTERM (``--shutdown-timeout``); keep the process
#: supervisor's own limit (systemd ``TimeoutStopSec``, supervisord ``stopwaitsecs``) above it.
DEFAULT_SHUTDOWN_TIMEOUT = 10.0


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


def _public_url(text: str) -> str:
    from erlmcp_py.transports.http_checks import public_origin

    try:
        public_origin(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _forwarded_allow_ips(text: str) -> tuple[str, ...]:
    from erlmcp_py.transports.forwarded import TrustedProxies

    try:
        return TrustedProxies.parse(text).entries
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: One line per subcommand: its ``--help`` description and its line in ``erlmcp-py --help``.
SUBCOMMANDS = {
    "serve": "serve an MCP server (the bundled example, or yours) over stdio or HTTP",
    "demo": "run the example server and drive it with a scripted client",
    "check-config": "check a serve configuration file as serve would, and exit",
    "connect": "try any MCP server by hand, in the terminal",
    "gateway": "serve another MCP server (a command or a URL) with supervised elicitation",
}


class _HelpFormatter(argparse.HelpFormatter):
    """Each option's default after its help, ``(default: X)``, unless the help names it
    already or there is none to show (a flag, an option that is off unless given)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default is None
            or default is False
            or default is argparse.SUPPRESS
            or default in ((), [])
            or not (action.option_strings or action.nargs in ("?", "*"))
        ):
            return text
        shown = f"{default:g}" if isinstance(default, float) else str(default)
        return f"{text} (default: {shown.replace('%', '%%')})"


def build_parser(defaults: Mapping[str, object] | None = None) -> argparse.ArgumentParser:
    """The command line; ``defaults`` replace ``serve``'s and ``gateway``'s own (from a
    configuration file)."""
    parser = argparse.ArgumentParser(
        prog="erlmcp-py",
        description="MCP servers that ask their users for input, supervised the OTP way.",
        epilog="Each command's options: erlmcp-py COMMAND --help.",
        formatter_class=_HelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, usage: str | None = None) -> argparse.ArgumentParser:
        what = SUBCOMMANDS[name]
        return sub.add_parser(
            name, help=what, description=what, usage=usage, formatter_class=_HelpFormatter
        )

    serve = command("serve", usage="%(prog)s [OPTIONS]")
    _add_serve_options(serve, gateway=False)
    gateway = command(
        "gateway", usage="%(prog)s [OPTIONS] (-- UPSTREAM_CMD [ARGS...] | --upstream URL)"
    )
    _add_serve_options(gateway, gateway=True)

    demo = command("demo")
    demo.add_argument(
        "--elicitation-timeout",
        type=_positive,
        default=2.0,
        metavar="SECONDS",
        help="the demo server's deadline (the timeout scene waits this long)",
    )
    demo.add_argument(
        "--gateway",
        action="store_true",
        help="show erlmcp-py gateway in front of a server on the official MCP SDK",
    )
    check = command("check-config")
    check.add_argument("file", metavar="FILE", help="the TOML file serve --config would read")
    from erlmcp_py.connect import add_arguments

    add_arguments(command("connect"))
    if defaults:
        serve.set_defaults(**defaults)
        gateway.set_defaults(**defaults)
    return parser


def _add_serve_options(serve: argparse.ArgumentParser, *, gateway: bool) -> None:
    """``serve``'s options on ``serve``, or on ``gateway`` (with the upstream's instead of
    ``--server``)."""
    from erlmcp_py.transports.http import HttpConfig, PrincipalLimits

    serve.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="options from a TOML file, keys as the options (shutdown_timeout = 10), under "
        "ERLMCP_SERVE_<KEY> variables and the options given here (default: none)",
    )
    if gateway:
        _add_upstream_options(serve)
    else:
        serve.add_argument(
            "--server",
            default=None,
            metavar="MODULE:NAME",
            help="your server: a Server, or a function taking the runtime policy and "
            "returning one (default: the bundled example)",
        )
    serve.add_argument(
        "--transport", choices=("stdio", "http"), default="stdio", help="how clients connect"
    )
    serve.add_argument(
        "--shutdown-timeout",
        type=_positive,
        default=DEFAULT_SHUTDOWN_TIMEOUT,
        metavar="SECONDS",
        help="on SIGTERM/SIGINT, stop gracefully within this long, else exit 1",
    )
    serve.add_argument(
        "--log-format", choices=("json", "console"), default="json", help="log lines on stderr"
    )
    serve.add_argument(
        "--log-level",
        default="info",
        metavar="LEVEL",
        help="log from: debug, info, warning, error",
    )

    policy = serve.add_argument_group("elicitation policy")
    policy.add_argument(
        "--elicitation-timeout",
        type=_positive,
        default=None,
        metavar="SECONDS",
        help="deadline of each question (default: 300 form, 600 URL)",
    )
    policy.add_argument(
        "--rate",
        type=_positive_int,
        default=None,
        metavar="N",
        help="new elicitations per client (address or token subject) per minute (default: 10)",
    )
    policy.add_argument(
        "--locale",
        choices=LOCALES,
        default=None,
        help="language of the server's texts for a client that asks for none (default: en-US)",
    )
    policy.add_argument(
        "--dev", action="store_true", help="allow http:// loopback URLs in URL mode"
    )
    policy.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help=f"state shared between replicas: redis://HOST:PORT/DB, or memory (default: "
        f"${STORE_ENV}, else memory)",
    )
    if not gateway:  # a gateway's upstream tools never run as this process's tasks
        policy.add_argument(
            "--task-timeout",
            type=_positive,
            default=None,
            metavar="SECS",
            help="a task's question deadline (default: 14400, URL 28800)",
        )
        policy.add_argument(
            "--task-ttl",
            type=_positive,
            default=None,
            metavar="SECONDS",
            help="a task's life, at least that (default: 86400)",
        )
        policy.add_argument(
            "--no-task-links",
            action="store_true",
            help="no hosted-page link for a task's questions (HTTP)",
        )
    policy.add_argument(
        "--mrtr",
        choices=("auto", "suspend", "replay"),
        default="auto",
        help="a 2026-07-28 retry of a call this process does not hold: auto replays it, "
        "suspend refuses it; replay keeps no call between rounds",
    )

    http = serve.add_argument_group("HTTP")
    http.add_argument("--host", default="127.0.0.1", help="address to listen on")
    http.add_argument("--port", type=int, default=8000, help="port to listen on")
    http.add_argument(
        "--ops-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve /healthz, /readyz and /metrics on this port (default: beside /mcp)",
    )
    http.add_argument(
        "--public-url",
        type=_public_url,
        default=None,
        metavar="URL",
        help="http(s)://HOST[:PORT] clients reach this server at behind a proxy (default: "
        "the address listened on)",
    )
    http.add_argument(
        "--forwarded-allow-ips",
        type=_forwarded_allow_ips,
        default=(),
        metavar="IPS",
        help="proxies trusted to name the client in X-Forwarded-For: addresses, CIDR "
        "networks, * (default: none)",
    )
    http.add_argument(
        "--proxy-protocol",
        action="store_true",
        help="they open with a PROXY v1/v2 header (default: off)",
    )
    http.add_argument(
        "--keyring",
        "--state-keys",
        dest="keyring",
        default=None,
        metavar="FILE",
        help="KID=KEY lines sealing 2026-07-28 requestState, created when missing; share it "
        f"between replicas (default: ${STATE_KEYS_ENV}, else a random key)",
    )
    http.add_argument(
        "--session-idle-timeout",
        type=_positive,
        default=HttpConfig().idle_timeout,
        metavar="SECONDS",
        help="end a session after this long without an open stream",
    )
    shares = PrincipalLimits()
    for name, default, what in (
        ("sessions", shares.sessions, "open sessions; at it, a new one ends an idle one"),
        ("requests", shares.requests, "requests in flight; past it, 429"),
        ("suspended", shares.suspended, "suspended 2026-07-28 calls, then 429"),
    ):
        http.add_argument(
            f"--{name}-per-client",
            type=_positive_int,
            default=default,
            metavar="N",
            help=f"{what}",
        )

    auth = serve.add_argument_group(
        "HTTP authentication", "bearer tokens of an OAuth issuer (the three first together)"
    )
    auth.add_argument(
        "--auth-issuer",
        default=None,
        metavar="URL",
        help="the tokens' issuer (default: none: no authentication)",
    )
    auth.add_argument(
        "--auth-resource",
        default=None,
        metavar="URL",
        help="this server's canonical URL, the audience tokens name (default: none)",
    )
    auth.add_argument(
        "--auth-jwks-url",
        default=None,
        metavar="URL",
        help="the issuer's signing keys (default: none)",
    )
    auth.add_argument(
        "--auth-jwks-cache",
        type=_positive,
        default=None,
        metavar="SECONDS",
        help="how long fetched keys are trusted (default: 300)",
    )
    auth.add_argument(
        "--auth-scope",
        action="append",
        default=None,
        metavar="SCOPE",
        help="a scope every token needs (repeat; default: none)",
    )
    auth.add_argument(
        "--auth-tool-scope",
        action="append",
        default=None,
        metavar="TOOL=SCOPE",
        help="a scope needed to call TOOL (repeat; default: none)",
    )
    auth.add_argument(
        "--auth-introspection-url",
        default=None,
        metavar="URL",
        help=f"the issuer's introspection endpoint, for opaque tokens (client credentials: "
        f"${INTROSPECTION_CLIENT_ENV}=CLIENT_ID:SECRET; default: none)",
    )
    auth.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="serve a non-loopback --host without authentication",
    )


def _add_upstream_options(gateway: argparse.ArgumentParser) -> None:
    """The gateway's upstream: a command after ``--``, or ``--upstream URL``."""
    from erlmcp_py.gateway import ERAS, UpstreamPolicy

    upstream = gateway.add_argument_group("upstream")
    upstream.add_argument(
        "upstream_command",
        nargs="*",
        metavar="UPSTREAM_CMD",
        help="after --: the upstream's command, run for each client",
    )
    upstream.add_argument(
        "--upstream",
        default=None,
        metavar="URL",
        help="or a Streamable HTTP upstream (default: none)",
    )
    upstream.add_argument(
        "--upstream-header",
        action="append",
        default=None,
        metavar="H",
        help="'Name: value' for --upstream (repeat; default: none)",
    )
    upstream.add_argument(
        "--upstream-era",
        choices=ERAS,
        default="auto",
        help="the upstream's protocol: auto tries initialize, then server/discover",
    )
    upstream.add_argument(
        "--max-upstreams",
        type=_positive_int,
        default=UpstreamPolicy().max_upstreams,
        metavar="N",
        help="upstreams open at once",
    )
    upstream.add_argument(
        "--ask-missing-arguments",
        action="store_true",
        help="ask the user for the required arguments a tool call lacks (default: off)",
    )


def parse_args(argv: list[str] | None, environ: Mapping[str, str]) -> argparse.Namespace:
    """The command line, with ``serve --config FILE``'s options (and their ``ERLMCP_SERVE_*``
    overrides from ``environ``) under the options given on the command line.

    Raises:
        ConfigError: the configuration file cannot be read or does not validate.
        SystemExit: the command line is invalid (argparse's usage message, status 2).
    """
    from erlmcp_py.app._config_file import load_serve_config

    args = build_parser().parse_args(argv)
    if args.command in ("serve", "gateway") and args.config is not None:
        options = load_serve_config(args.config, environ).options()
        args = build_parser(options).parse_args(argv)
    return args
