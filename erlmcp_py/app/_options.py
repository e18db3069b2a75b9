"""What ``erlmcp-py serve``'s options turn into: the runtime policy, the HTTP transport policy
and its bearer-token authentication, the shared store."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from erlmcp_py.actors.api import RuntimeConfig

if TYPE_CHECKING:
    from erlmcp_py.core.state_token import KeyRing
    from erlmcp_py.transports.auth import AuthConfig
    from erlmcp_py.transports.http import HttpConfig

__all__ = [
    "INTROSPECTION_CLIENT_ENV",
    "STORE_ENV",
    "auth_config",
    "http_config",
    "is_loopback",
    "runtime_config",
    "store_url",
]

#: Environment variable naming the shared store when ``--store`` is not given.
STORE_ENV = "ERLMCP_STORE"


def runtime_config(
    elicitation_timeout: float | None,
    dev: bool,
    rate: int | None = None,
    locale: str | None = None,
    store: str | None = None,
    *,
    task_timeout: float | None = None,
    task_ttl: float | None = None,
    task_links: bool = True,
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
        task_timeout: Deadline of every question a task asks (form and URL), or ``None`` for
            the defaults (4 h / 8 h); its warning comes at most a quarter of it early (15 min
            at most).
        task_ttl: A task's life from its creation, or ``None`` for the default (24 h).
        task_links: Give each question of a task a link to the hosted page that answers it
            (``task_page_links``).

    Raises:
        pydantic.ValidationError: a value the policy refuses (a task TTL shorter than a
            task's question deadline names both).
    """
    fields: dict[str, object] = {"url_dev": dev, "task_page_links": task_links}
    if task_timeout is not None:
        fields.update(
            task_form_deadline_s=task_timeout,
            task_url_deadline_s=task_timeout,
            task_warn_before_s=min(900.0, task_timeout / 4),
        )
    if task_ttl is not None:
        fields["task_ttl_s"] = task_ttl
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


def http_config(
    args: argparse.Namespace,
    keyring: KeyRing | None = None,
    environ: Mapping[str, str] | None = None,
) -> HttpConfig:
    """The HTTP transport policy for ``serve``'s options (public URL, trusted proxies, idle
    expiry, per-client shares, ``--mrtr``, authentication with ``environ``'s introspection
    credentials, by default ``os.environ``'s) and the ``requestState`` key ring (``None``: a
    fresh random key for this process)."""
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
        proxy_protocol=args.proxy_protocol,
        ops_port=args.ops_port,
        idle_timeout=args.session_idle_timeout,
        limits=limits,
        continuations=continuations,
        auth=auth_config(args, os.environ if environ is None else environ),
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


def store_url(value: str | None, environ: Mapping[str, str]) -> str | None:
    """The shared store: ``--store``'s value, else the environment variable
    :data:`STORE_ENV`, else ``None`` (the embedded in-memory store).

    Raises:
        ValueError: not ``memory`` nor ``redis://HOST:PORT/DB`` (the message says why).
    """
    from erlmcp_py.core.store_wire import parse_store_url

    value = value if value is not None else environ.get(STORE_ENV) or None
    if value is not None:
        parse_store_url(value)
    return value
