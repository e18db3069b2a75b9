"""Fuzzing open_token: any input is refused with a StateTokenError (never another exception),
and no change to a valid token is ever accepted.

Mutations work on both levels an attacker controls: the decoded bytes (re-encoded canonically,
so they reach the structure and MAC checks) and the text itself (any character, including
padding, whitespace, the standard alphabet and non-ASCII, so they exercise the decoder).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from erlmcp_py.core.state_token import (
    KeyRing,
    StateTokenError,
    open_token,
    request_digest,
    seal,
)

KEYS = {"k1": bytes(range(32)), "k0": bytes(range(1, 33)), "k": b"k" * 32}
RING = KeyRing("k1", KEYS["k1"], previous={"k0": KEYS["k0"], "k": KEYS["k"]})
OTHER_RING = KeyRing("k0", bytes(range(2, 34)))  # same kid as a key of RING, another key
DIGEST = request_digest("tools/call", {"name": "t", "arguments": {"a": 1}})
NOW = 1000.0

#: Every reason a token can earn with the right principal, request and time.
TAMPER_REASONS = {"malformed", "unknown_key", "bad_signature", "too_large"}
ALL_REASONS = TAMPER_REASONS | {
    "expired",
    "not_yet_valid",
    "wrong_principal",
    "request_mismatch",
}


def _seal(payload: dict[str, Any], ring: KeyRing = RING) -> str:
    return seal(payload, principal="alice", request_digest=DIGEST, now=NOW, ttl=60.0, keyring=ring)


def _open(token: Any, ring: KeyRing = RING, max_chars: int = 4096) -> dict[str, Any]:
    return open_token(
        token,
        principal="alice",
        request_digest=DIGEST,
        now=NOW + 1,
        keyring=ring,
        max_chars=max_chars,
    )


def _raw(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def _text(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _refused(token: Any, ring: KeyRing = RING) -> str:
    # Any other exception propagates out of pytest.raises and fails the test.
    with pytest.raises(StateTokenError) as info:
        _open(token, ring)
    assert info.value.reason in ALL_REASONS, info.value.reason
    return info.value.reason


payloads = st.dictionaries(
    st.text(max_size=6),
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    max_size=4,
)


@st.composite
def byte_mutations(draw: st.DrawFn, raw: bytes) -> bytes:
    """One to four edits (replace, xor, insert, delete, truncate, extend, splice a span)."""
    data = bytearray(raw)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["xor", "set", "insert", "delete", "truncate", "extend", "move"]))
        i = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "xor" and data:
            data[i] ^= draw(st.integers(1, 255))
        elif op == "set" and data:
            data[i] = draw(st.integers(0, 255))
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and data:
            del data[i : i + draw(st.integers(1, 8))]
        elif op == "truncate":
            del data[i:]
        elif op == "extend":
            data += draw(st.binary(min_size=1, max_size=16))
        elif op == "move" and data:
            j = draw(st.integers(0, len(data) - 1))
            n = draw(st.integers(1, 16))
            chunk = bytes(data[i : i + n])
            del data[i : i + n]
            data[j:j] = chunk
    return bytes(data)


@st.composite
def text_mutations(draw: st.DrawFn, token: str) -> str:
    """One to three character-level edits with any character, ASCII or not."""
    chars = list(token)
    alphabet = st.sampled_from(list("=+/ \n\t\r.-_AQgw\x00")) | st.characters()
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["set", "insert", "delete", "append", "prepend"]))
        i = draw(st.integers(0, max(len(chars) - 1, 0)))
        if op == "set" and chars:
            chars[i] = draw(alphabet)
        elif op == "insert":
            chars.insert(i, draw(alphabet))
        elif op == "delete" and chars:
            del chars[i]
        elif op == "append":
            chars.extend(draw(st.text(alphabet, min_size=1, max_size=4)))
        else:
            chars[:0] = draw(st.text(alphabet, min_size=1, max_size=4))
    return "".join(chars)


@settings(deadline=None, max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(payloads, st.data())
def test_fuzz_byte_mutations_never_accepted(payload: dict[str, Any], data: st.DataObject) -> None:
    token = _seal(payload)
    raw = _raw(token)
    mutated = data.draw(byte_mutations(raw))
    if mutated == raw:
        assert _open(_text(mutated)) == payload
        return
    reason = _refused(_text(mutated))
    assert reason in TAMPER_REASONS, reason


@settings(deadline=None, max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(payloads, st.data())
def test_fuzz_text_mutations_never_accepted(payload: dict[str, Any], data: st.DataObject) -> None:
    token = _seal(payload)
    mutated = data.draw(text_mutations(token))
    if mutated == token:
        assert _open(mutated) == payload
        return
    # Two different texts never open as the same token: canonical decoding.
    reason = _refused(mutated)
    assert reason in TAMPER_REASONS, reason


@settings(deadline=None, max_examples=300)
@given(st.text(max_size=600))
def test_fuzz_arbitrary_text(token: str) -> None:
    assert _refused(token) in TAMPER_REASONS


@settings(deadline=None, max_examples=300)
@given(st.binary(max_size=400))
def test_fuzz_arbitrary_bytes_as_canonical_base64(raw: bytes) -> None:
    assert _refused(_text(raw)) in TAMPER_REASONS


@st.composite
def shaped_tokens(draw: st.DrawFn) -> bytes:
    """Random bytes with a plausible header: they get past the shape checks to the MAC."""
    version = draw(st.sampled_from([0, 1, 2, 3, 255]))
    kid = draw(st.sampled_from([b"k1", b"k0", b"k", b"zz", b"\xff", b""]) | st.binary(max_size=70))
    kid_len = draw(st.sampled_from([len(kid), 0, 1, 64, 65, 255]))
    rest = draw(st.binary(min_size=0, max_size=200))
    return bytes((version, kid_len & 0xFF)) + kid + rest


@settings(deadline=None, max_examples=500)
@given(shaped_tokens())
def test_fuzz_shaped_garbage(raw: bytes) -> None:
    assert _refused(_text(raw)) in TAMPER_REASONS


@settings(deadline=None, max_examples=100)
@given(payloads)
def test_fuzz_foreign_key_with_a_known_kid(payload: dict[str, Any]) -> None:
    # Sealed by another ring whose kid RING also has: refused on the MAC, not opened.
    assert _refused(_seal(payload, OTHER_RING)) == "bad_signature"


@settings(deadline=None, max_examples=200)
@given(st.one_of(st.none(), st.integers(), st.binary(), st.lists(st.text()), st.floats()))
def test_fuzz_non_text(token: Any) -> None:
    assert _refused(token) == "malformed"


def test_every_ring_key_still_opens() -> None:
    # Sanity for the fuzz fixtures: each key of RING opens what it sealed.
    for kid in RING.kids:
        ring = KeyRing(kid, KEYS[kid])
        assert _open(_seal({"x": kid}, ring)) == {"x": kid}
