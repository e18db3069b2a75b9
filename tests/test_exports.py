"""The public API and the layer rules (docs/architecture.md, "Layers" and "Public API").

As trio's own ``test_exports`` does: each package's ``__all__`` is pinned, every name in it
imports, and no other public name is visible. The layer rules are checked on the syntax tree
of every module of ``supervisors`` and ``erlmcp_py`` (imports inside functions and under
``TYPE_CHECKING`` included): each layer imports only the layers above it, and no module
imports a private name (``_x``, or a name from a private module ``_m``) of another package.
"""

from __future__ import annotations

import ast
import pathlib
import types
from dataclasses import dataclass

import pytest

import erlmcp_py
import erlmcp_py.client
import erlmcp_py.gateway
import erlmcp_py.mcp.mrtr
import supervisors

ROOT = pathlib.Path(__file__).resolve().parents[1]

ERLMCP_PY_API = {
    "Accepted", "ActorGone", "AlreadyTerminal", "AnswerError", "AnswerInFlight", "Busy",
    "Cancelled", "CapabilityMissing", "ClientRequestError", "CompletionRequest", "Contents",
    "Context", "Declined", "ElicitationHandle", "ElicitationInfo", "ElicitationNotFound",
    "ElicitationRequest", "ErlmcpError", "ExtensionDenied", "Failed", "FormDefinition",
    "FormDefinitionError", "FormType", "Format", "InvalidAnswer", "InvalidClientResult", "McpApp",
    "Outcome", "Peer", "PeerError", "PeerGone", "PeerResponse", "RateLimited", "RequestTooLarge",
    "ResourceNotFound", "ResultTooLarge", "Root", "Runtime", "RuntimeConfig", "SampledMessage",
    "SchemaNotAllowed", "Server", "Tenant",
    "TimedOut", "Titles", "TooManyElicitations", "ToolError", "UnsafeURLError", "Unsupported",
    "UrlElicitationRequired", "UrlPolicy", "ValidationResult", "ValidatorError", "check_url",
    "load_form",
    "open_runtime", "schema_for", "serve_http", "serve_stdio", "summarize", "validate_answer",
}  # fmt: skip

SUPERVISORS_API = {
    "BRUTAL_KILL", "NOREPLY", "Actor", "ActorError", "ActorGone", "ActorRef", "Busy",
    "CallTimeout", "ChildCounts", "ChildInfo", "ChildSpec", "ErrorReply", "ExitKind",
    "MonitorHub", "MonitorRef", "ReplyTo", "Restart", "RestartIntensity",
    "RestartIntensityExceeded", "StartError", "Strategy", "Supervisor", "SupervisorError",
    "actor_starter", "open_monitor_hub", "should_restart", "start_actor", "victims",
    "wait_task_exit",
}  # fmt: skip

CLIENT_API = {
    "CLIENT_INFO", "DEFAULT_CAPABILITIES", "ENDPOINT_PATH", "INPUT_REQUIRED",
    "MAX_INBOUND_BYTES", "MAX_ROUNDS", "ClientRequestError", "ClientSession", "ConnectionLost",
    "EndpointNotFound", "Handler", "HttpWire", "Inbound", "InputHandler", "InputRoundsExhausted",
    "MemoryClient", "MemoryWire", "OnNotification", "OnProgress", "OnUnmatched", "Refused",
    "ScriptedClient", "ServerExited", "ServerRequest", "SessionOptions", "StdioClient",
    "StdioWire", "Undeliverable", "Wire", "answer_input", "call_until_complete", "connect_http",
    "connect_in_memory", "connect_stdio", "endpoint_suggestion", "open_client_session",
    "open_http_wire", "open_memory_client", "open_memory_wire", "open_stdio_client",
    "open_stdio_wire", "with_request_meta",
}  # fmt: skip

GATEWAY_API = {
    "ERAS", "TIMEOUT_META", "Gateway", "GatewaySession", "Upstream", "UpstreamPolicy",
    "parse_header", "upstream_capabilities",
}  # fmt: skip

