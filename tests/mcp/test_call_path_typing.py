"""The protocol layer's call path is typed: no parameter or attribute that holds the runtime
or a peer is ``Any`` (or ``object``), and the tool's ``Context`` reads its peer and runtime
through their interfaces, never with ``getattr``. mypy checks the types; this checks that they
are not waved through as ``Any``."""

from __future__ import annotations

import ast
from pathlib import Path

import erlmcp_py.mcp

MCP = Path(erlmcp_py.mcp.__file__).parent
UNTYPED = {"Any", "object"}


def _holds_runtime_or_peer(name: str) -> bool:
    return name in {"runtime", "peer", "_runtime", "_peer"} or name.endswith("_peer")


def _annotated(tree: ast.AST) -> list[tuple[str, ast.expr]]:
    """Every annotated parameter and attribute: ``(name, annotation)``."""
    found: list[tuple[str, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if arg.annotation is not None:
                    found.append((arg.arg, arg.annotation))
        elif isinstance(node, ast.AnnAssign):
            target = node.target
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            found.append((name, node.annotation))
    return found


def test_no_runtime_or_peer_of_the_protocol_layer_is_typed_any() -> None:
    untyped = [
        f"{path.name}: {name}: {ast.unparse(annotation)}"
        for path in sorted(MCP.glob("*.py"))
        for name, annotation in _annotated(ast.parse(path.read_text()))
        if _holds_runtime_or_peer(name)
        and {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)} & UNTYPED
    ]
    assert untyped == []


def test_the_context_reads_no_attribute_by_name() -> None:
    tree = ast.parse((MCP / "context.py").read_text())
    calls = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"getattr", "hasattr"}
    ]
    assert calls == []


def test_the_context_depends_on_interfaces_not_on_the_server_class() -> None:
    """``Context`` takes a ``CallPeer``, the ``Runtime``, the URL policy and a ``ToolServer``:
    it imports nothing of ``erlmcp_py.mcp.server``, at run time or for type checking."""
    tree = ast.parse((MCP / "context.py").read_text())
    imported = [
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    ]
    assert "erlmcp_py.mcp.server" not in imported
