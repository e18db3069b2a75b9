"""Pin the public API (as trio's test_exports does) and the layering rules of DESIGN.md §1."""

from __future__ import annotations

import ast
import pathlib

import erlmcp_py
import supervisors

ROOT = pathlib.Path(__file__).resolve().parents[1]

SUPERVISORS_API = {
    "BRUTAL_KILL", "NOREPLY", "Actor", "ActorError", "ActorGone", "ActorRef", "Busy",
    "CallTimeout", "ChildCounts", "ChildInfo", "ChildSpec", "ErrorReply", "ExitKind",
    "MonitorHub", "MonitorRef", "ReplyTo", "Restart", "RestartIntensity",
    "RestartIntensityExceeded", "StartError", "Strategy", "Supervisor", "SupervisorError",
    "actor_starter", "open_monitor_hub", "should_restart", "start_actor", "victims",
    "wait_task_exit",
}  # fmt: skip


def test_supervisors_public_api_is_pinned() -> None:
    assert set(supervisors.__all__) == SUPERVISORS_API
    for name in supervisors.__all__:
        assert getattr(supervisors, name) is not None


def test_erlmcp_py_all_is_sorted_and_importable() -> None:
    assert list(erlmcp_py.__all__) == sorted(erlmcp_py.__all__)
    for name in erlmcp_py.__all__:
        assert hasattr(erlmcp_py, name), name


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_core_is_pure() -> None:
    """erlmcp_py.core imports no trio, no sockets, no clocks, no processes (DESIGN.md §1)."""
    forbidden = {"trio", "socket", "asyncio", "time", "subprocess", "supervisors"}
    for path in sorted((ROOT / "erlmcp_py" / "core").glob("*.py")):
        bad = _imports(path) & forbidden
        assert not bad, f"{path.name} imports {bad}"


def test_supervisors_know_nothing_of_mcp() -> None:
    for path in sorted((ROOT / "supervisors").glob("*.py")):
        assert "erlmcp_py" not in _imports(path), path.name