# A public module whose implementation lives in private modules of its package re-exports
# their public names, pinned like a package's.
MRTR_API = {
    "DEFAULT_STATE_TTL_S", "MRTR_MODES", "PRINCIPAL_BUSY", "Attached", "Attachment",
    "ContinuationElsewhere", "ContinuationRegistry", "Handoff", "MrtrPeer", "NotificationSink",
    "RequestStateRefused", "RunCall", "Waiter", "open_continuations", "question_of",
    "response_problem",
}  # fmt: skip

PACKAGES = (erlmcp_py, supervisors, erlmcp_py.client, erlmcp_py.gateway, erlmcp_py.mcp.mrtr)


# --------------------------------------------------------------------------------------------
# The public API
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("package", "pinned"),
    [
        (erlmcp_py, ERLMCP_PY_API),
        (supervisors, SUPERVISORS_API),
        (erlmcp_py.client, CLIENT_API),
        (erlmcp_py.gateway, GATEWAY_API),
        (erlmcp_py.mcp.mrtr, MRTR_API),
    ],
    ids=["erlmcp_py", "supervisors", "erlmcp_py.client", "erlmcp_py.gateway", "erlmcp_py.mcp.mrtr"],
)
def test_all_is_the_pinned_public_api(package: types.ModuleType, pinned: set[str]) -> None:
    assert set(package.__all__) == pinned
    assert len(package.__all__) == len(pinned), "a name is listed twice"
    assert list(package.__all__) == sorted(package.__all__)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_every_name_in_all_imports(package: types.ModuleType) -> None:
    missing = [name for name in package.__all__ if not hasattr(package, name)]
    assert not missing


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_no_public_name_outside_all(package: types.ModuleType) -> None:
    extra = {
        name
        for name, value in vars(package).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)  # subpackages and modules
        and name not in package.__all__
    }
    assert not extra


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_static_analysers_see_all(package: types.ModuleType) -> None:
    """Every public name is re-exported as ``import x as x`` (what mypy and pyright read as a
    re-export), and nothing else is imported under a public name."""
    assert package.__file__ is not None
    tree = ast.parse(pathlib.Path(package.__file__).read_text())
    reexported = {
        alias.asname
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module != "__future__"
        for alias in node.names
        if alias.asname is not None and alias.asname == alias.name
    }
    assert reexported == set(package.__all__)


# --------------------------------------------------------------------------------------------
# The layers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement's target, as an absolute dotted name."""

    importer: str  # the importing module, e.g. "erlmcp_py.mcp.session"
    module: str  # the imported module, e.g. "erlmcp_py.mcp.jsonrpc"
    name: str | None  # the imported name for ``from module import name``
    line: int

    def __str__(self) -> str:
        what = self.module if self.name is None else f"{self.module}.{self.name}"
        return f"{self.importer}:{self.line} imports {what}"


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(module: str) -> bool:
    return (ROOT.joinpath(*module.split(".")) / "__init__.py").exists()


