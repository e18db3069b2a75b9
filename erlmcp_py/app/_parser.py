"""The command line of ``erlmcp-py``: its subcommands and their options."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from erlmcp_py.app._keyring_file import STATE_KEYS_ENV
from erlmcp_py.app._options import INTROSPECTION_CLIENT_ENV, STORE_ENV
from erlmcp_py.core.i18n import LOCALES

__all__ = ["DEFAULT_SHUTDOWN_TIMEOUT", "build_parser", "parse_args"]

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


def build_parser(defaults: Mapping[str, object] | None = None) -> argparse.ArgumentParser:
    """The command line; ``defaults`` replace ``serve``'s own (from a configuration file)."""
    from erlmcp_py.transports.http import HttpConfig, PrincipalLimits

    parser = argparse.ArgumentParser(prog="erlmcp-py", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the bundled example server")
    serve.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="read options from a TOML file (keys as the options, e.g. shutdown_timeout = 10); "
        "ERLMCP_SERVE_<KEY> variables override it, options given here override both",
    )
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--ops-port",
        type=int,
        default=None,
        metavar="PORT",
        help="HTTP: serve /healthz, /readyz and /metrics on this port of --host instead of "
        "beside /mcp",
    )
    serve.add_argument(
        "--public-url",
        type=_public_url,
        default=None,
        metavar="URL",
        help="HTTP: where browsers and clients reach this server behind a load balancer or "
        "proxy (http(s)://HOST[:PORT], no path): the hosted page's links name it, and its "
        "Host and Origin are accepted",
    )
    serve.add_argument(
        "--forwarded-allow-ips",
        type=_forwarded_allow_ips,
        default=(),
        metavar="IPS",
        help="HTTP: proxies trusted to name the client (comma-separated addresses and CIDR "
        "networks, * for any; default: none): from such a peer, the client is the right-most "
        "address of X-Forwarded-For (or Forwarded: for=) that is not itself trusted, and it "
        "counts for the per-client shares and rate; from other peers those headers are ignored",
    )
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
        help="new elicitations per client per minute (a client: its address, or its token's "
        "subject; every local client shares 127.0.0.1) (default: 10)",
    )
    serve.add_argument(
        "--locale",
        choices=LOCALES,
        default=None,
        help="language of re-prompts and deadline warnings for a client that asks for none "
        "(by _meta or Accept-Language; default: en-US)",
    )
    serve.add_argument(
        "--server",
        default=None,
        metavar="MODULE:NAME",
        help="serve your own server: a Server object, or a function taking the runtime "
        "policy built from these options and returning one (default: the bundled example)",
    )
    serve.add_argument(
        "--shutdown-timeout",
        type=_positive,
        default=DEFAULT_SHUTDOWN_TIMEOUT,
        metavar="SECONDS",
        help="on SIGTERM/SIGINT, stop gracefully within this long, else exit 1 "
        f"(default: {DEFAULT_SHUTDOWN_TIMEOUT:g})",
    )
    serve.add_argument(
        "--mrtr",
        choices=("auto", "suspend", "replay"),
        default="auto",
        help="2026-07-28 retries of a call this process does not hold (another replica, a "
        "restart): auto resumes a held call and replays any other; suspend refuses them; "
        "replay keeps no call between rounds (default: auto)",
    )
    shares = PrincipalLimits()
    serve.add_argument(
        "--session-idle-timeout",
        type=_positive,
        default=HttpConfig().idle_timeout,
        metavar="SECONDS",
        help="HTTP: end a session after this long without an open stream (default: %(default)g)",
    )
    for name, default, what in (
        (
            "sessions",
            shares.sessions,
            "open sessions; at it, a new one ends the client's least recently used idle "
            "session (429 only when all are at work)",
        ),
        (
            "requests",
            shares.requests,
            "requests in flight, open GET streams included; past it, 429",
        ),
        ("suspended", shares.suspended, "suspended 2026-07-28 tool calls; past it, 429"),
    ):
        serve.add_argument(
            f"--{name}-per-client",
            type=_positive_int,
            default=default,
            metavar="N",
            help=f"HTTP: {what}. Per client address (IPv6: per /64; every local client "
            "shares 127.0.0.1) or token subject (default: %(default)d)",
        )
    serve.add_argument(
        "--keyring",
        "--state-keys",
        dest="state_keys",
        default=None,
        metavar="FILE",
        help="HTTP: the key ring sealing 2026-07-28 requestState, KID=KEY lines (first: current), "
        "created with a fresh key (mode 0600) when missing; share it between replicas; "
        f"default: ${STATE_KEYS_ENV}, else a random key per process",
    )
    serve.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="state shared between replicas (rate limits, pending caps, elicitation records, "
        "URL-mode completion, replica failure): redis://HOST:PORT/DB on Redis or Valkey, or "
        f"memory for this process only; default: ${STORE_ENV} (where a URL with a password "
        "belongs), else memory",
    )
    serve.add_argument(
        "--auth-issuer",
        default=None,
        metavar="URL",
        help="HTTP: require bearer tokens from this OAuth issuer (the tokens' iss)",
    )
    serve.add_argument(
        "--auth-resource",
        default=None,
        metavar="URL",
        help="HTTP: this server's canonical URL, the audience tokens must name",
    )
    serve.add_argument(
        "--auth-jwks-url", default=None, metavar="URL", help="HTTP: the issuer's signing keys"
    )
    serve.add_argument(
        "--auth-jwks-cache",
        type=_positive,
        default=None,
        metavar="SECONDS",
        help="HTTP: how long fetched signing keys are trusted before they are fetched again, "
        "so a key the issuer withdraws or replaces stops verifying (default: 300)",
    )
    serve.add_argument(
        "--auth-scope",
        action="append",
        default=None,
        metavar="SCOPE",
        help="HTTP: a scope every token needs (repeat for several)",
    )
    serve.add_argument(
        "--auth-tool-scope",
        action="append",
        default=None,
        metavar="TOOL=SCOPE",
        help="HTTP: a scope a token needs to call TOOL (repeat for several)",
    )
    serve.add_argument(
        "--auth-introspection-url",
        default=None,
        metavar="URL",
        help="HTTP: the issuer's token introspection endpoint, for opaque tokens (client "
        f"credentials, if needed, in ${INTROSPECTION_CLIENT_ENV} as CLIENT_ID:SECRET)",
    )
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="HTTP: serve a non-loopback --host without authentication",
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
    check = sub.add_parser("check-config", help="check a serve configuration file and exit")
    check.add_argument("file", metavar="FILE")
    from erlmcp_py.connect import add_arguments

    add_arguments(sub.add_parser("connect", help="try any MCP server by hand, in the terminal"))
    if defaults:
        serve.set_defaults(**defaults)
    return parser


def parse_args(argv: list[str] | None, environ: Mapping[str, str]) -> argparse.Namespace:
    """The command line, with ``serve --config FILE``'s options (and their ``ERLMCP_SERVE_*``
    overrides from ``environ``) under the options given on the command line.

    Raises:
        ConfigError: the configuration file cannot be read or does not validate.
        SystemExit: the command line is invalid (argparse's usage message, status 2).
    """
    from erlmcp_py.app._config_file import load_serve_config

    args = build_parser().parse_args(argv)
    if args.command == "serve" and args.config is not None:
        options = load_serve_config(args.config, environ).options()
        args = build_parser(options).parse_args(argv)
    return args
