"""The ``erlmcp-py`` command: ``serve`` an MCP server (the bundled example, or yours with
``--server MODULE:NAME``), run the ``demo``, ``check-config`` a configuration file, or
``connect`` to any MCP server from the terminal.

An application of the library, not part of it: no layer of ``erlmcp_py`` imports this package
(``docs/architecture.md``, "Layers"). The bundled example servers live in
:mod:`erlmcp_py.app.examples`.
"""

from erlmcp_py.app._command import main as main
from erlmcp_py.app._config_file import (
    ConfigError as ConfigError,
    ServeConfig as ServeConfig,
    load_serve_config as load_serve_config,
)
from erlmcp_py.app._keyring_file import (
    STATE_KEYS_ENV as STATE_KEYS_ENV,
    state_keyring as state_keyring,
)
from erlmcp_py.app._load_server import load_server as load_server
from erlmcp_py.app._options import (
    INTROSPECTION_CLIENT_ENV as INTROSPECTION_CLIENT_ENV,
    STORE_ENV as STORE_ENV,
    auth_config as auth_config,
    http_config as http_config,
    is_loopback as is_loopback,
    runtime_config as runtime_config,
    store_url as store_url,
)
from erlmcp_py.app._parser import (
    DEFAULT_SHUTDOWN_TIMEOUT as DEFAULT_SHUTDOWN_TIMEOUT,
    SUBCOMMANDS as SUBCOMMANDS,
    build_parser as build_parser,
    parse_args as parse_args,
)

__all__ = [
    "ConfigError",
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "INTROSPECTION_CLIENT_ENV",
    "STATE_KEYS_ENV",
    "STORE_ENV",
    "SUBCOMMANDS",
    "ServeConfig",
    "auth_config",
    "build_parser",
    "http_config",
    "is_loopback",
    "load_serve_config",
    "load_server",
    "main",
    "parse_args",
    "runtime_config",
    "state_keyring",
    "store_url",
]