def _imports_of(path: pathlib.Path) -> list[Import]:
    importer = _module_name(path)
    package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend(Import(importer, a.name, None, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importer's package
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.extend(Import(importer, base, a.name, node.lineno) for a in node.names)
    return found


def _modules(*top: str) -> list[pathlib.Path]:
    return sorted(p for t in top for p in (ROOT / t).rglob("*.py"))


ALL_IMPORTS = [imp for path in _modules("supervisors", "erlmcp_py") for imp in _imports_of(path)]

# The application modules, which may use every layer: the command (its options, configuration
# file, serve loop, demo and bundled example servers), its terminal client, and the test
# helpers. No layer imports them.
APPLICATION = (
    "erlmcp_py.app",
    "erlmcp_py.connect",
    "erlmcp_py.testing",
)

# The gateway: the server machinery wired to an upstream client session. It may import every
# layer of the library (mcp, transports, client…); only the application modules import it.
GATEWAY = "erlmcp_py.gateway"

# The modules at the root of erlmcp_py: the library's public face (the package, its logging
# defaults) and the test helpers; the command and its examples live in erlmcp_py.app.
ROOT_MODULES = {"__init__.py", "logging.py", "testing.py"}


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _targets(imp: Import) -> tuple[str, ...]:
    """The dotted names an import may refer to: the module, and ``module.name`` (which is a
    submodule when ``name`` is one)."""
    return (imp.module,) if imp.name is None else (imp.module, f"{imp.module}.{imp.name}")


def _violations(importers: str, forbidden: tuple[str, ...]) -> list[str]:
    return [
        str(imp)
        for imp in ALL_IMPORTS
        if _within(imp.importer, importers)
        and any(_within(t, f) for t in _targets(imp) for f in forbidden)
    ]


def test_supervisors_import_nothing_from_erlmcp_py() -> None:
    assert not _violations("supervisors", ("erlmcp_py",))


def test_core_is_pure() -> None:
    """The core is sans-IO: no trio, no sockets, no files, no processes, no clock, no
    randomness (the shells draw ids), no upper layer."""
    forbidden = (
        "trio", "asyncio", "socket", "select", "selectors", "subprocess", "os", "time",
        "random", "secrets",
        "supervisors", "erlmcp_py.actors", "erlmcp_py.mcp", "erlmcp_py.transports",
        "erlmcp_py.client", "erlmcp_py.logging", GATEWAY, *APPLICATION,
    )  # fmt: skip
    assert not _violations("erlmcp_py.core", forbidden)


def test_core_reads_no_clock() -> None:
    """Time is an argument in the core: no ``datetime.now()`` / ``date.today()`` either."""
    clock_reads = {"now", "utcnow", "today", "monotonic", "perf_counter", "current_time"}
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno} calls .{node.func.attr}()"
        for path in _modules("erlmcp_py/core")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in clock_reads
    ]
    assert not found


def test_the_store_imports_only_the_core() -> None:
    """The store client is I/O for the actors: it knows the core, never the layers above."""
    forbidden = ("supervisors", "erlmcp_py.actors", "erlmcp_py.mcp", "erlmcp_py.transports",
                 "erlmcp_py.client", GATEWAY, *APPLICATION)  # fmt: skip
    assert not _violations("erlmcp_py.store", forbidden)


def test_actors_never_import_mcp_or_transports() -> None:
    forbidden = ("erlmcp_py.mcp", "erlmcp_py.transports", "erlmcp_py.client", GATEWAY)
    assert not _violations("erlmcp_py.actors", (*forbidden, *APPLICATION))


def test_mcp_never_imports_transports() -> None:
    forbidden = ("erlmcp_py.transports", "erlmcp_py.client", GATEWAY, *APPLICATION)
    assert not _violations("erlmcp_py.mcp", forbidden)


def test_transports_never_import_the_application() -> None:
    """The command wires the example server into a transport, never the transport itself; a
    transport serves clients and needs none of its own."""
    assert not _violations("erlmcp_py.transports", ("erlmcp_py.client", GATEWAY, *APPLICATION))


def test_the_client_imports_the_protocol_never_the_server_side() -> None:
    """The client speaks the protocol (``core``, ``mcp``: the JSON-RPC codec, the version
    constants, and a server session for the in-memory wire); it needs neither the actors nor
    the store nor the server's transports."""
    forbidden = ("supervisors", "erlmcp_py.actors", "erlmcp_py.store", "erlmcp_py.transports",
                 GATEWAY, *APPLICATION)  # fmt: skip
    assert not _violations("erlmcp_py.client", forbidden)


def test_the_gateway_is_imported_by_the_application_only() -> None:
    """The gateway wires the server machinery (``mcp``, ``transports``) to an upstream client
    session (``client``): it may use every layer of the library, and never the application
    modules, which are the only ones to import it."""
    assert not _violations(GATEWAY, APPLICATION)
    importers = {
        imp.importer
        for imp in ALL_IMPORTS
        if any(_within(t, GATEWAY) for t in _targets(imp)) and not _within(imp.importer, GATEWAY)
    }
    assert all(any(_within(m, app) for app in APPLICATION) for m in importers), importers


