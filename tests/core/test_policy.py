"""Policy defaults and construction-time validation."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from erlmcp_py.core.policy import (
    KiB,
    LifecyclePolicy,
    MiB,
    Policy,
    RatePolicy,
    RetentionPolicy,
    SizePolicy,
    TaskPolicy,
    check_timeout,
)


def test_defaults_match_design() -> None:
    p = Policy()
    assert p.lifecycle == LifecyclePolicy(
        form_deadline_s=300.0,
        url_deadline_s=600.0,
        warn_before_s=60.0,
        max_extensions=2,
        extension_s=300.0,
        max_reprompts=3,
    )
    assert p.rate.rate == 10
    assert p.rate.window_s == 60.0
    assert p.rate.capacity == 10
    assert p.rate.max_pending_per_client == 100
    assert p.rate.max_pending_global is None
    assert p.sizes == SizePolicy(
        answer_bytes=1 * MiB, schema_bytes=64 * KiB, message_bytes=16 * KiB, frame_bytes=4 * MiB
    )
    assert p.sizes.answer_bytes == 1_048_576
    assert p.retention == RetentionPolicy(max_records=10_000, max_age_s=900.0)


def test_task_defaults_are_hours_and_a_task_outlives_its_questions() -> None:
    p = Policy()
    assert p.task_lifecycle == LifecyclePolicy(
        form_deadline_s=4 * 3600.0,
        url_deadline_s=8 * 3600.0,
        warn_before_s=900.0,
        max_extensions=2,
        extension_s=300.0,
        max_reprompts=3,
    )
    assert p.tasks == TaskPolicy(
        ttl_s=24 * 3600.0, poll_interval_s=2.0, max_per_client=100, max_total=10_000
    )
    assert p.lifecycle_for(task=True) is p.task_lifecycle
    assert p.lifecycle_for(task=False) is p.lifecycle
    with pytest.raises(ValueError, match="longest deadline of a task's question"):
        Policy(tasks=TaskPolicy(ttl_s=3600.0))
    short = LifecyclePolicy(form_deadline_s=60.0, url_deadline_s=60.0, warn_before_s=10.0)
    assert Policy(task_lifecycle=short, tasks=TaskPolicy(ttl_s=60.0)).tasks.ttl_s == 60.0


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("ttl_s", 0.0, ValueError),
        ("ttl_s", math.inf, ValueError),
        ("poll_interval_s", -1.0, ValueError),
        ("poll_interval_s", 0.0001, ValueError),  # below a whole millisecond on the wire
        ("max_per_client", 0, ValueError),
        ("max_total", 1.5, TypeError),
        ("ttl_s", True, TypeError),
    ],
)
def test_a_task_policy_refuses_bad_values(field: str, value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match=field):
        TaskPolicy(**{field: value})


def test_deadline_for_mode() -> None:
    p = LifecyclePolicy()
    assert p.deadline_for("form") == 300.0
    assert p.deadline_for("url") == 600.0
    with pytest.raises(ValueError, match="unknown elicitation mode"):
        p.deadline_for("inline")  # type: ignore[arg-type]


def test_a_question_deadline_is_clamped_to_the_policy_deadline_of_its_mode() -> None:
    p = LifecyclePolicy()
    assert p.deadline_for("form", 2.0) == 2.0
    assert p.deadline_for("form", 10_000) == 300.0
    assert p.deadline_for("url", 450) == 450.0
    assert p.deadline_for("url", 601.5) == 600.0


def test_the_warning_keeps_the_policy_proportion_of_a_shorter_deadline() -> None:
    p = LifecyclePolicy()  # form: 60 s before 300 s; url: 60 s before 600 s
    assert p.warn_before_for("form", 300.0) == 60.0
    assert p.warn_before_for("form", 2.0) == pytest.approx(0.4)
    assert p.warn_before_for("form", 120.0) == pytest.approx(24.0)
    assert p.warn_before_for("url", 300.0) == pytest.approx(30.0)
    assert LifecyclePolicy(warn_before_s=0).warn_before_for("form", 2.0) == 0


@pytest.mark.parametrize("bad", [0, -1, -0.5, math.nan, math.inf, -math.inf])
def test_a_question_deadline_must_be_positive_and_finite(bad: float) -> None:
    with pytest.raises(ValueError, match=r"timeout must be a positive, finite number of seconds"):
        check_timeout("timeout", bad)


@pytest.mark.parametrize("bad", [True, "30", None, [30]])
def test_a_question_deadline_must_be_a_number(bad: object) -> None:
    with pytest.raises(TypeError, match=r"timeout must be a number of seconds"):
        check_timeout("timeout", bad)


def test_a_checked_question_deadline_is_float_seconds() -> None:
    assert check_timeout("timeout", 2) == 2.0
    assert type(check_timeout("timeout", 2)) is float


@pytest.mark.parametrize("cls", [LifecyclePolicy, RatePolicy, SizePolicy, RetentionPolicy, Policy])
def test_policies_are_frozen_and_slotted(cls: type[Any]) -> None:
    obj = cls()
    assert hasattr(cls, "__slots__")
    assert not hasattr(obj, "__dict__")
    field = dataclasses.fields(obj)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, field, getattr(obj, field))


BAD_SECONDS = [0, -1, -0.5, math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("value", BAD_SECONDS)
@pytest.mark.parametrize(
    ("cls", "name"),
    [
        (LifecyclePolicy, "form_deadline_s"),
        (LifecyclePolicy, "url_deadline_s"),
        (LifecyclePolicy, "extension_s"),
        (RatePolicy, "window_s"),
        (RetentionPolicy, "max_age_s"),
    ],
)
def test_durations_must_be_positive_and_finite(cls: type[Any], name: str, value: float) -> None:
    with pytest.raises(ValueError, match=name):
        cls(**{name: value})


@pytest.mark.parametrize("value", [-1, -60.0, math.nan, math.inf])
def test_warn_before_rejects_bad_values(value: float) -> None:
    with pytest.raises(ValueError, match="warn_before_s"):
        LifecyclePolicy(warn_before_s=value)


def test_warn_before_zero_disables_and_must_fit_in_deadlines() -> None:
    assert LifecyclePolicy(warn_before_s=0).warn_before_s == 0
    with pytest.raises(ValueError, match="shorter than every initial deadline"):
        LifecyclePolicy(warn_before_s=300.0)
    with pytest.raises(ValueError, match="shorter than every initial deadline"):
        LifecyclePolicy(form_deadline_s=30.0, warn_before_s=60.0)


@pytest.mark.parametrize(
    ("cls", "name"),
    [
        (RatePolicy, "rate"),
        (RatePolicy, "capacity"),
        (RatePolicy, "max_pending_per_client"),
        (RatePolicy, "max_pending_global"),
        (RatePolicy, "prune_every"),
        (SizePolicy, "answer_bytes"),
        (SizePolicy, "schema_bytes"),
        (SizePolicy, "message_bytes"),
        (SizePolicy, "frame_bytes"),
        (RetentionPolicy, "max_records"),
    ],
)
@pytest.mark.parametrize("value", [0, -1])
def test_counts_must_be_positive(cls: type[Any], name: str, value: int) -> None:
    with pytest.raises(ValueError, match=name):
        cls(**{name: value})


@pytest.mark.parametrize("name", ["max_extensions", "max_reprompts"])
def test_zero_extensions_and_reprompts_are_allowed_negative_is_not(name: str) -> None:
    assert getattr(LifecyclePolicy(**{name: 0}), name) == 0
    with pytest.raises(ValueError, match=name):
        LifecyclePolicy(**{name: -1})


@pytest.mark.parametrize("value", [True, 1.5, "10", None])
def test_counts_must_be_ints(value: object) -> None:
    with pytest.raises(TypeError, match="rate"):
        RatePolicy(rate=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [True, "60", None])
def test_durations_must_be_numbers(value: object) -> None:
    with pytest.raises(TypeError, match="window_s"):
        RatePolicy(window_s=value)  # type: ignore[arg-type]


def test_window_must_be_at_least_one_nanosecond() -> None:
    with pytest.raises(ValueError, match="1 ns"):
        RatePolicy(window_s=1e-12)


def test_sizes_must_fit_in_a_frame() -> None:
    with pytest.raises(ValueError, match="must not exceed frame_bytes"):
        SizePolicy(answer_bytes=5 * MiB)
    assert SizePolicy(answer_bytes=4 * MiB).answer_bytes == 4 * MiB


def test_policy_rejects_wrong_sub_policy_types() -> None:
    with pytest.raises(TypeError, match=r"Policy\.rate must be a RatePolicy"):
        Policy(rate=LifecyclePolicy())  # type: ignore[arg-type]


def test_error_messages_name_the_value() -> None:
    with pytest.raises(ValueError, match=r"LifecyclePolicy\.extension_s must be > 0, got -5"):
        LifecyclePolicy(extension_s=-5)
    with pytest.raises(ValueError, match=r"must be finite, got nan"):
        RetentionPolicy(max_age_s=math.nan)
