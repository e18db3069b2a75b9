"""What ``erlmcp-py serve`` (and ``gateway``) checks before it starts, and ``check-config``
checks the same way.

Every refusal is one line (a :class:`StartupError`) naming the option at fault: the store URL,
``--server`` (imported, and its factory called), the gateway's upstream (a command or a URL,
its headers), and over HTTP the key ring, the authentication options, and a ``--host``
reachable from the network without authentication.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.app._keyring_file import STATE_KEYS_ENV, state_keyring
from erlmcp_py.app._load_server import load_server
from erlmcp_py.app._options import auth_config, http_config, is_loopback, runtime_config, store_url
from erlmcp_py.core.policy import TASK_LIFECYCLE, TaskPolicy

if TYPE_CHECKING:
    from erlmcp_py.mcp.server import Server
    from erlmcp_py.transports.http import HttpConfig

__all__ = ["Startup", "StartupError", "check_serve"]


class StartupError(ValueError):
    """An option ``serve`` cannot start with; the message is one line."""


@dataclass(frozen=True, slots=True)
class Startup:
    """What ``serve`` starts with.

    Attributes:
        server: The server to serve.
        http: The HTTP transport's policy, or ``None`` for stdio.
    """

    server: Server
    http: HttpConfig | None


def check_serve(
    args: argparse.Namespace, environ: Mapping[str, str], *, create_keyring: bool = True
) -> Startup:
    """Check ``serve``'s options (``args``) in ``environ``; what it starts with.

    Args:
        args: ``serve``'s parsed options.
        environ: The environment (``os.environ``).
        create_keyring: Create a missing ``--keyring`` file (``serve``), or only check that
            it could be (``check-config``).

    Raises:
        StartupError: the first option ``serve`` cannot start with.
    """
    try:
        store = store_url(args.store, environ)
    except ValueError as exc:
        raise StartupError(f"--store: {exc}") from None
    task_timeout = getattr(args, "task_timeout", None)  # serve's options, not gateway's
    task_ttl = getattr(args, "task_ttl", None)
    _check_task_ttl(task_timeout, task_ttl)
    config = runtime_config(
        args.elicitation_timeout,
        args.dev,
        args.rate,
        locale=args.locale,
        store=store,
        task_timeout=task_timeout,
        task_ttl=task_ttl,
        task_links=not getattr(args, "no_task_links", False),
    )
    if args.command == "gateway":
        server = _gateway(args, config)
    elif getattr(args, "upstream", None) or getattr(args, "upstream_command", None):
        raise StartupError("upstream: the upstream is an option of erlmcp-py gateway")
    elif getattr(args, "ask_missing_arguments", None):
        raise StartupError("ask_missing_arguments: an option of erlmcp-py gateway")
    elif given := [k for k in _GATEWAY_KEYS if getattr(args, k, None) is not None]:
        raise StartupError(f"{given[0]}: an option of erlmcp-py gateway")
    elif args.server is not None:
        try:
            server = load_server(args.server, config)
        except ValueError as exc:
            raise StartupError(f"--server {args.server}: {exc}") from None
    else:
        from erlmcp_py.app.examples.server import build_server

        server = build_server(config)
    if args.transport != "http":
        return Startup(server, None)
    try:
        keyring = state_keyring(args.keyring, environ, create=create_keyring)
    except ValueError as exc:
        where = f"--keyring {args.keyring}" if args.keyring is not None else f"${STATE_KEYS_ENV}"
        raise StartupError(f"{where}: requestState keys: {exc}") from None
    try:
        auth = auth_config(args, environ)
    except ValueError as exc:
        raise StartupError(str(exc)) from None
    if auth is None and not is_loopback(args.host) and not args.insecure_no_auth:
        raise StartupError(
            f"--host {args.host} is reachable from the network: configure authentication "
            "(--auth-issuer, --auth-resource, --auth-jwks-url) or say --insecure-no-auth"
        )
    if getattr(args, "proxy_protocol", False) and not args.forwarded_allow_ips:
        raise StartupError(
            "--proxy-protocol: name the balancers that send the header in --forwarded-allow-ips"
        )
    return Startup(server, http_config(args, keyring, environ))


def _check_task_ttl(task_timeout: float | None, task_ttl: float | None) -> None:
    """A task must live at least as long as one of its questions may wait.

    Raises:
        StartupError: ``--task-ttl`` is shorter than the task timeout.
    """
    policy = TASK_LIFECYCLE
    longest = task_timeout or max(policy.form_deadline_s, policy.url_deadline_s)
    life = task_ttl if task_ttl is not None else TaskPolicy().ttl_s
    if life < longest:
        where = "--task-ttl" if task_ttl is not None else "--task-timeout"
        raise StartupError(
            f"{where}: a task's life ({life:g} s) must be at least the deadline of its "
            f"questions ({longest:g} s)"
        )


#: The gateway's configuration-file keys that are no command-line options: the pool of
#: upstream sessions that 2026-07-28 clients' calls are held on.
_GATEWAY_KEYS: Final = ("pool_size", "pool_idle_s", "pool_wait_s")


def _gateway(args: argparse.Namespace, config: RuntimeConfig) -> Server:
    """The gateway ``erlmcp-py gateway``'s options describe.

    Raises:
        StartupError: no upstream, or both a command and ``--upstream``, a bad URL or header,
            or ``--server`` (a gateway serves its upstream, not a server of this process).
    """
    from erlmcp_py.core.urlpolicy import UrlPolicy
    from erlmcp_py.gateway import Gateway, Upstream, UpstreamPolicy, parse_header

    if getattr(args, "server", None) is not None:
        raise StartupError("server: the gateway serves its upstream, not --server")
    command = tuple(args.upstream_command or ())
    if command and args.upstream is not None:
        raise StartupError("the upstream is a command after -- or --upstream URL, not both")
    if not command and args.upstream is None:
        raise StartupError(
            "no upstream: give its command after -- (erlmcp-py gateway -- python server.py) "
            "or --upstream URL"
        )
    try:
        headers = tuple(parse_header(text) for text in args.upstream_header or ())
        upstream = Upstream(
            command=command, url=args.upstream, headers=headers, era=args.upstream_era
        )
    except ValueError as exc:
        where = "--upstream-header" if args.upstream_header else "--upstream"
        raise StartupError(f"{where}: {exc}") from None
    pool = {k: getattr(args, k) for k in _GATEWAY_KEYS if getattr(args, k, None) is not None}
    try:
        policy = UpstreamPolicy(max_upstreams=args.max_upstreams, **pool)
    except ValueError as exc:
        raise StartupError(str(exc)) from None
    return Gateway(
        upstream,
        policy=policy,
        runtime_config=config,
        url_policy=UrlPolicy(allow_http_loopback_dev=config.url_dev),
        ask_missing_arguments=args.ask_missing_arguments,
    )
