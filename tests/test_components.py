from pathlib import Path

import pytest

from tests import components


def test_a_missing_component_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="Debian package"):
        components.require("no-such-executable-here")


def test_a_missing_component_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no-such-executable-here is not installed"):
        components.require("no-such-executable-here")


def test_a_present_component_gives_its_path() -> None:
    assert components.require("python3").endswith("python3")


def test_a_daemon_off_the_path_is_found_in_sbin(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    daemon = tmp_path / "some-daemon"
    daemon.write_text("#!/bin/sh\n")
    daemon.chmod(0o755)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(components, "SBIN", str(tmp_path))
    assert components.require("some-daemon") == str(daemon)


def test_axe_core_is_found_where_its_install_script_says(tmp_path: Path) -> None:
    script = tmp_path / "axe.sh"
    target = tmp_path / "axe.min.js"
    target.write_text("/* axe */")
    script.write_text(f'[ "$1" = --check ] && echo "{target}"\n')
    assert components.require_axe_core(script) == str(target)


@pytest.mark.parametrize(
    ("ci", "outcome"), [(None, pytest.skip.Exception), ("true", pytest.fail.Exception)]
)
def test_a_missing_axe_core_skips_outside_ci_and_fails_under_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ci: str | None, outcome: type[BaseException]
) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    script = tmp_path / "axe.sh"
    script.write_text("exit 1\n")
    with pytest.raises(outcome, match="axe-core is not installed"):
        components.require_axe_core(script)
