"""erlmcp-py versus the official MCP Python SDK (``mcp`` 2.3.0): one tool call that does one
3-field form elicitation, answered at once by the client, measured for both in the same run.

One op = ``tools/call`` of a tool whose body asks ``Person`` (``name: str``, ``age: int`` with
0..150, ``subscribe: bool = False``) and returns the accepted name; the client accepts at once
with ``{"name": "Ada", "age": 36, "subscribe": true}``. Every result is checked. Paths:

* in-process (each side's in-memory client/server pair), legacy (2025-11-25):
  - SDK: ``mcp.Client(MCPServer, mode="legacy")``: the SDK's ``InMemoryTransport`` (anyio
    memory streams of ``SessionMessage`` objects -- pydantic models, never JSON text -- one
    server task) and its full ``ClientSession`` (typed results, elicitation callback).
  - ours: ``erlmcp_py.testing.open_memory_client(server, handler=...)``, the library's pair:
    encoded JSON-RPC frames over two trio memory channels, one reader task per side, each
    frame parsed and checked as on a wire (``ServerSession.feed`` / ``jsonrpc.parse``); the
    handler, a plain function, answers from the client's reader task.
  - ours via the SDK client (extra, ``inproc_ratio_sdk_client``): the same SDK ``Client`` over
    a ``Transport`` built here that bridges ``SessionMessage`` <-> JSON bytes into our
    ``ServerSession`` (what ``stdio_client`` does, minus the pipes), so only servers differ.
* stdio subprocess, legacy (each side's own client and server):
  - SDK: ``MCPServer`` + ``run()`` (asyncio) from a script written to a temp dir, driven by
    the SDK's ``Client`` over its ``stdio_client``.
  - ours: the real command, ``erlmcp-py serve --transport stdio --rate N --server
    bench_server:build`` (``bench_server.py`` is written to the temp dir: the ``ask`` tool;
    its factory also lifts the 100-pending-per-client cap for the 100-concurrent runs),
    driven by our ``open_stdio_client`` (``erlmcp_py.client``). Log level ``warning``;
    ``ours_stdio_legacy_infolog`` (extra) the same at ``info``.
  - the same client on both sides: ``ours_stdio_legacy_sdkclient`` (our server, SDK client:
    ``stdio_ratio_sdk_client``, whose ceiling for any server is
    ``stdio_ratio_ceiling_sdk_client``) and, extra, ``sdk_stdio_legacy_ourclient`` (SDK
    server, our client: ``stdio_ratio_our_client``). Server stderr goes to /dev/null; CPU per
    op: the server from /proc, the client = this process.
* 2026-07-28 (stateless, MRTR): SDK only through its resolvers (``Resolve`` + ``Elicit``; an
  imperative ``ctx.elicit`` raises ``NoBackChannelError`` there); in-process its ``Client``
  uses the direct dispatcher (no JSON-RPC framing). Ours in-process: ``open_memory_client``
  at 2026-07-28 (it drives the ``InputRequiredResult`` retry loop), plus (extra) the SDK
  client over the bridge. Over stdio, as for legacy: each side's own client (the SDK's
  ``Client`` on its ``ask_resolve``; our ``open_stdio_client`` at 2026-07-28, which drives the
  retry loop, on ``ask``: ``stdio_ratio_2026``), the SDK client on both
  (``ours_stdio_2026_sdkclient``: ``stdio_ratio_2026_sdk_client``) and, extra, our client on
  both (``sdk_stdio_2026_ourclient``, our client driving the SDK's resolver:
  ``stdio_ratio_2026_our_client``); they are one group, so every ratio is paired per round.
  Ours is measured only if a probe call succeeds; otherwise null and ``stateless_note`` says why.

Sequential (one call at a time) and 100-concurrent (100 tasks, each calling in a loop).
Keys: ``inproc_ratio`` / ``stdio_ratio`` = ours / SDK ops/s, sequential, legacy;
``*_c100`` the same 100-concurrent; ``*_2026`` on 2026-07-28; ``inproc_ratio_sdk_client``,
``stdio_ratio_sdk_client``, ``stdio_ratio_2026_sdk_client``, ``stdio_ratio_our_client`` and
``stdio_ratio_2026_our_client`` with the same client on both sides; ``inproc_cpu_ratio``,
``stdio_cpu_ratio`` (client + server), ``stdio_server_cpu_ratio`` and the ``*_2026`` of each =
SDK / ours CPU per op (far less sensitive to machine load); ``stdio_client_cpu_ratio_2026`` =
the SDK client's CPU per op over ours, both driving our server on 2026-07-28;
``stdio_infolog_cost`` = ours at ``info`` / ours at ``warning`` (ops/s); and every raw figure
``<side>_<transport>_<era>[_variant]_`` ``seq_ops_s`` / ``seq_p50_ms`` / ``c100_ops_s`` /
``*cpu_ms_per_op`` / ``seq_block`` (null: not measured). Targets of a group are interleaved
round by round, each in slices of the same wall time (``slice_s``; see :func:`measure`), so drift
hits both sides alike; figures are medians over rounds, and a ratio between two targets of one
group is the median of the per-round ratios (``inproc_ratio_of_medians`` /
``stdio_ratio_of_medians``: the ratio of the medians instead). The goal is on the wire:
``stdio_ratio`` >= 4; the in-process ratios are reported. ``--profile`` prints where each side's
in-process time goes (cProfile). ``--quick`` (about 20 s on an idle 2-core machine) measures
fewer ops and skips the [extra] targets. Human-readable lines first; the last line is one
JSON object.

    python benchmarks/bench_vs_sdk.py [--quick] [--profile] [--no-stdio]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Annotated, Any, TextIO

import anyio
import mcp_types
import trio
from _baseline import quiet_logs
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.elicitation import AcceptedElicitation
from mcp.server.mcpserver import Context as SdkContext, Elicit, MCPServer, Resolve
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, Field

from erlmcp_py import Accepted, RuntimeConfig
from erlmcp_py.client import ServerRequest, open_stdio_client
from erlmcp_py.core.versions import V_2026_07_28
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import open_session
from erlmcp_py.testing import MemoryClient, open_memory_client

ROOT = Path(__file__).resolve().parent.parent

CONCURRENCY = 100
MIN_BLOCK = 20  # ops: the smallest sequential block, however slow the target
MESSAGE = "Who are you?"
ANSWER: dict[str, Any] = {"name": "Ada", "age": 36, "subscribe": True}
LEGACY = "2025-11-25"
STATELESS_MODULES = ("mrtr.py", "stateless.py")
STDIO_GOAL = 4.0
ALL_TARGETS = (
    "sdk_inproc_legacy",
    "ours_inproc_legacy",
    "ours_inproc_legacy_sdkclient",
    "sdk_inproc_2026",
    "ours_inproc_2026",
    "ours_inproc_2026_sdkclient",
    "sdk_stdio_legacy",
    "ours_stdio_legacy",
    "ours_stdio_legacy_sdkclient",
    "ours_stdio_legacy_infolog",
    "sdk_stdio_legacy_ourclient",
    "sdk_stdio_2026",
    "ours_stdio_2026",
    "ours_stdio_2026_sdkclient",
    "sdk_stdio_2026_ourclient",
)
# The benchmark asks thousands of times per minute: lift the per-client rate and pending caps.
RATE = 10**9
OUR_CONFIG: dict[str, Any] = {"rate": RATE, "max_pending_per_client": 10**9}


class Person(BaseModel):
    """The 3-field form both sides ask for."""

    name: str
    age: int = Field(ge=0, le=150)
    subscribe: bool = False


class BenchError(RuntimeError):
    """A call gave a wrong answer: the figures would be meaningless."""


# -- servers ------------------------------------------------------------------------------------


def build_sdk_server() -> MCPServer:
    """The SDK side: ``ask`` (imperative ``ctx.elicit``, legacy only) and ``ask_resolve``."""
    server = MCPServer("sdk-bench")

    @server.tool()
    async def ask(ctx: SdkContext) -> str:
        outcome = await ctx.elicit(MESSAGE, Person)
        if not isinstance(outcome, AcceptedElicitation):
            raise TypeError(f"not accepted: {outcome!r}")
        return outcome.data.name

    @server.tool()
    async def ask_resolve(person: Annotated[Person, Resolve(who)]) -> str:
        return person.name

    return server


def who() -> Elicit[Person]:
    """The SDK resolver asking for ``Person`` (module level: annotations are strings here)."""
    return Elicit(MESSAGE, Person)


def build_our_server() -> Server:
    """Our side: ``ask`` (``await ctx.elicit``, the same code for every protocol era)."""
    server = Server(
        "erlmcp-bench", "1.0.0", runtime_config=RuntimeConfig.model_validate(OUR_CONFIG)
    )

    @server.tool()
    async def ask(ctx: Context) -> str:
        outcome = await ctx.elicit(MESSAGE, Person)
        if not isinstance(outcome, Accepted):
            raise TypeError(f"not accepted: {outcome!r}")
        return str(outcome.content.name)

    return server


PERSON_SRC = """
class Person(BaseModel):
    name: str
    age: int = Field(ge=0, le=150)
    subscribe: bool = False
