"""``erlmcp-py serve --config FILE``: the options from a TOML file, with environment overrides.

Every ``serve`` option has a key of the same name in the file, with ``_`` for ``-``
(``--shutdown-timeout 10`` is ``shutdown_timeout = 10``). An environment variable
``ERLMCP_SERVE_<KEY>`` (upper case, e.g. ``ERLMCP_SERVE_PORT=8001``) overrides the file's
value, and an option given on the command line overrides both. ``state_keys`` is an alias
of ``keyring`` (``--state-keys`` of ``--keyring``). The whole of it is checked before anything
starts: an unknown key is refused with the nearest known one (``unknown key 'keyrng' in FILE;
did you mean 'keyring'?``), a bad value with its key (and the environment variable it came
from, if any).

Example::

    transport = "http"
    host = "127.0.0.1"
    port = 8000
    public_url = "https://mcp.example.com"
    forwarded_allow_ips = "127.0.0.1"
    shutdown_timeout = 10
    rate = 10
    session_idle_timeout = 300
    sessions_per_client = 32
    keyring = "/etc/erlmcp-py/keyring"
    store = "redis://127.0.0.1:6379/0"
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from erlmcp_py.core.store_wire import parse_store_url
from erlmcp_py.transports.forwarded import TrustedProxies
from erlmcp_py.transports.http_checks import public_origin

__all__ = ["ALIASES", "ENV_PREFIX", "ConfigError", "ServeConfig", "load_serve_config"]

#: Prefix of the environment variables that override the file's keys.
ENV_PREFIX = "ERLMCP_SERVE_"

#: Other names accepted for a key (as the command line accepts ``--state-keys``).
ALIASES = {"state_keys": "keyring"}


class ConfigError(ValueError):
    """A configuration file that cannot be read or does not validate.

    Attributes:
        problems: One line per problem, each naming the file and its key.
    """

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class ServeConfig(BaseModel):
    """The options of ``erlmcp-py serve`` (each documented by ``erlmcp-py serve --help``).

    Only the keys present are set; the others keep the command's own defaults.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    transport: Literal["stdio", "http"] | None = None
    host: str | None = Field(None, min_length=1)
    port: int | None = Field(None, ge=0, le=65535)
    ops_port: int | None = Field(None, ge=0, le=65535)
    public_url: str | None = Field(None, min_length=1)
    forwarded_allow_ips: str | None = None
    proxy_protocol: bool | None = None
    elicitation_timeout: float | None = Field(None, gt=0, allow_inf_nan=False)
    task_timeout: float | None = Field(None, gt=0, allow_inf_nan=False)
    task_ttl: float | None = Field(None, gt=0, allow_inf_nan=False)
    no_task_links: bool | None = None
    dev: bool | None = None
    rate: int | None = Field(None, gt=0)
    locale: Literal["en-US", "pt-BR"] | None = None
    server: str | None = Field(None, pattern=r"^[\w.]+:[A-Za-z_]\w*$")
    shutdown_timeout: float | None = Field(None, gt=0, allow_inf_nan=False)
    mrtr: Literal["auto", "suspend", "replay"] | None = None
    log_format: Literal["json", "console"] | None = None
    log_level: str | None = Field(None, min_length=1)
    session_idle_timeout: float | None = Field(None, gt=0, allow_inf_nan=False)
    sessions_per_client: int | None = Field(None, gt=0)
    requests_per_client: int | None = Field(None, gt=0)
    suspended_per_client: int | None = Field(None, gt=0)
    keyring: str | None = Field(None, min_length=1)
    store: str | None = Field(None, min_length=1)
    auth_issuer: str | None = Field(None, min_length=1)
    auth_resource: str | None = Field(None, min_length=1)
    auth_jwks_url: str | None = Field(None, min_length=1)
    auth_jwks_cache: float | None = Field(None, gt=0, allow_inf_nan=False)
    auth_scope: list[str] | None = None
    auth_tool_scope: list[str] | None = None
    auth_introspection_url: str | None = Field(None, min_length=1)
    insecure_no_auth: bool | None = None
    upstream: str | None = Field(None, min_length=1)
    upstream_header: list[str] | None = None
    upstream_command: list[str] | None = Field(None, min_length=1)
    max_upstreams: int | None = Field(None, gt=0)
    upstream_era: Literal["auto", "session", "2026-07-28"] | None = None
    pool_size: int | None = Field(None, gt=0)
    pool_idle_s: float | None = Field(None, gt=0, allow_inf_nan=False)
    pool_wait_s: float | None = Field(None, gt=0, allow_inf_nan=False)
    ask_missing_arguments: bool | None = None

    @field_validator(
        "elicitation_timeout",
        "task_timeout",
        "task_ttl",
        "shutdown_timeout",
        "session_idle_timeout",
        "auth_jwks_cache",
        "pool_idle_s",
        "pool_wait_s",
        mode="before",
    )
    @classmethod
    def _seconds(cls, value: Any) -> Any:
        # TOML writes 10 for ten seconds: take an integer where seconds are meant.
        if type(value) is int:
            return float(value)
        return value

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        if value is not None:
            public_origin(value)  # a ValueError names what is wrong
        return value

    @field_validator("auth_issuer", "auth_jwks_url", "auth_introspection_url")
    @classmethod
    def _issuer_url(cls, value: str | None) -> str | None:
        if value is not None:
            from erlmcp_py.transports.auth import check_issuer_url

            check_issuer_url(value)  # a ValueError names what is wrong
        return value

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _forwarded_allow_ips(cls, value: str | None) -> str | None:
        if value is not None:
            TrustedProxies.parse(value)  # a ValueError names the bad entry
        return value

    @field_validator("upstream_header")
    @classmethod
    def _upstream_headers(cls, value: list[str] | None) -> list[str] | None:
        from erlmcp_py.gateway import parse_header

        for text in value or ():
            parse_header(text)  # a ValueError names what is wrong
        return value

    @field_validator("store")
    @classmethod
    def _store_url(cls, value: str | None) -> str | None:
        if value is not None:
            parse_store_url(value)  # a ValueError names what is wrong
        return value

    def options(self) -> dict[str, Any]:
        """The options set, by their ``argparse`` name (``shutdown_timeout`` …)."""
        return self.model_dump(exclude_none=True)


