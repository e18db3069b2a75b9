"""The ``erlmcp-py`` command: ``serve`` the example server, run the ``demo``, or ``connect``
to any MCP server from the terminal.

Theory of operation of ``serve``'s graceful stop
-------------------------------------------------
``serve`` runs under process supervisors (systemd, supervisord; see ``deploy/``), which stop
it with SIGTERM and kill it some seconds later. The runtime is opened here, outside the
transport, so that it can be stopped while the sessions still stand. On the first SIGTERM or
SIGINT (received with ``trio.open_signal_receiver``, so SIGINT raises no
``KeyboardInterrupt``):

0. HTTP drains: ``initialize`` and every new request are answered 503 with ``Retry-After``
   and ``/readyz`` answers 503, while the calls already running go on: their elicitations
   can still be answered, suspended 2026-07-28 calls retried, and tools finish. The drain
   ends when no call is left, or when only the last part of ``--shutdown-timeout`` (a third
   of it, at most 3 s) remains for the steps below.
1. HTTP stops accepting connections (the server's graceful stop; idle ones are closed).
2. The elicitation runtime stops (its supervision tree, in reverse order): every pending
   elicitation ends ``failed: runtime_restarted`` — the tool waiting on it gets that outcome
   and answers its call — and the client is sent ``notifications/cancelled`` for its open
   ``elicitation/create``.
3. Whatever can still run settles — the tools finish and their answers are written — until
   every task waits (at most 1 s; ``trio.testing.wait_all_tasks_blocked``).
4. A request still in progress (a tool waiting on time or I/O) is cancelled and answered
   with a JSON-RPC internal error, "The server is shutting down" (``ServerSession.stop_calls``),
   and those answers settle the same way.
5. The sessions end. The transport returns, one ``shutdown`` line is logged (with
   ``calls_stopped``), the exit status is 0.

All of it is bounded by ``--shutdown-timeout``: past it, the ``shutdown`` line says
``clean: false`` and the process exits at once with status 1. A second signal during the
stop exits at once (status 128 + signal). End of input on stdio ends the server
(status 0).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn

import structlog
import trio
import trio.testing

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.core.i18n import LOCALES
from erlmcp_py.logging import configure_logging

if TYPE_CHECKING:
    from erlmcp_py.actors.runtime import Runtime
    from erlmcp_py.core.state_token import KeyRing
    from erlmcp_py.mcp.server import Server
    from erlmcp_py.transports.auth import AuthConfig
    from erlmcp_py.transports.http import HttpConfig, HttpTransport, Listening

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "INTROSPECTION_CLIENT_ENV",
    "STATE_KEYS_ENV",
    "STORE_ENV",
    "http_config",
    "load_server",
    "auth_config",
    "is_loopback",
    "main",
    "parse_args",
    "runtime_config",
    "state_keyring",
    "store_url",
]

#: Seconds ``serve`` may take to stop after SIGTERM (``--shutdown-timeout``); keep the process
#: supervisor's own limit (systemd ``TimeoutStopSec``, supervisord ``stopwaitsecs``) above it.
DEFAULT_SHUTDOWN_TIMEOUT = 10.0
SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_SETTLE_S = 1.0  # longest wait for the tools' last answers once the runtime has stopped
_DRAIN_POLL_S = 0.05  # how often the drain looks whether calls are left

log = structlog.get_logger("erlmcp.serve")

#: Environment variable holding the ``requestState`` key ring when ``--keyring`` is not given.
STATE_KEYS_ENV = "ERLMCP_STATE_KEYS"

#: Environment variable naming the shared store when ``--store`` is not given.
STORE_ENV = "ERLMCP_STORE"


def runtime_config(
    elicitation_timeout: float | None,
    dev: bool,
    rate: int | None = None,
    locale: str | None = None,
    store: str | None = None,
) -> RuntimeConfig:
    """The runtime policy for ``serve``'s options.

    Args:
        elicitation_timeout: Deadline of every elicitation (form and URL), or ``None`` for the
            defaults (300 s / 600 s); the expiry warning comes at most a quarter of it early.
        dev: Allow ``http://`` URLs to loopback hosts in URL mode.
        rate: New elicitations per client per minute, or ``None`` for the default (10).
        locale: The language of the server's texts for a client that asks for none
            (``en-US`` or ``pt-BR``), or ``None`` for the default (en-US).
        store: The shared store (``memory`` or ``redis://HOST:PORT/DB``), or ``None`` for the
            default (``memory``).
    """
    fields: dict[str, object] = {"url_dev": dev}
    if rate is not None:
        fields["rate"] = rate
    if locale is not None:
        fields["locale"] = locale
    if store is not None:
        fields["store"] = store
    if elicitation_timeout is not None:
        fields.update(
            form_deadline_s=elicitation_timeout,
            url_deadline_s=elicitation_timeout,
            warn_before_s=min(60.0, elicitation_timeout / 4),
        )
    return RuntimeConfig.model_validate(fields)


def http_config(args: argparse.Namespace, keyring: KeyRing | None = None) -> HttpConfig:
    """The HTTP transport policy for ``serve``'s options (public URL, trusted proxies, idle
    expiry, per-client shares, ``--mrtr``) and the ``requestState`` key ring (``None``: a fresh
    random key for this process)."""
    from erlmcp_py.transports.http import HttpConfig, PrincipalLimits

    limits = PrincipalLimits(
        sessions=args.sessions_per_client,
        requests=args.requests_per_client,
        suspended=args.suspended_per_client,
    )
    continuations: dict[str, Any] = {"mrtr": args.mrtr}
    if keyring is not None:
        continuations["keyring"] = keyring
    return HttpConfig(
        public_url=args.public_url,
        forwarded_allow_ips=args.forwarded_allow_ips,
        ops_port=args.ops_port,
        idle_timeout=args.session_idle_timeout,
        limits=limits,
        continuations=continuations,
        auth=auth_config(args, os.environ),
    )


#: Environment variable with ``CLIENT_ID:SECRET`` for the issuer's introspection endpoint.
INTROSPECTION_CLIENT_ENV = "ERLMCP_AUTH_INTROSPECTION_CLIENT"


def auth_config(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> AuthConfig | None:
    """The bearer-token authentication ``serve``'s ``--auth-*`` options ask for, or ``None``.

    Raises:
        ValueError: some of ``--auth-issuer``, ``--auth-resource``, ``--auth-jwks-url`` are
            given, not all three; scopes without them; a ``--auth-tool-scope`` that is not
            ``TOOL=SCOPE``; an issuer URL that is not ``https`` (nor ``http`` to loopback).
    """
    from erlmcp_py.transports.auth import AuthConfig, check_issuer_url

    given = {
        "--auth-issuer": args.auth_issuer,
        "--auth-resource": args.auth_resource,
        "--auth-jwks-url": args.auth_jwks_url,
    }
    if not any(given.values()):
        if (
            args.auth_scope
            or args.auth_tool_scope
            or args.auth_introspection_url
            or args.auth_jwks_cache is not None
        ):
            raise ValueError("scopes need --auth-issuer, --auth-resource, --auth-jwks-url")
        return None
    missing = [name for name, value in given.items() if not value]
    if missing:
        raise ValueError(f"authentication also needs {', '.join(missing)}")
    urls = {**given, "--auth-introspection-url": args.auth_introspection_url}
    for option, url in urls.items():
        if url is not None and option != "--auth-resource":
            try:
                check_issuer_url(url)
            except ValueError as exc:
                raise ValueError(f"{option}: {exc}") from None
    tool_scopes: dict[str, tuple[str, ...]] = {}
    for item in args.auth_tool_scope or ():
        tool, sep, scope = item.partition("=")
        if not (sep and tool and scope):
            raise ValueError(f"--auth-tool-scope must be TOOL=SCOPE, got {item!r}")
        tool_scopes[tool] = (*tool_scopes.get(tool, ()), scope)
    client: tuple[str, str] | None = None
    credentials = (environ or {}).get(INTROSPECTION_CLIENT_ENV)
    if credentials:
        client_id, sep, secret = credentials.partition(":")
        if not (sep and client_id):
            raise ValueError(f"{INTROSPECTION_CLIENT_ENV} must be CLIENT_ID:SECRET")
        client = (client_id, secret)
    lifetime = {} if args.auth_jwks_cache is None else {"jwks_cache_s": args.auth_jwks_cache}
    return AuthConfig(
        issuer=args.auth_issuer,
        resource=args.auth_resource,
        jwks_url=args.auth_jwks_url,
        required_scopes=tuple(args.auth_scope or ()),
        tool_scopes=tool_scopes,
        introspection_url=args.auth_introspection_url,
        introspection_client=client,
        **lifetime,
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a ``--host`` value) binds to loopback only."""
    import ipaddress

    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def state_keyring(path: str | None, environ: Mapping[str, str]) -> KeyRing | None:
    """The ``requestState`` key ring: from the file ``--keyring`` names (created with one
    fresh key when it does not exist), else from the environment variable
    :data:`STATE_KEYS_ENV`, else ``None``.

    The format is :func:`~erlmcp_py.core.state_token.parse_keyring`'s: ``KID=KEY`` entries
    (base64 of at least 32 random bytes), the first one sealing, the others still opening.
    Every process that serves one endpoint (behind a load balancer, or the next process after
    a restart) needs the same ring: point them all at one file.

    Raises:
        ValueError: the file cannot be read, or the ring is invalid (the message never shows a
            key).
    """
    from erlmcp_py.core.state_token import parse_keyring

    if path is not None:
        try:
            text = _read_or_create_keyring(path)
        except OSError as exc:
            raise ValueError(f"cannot read {path}: {exc.strerror}") from None
        return parse_keyring(text)
    value = environ.get(STATE_KEYS_ENV)
    return parse_keyring(value) if value else None


