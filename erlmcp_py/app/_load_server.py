"""``erlmcp-py serve --server MODULE:NAME``: the application's server, imported by name.

Whatever stands in the way is one line that says what to fix: no such module, the module's
own error while importing, no such attribute (with the nearest name the module has), an
attribute that is not a server, a factory that fails or returns something else.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from types import ModuleType

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.mcp.server import Server

__all__ = ["ServerLoadError", "load_server"]


class ServerLoadError(ValueError):
    """``--server`` names no server; the message is one line."""


def load_server(spec: str, config: RuntimeConfig) -> Server:
    """The server named by ``--server MODULE:NAME``.

    ``NAME`` is a :class:`~erlmcp_py.mcp.server.Server`, or a function that takes the
    :class:`RuntimeConfig` built from the command's options (``--rate``,
    ``--elicitation-timeout``, ``--dev``, ``--locale``, ``--store``) and returns one, like the
    bundled ``erlmcp_py.app.examples.server:build_server``. A ``Server`` object keeps its own
    policy, except for what those options set. The current directory is importable.

    Raises:
        ServerLoadError: ``spec`` is not ``MODULE:NAME``, the module cannot be imported, or
            ``NAME`` is not a server nor a function returning one.
    """
    module_name, sep, name = spec.partition(":")
    if not sep or not module_name or not name.isidentifier():
        raise ServerLoadError(f"must be MODULE:NAME, got {spec!r}")
    module = _import(module_name)
    if not hasattr(module, name):
        public = [n for n in vars(module) if not n.startswith("_")]
        nearest = difflib.get_close_matches(name, public, n=1)
        hint = f" (did you mean {nearest[0]!r}?)" if nearest else ""
        raise ServerLoadError(f"no attribute {name!r} in module {module_name!r}{hint}")
    target = getattr(module, name)
    if isinstance(target, Server):
        given = {k: getattr(config, k) for k in config.model_fields_set if k != "url_dev"}
        if config.url_dev:
            given["url_dev"] = True
        if given:
            target.runtime_config = target.runtime_config.model_copy(update=given)
        return target
    if not callable(target):
        raise ServerLoadError(
            f"{spec} is a {type(target).__name__}, not a Server nor a function returning one"
        )
    try:
        server = target(config)
    except Exception as exc:
        raise ServerLoadError(f"{spec} raised {_one_line(exc)}") from None
    if not isinstance(server, Server):
        raise ServerLoadError(f"{spec} returned {type(server).__name__}, not a Server")
    return server


def _import(module_name: str) -> ModuleType:
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        wanted = exc.name or ""
        if module_name == wanted or module_name.startswith(wanted + "."):
            raise ServerLoadError(
                f"no module named {module_name!r} (looked in the current directory and sys.path)"
            ) from None
        raise ServerLoadError(f"cannot import {module_name!r}: {_one_line(exc)}") from None
    except Exception as exc:  # the module's own error while importing
        raise ServerLoadError(f"cannot import {module_name!r}: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
