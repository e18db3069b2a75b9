"""Elicitation ids: ``_encode_ids`` encodes a whole pool at once, and each id must be exactly
``base64.urlsafe_b64encode(its 16 bytes).rstrip(b"=")`` (what ``secrets.token_urlsafe(16)``
gives), whatever the bytes."""

from __future__ import annotations

import base64

from hypothesis import given, settings, strategies as st

from erlmcp_py.actors.elicitation import ElicitationActor, _encode_ids


def _plain(chunk: bytes) -> str:
    return base64.urlsafe_b64encode(chunk).rstrip(b"=").decode()


@settings(max_examples=500)
@given(st.integers(1, 20).flatmap(lambda n: st.binary(min_size=16 * n, max_size=16 * n)))
def test_each_slot_starts_with_the_plain_encoding_of_its_16_bytes(raw: bytes) -> None:
    text = _encode_ids(raw)
    n = len(raw) // 16
    assert len(text) == 24 * n
    for i in range(n):
        assert text[24 * i : 24 * i + 22] == _plain(raw[16 * i : 16 * i + 16])


def test_edge_bytes() -> None:
    for raw in (b"\x00" * 16, b"\xff" * 16, bytes(range(16)), bytes(range(240, 256))):
        assert _encode_ids(raw)[:22] == _plain(raw)


def test_new_id_hands_out_the_pool_in_order_then_refills() -> None:
    actor = ElicitationActor.__new__(ElicitationActor)  # _new_id needs only its id pool
    raw = bytes(range(48))
    actor._id_pool = _encode_ids(raw)
    actor._id_pos = 0
    assert [actor._new_id() for _ in range(3)] == [_plain(raw[i : i + 16]) for i in (0, 16, 32)]
    ids = {actor._new_id() for _ in range(600)}  # past the end: two refills of 256 ids
    assert len(ids) == 600
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert all(len(i) == 22 and set(i) <= alphabet for i in ids)