def _read_or_create_keyring(path: str) -> str:
    """The key file's text; a missing file is first created with one fresh key, readable by
    its owner only (mode 0600).

    The new file is written aside and hard-linked into place, which fails if the name exists:
    of several replicas starting at once on one shared file, one creates it and every other
    reads that one, never a half-written file.
    """
    import base64
    import secrets
    import tempfile
    import time

    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except FileNotFoundError:
        pass
    kid = f"{time.strftime('%Y%m%d', time.gmtime())}-{secrets.token_hex(3)}"
    text = f"{kid}={base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()}\n"
    fd, aside = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".keyring-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:  # mkstemp: mode 0600
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(aside, path)
        except FileExistsError:
            with open(path, encoding="utf-8") as file:
                return file.read()
    finally:
        os.unlink(aside)
    return text


def store_url(value: str | None, environ: Mapping[str, str]) -> str | None:
    """The shared store: ``--store``'s value, else the environment variable
    :data:`STORE_ENV`, else ``None`` (the embedded in-memory store).

    Raises:
        ValueError: not ``memory`` nor ``redis://HOST:PORT/DB`` (the message says why).
    """
    from erlmcp_py.core.shared import parse_store_url

    value = value if value is not None else environ.get(STORE_ENV) or None
    if value is not None:
        parse_store_url(value)
    return value