def test_no_product_code_uses_trio_testing() -> None:
    """trio's test helpers (``wait_all_tasks_blocked``, the mock clock) are for tests: product
    code waits on events of its own (a graceful stop waits on the transports' event of the last
    call ending)."""
    assert not _violations("supervisors", ("trio.testing",))
    assert not _violations("erlmcp_py", ("trio.testing",))


def test_the_package_root_holds_the_library_only() -> None:
    """No application module sits beside ``erlmcp_py/__init__.py``: they live in
    ``erlmcp_py/app``."""
    assert {p.name for p in (ROOT / "erlmcp_py").glob("*.py")} == ROOT_MODULES


def _private_owner(imp: Import) -> str | None:
    """The package a private import belongs to, or ``None`` when it is public.

    ``from a.b._m import x`` and ``import a.b._m``: the private module ``_m`` belongs to
    ``a.b``. ``from a.b.m import _x``: ``_x`` belongs to ``a.b`` (or to ``a.b.m`` when that
    is a package).
    """
    parts = imp.module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    if imp.name is not None and imp.name.startswith("_") and not imp.name.startswith("__"):
        return imp.module if _is_package(imp.module) else imp.module.rpartition(".")[0]
    return None


def test_no_private_name_is_imported_from_another_package() -> None:
    violations = []
    for imp in ALL_IMPORTS:
        owner = _private_owner(imp)
        if owner is None or imp.module == "__future__":
            continue
        importer_package = (
            imp.importer if _is_package(imp.importer) else imp.importer.rpartition(".")[0]
        )
        if importer_package != owner:
            violations.append(str(imp))
    assert not violations


# The public modules of each package (trio's rule): what the layers above import, the layers'
# interfaces. Every other implementation module is private (``_x.py``) and its package
# re-exports its public names; a new module is private unless it is added here on purpose.
PUBLIC_MODULES: dict[str, set[str]] = {
    "supervisors": {"actor", "monitor", "supervisor"},
    "erlmcp_py": {
        "actors", "app", "client", "connect", "core", "gateway", "logging", "mcp", "store",
        "testing", "transports",
    },
    "erlmcp_py.core": {
        "error_texts", "errors", "foreign_schema", "forms", "i18n", "lifecycle", "outcomes",
        "policy", "ratelimit", "retention", "schema", "sensitive", "shares", "state_token",
        "store_wire", "tasks", "tool_arguments", "typeschema", "urlpolicy", "validation",
        "versions", "wording",
    },
    "erlmcp_py.core.forms": set(),
    "erlmcp_py.core.schema": set(),
    "erlmcp_py.actors": {"api", "pages", "peer", "runtime", "urlcheck"},
    "erlmcp_py.store": set(),
    "erlmcp_py.mcp": {
        "call_peer", "client_results", "completion", "context", "errors", "jsonrpc", "meta",
        "mrtr", "params", "resources", "server", "session", "stateless", "stopwatch", "tasks",
        "versions",
    },
    "erlmcp_py.transports": {"asgi", "auth", "forwarded", "http", "http_checks", "stdio"},
    "erlmcp_py.client": set(),
    "erlmcp_py.gateway": set(),
    "erlmcp_py.app": {"examples"},
    "erlmcp_py.app.examples": {"conformance", "everything", "sdk_server", "server"},
    "erlmcp_py.connect": set(),
}  # fmt: skip


def _public_modules(package: pathlib.Path) -> set[str]:
    modules = {p.stem for p in package.glob("*.py")}
    modules |= {d.name for d in package.iterdir() if (d / "__init__.py").is_file()}
    return {m for m in modules if not m.startswith("_")}


def test_implementation_modules_are_private_unless_pinned() -> None:
    packages = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("supervisors", "erlmcp_py")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert packages == set(PUBLIC_MODULES)
    found = {name: _public_modules(ROOT / name.replace(".", "/")) for name in PUBLIC_MODULES}
    assert found == PUBLIC_MODULES