"""

#: The SDK server's two tools (after ``server = MCPServer(...)`` in a generated script):
#: ``ask`` (its ``ctx.elicit``, legacy era) and ``ask_resolve`` (its stateless resolver).
SDK_TOOLS_SRC = """
@server.tool()
async def ask(ctx: Context) -> str:
    outcome = await ctx.elicit(MESSAGE, Person)
    if not isinstance(outcome, AcceptedElicitation):
        raise TypeError("not accepted")
    return outcome.data.name


def who() -> Elicit[Person]:
    return Elicit(MESSAGE, Person)


@server.tool()
async def ask_resolve(person: Annotated[Person, Resolve(who)]) -> str:
    return person.name
"""

SDK_SCRIPT = (
    '''"""SDK (mcp 2.3.0) stdio server for bench_vs_sdk. argv: pidfile."""
import os
import sys
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field
from mcp.server.elicitation import AcceptedElicitation
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
'''
    + PERSON_SRC
    + f"""
MESSAGE = {MESSAGE!r}
Path(sys.argv[1]).write_text(str(os.getpid()))
server = MCPServer("sdk-bench")
"""
    + SDK_TOOLS_SRC
    + """

server.run()
"""
)

OUR_MODULE = (
    '''"""erlmcp-py server for bench_vs_sdk, served by ``erlmcp-py serve --server
bench_server:build`` (the real command). Env BENCH_PIDFILE: where to write the pid."""
import os
from pathlib import Path

from pydantic import BaseModel, Field

from erlmcp_py import Accepted, RuntimeConfig
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
'''
    + PERSON_SRC
    + f"""
MESSAGE = {MESSAGE!r}


def build(config: RuntimeConfig) -> Server:
    if os.environ.get("BENCH_PIDFILE"):
        Path(os.environ["BENCH_PIDFILE"]).write_text(str(os.getpid()))
    # --rate lifts the rate; 100 callers at once also need more than 100 pending per client.
    config = config.model_copy(update={{"max_pending_per_client": 10**9}})
    server = Server("erlmcp-bench", "1.0.0", runtime_config=config)

    @server.tool()
    async def ask(ctx: Context) -> str:
        outcome = await ctx.elicit(MESSAGE, Person)
        if not isinstance(outcome, Accepted):
            raise TypeError("not accepted")
        return str(outcome.content.name)

    return server
