"""``erlmcp-py serve --server MODULE:NAME``: the application's server, imported by name."""

from __future__ import annotations

import importlib
import os
import sys

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.mcp.server import Server

__all__ = ["load_server"]


def load_server(spec: str, config: RuntimeConfig) -> Server:
    """The server named by ``--server MODULE:NAME``.

    ``NAME`` is a :class:`~erlmcp_py.mcp.server.Server`, or a function that takes the
    :class:`RuntimeConfig` built from the command's options (``--rate``,
    ``--elicitation-timeout``, ``--dev``, ``--locale``, ``--store``) and returns one, like the
    bundled ``erlmcp_py.app.examples.server:build_server``. A ``Server`` object keeps its own
    policy, except for what those options set. The current directory is importable.

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