def load_server(spec: str, config: RuntimeConfig) -> Server:
    """The server named by ``--server MODULE:NAME``.

    ``NAME`` is a :class:`~erlmcp_py.mcp.server.Server`, or a function that takes the
    :class:`RuntimeConfig` built from the command's options (``--rate``,
    ``--elicitation-timeout``, ``--dev``, ``--locale``, ``--store``) and returns one, like the
    bundled ``erlmcp_py.example_server:build_server``. A ``Server`` object keeps its own policy,
    except for what those options set. The current directory is importable.

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


def _parser(defaults: Mapping[str, object] | None = None) -> argparse.ArgumentParser:
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


def _serve(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, args.log_level)
    try:
        store = store_url(args.store, os.environ)
    except ValueError as exc:
        print(f"erlmcp-py serve: --store: {exc}", file=sys.stderr)
        return 2
    config = runtime_config(
        args.elicitation_timeout, args.dev, args.rate, locale=args.locale, store=store
    )
    server: Server | None = None
    if args.server is not None:
        try:
            server = load_server(args.server, config)
        except (ValueError, ImportError) as exc:
            print(f"erlmcp-py serve --server {args.server}: {exc}", file=sys.stderr)
            return 2
    if server is None:
        from erlmcp_py.example_server import build_server

        server = build_server(config)
    if args.transport == "http":
        try:
            args.keyring = state_keyring(args.state_keys, os.environ)
        except ValueError as exc:
            print(f"erlmcp-py serve: requestState keys: {exc}", file=sys.stderr)
            return 2
        try:
            auth = auth_config(args, os.environ)
        except ValueError as exc:
            print(f"erlmcp-py serve: {exc}", file=sys.stderr)
            return 2
        if auth is None and not is_loopback(args.host) and not args.insecure_no_auth:
            print(
                f"erlmcp-py serve: --host {args.host} is reachable from the network: configure "
                "authentication (--auth-issuer, --auth-resource, --auth-jwks-url) or say "
                "--insecure-no-auth",
                file=sys.stderr,
            )
            return 2
        return _run(server, args, stdout_fd=None)
    # stdout belongs to MCP: keep the real one for frames, send stray prints to stderr.
    mcp_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        return _run(server, args, stdout_fd=mcp_out)
    finally:
        os.close(mcp_out)


def _run(server: Server, args: argparse.Namespace, *, stdout_fd: int | None) -> int:
    """Run ``serve`` to its end; the exit status."""
    try:
        return trio.run(partial(_serve_until_stopped, server, args, stdout_fd=stdout_fd))
    except KeyboardInterrupt:  # SIGINT before the signal receiver was installed
        return 130


async def _serve_until_stopped(
    server: Server, args: argparse.Namespace, *, stdout_fd: int | None
) -> int:
    """Serve until end of input (stdio) or a signal; then stop gracefully (module docstring)."""
    with trio.open_signal_receiver(*SHUTDOWN_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:
            stop_runtime = trio.Event()
            runtime_stopped = trio.Event()
            runtime: Runtime = await nursery.start(
                _host_runtime, server, stop_runtime, runtime_stopped
            )
            stop_accepting = trio.Event()
            transport_done = trio.Event()
            serving = trio.CancelScope()
            listening: Listening | None = await nursery.start(
                _host_transport, server, args, stdout_fd, stop_accepting, serving, transport_done
            )
            # Start-up is over: what is alive now lives as long as the process (modules,
            # schemas, the runtime), so the collector's full passes need not walk it.
            gc.collect()
            gc.freeze()
            received = await _first_signal(signals, transport_done)
            if received is None:  # stdio: end of input
                nursery.cancel_scope.cancel()
                return 0
            start = trio.current_time()
            log.info(
                "shutdown_started",
                signal=received.name,
                timeout_s=args.shutdown_timeout,
                sessions=len(server.sessions),
                pending_elicitations=runtime.metrics()["pending"],
            )
            nursery.start_soon(_exit_on_second_signal, signals)
            stopped_calls = 0
            left_by_drain: int | None = None
            with trio.move_on_at(start + args.shutdown_timeout) as bounded:
                if listening is not None:
                    until = start + args.shutdown_timeout - _stop_reserve(args.shutdown_timeout)
                    left_by_drain = await _drain(listening.transport, until)
                stop_accepting.set()
                stop_runtime.set()
                await runtime_stopped.wait()
                await _settle()
                # Requests still in progress (waiting on time or I/O) get an error answer
                # while the transports still stand; then those answers settle too.
                stopped_calls = sum(session.stop_calls() for session in list(server.sessions))
                if stopped_calls:
                    await _settle()
                if listening is not None:
                    listening.transport.close_all()
                else:
                    serving.cancel()
                await transport_done.wait()
            status = 1 if bounded.cancelled_caught else 0
            log.info(
                "shutdown",
                signal=received.name,
                clean=status == 0,
                exit_status=status,
                calls_stopped=stopped_calls,
                calls_left_by_drain=left_by_drain,
                elapsed_s=round(trio.current_time() - start, 3),
                outcomes=runtime.metrics()["outcomes"],
            )
            if status:
                # What is left did not stop in time and may not heed cancellation either (a
                # shielded tool): the bound is the promise, so leave now.
                os._exit(status)
            nursery.cancel_scope.cancel()
            return status
    raise AssertionError("unreachable")  # pragma: no cover - the nursery returns above


def _stop_reserve(shutdown_timeout: float) -> float:
    """The part of the shutdown timeout kept for ending what the drain left."""
    return min(3.0, shutdown_timeout / 3)


async def _drain(transport: HttpTransport, until: float) -> int:
    """Refuse new sessions and calls; wait for the running calls to end, at most ``until``.

    Returns:
        The calls still running when the drain ends.
    """
    transport.drain()
    log.info("drain_started", calls=transport.calls_in_progress)
    with trio.move_on_at(until):
        # The calls end in two owners (the sessions, the continuation registry), neither of
        # which signals it: look at the count. Done when no call is seen at two looks in a
        # row: a client between the answer to one call and its next request (refused now)
        # is not cut off by the end of the drain.
        idle_looks = 0
        while idle_looks < 2:
            idle_looks = idle_looks + 1 if not transport.calls_in_progress else 0
            await trio.sleep(_DRAIN_POLL_S)
    left = transport.calls_in_progress
    log.info("drain_ended", calls_left=left)
    return left


async def _settle() -> None:
    """Let whatever can still run finish (answers written) until every task waits, or 1 s."""
    with trio.move_on_after(_SETTLE_S):
        await trio.testing.wait_all_tasks_blocked(cushion=0.02)


async def _host_runtime(
    server: Server,
    stop: trio.Event,
    stopped: trio.Event,
    task_status: trio.TaskStatus[Runtime] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the server's elicitation runtime until ``stop``; ``stopped`` once it has ended."""
    try:
        async with server.running() as runtime:
            task_status.started(runtime)
            await stop.wait()
    finally:
        stopped.set()