def _from_environment(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Values of the ``ERLMCP_SERVE_*`` variables, as TOML would read them, and which
    variable each key came from."""
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for name, text in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        key = name[len(ENV_PREFIX) :].lower()
        origin[key] = name
        try:  # a number, a boolean or a quoted string, as in the file
            values[key] = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            values[key] = text  # a bare word: a string
    return values, origin


def _nearest(name: str, known: list[str]) -> str | None:
    found = difflib.get_close_matches(name, known, n=1)
    return found[0] if found else None


def _unknown_keys(
    values: Mapping[str, Any], origin: Mapping[str, str], path: str
) -> tuple[dict[str, Any], list[str]]:
    """The values under their option's name (an alias replaced), and one problem per unknown
    key, with the nearest known key."""
    known = sorted({*ServeConfig.model_fields, *ALIASES})
    named: dict[str, Any] = {}
    problems = []
    for key, value in values.items():
        option = ALIASES.get(key, key)
        if option in named:
            problems.append(f"{path}: {key} is another name of {option}: give one of them")
        elif option in ServeConfig.model_fields:
            named[option] = value
        if option in ServeConfig.model_fields:
            continue
        nearest = _nearest(key, known)
        if key in origin:
            variable = origin[key]
            hint = f"; did you mean {ENV_PREFIX}{nearest.upper()}?" if nearest else ""
            problems.append(f"unknown variable {variable} (for {path}){hint}")
        else:
            hint = f"; did you mean {nearest!r}?" if nearest else ""
            problems.append(f"unknown key {key!r} in {path}{hint}")
    return named, problems


def load_serve_config(path: str, environ: Mapping[str, str]) -> ServeConfig:
    """Read and check a ``serve`` configuration file, with the environment's overrides.

    Args:
        path: The TOML file.
        environ: The environment (``os.environ``).

    Raises:
        ConfigError: the file cannot be read or parsed, or a key is unknown or its value bad
            (every problem is listed, each naming the file and its key).
    """
    try:
        with open(path, "rb") as file:
            in_file: dict[str, Any] = tomllib.load(file)
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror}"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{path}: not TOML: {exc}"]) from None
    overrides, origin = _from_environment(environ)
    values, problems = _unknown_keys(in_file, {}, path)
    from_environment, more = _unknown_keys(overrides, origin, path)
    problems += more
    origin = {ALIASES.get(key, key): name for key, name in origin.items()}
    values.update(from_environment)
    try:
        config = ServeConfig.model_validate(values)
    except ValidationError as exc:
        for error in exc.errors():
            key = ".".join(str(part) for part in error["loc"]) or "(file)"
            where = f" (from {origin[key]})" if key in origin else ""
            problems.append(f"{path}: {key}{where}: {error['msg']}")
    if problems:
        raise ConfigError(problems)
    return config
