"""What ``serve_http`` and ``serve_stdio`` let out of their nurseries as itself: a Ctrl-C, or a
lone ``OSError``; several errors stay a group."""

from __future__ import annotations

import pytest

from erlmcp_py.transports._plain_errors import cannot_listen, plain_errors


def test_nested_groups_of_keyboard_interrupts_are_one_keyboard_interrupt() -> None:
    inner = BaseExceptionGroup("inner", [KeyboardInterrupt()])
    with pytest.raises(KeyboardInterrupt) as info, plain_errors():
        raise BaseExceptionGroup("outer", [inner, KeyboardInterrupt()])
    assert type(info.value) is KeyboardInterrupt
    assert info.value.__suppress_context__


def test_a_lone_oserror_is_raised_as_itself() -> None:
    error = OSError(98, "cannot listen on 127.0.0.1:8000: address already in use")
    with pytest.raises(OSError) as info, plain_errors():
        raise ExceptionGroup("outer", [ExceptionGroup("inner", [error])])
    assert info.value is error


@pytest.mark.parametrize(
    "leaves",
    [
        [KeyboardInterrupt(), ValueError("a bug")],
        [OSError(98, "one"), OSError(98, "two")],
        [ValueError("a bug")],
    ],
)
def test_anything_else_keeps_its_group(leaves: list[BaseException]) -> None:
    with pytest.raises(BaseExceptionGroup) as info, plain_errors():
        raise BaseExceptionGroup("several", leaves)
    assert list(info.value.exceptions) == leaves


@pytest.mark.parametrize(
    ("host", "where"),
    [("127.0.0.1", "127.0.0.1:8000"), ("::1", "[::1]:8000"), ("[::1]", "[::1]:8000")],
)
def test_a_listener_error_names_the_address(host: str, where: str) -> None:
    error = cannot_listen(OSError(98, "Address already in use"), host, 8000)
    assert (error.errno, error.strerror) == (
        98,
        f"cannot listen on {where}: address already in use",
    )
