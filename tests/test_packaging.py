"""The built wheel is what an application installs: it is typed (PEP 561), so a type checker on
an application reads the library's annotations instead of skipping it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

APPLICATION = textwrap.dedent(
    """
    from erlmcp_py import Accepted, Context, Server

    server = Server("orders", "1.0.0")


    @server.tool()
    async def ship(ctx: Context, order_id: str) -> str:
        outcome = await ctx.elicit("Where to?", str)
        if isinstance(outcome, Accepted):
            return f"shipping to {outcome.content}"
        return "not shipped"


    wrong = Server(name=1, version="1.0.0")
    """
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built from a copy of the sources: a build in the checkout would reuse its build/ folder.
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("erlmcp_py", "supervisors"):
        shutil.copytree(
            ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)],
        check=True,
        timeout=300,
    )
    (built,) = out.glob("erlmcp_py-*.whl")
    return built


def test_the_wheel_carries_the_typed_markers(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "erlmcp_py/py.typed" in names
    assert "supervisors/py.typed" in names


def test_a_type_checker_reads_the_installed_library(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), wheel],
        check=True,
        timeout=300,
    )
    app = tmp_path / "app" / "orders.py"
    app.parent.mkdir()
    app.write_text(APPLICATION)
    # The installed copy only: the run starts in the application's folder, and the target
    # folder is searched as site-packages are (a typed package there is analysed).
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--strict", "orders.py"],
        capture_output=True,
        text=True,
        cwd=app.parent,
        env={"PATH": "/usr/bin:/bin", "MYPYPATH": "", "PYTHONPATH": str(site)},
        timeout=300,
        check=False,
    )
    out = checked.stdout + checked.stderr
    assert "missing library stubs or py.typed marker" not in out, out
    # The library's annotations are read: a wrong argument type is caught, and nothing else.
    assert 'Argument "name" to "Server" has incompatible type "int"' in out, out
    assert "Found 1 error in 1 file" in out, out


def test_make_demo_installs_the_runtime_without_the_test_tools(tmp_path: Path) -> None:
    # A dry run in a fresh folder (no .venv yet): what `make demo` would install.
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "pyproject.toml").touch()
    planned = subprocess.run(
        ["make", "-n", "demo"], capture_output=True, text=True, cwd=tmp_path, check=True
    ).stdout
    assert "pip install -q -e .\n" in planned
    assert "[test]" not in planned
