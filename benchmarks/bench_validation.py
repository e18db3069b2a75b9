"""Validation and schema-rendering costs, against the official MCP SDK in the same run.

Measures, on one 8-field form (the same pydantic model for both sides):

* ``p50_us`` / ``p99_us``: one strict ``validate_answer`` of a full answer (cache hit included);
* ``cached_lookup_us``: ``compile_validator`` on a frozen schema that is already cached
  (``cached_lookup_plain_dict_us``: the same with a plain dict, which is re-encoded to find
  its digest);
* ``uncached_compile_ms``: compiling the validator from scratch (subset check, freeze,
  digest, per-field jsonschema validators);
* ``render_type_us``: our ``schema_for(Model)`` (cached after the first call);
  ``render_type_first_ms``: its first, uncached render of a fresh class;
* ``sdk_render_us``: ``mcp.server.elicitation.render_elicitation_schema(Model)`` from
  ``mcp==2.3.0`` (the schema the SDK's ``ctx.elicit`` renders on every call);
  ``sdk_validate_us``: the SDK's answer check, ``Model.model_validate`` (lax pydantic).

Human-readable lines first; the last line is one JSON object. ``--quick`` stays under 30 s.
Install the peer with ``pip install -e '.[bench]'`` (or ``pip install mcp==2.3.0``); without it
the SDK figures are ``null``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import BaseModel, Field

from erlmcp_py.core.schema import freeze, thaw
from erlmcp_py.core.typeschema import schema_for
from erlmcp_py.core.validation import (
    CompiledValidator,
    ValidatorCache,
    compile_validator,
    validate_answer,
)


def make_model() -> type[BaseModel]:
    """A fresh 8-field model class (fresh so that a first render is really uncached)."""

    class Signup(BaseModel):
        name: str = Field(min_length=1, max_length=100, description="Your full name")
        email: str = Field(description="Where we write to you")
        age: int = Field(ge=0, le=150)
        score: float = Field(default=0.0, ge=0)
        subscribe: bool = False
        color: Literal["red", "green", "blue"] = "red"
        topics: list[Literal["news", "offers", "events"]] = Field(
            default_factory=list, max_length=3
        )
        birthday: date | None = None

    return Signup


ANSWER: dict[str, Any] = {
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "age": 36,
    "score": 98.5,
    "subscribe": True,
    "color": "green",
    "topics": ["news", "events"],
    "birthday": "1815-12-10",
}


def per_call_ns(fn: Callable[[], object], n: int) -> list[int]:
    """Time ``n`` calls one by one (perf_counter_ns around each)."""
    out = []
    clock = time.perf_counter_ns
    for _ in range(n):
        t0 = clock()
        fn()
        out.append(clock() - t0)
    return out


def mean_us(fn: Callable[[], object], n: int, repeats: int = 5) -> float:
    """Best-of-``repeats`` mean time per call of a tight loop of ``n`` calls, in µs."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


