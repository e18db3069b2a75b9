"""ElicitationActor._new_id encodes like ``secrets.token_urlsafe(16)`` (its binascii shortcut
must give exactly ``base64.urlsafe_b64encode(...).rstrip(b"=")``)."""

from __future__ import annotations

import base64

from hypothesis import given, settings, strategies as st

from erlmcp_py.actors.elicitation import ElicitationActor


@settings(max_examples=300)
@given(st.binary(min_size=16 * 3, max_size=16 * 3))
def test_new_id_is_the_url_safe_base64_of_the_next_16_pool_bytes(pool: bytes) -> None:
    actor = ElicitationActor.__new__(ElicitationActor)  # _new_id needs only its id pool
    actor._id_pool = pool
    actor._id_pos = 0
    for start in (0, 16, 32):
        expected = base64.urlsafe_b64encode(pool[start : start + 16]).rstrip(b"=").decode()
        assert actor._new_id() == expected


def test_new_id_refills_its_pool_and_ids_differ() -> None:
    actor = ElicitationActor.__new__(ElicitationActor)
    actor._id_pool = b""
    actor._id_pos = 0
    ids = {actor._new_id() for _ in range(600)}  # crosses two refills of 256 ids
    assert len(ids) == 600
    assert all(len(i) == 22 and "=" not in i for i in ids)
    assert all(
        set(i) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for i in ids
    )
