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