async def _host_transport(
    server: Server,
    args: argparse.Namespace,
    stdout_fd: int | None,
    stop_accepting: trio.Event,
    scope: trio.CancelScope,
    done: trio.Event,
    task_status: trio.TaskStatus[Listening | None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve over the chosen transport (with the runtime already running); ``done`` at its end."""
    try:
        with scope:
            if stdout_fd is None:
                from erlmcp_py.transports.http import serve_http

                await serve_http(
                    server,
                    host=args.host,
                    port=args.port,
                    config=http_config(args, getattr(args, "keyring", None)),
                    shutdown_trigger=stop_accepting.wait,
                    task_status=task_status,
                )
            else:
                from erlmcp_py.transports.stdio import serve_stdio

                task_status.started(None)
                await serve_stdio(server, stdout_fd=stdout_fd, continuations={"mrtr": args.mrtr})
    finally:
        done.set()


async def _first_signal(
    signals: AsyncIterator[int], transport_done: trio.Event
) -> signal.Signals | None:
    """The first shutdown signal, or ``None`` if the transport ended first."""
    received: signal.Signals | None = None
    async with trio.open_nursery() as nursery:

        async def on_signal() -> None:
            nonlocal received
            async for signum in signals:
                received = signal.Signals(signum)
                break
            nursery.cancel_scope.cancel()

        async def on_end() -> None:
            await transport_done.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(on_signal)
        nursery.start_soon(on_end)
    return received


async def _exit_on_second_signal(signals: AsyncIterator[int]) -> NoReturn:
    """A second signal while stopping: exit now, without waiting for anything."""
    async for signum in signals:
        name = signal.Signals(signum).name
        log.warning("shutdown_forced", signal=name, exit_status=128 + signum)
        os._exit(128 + signum)
    raise AssertionError("the signal receiver never ends")  # pragma: no cover


def parse_args(argv: list[str] | None, environ: Mapping[str, str]) -> argparse.Namespace:
    """The command line, with ``serve --config FILE``'s options (and their ``ERLMCP_SERVE_*``
    overrides from ``environ``) under the options given on the command line.

    Raises:
        ConfigError: the configuration file cannot be read or does not validate.
        SystemExit: the command line is invalid (argparse's usage message, status 2).
    """
    from erlmcp_py.serve_config import load_serve_config

    args = _parser().parse_args(argv)
    if args.command == "serve" and args.config is not None:
        options = load_serve_config(args.config, environ).options()
        args = _parser(options).parse_args(argv)
    return args


def _check_config(path: str) -> int:
    """``erlmcp-py check-config FILE``: 0 and the options when valid, else 2 and each problem."""
    from erlmcp_py.core.shared import parse_store_url
    from erlmcp_py.serve_config import ConfigError, load_serve_config

    try:
        options = load_serve_config(path, os.environ).options()
        if "state_keys" in options:
            state_keyring(options["state_keys"], {})
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"{path}: {problem}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"{path}: state_keys: {exc}", file=sys.stderr)
        return 2
    for key, value in sorted(options.items()):
        if key == "store":  # without its password
            value = str(parse_store_url(value))
        print(f"{key} = {value!r}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``erlmcp-py`` command."""
    from erlmcp_py.serve_config import ConfigError

    try:
        args = parse_args(argv, os.environ)
    except ConfigError as exc:
        print(f"erlmcp-py serve --config {exc}", file=sys.stderr)
        return 2
    if args.command == "check-config":
        return _check_config(args.file)
    if args.command == "serve":
        return _serve(args)
    if args.command == "connect":
        from erlmcp_py.connect import run

        return run(args)
    from erlmcp_py.demo import run_demo

    return run_demo(elicitation_timeout=args.elicitation_timeout)


if __name__ == "__main__":
    sys.exit(main())
