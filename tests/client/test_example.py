"""The client's example, as the README and ``erlmcp_py.client``'s docstring show it, run as a
user would run it: a script of its own, with ``erlmcp-py`` on the ``PATH``."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import erlmcp_py.client

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def readme_example() -> str:
    match = re.search(
        r"^### Calling an MCP server from trio\n.*?^```python\n(.*?)^```", README, re.M | re.S
    )
    assert match is not None, "README.md has no client example"
    return match.group(1)


def docstring_example() -> str:
    doc = inspect.getdoc(erlmcp_py.client)
    assert doc is not None
    block = doc.split("::\n\n", 1)[1].split("\n\n``", 1)[0]
    return "\n".join(line.removeprefix("    ") for line in block.splitlines()) + "\n"


def test_the_readme_and_the_docstring_show_the_same_example() -> None:
    assert docstring_example() == readme_example()


def test_the_example_runs_as_written(tmp_path: Path) -> None:
    script = tmp_path / "call.py"
    script.write_text(readme_example())
    bin_dir = str(Path(sys.executable).parent)  # where `erlmcp-py` is installed
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'erlmcp-py-example\nname: action=accept, content="Ada"\n'
