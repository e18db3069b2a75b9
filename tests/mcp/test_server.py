"""``Server``: its runtime policy given as a ``RuntimeConfig`` or as a mapping of its fields."""

from __future__ import annotations

import pydantic
import pytest

from erlmcp_py import RuntimeConfig, Server


def test_runtime_config_accepts_a_mapping_as_open_runtime_does() -> None:
    server = Server("s", "1", runtime_config={"rate": 3, "url_dev": True})
    assert isinstance(server.runtime_config, RuntimeConfig)
    assert server.runtime_config.rate == 3
    assert server.url_policy.allow_http_loopback_dev is True


def test_runtime_config_defaults_and_objects_are_kept() -> None:
    config = RuntimeConfig.model_validate({"rate": 7})
    assert Server("s", "1", runtime_config=config).runtime_config is config
    assert Server("s", "1").runtime_config == RuntimeConfig.model_validate({})


def test_a_bad_runtime_config_mapping_names_the_field() -> None:
    with pytest.raises(pydantic.ValidationError, match="rate"):
        Server("s", "1", runtime_config={"rate": "many"})
