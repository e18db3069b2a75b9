"""Deterministic cost of our in-process op: Python opcodes and CPU instructions per call.

This machine's speed swings 2-3x for seconds at a time (a plain Python loop took 0.34-0.93 s
from one run to the next), so wall-clock and even CPU-time A/B comparisons of a few percent
are noise. Counts are not:

- ``opcodes_per_op``: Python bytecodes executed per op (``sys.settrace`` with
  ``f_trace_opcodes``), split into trio's share and ours, plus the top functions. Runs anywhere.
- ``ir_per_op``: CPU instructions per op under valgrind (``--tool=callgrind``), computed as the
  difference of two runs (``ops`` and 0 ops after the same warm-up), so imports and startup
  cancel out. Skipped (null) without valgrind or with ``--quick``; ~3 minutes per protocol.
- ``shape``: trio's work per op, from a ``trio.abc.Instrument`` (a run of its own, after the
  opcode count): task spawns, task steps and scheduler passes (waits for I/O, one per batch).

The op is ``bench_vs_sdk.py``'s (one ``tools/call`` whose tool asks a 3-field form, answered at
once by a plain-function handler through ``open_memory_client``), on 2025-11-25 (legacy) and on
2026-07-28 (MRTR: two rounds). The limit measured in the same run is trio's own part of the
legacy op's structure — a task that spawns a task that spawns a task, each woken once
(``skeleton``): ``*_over_skeleton`` says how many of those one op costs. To compare commits,
run this file with ``PYTHONPATH`` pointing at a worktree of the other one.

    python benchmarks/bench_op_cost.py [--quick] [--ops N]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import structlog
import trio
from pydantic import BaseModel, Field

from erlmcp_py import Accepted, RuntimeConfig
from erlmcp_py.core.versions import V_2026_07_28
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.testing import open_memory_client

LEGACY = "2025-11-25"
WARMUP = 200


class Person(BaseModel):
    """The 3-field form of bench_vs_sdk.py."""

    name: str
    age: int = Field(ge=0, le=150)
    subscribe: bool = False


ANSWER: dict[str, Any] = {"name": "Ada", "age": 36, "subscribe": True}


def _answer(request: Any) -> dict[str, Any]:
    return {"action": "accept", "content": dict(ANSWER)}


def _quiet() -> None:
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        cache_logger_on_first_use=True,
    )


class _Shape(trio.abc.Instrument):
    """Counts trio's work: task spawns, task steps, scheduler passes."""

    def __init__(self) -> None:
        self.spawns = self.steps = self.passes = 0

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.spawns += 1

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += 1

    def before_io_wait(self, timeout: float) -> None:
        self.passes += 1


async def _run_ops(
    version: str, n: int, counted: int, shape: _Shape | None = None
) -> Counter[CodeType]:
    """The op of ``bench_vs_sdk.py`` on ``version`` (see :func:`_drive`)."""
    server = Server(
        "bench-op-cost",
        "1.0.0",
        runtime_config=RuntimeConfig.model_validate(
            {"rate": 10**9, "max_pending_per_client": 10**9}
        ),
    )

    @server.tool()
    async def ask(ctx: Context) -> str:
        outcome = await ctx.elicit("Who are you?", Person)
        if not isinstance(outcome, Accepted):
            raise TypeError(f"not accepted: {outcome!r}")
        return str(outcome.content.name)

    counts: Counter[CodeType] = Counter()
    async with open_memory_client(
        server, handler=_answer, protocol_version=version, keep_history=False
    ) as client:

        async def op() -> None:
            result = await client.call_tool("ask")
            if result.get("isError") or result["content"][0].get("text") != "Ada":
                raise RuntimeError(f"unexpected {result!r}")

        await _drive(op, n, counted, counts, shape)
    return counts


async def _drive(
    op: Callable[[], Awaitable[None]],
    n: int,
    counted: int,
    counts: Counter[CodeType],
    shape: _Shape | None = None,
) -> None:
    """Warm up, run ``n`` ops, then ``counted`` ops under the opcode counter and, given a
    ``shape``, ``counted`` more under that instrument."""
    for _ in range(WARMUP + n):
        await op()
    if counted:
        with _counting(counts):
            for _ in range(counted):
                await op()
    if counted and shape is not None:
        trio.lowlevel.add_instrument(shape)
        try:
            for _ in range(counted):
                await op()
        finally:
            trio.lowlevel.remove_instrument(shape)


async def _skeleton(n: int, counted: int, shape: _Shape | None = None) -> Counter[CodeType]:
    """trio alone, shaped like the legacy op: the caller starts a task (the tool), which
    starts a task (the elicitation's child) that wakes it; the tool wakes the caller."""
    counts: Counter[CodeType] = Counter()

    def abort(_: Any) -> trio.lowlevel.Abort:
        return trio.lowlevel.Abort.SUCCEEDED

    async with trio.open_nursery() as nursery:

        async def child(tool: trio.lowlevel.Task) -> None:
            trio.lowlevel.reschedule(tool)

        async def tool(caller: trio.lowlevel.Task) -> None:
            with trio.CancelScope():  # the tool's own scope, as every tool call has
                nursery.start_soon(child, trio.lowlevel.current_task())
                await trio.lowlevel.wait_task_rescheduled(abort)
            trio.lowlevel.reschedule(caller)

        async def op() -> None:
            nursery.start_soon(tool, trio.lowlevel.current_task())
            await trio.lowlevel.wait_task_rescheduled(abort)

        await _drive(op, n, counted, counts, shape)
    return counts