"""
)


def serve_command(level: str) -> list[str]:
    """``erlmcp-py serve --transport stdio --rate N --server bench_server:build``."""
    script = Path(sys.executable).parent / "erlmcp-py"
    head = [str(script)] if script.exists() else [sys.executable, "-m", "erlmcp_py.app"]
    return [
        *head,
        "serve",
        "--transport",
        "stdio",
        "--rate",
        str(RATE),
        "--server",
        "bench_server:build",
        "--log-level",
        level,
    ]


# -- clients ------------------------------------------------------------------------------------


async def sdk_answer(
    context: ClientRequestContext, params: mcp_types.ElicitRequestParams
) -> mcp_types.ElicitResult | mcp_types.ErrorData:
    """The SDK client's elicitation callback: accept at once."""
    return mcp_types.ElicitResult(action="accept", content=dict(ANSWER))


def sdk_client_op(client: Client, tool: str) -> Callable[[], Awaitable[None]]:
    async def op() -> None:
        result = await client.call_tool(tool, {})
        block = result.content[0] if result.content else None
        if result.is_error or getattr(block, "text", None) != "Ada":
            raise BenchError(f"SDK client got {result!r}")

    return op


ANSWER_RESULT: dict[str, Any] = {"action": "accept", "content": ANSWER}


def our_answer(request: ServerRequest) -> dict[str, Any]:
    """Our clients' elicitation handler: accept at once (a plain function)."""
    return {"action": "accept", "content": dict(ANSWER)}


def our_client_op(client: Any, tool: str = "ask") -> Callable[[], Awaitable[None]]:
    """One checked call through our own client (``MemoryClient`` or ``StdioClient``)."""

    async def op() -> None:
        result = await client.call_tool(tool)
        if result.get("isError") or result["content"][0].get("text") != "Ada":
            raise BenchError(f"our client got {result!r}")

    return op


@asynccontextmanager
async def our_memory_pair(server: Server, version: str = LEGACY) -> AsyncIterator[MemoryClient]:
    """The library's in-memory pair (``erlmcp_py.testing.open_memory_client``), initialized."""
    async with open_memory_client(
        server, handler=our_answer, protocol_version=version, keep_history=False
    ) as client:
        yield client


@asynccontextmanager
async def sdk_transport_to_our_session(
    server: Server,
) -> AsyncIterator[tuple[Any, Any]]:
    """A ``Transport`` for ``mcp.Client`` whose far end is our ``ServerSession`` in-process.

    Client -> server: ``model_dump_json`` then ``ServerSession.feed``; server -> client:
    ``jsonrpc_message_adapter.validate_json``. The same conversions ``stdio_client`` makes.
    """
    to_client_send, to_client_recv = anyio.create_memory_object_stream[SessionMessage | Exception](
        1
    )
    from_client_send, from_client_recv = anyio.create_memory_object_stream[SessionMessage](1)
    adapter = mcp_types.jsonrpc_message_adapter

    async def send(frame: bytes) -> None:
        await to_client_send.send(SessionMessage(adapter.validate_json(frame, by_name=False)))

    async with (
        server.running() as runtime,
        open_session(server, runtime, send) as session,
        trio.open_nursery() as nursery,
    ):

        async def pump() -> None:
            async for item in from_client_recv:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                await session.feed(data.encode())

        nursery.start_soon(pump)
        try:
            yield to_client_recv, from_client_send
        finally:
            nursery.cancel_scope.cancel()


# -- measurement --------------------------------------------------------------------------------


@dataclass
class Target:
    """One thing measured: an op (one checked tool call) and, for stdio, the server's pid."""

    key: str
    label: str
    op: Callable[[], Awaitable[None]]
    pidfile: Path | None = None
    conc_too: bool = True
    seq: list[float] = field(default_factory=list)
    conc: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    n_seq: int = 0  # ops per sequential block (set by measure from the warm-up speed)
    n_conc: int = 0
    server_cpu_s: float = 0.0
    own_cpu_s: float = 0.0  # this process: the client (stdio) or client + server (in-process)
    cpu_ops: int = 0

    @property
    def pid(self) -> int | None:
        if self.pidfile is None or not self.pidfile.exists():
            return None
        text = self.pidfile.read_text().strip()
        return int(text) if text else None


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_s(pid: int | None) -> float:
    """User + system CPU seconds of ``pid`` (Linux /proc; 0 elsewhere)."""
    if pid is None:
        return 0.0
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


async def run_seq(target: Target, n: int) -> None:
    op = target.op
    pid = target.pid
    cpu0, own0 = process_cpu_s(pid), time.process_time()
    lat = target.latencies
    start = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        await op()
        lat.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - start
    target.seq.append(n / elapsed)
    target.own_cpu_s += time.process_time() - own0
    target.server_cpu_s += process_cpu_s(pid) - cpu0
    target.cpu_ops += n