def pct(samples: list[int], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations (< 30 s)")
    args = parser.parse_args()
    scale = 1 if args.quick else 5

    model = make_model()
    form = schema_for(model)
    schema = form.schema  # frozen
    plain = thaw(schema)
    assert validate_answer(schema, ANSWER).ok
    print(f"# bench_validation  python {platform.python_version()}  cpus {os.cpu_count()}")
    print(f"form: {len(schema['properties'])} fields: {', '.join(schema['properties'])}")

    # 1. validate one answer (cache hit on the frozen schema included)
    n = 20_000 * scale
    per_call_ns(lambda: validate_answer(schema, ANSWER), 2_000)
    samples = per_call_ns(lambda: validate_answer(schema, ANSWER), n)
    p50, p99 = pct(samples, 0.50), pct(samples, 0.99)
    print(f"validate_answer, 8 fields: p50 {p50:.1f} µs  p99 {p99:.1f} µs  ({n} calls)")

    bad = dict(ANSWER, age="36", subscribe="yes", color="purple", extra=1)
    bad_samples = per_call_ns(lambda: validate_answer(schema, bad), n // 4)
    print(
        f"validate_answer, 4 errors: p50 {pct(bad_samples, 0.5):.1f} µs  "
        f"p99 {pct(bad_samples, 0.99):.1f} µs"
    )

    # 2. cache lookups
    compile_validator(schema)
    cached = mean_us(lambda: compile_validator(schema), 50_000 * scale)
    cached_plain = mean_us(lambda: compile_validator(plain), 5_000 * scale)
    print(f"compile_validator cache hit: frozen {cached:.2f} µs, plain dict {cached_plain:.2f} µs")

    # 3. uncached compile (fresh cache each time, from a plain dict as a caller would pass)
    compile_samples = []
    for _ in range(200 * scale):
        cache = ValidatorCache(maxsize=1)
        fresh = thaw(schema)
        t0 = time.perf_counter_ns()
        cache.get(fresh)
        compile_samples.append(time.perf_counter_ns() - t0)
    uncached_ms = statistics.median(compile_samples) / 1e6
    print(
        f"uncached compile: median {uncached_ms:.3f} ms  "
        f"p99 {pct(compile_samples, 0.99) / 1000:.3f} ms"
    )
    assert isinstance(CompiledValidator(plain), CompiledValidator)

    # 4. rendering a type
    render = mean_us(lambda: schema_for(model), 200_000 * scale)
    firsts = []
    for _ in range(20 * scale):
        fresh_model = make_model()
        t0 = time.perf_counter_ns()
        schema_for(fresh_model)
        firsts.append(time.perf_counter_ns() - t0)
    first_ms = statistics.median(firsts) / 1e6
    print(f"schema_for(Model): cached {render:.3f} µs, first render {first_ms:.2f} ms")

    sdk_render: float | None = None
    sdk_validate: float | None = None
    sdk_version: str | None = None
    try:
        from importlib.metadata import version

        import mcp  # noqa: F401
        from mcp.server.elicitation import render_elicitation_schema
    except ImportError:
        print("mcp SDK not installed: `pip install -e '.[bench]'` for the peer figures")
    else:
        sdk_version = version("mcp")
        rendered = render_elicitation_schema(model)
        assert set(rendered["properties"]) == set(schema["properties"])
        sdk_render = mean_us(lambda: render_elicitation_schema(model), 2_000 * scale)
        sdk_validate = mean_us(lambda: model.model_validate(ANSWER), 20_000 * scale)
        print(
            f"mcp {sdk_version} render_elicitation_schema(Model): {sdk_render:.1f} µs per call "
            f"(re-rendered on every ctx.elicit) = {sdk_render / render:,.0f}x ours"
        )
        print(
            f"mcp {sdk_version} answer check, Model.model_validate (lax): {sdk_validate:.1f} µs "
            f"vs our strict validate p50 {p50:.1f} µs"
        )

    goals = {"p99_us": 100.0, "cached_lookup_us": 5.0, "uncached_compile_ms": 2.0}
    figures = {"p99_us": p99, "cached_lookup_us": cached, "uncached_compile_ms": uncached_ms}
    for key, goal in goals.items():
        verdict = "ok" if figures[key] <= goal else "MISSED"
        print(f"goal {key} <= {goal}: {figures[key]:.3f} -> {verdict}")

    gc.collect()
    result: dict[str, Any] = {
        "p50_us": round(p50, 2),
        "p99_us": round(p99, 2),
        "cached_lookup_us": round(cached, 3),
        "cached_lookup_plain_dict_us": round(cached_plain, 3),
        "uncached_compile_ms": round(uncached_ms, 4),
        "render_type_us": round(render, 4),
        "render_type_first_ms": round(first_ms, 3),
        "sdk_render_us": None if sdk_render is None else round(sdk_render, 2),
        "sdk_validate_us": None if sdk_validate is None else round(sdk_validate, 2),
        "sdk_render_over_render_type": None if sdk_render is None else round(sdk_render / render),
        "sdk_render_over_first_render": (
            None if sdk_render is None else round(sdk_render / (first_ms * 1000), 3)
        ),
        "sdk_validate_over_p50": None if sdk_validate is None else round(sdk_validate / p50, 3),
        "sdk_version": sdk_version,
        "quick": args.quick,
    }
    assert freeze(schema) is schema
    print(json.dumps(result))


if __name__ == "__main__":
    main()
