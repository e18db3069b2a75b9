"""The README's "Testing a server" example, run as a user would run it: its server
(``orders.py``, from "Writing a server"), its test file and its pytest configuration are taken
from README.md as written, put in a directory of their own, and run by pytest in a subprocess.
Without the configuration, pytest fails the async tests, as the README says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    """The README's ``### title`` section, up to the next heading."""
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^##)", README, re.M | re.S)
    assert match is not None, f"README.md has no section {title!r}"
    return match.group(1)


def blocks(text: str, language: str) -> list[str]:
    """The fenced ``language`` code blocks of ``text``."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.M | re.S)


def pytest_in(directory: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_readme_testing_example_passes_as_written(tmp_path: Path) -> None:
    testing = section("Testing a server")
    (config,) = blocks(testing, "toml")
    (tests,) = blocks(testing, "python")
    (tmp_path / "orders.py").write_text(blocks(section("Writing a server"), "python")[0])
    (tmp_path / "test_orders.py").write_text(tests)
    (tmp_path / "pyproject.toml").write_text(config)
    done = pytest_in(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_without_trio_mode_pytest_fails_the_async_tests_as_the_readme_says(
    tmp_path: Path,
) -> None:
    testing = section("Testing a server")
    assert "trio_mode = true" in blocks(testing, "toml")[0]
    (tmp_path / "orders.py").write_text(blocks(section("Writing a server"), "python")[0])
    (tmp_path / "test_orders.py").write_text(blocks(testing, "python")[0])
    failed = pytest_in(tmp_path)  # no configuration
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "2 failed" in failed.stdout
    said = "async def functions are not natively supported"
    assert said in failed.stdout
    assert said in " ".join(testing.split())