async def run_conc(target: Target, n: int, width: int = CONCURRENCY) -> None:
    per = max(1, n // width)
    op = target.op

    async def worker() -> None:
        for _ in range(per):
            await op()

    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(width):
            nursery.start_soon(worker)
    target.conc.append(per * width / (time.perf_counter() - start))


async def measure(
    targets: list[Target], *, rounds: int, slice_s: float, warmup: int, conc: bool = True
) -> None:
    """Warm each target up, then run ``rounds`` rounds; in each, every target in turn runs a
    sequential block and a concurrent block of about ``slice_s`` seconds each.

    Blocks are sized per target from its warm-up speed, so each side spends the same wall time
    per round: this machine's speed swings by 2-3x for seconds at a time (a plain Python loop
    took 0.34-0.93 s from one run to the next), and fixed op counts gave the SDK's 4 s blocks
    and ours of 0.5 s different shares of slow periods. Short, equal, interleaved slices
    expose both sides to the same periods; the medians over rounds then compare like with like.
    """
    for target in targets:
        for _ in range(warmup // 2):
            await target.op()
        start = time.perf_counter()
        for _ in range(warmup - warmup // 2):
            await target.op()
        per_op = (time.perf_counter() - start) / max(1, warmup - warmup // 2)
        target.n_seq = max(MIN_BLOCK, round(slice_s / per_op))
        target.n_conc = max(CONCURRENCY, round(slice_s / per_op))
    for _ in range(rounds):  # interleaved: drift hits every target alike
        for target in targets:
            await run_seq(target, target.n_seq)
            if conc and target.conc_too:
                await run_conc(target, target.n_conc)


def summarize(target: Target, out: dict[str, Any]) -> None:
    out[f"{target.key}_seq_ops_s"] = round(statistics.median(target.seq)) if target.seq else None
    if target.seq:
        out[f"{target.key}_seq_block"] = target.n_seq
    if target.latencies:
        out[f"{target.key}_seq_p50_ms"] = round(statistics.median(target.latencies) * 1e3, 3)
    if target.conc:
        out[f"{target.key}_c{CONCURRENCY}_ops_s"] = round(statistics.median(target.conc))
    if target.cpu_ops and target.pidfile is not None:
        out[f"{target.key}_server_cpu_ms_per_op"] = round(
            target.server_cpu_s / target.cpu_ops * 1e3, 3
        )
        out[f"{target.key}_client_cpu_ms_per_op"] = round(
            target.own_cpu_s / target.cpu_ops * 1e3, 3
        )
    elif target.cpu_ops:
        out[f"{target.key}_cpu_ms_per_op"] = round(target.own_cpu_s / target.cpu_ops * 1e3, 3)


def show(target: Target, out: dict[str, Any]) -> None:
    seq = out.get(f"{target.key}_seq_ops_s")
    line = f"  {target.label:<58} seq {seq or 0:>6,}/s"
    p50 = out.get(f"{target.key}_seq_p50_ms")
    if p50 is not None:
        line += f" (p50 {p50:.2f} ms)"
    c = out.get(f"{target.key}_c{CONCURRENCY}_ops_s")
    if c is not None:
        line += f"   {CONCURRENCY}-concurrent {c:>6,}/s"
    if f"{target.key}_server_cpu_ms_per_op" in out:
        line += (
            f"   cpu/op: server {out[f'{target.key}_server_cpu_ms_per_op']:.2f} ms,"
            f" client {out[f'{target.key}_client_cpu_ms_per_op']:.2f} ms"
        )
    elif f"{target.key}_cpu_ms_per_op" in out:
        line += f"   cpu/op {out[f'{target.key}_cpu_ms_per_op']:.2f} ms"
    print(line, flush=True)


def ratio_sum(out: dict[str, Any], num: tuple[str, ...], den: tuple[str, ...]) -> float | None:
    """``sum(out[num]) / sum(out[den])``, or ``None`` when any figure was not measured."""
    a = [out.get(k) for k in num]
    b = [out.get(k) for k in den]
    if not all(a) or not all(b):
        return None
    return round(sum(float(x or 0) for x in a) / sum(float(x or 0) for x in b), 3)


def paired_ratio(targets: list[Target], num: str, den: str, *, conc: bool = False) -> float | None:
    """Median over rounds of ``num``'s ops/s over ``den``'s in the same round (neighbouring
    slices of one group), sequential or ``conc``; ``None`` when either was not measured."""
    by_key = {t.key: t for t in targets}
    a, b = by_key.get(num), by_key.get(den)
    if a is None or b is None:
        return None
    xs, ys = (a.conc, b.conc) if conc else (a.seq, b.seq)
    if not xs or len(xs) != len(ys):
        return None
    return round(statistics.median(x / y for x, y in zip(xs, ys, strict=True)), 3)


def ratio(out: dict[str, Any], num: str, den: str) -> float | None:
    """``out[num] / out[den]``, or ``None`` when either was not measured."""
    a, b = out.get(num), out.get(den)
    if not a or not b:
        return None
    return round(float(a) / float(b), 3)


# -- groups ---------------------------------------------------------------------------------------


def stateless_available() -> str | None:
    """``None`` when our server may speak 2026-07-28, else the reason it cannot."""
    present = [m for m in STATELESS_MODULES if (ROOT / "erlmcp_py" / "mcp" / m).exists()]
    if not present:
        return (
            "our server has no 2026-07-28 support yet (neither erlmcp_py/mcp/mrtr.py "
            "nor stateless.py exists)"
        )
    return None


async def probe(op: Callable[[], Awaitable[None]]) -> str | None:
    """Run ``op`` once; ``None`` if it worked, else why not."""
    try:
        with trio.fail_after(10):
            await op()
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return None


async def inproc_group(
    cfg: dict[str, Any], notes: dict[str, str | None], extras: bool
) -> tuple[list[Target], list[Target]]:
    """In-process targets: legacy, then 2026-07-28 (measured inside)."""
    legacy: list[Target] = []
    async with AsyncExitStack() as stack:
        sdk = await stack.enter_async_context(
            Client(build_sdk_server(), mode="legacy", elicitation_callback=sdk_answer)
        )
        ours = await stack.enter_async_context(our_memory_pair(build_our_server()))
        legacy = [
            Target(
                "sdk_inproc_legacy",
                "SDK  Client(MCPServer) in-memory [message objects]",
                sdk_client_op(sdk, "ask"),
            ),
            Target(
                "ours_inproc_legacy",
                "ours open_memory_client(Server) [JSON frames]",
                our_client_op(ours),
            ),
        ]
        if extras:
            bridged = await stack.enter_async_context(
                Client(
                    sdk_transport_to_our_session(build_our_server()),
                    mode="legacy",
                    elicitation_callback=sdk_answer,
                )
            )
            legacy.append(
                Target(
                    "ours_inproc_legacy_sdkclient",
                    "ours server <- SDK Client + JSON bridge [extra]",
                    sdk_client_op(bridged, "ask"),
                )
            )
        await measure(legacy, **cfg)

    stateless: list[Target] = []
    async with AsyncExitStack() as stack:
        sdk = await stack.enter_async_context(
            Client(build_sdk_server(), mode=V_2026_07_28, elicitation_callback=sdk_answer)
        )
        stateless.append(
            Target(
                "sdk_inproc_2026",
                "SDK  Client(MCPServer) direct dispatch, Resolve",
                sdk_client_op(sdk, "ask_resolve"),
            )
        )
        why = notes.get("stateless")
        if why is None:
            try:
                ours_stateless = await stack.enter_async_context(
                    our_memory_pair(build_our_server(), V_2026_07_28)
                )
                op = our_client_op(ours_stateless)
                why = await probe(op)
            except Exception as exc:
                why = f"{type(exc).__name__}: {str(exc)[:200]}"
            if why is None:
                stateless.append(
                    Target("ours_inproc_2026", "ours open_memory_client, ctx.elicit (MRTR)", op)
                )
                if extras:
                    bridged = await stack.enter_async_context(
                        Client(
                            sdk_transport_to_our_session(build_our_server()),
                            mode=V_2026_07_28,
                            elicitation_callback=sdk_answer,
                        )
                    )
                    stateless.append(
                        Target(
                            "ours_inproc_2026_sdkclient",
                            "ours server <- SDK Client + JSON bridge [extra]",
                            sdk_client_op(bridged, "ask"),
                        )
                    )
            else:
                notes["stateless_inproc"] = f"our in-process 2026-07-28 probe failed: {why}"
        await measure(stateless, **cfg)
    return legacy, stateless


def _sdk_stdio_transport(
    command: list[str], errlog: TextIO, cwd: Path, env: dict[str, str] | None = None
) -> Any:
    params = StdioServerParameters(
        command=command[0], args=command[1:], cwd=str(cwd), env=env or dict(os.environ)
    )
    return stdio_client(params, errlog=errlog)


@asynccontextmanager
async def our_stdio_client(
    command: list[str], cwd: Path, env: dict[str, str] | None = None, version: str = LEGACY
) -> AsyncIterator[Any]:
    """Our stdio client (``erlmcp_py.client``) declaring form mode: initialized on the
    legacy era, stateless (every call drives its own input rounds) on 2026-07-28."""
    async with open_stdio_client(
        command,
        handler=our_answer,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env=env,
        keep_history=False,
        protocol_version=version,
        capabilities={"elicitation": {"form": {}}},
    ) as client:
        if version == LEGACY:
            await client.initialize()
        yield client


async def open_concurrently(
    nursery: trio.Nursery, stop: trio.Event, factories: dict[str, Callable[[], Any]]
) -> dict[str, Any]:
    """Enter every async context manager in its own task (servers start in parallel); each is
    held open until ``stop`` is set. Returns what each one yielded."""
    opened: dict[str, Any] = {}
    all_open = trio.Event()

    async def hold(name: str, factory: Callable[[], Any]) -> None:
        async with factory() as value:
            opened[name] = value
            if len(opened) == len(factories):
                all_open.set()
            await stop.wait()

    for name, factory in factories.items():
        nursery.start_soon(hold, name, factory)
    await all_open.wait()
    return opened


async def stdio_group(
    cfg: dict[str, Any], tmp: Path, notes: dict[str, str | None], errlog: TextIO, extras: bool
) -> tuple[list[Target], list[Target], list[Target]]:
    """Subprocess targets: legacy (each side's own client), legacy with the same client on
    both sides, 2026-07-28 (each side's own client and the SDK client on ours). Servers are
    started at once (parallel imports), then measured group by group."""
    sdk_script = tmp / "sdk_server.py"
    sdk_script.write_text(SDK_SCRIPT)
    (tmp / "bench_server.py").write_text(OUR_MODULE)

    def pidfile(name: str) -> Path:
        return tmp / f"{name}.pid"

    def ours(name: str, level: str = "warning") -> tuple[list[str], dict[str, str]]:
        """Our server: the real command; the pid comes back through BENCH_PIDFILE."""
        return serve_command(level), {**os.environ, "BENCH_PIDFILE": str(pidfile(name))}

    def sdk(name: str) -> tuple[list[str], dict[str, str]]:
        return [sys.executable, str(sdk_script), str(pidfile(name))], dict(os.environ)

    def sdk_client(spec: tuple[list[str], dict[str, str]], mode: str = "legacy") -> Any:
        def factory() -> Client:
            transport = _sdk_stdio_transport(spec[0], errlog, tmp, spec[1])
            return Client(transport, mode=mode, elicitation_callback=sdk_answer)

        return factory

    def our_client(spec: tuple[list[str], dict[str, str]], version: str = LEGACY) -> Any:
        return partial(our_stdio_client, spec[0], tmp, spec[1], version)

    factories: dict[str, Callable[[], Any]] = {
        "sdk_stdio_legacy": sdk_client(sdk("sdk_stdio_legacy")),
        "ours_stdio_legacy": our_client(ours("ours_stdio_legacy")),
        "ours_stdio_legacy_sdkclient": sdk_client(ours("ours_stdio_legacy_sdkclient")),
        "sdk_stdio_2026": sdk_client(sdk("sdk_stdio_2026"), mode=V_2026_07_28),
    }
    if notes.get("stateless") is None:
        factories["ours_stdio_2026"] = our_client(ours("ours_stdio_2026"), V_2026_07_28)
        factories["ours_stdio_2026_sdkclient"] = sdk_client(
            ours("ours_stdio_2026_sdkclient"), mode=V_2026_07_28
        )
    if extras:
        factories["ours_stdio_legacy_infolog"] = our_client(
            ours("ours_stdio_legacy_infolog", "info")
        )
        factories["sdk_stdio_legacy_ourclient"] = our_client(sdk("sdk_stdio_legacy_ourclient"))
        factories["sdk_stdio_2026_ourclient"] = our_client(
            sdk("sdk_stdio_2026_ourclient"), V_2026_07_28
        )

    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        c = await open_concurrently(nursery, stop, factories)
        try:
            legacy = [
                Target(
                    "sdk_stdio_legacy",
                    "SDK  server (asyncio) <- SDK stdio client",
                    sdk_client_op(c["sdk_stdio_legacy"], "ask"),
                    pidfile("sdk_stdio_legacy"),
                ),
                Target(
                    "ours_stdio_legacy",
                    "ours `erlmcp-py serve` (trio) <- our stdio client",
                    our_client_op(c["ours_stdio_legacy"]),
                    pidfile("ours_stdio_legacy"),
                ),
            ]
            if extras:
                legacy.append(
                    Target(
                        "ours_stdio_legacy_infolog",
                        "ours serve --log-level info (-> /dev/null) <- our client [extra]",
                        our_client_op(c["ours_stdio_legacy_infolog"]),
                        pidfile("ours_stdio_legacy_infolog"),
                        conc_too=False,
                    )
                )
            await measure(legacy, **cfg)

            same: list[Target] = [
                Target(
                    "ours_stdio_legacy_sdkclient",
                    "ours `erlmcp-py serve` <- SDK stdio client (same client)",
                    sdk_client_op(c["ours_stdio_legacy_sdkclient"], "ask"),
                    pidfile("ours_stdio_legacy_sdkclient"),
                )
            ]
            if extras:
                same.append(
                    Target(
                        "sdk_stdio_legacy_ourclient",
                        "SDK  server <- our stdio client (same client) [extra]",
                        our_client_op(c["sdk_stdio_legacy_ourclient"]),
                        pidfile("sdk_stdio_legacy_ourclient"),
                    )
                )
            await measure(same, **cfg)

            stateless = [
                Target(
                    "sdk_stdio_2026",
                    "SDK  server <- SDK stdio client, Resolve (MRTR)",
                    sdk_client_op(c["sdk_stdio_2026"], "ask_resolve"),
                    pidfile("sdk_stdio_2026"),
                )
            ]
            ours_stateless = (
                (
                    "ours_stdio_2026",
                    "ours `erlmcp-py serve` <- our stdio client, ctx.elicit",
                    our_client_op,
                ),
                (
                    "ours_stdio_2026_sdkclient",
                    "ours `erlmcp-py serve` <- SDK stdio client (same client)",
                    lambda client: sdk_client_op(client, "ask"),
                ),
                (
                    "sdk_stdio_2026_ourclient",
                    "SDK  server <- our stdio client, Resolve (same client) [extra]",
                    lambda client: our_client_op(client, "ask_resolve"),
                ),
            )
            for key, label, make_op in ours_stateless:
                if key not in c:
                    continue
                op = make_op(c[key])
                why = await probe(op)
                if why is None:
                    stateless.append(Target(key, label, op, pidfile(key)))
                else:
                    notes["stateless_stdio"] = f"{key}: our stdio 2026-07-28 probe failed: {why}"
            await measure(stateless, **cfg)
        finally:
            stop.set()
    return legacy, same, stateless


# -- profile --------------------------------------------------------------------------------------

_LAYERS = (
    ("erlmcp_py/client", "in-memory pair and our clients"),
    ("erlmcp_py/mcp", "erlmcp_py.mcp (session, context, codec)"),
    ("erlmcp_py/transports", "erlmcp_py.transports"),
    ("erlmcp_py/actors", "erlmcp_py.actors (runtime)"),
    ("erlmcp_py/core", "erlmcp_py.core (pure)"),
    ("supervisors", "supervisors (actor kernel)"),
    ("site-packages/trio", "trio scheduler/channels"),
    ("site-packages/anyio", "anyio"),
    ("site-packages/mcp/", "mcp (SDK)"),
    ("site-packages/mcp_types", "mcp_types (SDK)"),
    ("site-packages/pydantic", "pydantic (py)"),
    ("pydantic_core", "pydantic-core"),
    ("site-packages/structlog", "structlog"),
    ("site-packages/opentelemetry", "opentelemetry"),
    ("benchmarks/bench_vs_sdk", "benchmark driver"),
)


def layer_of(filename: str, func: str, layers: Sequence[tuple[str, str]] = _LAYERS) -> str:
    """The layer a profiled function belongs to: the first of ``layers`` (a path fragment and
    its name) found in ``filename:func``."""
    text = f"{filename}:{func}"
    for needle, name in layers:
        if needle in text:
            return name
    if filename.startswith("~") or filename == "":
        return "builtins / C calls"
    return "stdlib / other"


async def profile(label: str, op: Callable[[], Awaitable[None]], n: int) -> None:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        await op()
    prof.disable()
    stats = pstats.Stats(prof)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in raw.values())
    by_layer: dict[str, float] = {}
    for (filename, _line, func), (_cc, _nc, tottime, _ct, _callers) in raw.items():
        name = layer_of(filename, func)
        by_layer[name] = by_layer.get(name, 0.0) + tottime
    print(f"\nprofile: {label}, {n} sequential ops (cProfile; its overhead inflates small calls)")
    print("  own time by layer:")
    for name, t in sorted(by_layer.items(), key=lambda kv: -kv[1]):
        if t / total >= 0.01:
            print(f"    {t / total:6.1%}  {t / n * 1e6:7.1f} us/op  {name}")
    print("  top functions by own time (calls per op, us per op):")
    rows = sorted(raw.items(), key=lambda kv: -kv[1][2])[:18]
    for (filename, line, func), (_cc, nc, tottime, _ct, _callers) in rows:
        short = filename.replace(str(ROOT) + "/", "").split("site-packages/")[-1]
        print(f"    {nc / n:5.1f}  {tottime / n * 1e6:6.1f}  {short}:{line}({func})")
    print("  top cumulative (our modules):")
    cum = [
        (k, v)
        for k, v in raw.items()
        if any(p in k[0] for p in ("erlmcp_py/", "supervisors/", "site-packages/mcp/"))
    ]
    for (filename, line, func), (_cc, nc, _tt, cumtime, _callers) in sorted(
        cum, key=lambda kv: -kv[1][3]
    )[:14]:
        short = filename.replace(str(ROOT) + "/", "").split("site-packages/")[-1]
        print(f"    {nc / n:5.1f}  {cumtime / n * 1e6:7.1f}  {short}:{line}({func})")


async def profile_both(n: int) -> None:
    async with our_memory_pair(build_our_server()) as ours:
        for _ in range(50):
            await our_client_op(ours)()
        await profile("ours, in-process legacy (open_memory_client)", our_client_op(ours), n)
    async with Client(build_sdk_server(), mode="legacy", elicitation_callback=sdk_answer) as sdk:
        op = sdk_client_op(sdk, "ask")
        for _ in range(50):
            await op()
        await profile("SDK, in-process legacy (Client(MCPServer))", op, n)


# -- main -----------------------------------------------------------------------------------------


async def main(quick: bool, do_profile: bool, do_stdio: bool, errlog: TextIO) -> dict[str, Any]:
    if quick:
        inproc_cfg: dict[str, Any] = {"rounds": 4, "slice_s": 0.08, "warmup": 20}
        stdio_cfg: dict[str, Any] = {"rounds": 4, "slice_s": 0.08, "warmup": 16}
    else:
        inproc_cfg = {"rounds": 20, "slice_s": 0.25, "warmup": 100}
        stdio_cfg = {"rounds": 16, "slice_s": 0.25, "warmup": 50}
    out: dict[str, Any] = {}
    notes: dict[str, str | None] = {"stateless": stateless_available()}
    load_start = os.getloadavg()
    began = time.perf_counter()

    print(
        "in-process (one tool call + one 3-field form elicitation, accepted at once):", flush=True
    )
    legacy_in, stateless_in = await inproc_group(inproc_cfg, notes, extras=not quick)
    inproc_s = time.perf_counter() - began
    for t in legacy_in:
        summarize(t, out)
        show(t, out)
    print(f"in-process, {V_2026_07_28} (MRTR):", flush=True)
    for t in stateless_in:
        summarize(t, out)
        show(t, out)

    if do_stdio:
        with tempfile.TemporaryDirectory(prefix="bench_vs_sdk-") as tmpdir:
            legacy_io, same_io, stateless_io = await stdio_group(
                stdio_cfg, Path(tmpdir), notes, errlog, extras=not quick
            )
        print("stdio subprocess, legacy (each side's own client and server):", flush=True)
        for t in legacy_io:
            summarize(t, out)
            show(t, out)
        print("stdio subprocess, legacy, the other side's client:")
        for t in same_io:
            summarize(t, out)
            show(t, out)
        print(f"stdio subprocess, {V_2026_07_28} (MRTR):")
        for t in stateless_io:
            summarize(t, out)
            show(t, out)

    c = f"c{CONCURRENCY}"
    io: tuple[list[Target], list[Target]] = (legacy_io, stateless_io) if do_stdio else ([], [])
    # Each ratio of one group's targets is the median of the per-round ratios (neighbouring
    # slices: robust when the box changes speed during the run); the ratio of the medians over
    # rounds, which such a change can skew, is kept for the two headline ratios (``*_of_medians``).
    results: dict[str, Any] = {
        "inproc_ratio": paired_ratio(legacy_in, "ours_inproc_legacy", "sdk_inproc_legacy"),
        "stdio_ratio": paired_ratio(io[0], "ours_stdio_legacy", "sdk_stdio_legacy"),
        "inproc_ratio_of_medians": ratio(
            out, "ours_inproc_legacy_seq_ops_s", "sdk_inproc_legacy_seq_ops_s"
        ),
        "stdio_ratio_of_medians": ratio(
            out, "ours_stdio_legacy_seq_ops_s", "sdk_stdio_legacy_seq_ops_s"
        ),
        f"inproc_ratio_{c}": paired_ratio(
            legacy_in, "ours_inproc_legacy", "sdk_inproc_legacy", conc=True
        ),
        f"stdio_ratio_{c}": paired_ratio(io[0], "ours_stdio_legacy", "sdk_stdio_legacy", conc=True),
        "inproc_ratio_sdk_client": paired_ratio(
            legacy_in, "ours_inproc_legacy_sdkclient", "sdk_inproc_legacy"
        ),
        # Targets of different groups (other rounds): the ratio of the medians.
        "stdio_ratio_sdk_client": ratio(
            out, "ours_stdio_legacy_sdkclient_seq_ops_s", "sdk_stdio_legacy_seq_ops_s"
        ),
        "stdio_ratio_our_client": ratio(
            out, "ours_stdio_legacy_seq_ops_s", "sdk_stdio_legacy_ourclient_seq_ops_s"
        ),
        "stdio_infolog_cost": paired_ratio(io[0], "ours_stdio_legacy_infolog", "ours_stdio_legacy"),
        "inproc_ratio_2026": paired_ratio(stateless_in, "ours_inproc_2026", "sdk_inproc_2026"),
        "stdio_ratio_2026": paired_ratio(io[1], "ours_stdio_2026", "sdk_stdio_2026"),
        f"inproc_ratio_2026_{c}": paired_ratio(
            stateless_in, "ours_inproc_2026", "sdk_inproc_2026", conc=True
        ),
        f"stdio_ratio_2026_{c}": paired_ratio(
            io[1], "ours_stdio_2026", "sdk_stdio_2026", conc=True
        ),
        "stdio_ratio_2026_sdk_client": paired_ratio(
            io[1], "ours_stdio_2026_sdkclient", "sdk_stdio_2026"
        ),
        "stdio_ratio_2026_our_client": paired_ratio(
            io[1], "ours_stdio_2026", "sdk_stdio_2026_ourclient"
        ),
    }
    # CPU per op is far less sensitive to machine load than wall-clock ops/s (SDK / ours).
    results["inproc_cpu_ratio"] = ratio(
        out, "sdk_inproc_legacy_cpu_ms_per_op", "ours_inproc_legacy_cpu_ms_per_op"
    )
    results["stdio_server_cpu_ratio"] = ratio(
        out, "sdk_stdio_legacy_server_cpu_ms_per_op", "ours_stdio_legacy_server_cpu_ms_per_op"
    )
    results["stdio_cpu_ratio"] = ratio_sum(
        out,
        ("sdk_stdio_legacy_server_cpu_ms_per_op", "sdk_stdio_legacy_client_cpu_ms_per_op"),
        ("ours_stdio_legacy_server_cpu_ms_per_op", "ours_stdio_legacy_client_cpu_ms_per_op"),
    )
    results["stdio_server_cpu_ratio_2026"] = ratio(
        out, "sdk_stdio_2026_server_cpu_ms_per_op", "ours_stdio_2026_server_cpu_ms_per_op"
    )
    results["stdio_cpu_ratio_2026"] = ratio_sum(
        out,
        ("sdk_stdio_2026_server_cpu_ms_per_op", "sdk_stdio_2026_client_cpu_ms_per_op"),
        ("ours_stdio_2026_server_cpu_ms_per_op", "ours_stdio_2026_client_cpu_ms_per_op"),
    )
    # Both clients driving our server: the clients' own CPU per op, SDK / ours.
    results["stdio_client_cpu_ratio_2026"] = ratio(
        out,
        "ours_stdio_2026_sdkclient_client_cpu_ms_per_op",
        "ours_stdio_2026_client_cpu_ms_per_op",
    )
    sdk_server = out.get("sdk_stdio_legacy_server_cpu_ms_per_op")
    sdk_client = out.get("sdk_stdio_legacy_client_cpu_ms_per_op")
    # Sequential stdio is CPU-bound in series: with the SDK client's own cost per op fixed, even
    # a server costing nothing could not beat the SDK server by more than this.
    results["stdio_ratio_ceiling_sdk_client"] = (
        round((sdk_server + sdk_client) / sdk_client, 2) if sdk_server and sdk_client else None
    )
    for key in ALL_TARGETS:  # a stable key set: what was not measured is null
        out.setdefault(f"{key}_seq_ops_s", None)
        if key != "ours_stdio_legacy_infolog":
            out.setdefault(f"{key}_{c}_ops_s", None)
    results["stdio_goal"] = STDIO_GOAL
    ir, sr = results["inproc_ratio"], results["stdio_ratio"]
    results["stdio_goal_met"] = sr is not None and sr >= STDIO_GOAL if do_stdio else None
    stateless_note = (
        notes.get("stateless") or notes.get("stateless_inproc") or notes.get("stateless_stdio")
    )
    results["stateless_note"] = stateless_note
    results.update(out)
    results.update(
        {
            "concurrency": CONCURRENCY,
            "slice_s": inproc_cfg["slice_s"],
            "rounds": inproc_cfg["rounds"],
            "stdio_rounds": stdio_cfg["rounds"] if do_stdio else None,
            "quick": quick,
            "extras_measured": not quick,
            "sdk_version": dist_version("mcp"),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_avg_start": [round(x, 2) for x in load_start],
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
            "inproc_elapsed_s": round(inproc_s, 1),
            "elapsed_s": round(time.perf_counter() - began, 1),
        }
    )

    print()
    print(f"inproc_ratio (ours / SDK, sequential, legacy) = {ir}  (reported, no goal)")
    if do_stdio:
        print(
            f"stdio_ratio  (ours / SDK, sequential, legacy) = {sr}  (goal >= {STDIO_GOAL:g}: "
            f"{'met' if results['stdio_goal_met'] else 'MISSED'})"
        )
    print(
        f"ratio of the medians over rounds (skewed if the box changes speed mid-run): "
        f"in-process {results['inproc_ratio_of_medians']}, "
        f"stdio {results['stdio_ratio_of_medians']}"
    )
    print(
        f"{CONCURRENCY}-concurrent ratios: in-process {results[f'inproc_ratio_{c}']}, "
        f"stdio {results[f'stdio_ratio_{c}']}"
    )
    print(
        f"same client on both sides: SDK client in-process {results['inproc_ratio_sdk_client']},"
        f" SDK client over stdio {results['stdio_ratio_sdk_client']} (ceiling for any server: "
        f"{results['stdio_ratio_ceiling_sdk_client']}), our client over stdio "
        f"{results['stdio_ratio_our_client']}"
    )
    print(
        f"CPU per op, SDK / ours (load-robust): in-process {results['inproc_cpu_ratio']}, "
        f"stdio client + server {results['stdio_cpu_ratio']}, stdio server alone "
        f"{results['stdio_server_cpu_ratio']}"
    )
    print(
        f"{V_2026_07_28} ratios (sequential): in-process {results['inproc_ratio_2026']}, "
        f"stdio (each side's own client) {results['stdio_ratio_2026']}, "
        f"stdio (the SDK client on both) {results['stdio_ratio_2026_sdk_client']}, "
        f"stdio (our client on both) {results['stdio_ratio_2026_our_client']}"
    )
    print(
        f"{V_2026_07_28} stdio CPU per op, SDK / ours: client + server "
        f"{results['stdio_cpu_ratio_2026']}, server alone "
        f"{results['stdio_server_cpu_ratio_2026']}; client alone on our server (SDK client "
        f"{out.get('ours_stdio_2026_sdkclient_client_cpu_ms_per_op')} ms, ours "
        f"{out.get('ours_stdio_2026_client_cpu_ms_per_op')} ms) "
        f"{results['stdio_client_cpu_ratio_2026']}"
    )
    if stateless_note:
        print(f"{V_2026_07_28}: ours = null ({stateless_note})")
    print(
        f"load average {results['load_avg_start']} -> {results['load_avg_end']} "
        f"on {results['cpus']} CPUs"
    )
    if do_profile:
        await profile_both(500 if quick else 2000)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small n, finishes in < 60 s")
    parser.add_argument("--profile", action="store_true", help="cProfile both in-process sides")
    parser.add_argument("--no-stdio", action="store_true", help="skip the subprocess part")
    args = parser.parse_args()
    quiet_logs()  # the runtime logs at info; the in-process part of our side runs at warning
    with open(
        os.devnull, "w"
    ) as devnull:  # the servers' stderr (the SDK's stdio_client wants a file)
        result = trio.run(main, args.quick, args.profile, not args.no_stdio, devnull)
    print(json.dumps(result))