class _counting:
    """Count executed opcodes per code object while the block runs (this thread only)."""

    def __init__(self, counts: Counter[CodeType]) -> None:
        self.counts = counts

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            self.counts[frame.f_code] += 1
        return self._local

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        return self._local

    def __enter__(self) -> None:
        sys.settrace(self._global)

    def __exit__(self, *exc: object) -> None:
        sys.settrace(None)


def _where(code: CodeType) -> str:
    path = code.co_filename
    for marker, keep in (
        ("/site-packages/", ""),
        ("/erlmcp_py/", "erlmcp_py/"),
        ("/supervisors/", "supervisors/"),
    ):
        if marker in path:
            path = keep + path.split(marker, 1)[1]
            break
    return f"{path}:{code.co_firstlineno}({code.co_name})"


def _opcode_figures(counts: Counter[CodeType], n: int, shape: _Shape) -> dict[str, Any]:
    total = sum(counts.values()) / n
    trio_part = sum(c for code, c in counts.items() if "/trio/" in code.co_filename) / n
    top = [(round(c / n, 1), _where(code)) for code, c in counts.most_common(12)]
    return {
        "opcodes": round(total),
        "trio_opcodes": round(trio_part),
        "top": top,
        "shape": {
            "task_spawns": round(shape.spawns / n, 1),
            "task_steps": round(shape.steps / n, 1),
            "scheduler_passes": round(shape.passes / n, 1),
        },
    }


def _ir_per_op(mode: str, ops: int) -> int | None:
    """Instructions per op under valgrind: (run with ``ops`` ops - run with 0) / ops."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None

    def collected(n: int) -> int:
        cmd = [
            valgrind,
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--child",
            mode,
            str(n),
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stderr
        for line in out.splitlines():
            if "Collected :" in line:
                return int(line.rsplit(":", 1)[1].strip())
        raise RuntimeError(f"no instruction count in valgrind's output:\n{out[-2000:]}")

    return round((collected(ops) - collected(0)) / ops)


def _child(mode: str, n: int) -> None:
    """One valgrind run: warm-up and ``n`` ops, nothing counted in Python."""
    _quiet()
    if mode == "skeleton":
        trio.run(_skeleton, n, 0)
    else:
        trio.run(_run_ops, LEGACY if mode == "legacy" else V_2026_07_28, n, 0)


def main(quick: bool, ops: int) -> dict[str, Any]:
    _quiet()
    counted = 50 if quick else 300
    shapes = {"legacy": _Shape(), "2026": _Shape(), "skeleton": _Shape()}
    figures = {
        "legacy": _opcode_figures(
            trio.run(_run_ops, LEGACY, 0, counted, shapes["legacy"]), counted, shapes["legacy"]
        ),
        "2026": _opcode_figures(
            trio.run(_run_ops, V_2026_07_28, 0, counted, shapes["2026"]), counted, shapes["2026"]
        ),
        "skeleton": _opcode_figures(
            trio.run(_skeleton, 0, counted, shapes["skeleton"]), counted, shapes["skeleton"]
        ),
    }
    out: dict[str, Any] = {
        f"{key}_opcodes_per_op": value["opcodes"] for key, value in figures.items()
    }
    out.update({f"{key}_trio_opcodes_per_op": v["trio_opcodes"] for key, v in figures.items()})
    out.update({f"{key}_shape_per_op": v["shape"] for key, v in figures.items()})
    skeleton_ops = figures["skeleton"]["opcodes"]
    out["legacy_opcodes_over_skeleton"] = round(figures["legacy"]["opcodes"] / skeleton_ops, 2)
    out["2026_opcodes_over_skeleton"] = round(figures["2026"]["opcodes"] / skeleton_ops, 2)
    for key in ("legacy", "2026"):
        fig = figures[key]
        line = f"{key}: {fig['opcodes']} opcodes per op ({fig['trio_opcodes']} in trio); top:"
        print(line, file=sys.stderr)
        print(f"  trio per op: {fig['shape']}", file=sys.stderr)
        for count, where in fig["top"]:
            print(f"  {count:>8} {where}", file=sys.stderr)
    print(f"skeleton (trio alone, the legacy op's shape): {skeleton_ops} opcodes", file=sys.stderr)
    ir: dict[str, int | None] = {"legacy": None, "2026": None, "skeleton": None}
    if not quick:
        for mode in ir:
            ir[mode] = _ir_per_op(mode, ops)
    out.update({f"{key}_ir_per_op": value for key, value in ir.items()})
    legacy_ir, skeleton_ir = ir["legacy"], ir["skeleton"]
    out["legacy_ir_over_skeleton"] = (
        round(legacy_ir / skeleton_ir, 2) if legacy_ir and skeleton_ir else None
    )
    if legacy_ir is not None:
        print(
            f"instructions per op (valgrind): legacy {legacy_ir}, 2026 {ir['2026']}, "
            f"skeleton {skeleton_ir}",
            file=sys.stderr,
        )
    else:
        print("instructions per op: not measured (--quick, or no valgrind)", file=sys.stderr)
    out.update({"quick": quick, "ops": ops, "python": sys.version.split()[0]})
    out["erlmcp_py"] = str(Path(sys.modules["erlmcp_py"].__file__ or "").parent)
    return out


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child(sys.argv[2], int(sys.argv[3]))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="opcodes only, fewer ops")
    parser.add_argument("--ops", type=int, default=1000, help="ops per valgrind run")
    args = parser.parse_args()
    print(json.dumps(main(args.quick, args.ops)))
