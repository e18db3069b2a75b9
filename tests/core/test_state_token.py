"""Sealed MRTR requestState: round trips, every refusal reason, rotation, tampering."""

from __future__ import annotations

import base64
import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from erlmcp_py.core import errors
from erlmcp_py.core.state_token import (
    DEFAULT_MAX_SKEW_S,
    MAX_TOKEN_CHARS,
    KeyRing,
    StateTokenError,
    open_token,
    parse_keyring,
    request_digest,
    seal,
)

K1 = bytes(range(32))
K2 = bytes(range(100, 148))
RING = KeyRing("k1", K1)
PARAMS = {"name": "book", "arguments": {"city": "Paris", "nights": 2}}
DIGEST = request_digest("tools/call", PARAMS)
PAYLOAD: dict[str, Any] = {"continuation": "c-42", "round": 1, "answers": {"q": "é"}}


def _seal(payload: dict[str, Any] = PAYLOAD, **kw: Any) -> str:
    args: dict[str, Any] = {
        "principal": "alice",
        "request_digest": DIGEST,
        "now": 1000.0,
        "ttl": 600.0,
        "keyring": RING,
    }
    args.update(kw)
    return seal(payload, **args)


def _open(token: str, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "principal": "alice",
        "request_digest": DIGEST,
        "now": 1001.0,
        "keyring": RING,
    }
    args.update(kw)
    return open_token(token, **args)


def _reason(token: Any, **kw: Any) -> str:
    with pytest.raises(StateTokenError) as info:
        _open(token, **kw)
    return info.value.reason


def _raw(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def _text(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


# ---------------------------------------------------------------------------------------------
# Round trip and format


def test_round_trip() -> None:
    token = _seal()
    assert _open(token) == PAYLOAD


def test_token_is_url_safe_text() -> None:
    token = _seal({"x": "?&=/+ " * 20})
    assert token.isascii()
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_payload_is_encrypted() -> None:
    token = _seal({"secret": "hunter2-correct-horse"})
    raw = _raw(token)
    assert b"hunter2" not in raw
    assert b"secret" not in raw
    assert b"alice" not in raw


def test_header_layout() -> None:
    raw = _raw(_seal(now=1000.0, ttl=600.0))
    assert raw[0] == 3  # version
    assert raw[1] == 2  # kid length
    assert raw[2:4] == b"k1"
    assert struct.unpack(">dd", raw[4:20]) == (1000.0, 1600.0)  # issued, expires


def test_the_payload_is_sealed_with_aes_256_gcm_siv_under_the_header() -> None:
    import hashlib
    import hmac

    from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

    raw = _raw(_seal())
    header, nonce, sealed = raw[:20], raw[20:32], raw[32:]
    key = hmac.digest(K1, b"erlmcp-py/state-token/v3/aead\x01", hashlib.sha256)
    plaintext = AESGCMSIV(key).decrypt(nonce, sealed, header)
    assert json.loads(plaintext[32:]) == PAYLOAD
    assert len(sealed) == len(plaintext) + 16  # the GCM-SIV tag


def test_the_bindings_and_the_nonce_are_hmac_sha256_under_their_derived_keys() -> None:
    import hashlib
    import hmac

    from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

    def derived(label: bytes) -> bytes:
        return hmac.digest(K1, b"erlmcp-py/state-token/v3/" + label + b"\x01", hashlib.sha256)

    raw = _raw(_seal())
    header, nonce, sealed = raw[:20], raw[20:32], raw[32:]
    plaintext = AESGCMSIV(derived(b"aead")).decrypt(nonce, sealed, header)
    bind = derived(b"bind")
    assert plaintext[:16] == hmac.digest(bind, b"principal\x00alice", "sha256")[:16]
    assert plaintext[16:32] == hmac.digest(bind, b"request\x00" + DIGEST.encode(), "sha256")[:16]
    assert nonce == hmac.digest(derived(b"nonce"), header + plaintext, "sha256")[:12]


#: A version 2 token (the stdlib HMAC + SHAKE-256 layout), sealed with ``KeyRing("k1",
#: b"k" * 32)`` for ``addr:127.0.0.1`` and ``tools/call {"name": "x"}`` at 1000 for 600 s.
V2_TOKEN = (
    "AgJrMUCPQAAAAAAAQJkAAAAAAAC4n-YsKDAshdWlXEXUxMJSMDBQfuqQYjDCvjUaujLbmOwYXWKuET-8uWkQLCD4PSFPXDLJ"
    "3ZtD8MI7eWJ1iPyzyjsVxjs9tro3j_jx60lY5qQ"
)


def test_a_token_of_the_earlier_layout_is_refused_as_malformed() -> None:
    with pytest.raises(errors.StateTokenMalformed) as info:
        open_token(
            V2_TOKEN,
            principal="addr:127.0.0.1",
            request_digest=request_digest("tools/call", {"name": "x"}),
            now=1001.0,
            keyring=KeyRing("k1", b"k" * 32),
        )
    assert info.value.reason == "malformed"


def test_parse_keyring_reads_current_and_previous_keys() -> None:
    new, old = base64.b64encode(K2).decode(), base64.urlsafe_b64encode(K1).decode().rstrip("=")
    ring = parse_keyring(f"# rotated 2026-02\n2026-02={new}\n\n2026-01 = {old}\n")
    assert ring.current_kid == "2026-02"
    assert ring.kids == ("2026-02", "2026-01")
    old_token = _seal(keyring=KeyRing("2026-01", K1))
    assert _open(old_token, keyring=ring) == PAYLOAD  # the previous key still opens
    assert _raw(_seal(keyring=ring))[2:9] == b"2026-02"  # the first one seals
    assert parse_keyring(f"a={new},b={old}").kids == ("a", "b")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "no key entry"),
        ("# only a comment", "no key entry"),
        ("k1", "expected KID=KEY"),
        ("k1=not base64!", "not base64"),
        ("k1=" + base64.b64encode(b"short").decode(), "at least 32 bytes"),
        ("=" + base64.b64encode(K1).decode(), "key id"),
    ],
)
def test_parse_keyring_refuses_bad_entries_without_showing_keys(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as info:
        parse_keyring(text)
    assert base64.b64encode(K1).decode() not in str(info.value)


def test_parse_keyring_refuses_a_repeated_key_id() -> None:
    key = base64.b64encode(K1).decode()
    with pytest.raises(ValueError, match="duplicate"):
        parse_keyring(f"a={key},a={key}")


def test_seal_is_deterministic_and_pure() -> None:
    assert _seal() == _seal()
    assert _seal(now=1000.0) != _seal(now=1000.5)


def test_empty_payload() -> None:
    assert _open(_seal({})) == {}


# ---------------------------------------------------------------------------------------------
# Refusals


def test_expired() -> None:
    token = _seal(now=1000.0, ttl=10.0)
    assert _open(token, now=1009.999) == PAYLOAD
    with pytest.raises(errors.StateTokenExpired) as info:
        _open(token, now=1010.0)
    assert info.value.reason == "expired"
    assert info.value.expired_at == 1010.0
    assert _reason(token, now=10**9) == "expired"
    assert _reason(token, now=math.nan) == "expired"  # fail closed


def test_other_principal() -> None:
    token = _seal()
    with pytest.raises(errors.StateTokenWrongPrincipal):
        _open(token, principal="mallory")
    assert _reason(token, principal="") == "wrong_principal"
    assert _reason(token, principal="alice ") == "wrong_principal"


def test_principal_binding_is_exact() -> None:
    """Delimiters, NUL, the other binding's label, Unicode look-alikes: only the same string."""
    cases = [
        "",
        "a\x00b",
        "a",
        "a\x00",
        "request\x00" + DIGEST,
        "caf\u00e9",
        "cafe\u0301",  # NFD of the previous: a different principal
        "\ud800",
        "header:alice",
        "addr:alice",
    ]
    for principal in cases:
        token = _seal(principal=principal)
        assert _open(token, principal=principal) == PAYLOAD
        for other in cases:
            if other != principal:
                assert _reason(token, principal=other) == "wrong_principal", (principal, other)
    # The request binding cannot stand in for the principal binding (labels differ).
    token = _seal(principal=DIGEST)
    assert _reason(token, principal="alice", request_digest=DIGEST) == "wrong_principal"


def test_other_request() -> None:
    token = _seal()
    other_args = request_digest("tools/call", {**PARAMS, "arguments": {"city": "Rome"}})
    other_tool = request_digest("tools/call", {**PARAMS, "name": "cancel"})
    other_method = request_digest("prompts/get", PARAMS)
    for digest in (other_args, other_tool, other_method, "", "x"):
        with pytest.raises(errors.StateTokenRequestMismatch):
            _open(token, request_digest=digest)


def test_issued_in_the_future_is_refused() -> None:
    """A token sealed on a clock ahead of the verifier's (another node, or this one after its
    clock stepped back) would live longer than its ttl: it is refused beyond the allowed skew."""
    token = _seal(now=1000.0, ttl=600.0)
    skew = DEFAULT_MAX_SKEW_S
    assert skew == 60.0
    assert _open(token, now=1000.0 - skew) == PAYLOAD  # within the default skew
    with pytest.raises(errors.StateTokenNotYetValid) as info:
        _open(token, now=1000.0 - skew - 0.001)
    assert info.value.reason == "not_yet_valid"
    assert info.value.issued_at == 1000.0
    assert _reason(token, now=-1e12) == "not_yet_valid"
    # An hour-fast clock would otherwise have added an hour to a 10-minute token.
    assert _reason(token, now=1000.0 - 3600) == "not_yet_valid"
    # Strict verifier: no skew at all.
    assert _open(token, now=1000.0, max_skew=0.0) == PAYLOAD
    assert _reason(token, now=999.999, max_skew=0.0) == "not_yet_valid"
    assert _open(token, now=500.0, max_skew=500.0) == PAYLOAD
    # Only authentic tokens get this far.
    assert _reason(token, now=0.0, keyring=KeyRing("k1", K2)) == "bad_signature"


@pytest.mark.parametrize("skew", [-1.0, math.nan, math.inf])
def test_open_refuses_bad_max_skew(skew: float) -> None:
    with pytest.raises(ValueError, match="max_skew"):
        _open(_seal(), max_skew=skew)


def test_open_fails_closed_on_non_finite_now() -> None:
    """A non-finite ``now`` (a broken clock) opens nothing, and an int beyond a double is a
    ``ValueError`` from seal."""
    token = _seal()
    for now in (-math.inf, math.inf, math.nan, 10**400, -(10**400)):
        assert _reason(token, now=now) == "expired", now
    assert _open(token, now=1001) == PAYLOAD  # an int clock is fine
    for now in (10**400, -(10**400)):
        with pytest.raises(ValueError, match="finite"):
            _seal(now=now)
    with pytest.raises(ValueError, match="finite"):
        _seal(ttl=10**400)
    assert _open(_seal(now=1000, ttl=600)) == PAYLOAD


def test_unknown_key() -> None:
    token = _seal()
    assert _reason(token, keyring=KeyRing("k2", K2)) == "unknown_key"


def test_same_kid_other_key_is_bad_signature() -> None:
    token = _seal()
    assert _reason(token, keyring=KeyRing("k1", K2)) == "bad_signature"


def test_too_large() -> None:
    token = _seal()
    with pytest.raises(errors.StateTokenTooLarge) as info:
        _open(token, max_chars=len(token) - 1)
    assert (info.value.size, info.value.limit) == (len(token), len(token) - 1)
    assert _open(token, max_chars=len(token)) == PAYLOAD
    assert _reason("A" * (MAX_TOKEN_CHARS + 1)) == "too_large"
    # Garbage that is too large is refused as too large, before decoding.
    assert _reason("!" * (MAX_TOKEN_CHARS + 1)) == "too_large"


def test_seal_refuses_too_large_payload() -> None:
    with pytest.raises(errors.StateTokenTooLarge):
        _seal({"blob": "x" * MAX_TOKEN_CHARS})
    small = _seal({"blob": "x"})
    with pytest.raises(errors.StateTokenTooLarge):
        _seal({"blob": "x"}, max_chars=len(small) - 1)
    assert _seal({"blob": "x"}, max_chars=len(small)) == small


@pytest.mark.parametrize(
    "token",
    [
        "",
        "A",
        "AA",
        "AQ",
        "not a token",
        "AQJrMQ==",  # padding is not part of the format
        "é" * 10,
        "AQJrMUCZ+AAA/AAA",  # standard (not URL-safe) alphabet
    ],
)
def test_malformed(token: str) -> None:
    assert _reason(token) == "malformed"


def test_malformed_non_string() -> None:
    assert _reason(None) == "malformed"
    assert _reason(b"AQ") == "malformed"


def test_malformed_structure() -> None:
    raw = _raw(_seal())
    for version in (0, 1, 2, 255):  # 1, 2: the earlier layouts
        assert _reason(_text(bytes((version,)) + raw[1:])) == "malformed"
    assert _reason(_text(raw[:1] + b"\x00" + raw[2:])) == "malformed"  # empty key id
    assert _reason(_text(raw[:1] + b"\xff" + raw[2:])) == "malformed"  # key id too long
    assert _reason(_text(raw[:40])) == "malformed"  # truncated
    assert _reason(_text(raw[:2] + b"\xff\xfe" + raw[4:])) == "malformed"  # non-ASCII kid


def test_non_canonical_base64_is_malformed() -> None:
    token = _seal()
    # Flip the unused low bits of the last character, if any: decodes to the same bytes.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    spare_bits = {2: 4, 3: 2}.get(len(token) % 4, 0)
    last = alphabet.index(token[-1])
    for low in range(1, 1 << spare_bits):
        twin = token[:-1] + alphabet[last ^ low]
        assert _raw(twin) == _raw(token)
        assert _reason(twin) == "malformed"
    assert _reason(token + "\n") == "malformed"
    assert _reason(" " + token) == "malformed"


def test_every_character_tampered_is_refused() -> None:
    token = _seal()
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    seen: set[str] = set()
    for i, ch in enumerate(token):
        for replacement in (
            alphabet[(alphabet.index(ch) + 1) % 64],
            alphabet[alphabet.index(ch) ^ 32],
        ):
            tampered = token[:i] + replacement + token[i + 1 :]
            seen.add(_reason(tampered))
    assert seen <= {"malformed", "unknown_key", "bad_signature"}
    assert "bad_signature" in seen


def test_every_bit_of_every_byte_tampered_is_refused() -> None:
    token = _seal({"k": 1})
    raw = _raw(token)
    for i in range(len(raw)):
        for bit in range(8):
            tampered = bytearray(raw)
            tampered[i] ^= 1 << bit
            reason = _reason(_text(bytes(tampered)))
            if i >= 4:  # expiry, tag, body: only the MAC can tell
                assert reason == "bad_signature", (i, bit)
            else:
                assert reason in {"malformed", "unknown_key", "bad_signature"}, (i, bit)


def test_expiry_cannot_be_extended() -> None:
    token = _seal(now=1000.0, ttl=1.0)
    for issued, expires in ((1000.0, 1e12), (0.0, 1001.0), (-math.inf, math.inf)):
        raw = bytearray(_raw(token))
        raw[4:20] = struct.pack(">dd", issued, expires)
        assert _reason(_text(bytes(raw)), now=1000.5) == "bad_signature"
        assert _reason(_text(bytes(raw)), now=5000.0) == "bad_signature"


def test_truncation_and_extension_refused() -> None:
    token = _seal()
    raw = _raw(token)
    for cut in range(1, 40):
        assert _reason(_text(raw[:-cut])) in {"malformed", "bad_signature"}
    assert _reason(_text(raw + b"\x00")) == "bad_signature"
    assert _reason(_text(raw + b"{}")) == "bad_signature"


def test_errors_do_not_leak_payload() -> None:
    token = _seal({"secret": "hunter2"})
    for kw in ({"principal": "x"}, {"now": 10**9}, {"request_digest": "x"}):
        with pytest.raises(StateTokenError) as info:
            _open(token, **kw)
        assert "hunter2" not in str(info.value)
        assert token not in str(info.value)


def test_error_classes() -> None:
    reasons = {
        errors.StateTokenMalformed: "malformed",
        errors.StateTokenUnknownKey: "unknown_key",
        errors.StateTokenBadSignature: "bad_signature",
        errors.StateTokenExpired: "expired",
        errors.StateTokenNotYetValid: "not_yet_valid",
        errors.StateTokenWrongPrincipal: "wrong_principal",
        errors.StateTokenRequestMismatch: "request_mismatch",
        errors.StateTokenTooLarge: "too_large",
    }
    for cls, reason in reasons.items():
        assert issubclass(cls, StateTokenError)
        assert issubclass(cls, errors.ErlmcpError)
        assert cls.reason == reason
    assert "expired" in str(errors.StateTokenExpired(3.0))
    assert "not_yet_valid" in str(errors.StateTokenNotYetValid(3.0))


# ---------------------------------------------------------------------------------------------
# Rotation


def test_rotation() -> None:
    old_token = _seal(keyring=RING)
    rotated = RING.rotate("k2", K2)
    assert rotated.current_kid == "k2"
    assert rotated.kids == ("k2", "k1")
    assert "k1" in rotated
    new_token = _seal(keyring=rotated)
    assert _raw(new_token)[2:4] == b"k2"
    # Old tokens still open while the old key is in the ring; new ones open too.
    assert _open(old_token, keyring=rotated) == PAYLOAD
    assert _open(new_token, keyring=rotated) == PAYLOAD
    # A ring that never had k2 cannot open new tokens.
    assert _reason(new_token, keyring=RING) == "unknown_key"
    # Retire the old key: old tokens stop opening, new ones still open.
    retired = rotated.retire("k1")
    assert retired.kids == ("k2",)
    assert _reason(old_token, keyring=retired) == "unknown_key"
    assert _open(new_token, keyring=retired) == PAYLOAD


def test_ring_from_previous_mapping_or_pairs() -> None:
    token = _seal(keyring=RING)
    for previous in ({"k1": K1}, [("k1", K1)]):
        ring = KeyRing("k2", K2, previous=previous)
        assert _open(token, keyring=ring) == PAYLOAD


def test_ring_validation() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        KeyRing("k", b"x" * 31)
    with pytest.raises(TypeError):
        KeyRing("k", "x" * 32)  # type: ignore[arg-type]
    for kid in ("", "k" * 65, "é", "a\nb"):
        with pytest.raises(ValueError, match="key id"):
            KeyRing(kid, K1)
    with pytest.raises(ValueError, match="duplicate"):
        KeyRing("k1", K1, previous={"k1": K2})
    with pytest.raises(ValueError, match="duplicate"):
        RING.rotate("k1", K2)
    with pytest.raises(KeyError):
        RING.retire("k1")  # the current key
    with pytest.raises(KeyError):
        RING.retire("nope")
    assert KeyRing("k", bytearray(K1)).kids == ("k",)


def test_ring_repr_hides_keys() -> None:
    ring = RING.rotate("k2", K2)
    text = repr(ring)
    assert text == "KeyRing(current='k2', previous=('k1',))"
    assert K1.hex() not in text
    assert repr(K1) not in text


# ---------------------------------------------------------------------------------------------
# seal() argument checks


@pytest.mark.parametrize(
    ("now", "ttl"), [(math.nan, 1.0), (0.0, math.inf), (0.0, 0.0), (0.0, -1.0), (math.inf, 1.0)]
)
def test_seal_refuses_bad_times(now: float, ttl: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        _seal(now=now, ttl=ttl)


def test_seal_refuses_non_json_payloads() -> None:
    with pytest.raises(TypeError):
        _seal([1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="JSON"):
        _seal({"x": math.nan})
    with pytest.raises(TypeError):
        _seal({"x": object()})
    with pytest.raises(ValueError, match="surrogate"):
        _seal({"x": "\ud800"})


# ---------------------------------------------------------------------------------------------
# request_digest


def test_request_digest_ignores_meta_and_retry_members() -> None:
    retry = {
        **PARAMS,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
        "inputResponses": {"q": {"action": "accept"}},
        "requestState": "AQ...",
    }
    assert request_digest("tools/call", retry) == DIGEST


def test_request_digest_is_canonical() -> None:
    reordered = {"arguments": {"nights": 2, "city": "Paris"}, "name": "book"}
    assert request_digest("tools/call", reordered) == DIGEST
    as_float = {"name": "book", "arguments": {"city": "Paris", "nights": 2.0}}
    assert request_digest("tools/call", as_float) == DIGEST
    assert request_digest("tools/call", {"a": [1.0, (2, 3)]}) == request_digest(
        "tools/call", {"a": [1, [2, 3]]}
    )
    assert request_digest("m", None) == request_digest("m", {})
    digest = request_digest("m", None)
    assert len(digest) == 64
    assert int(digest, 16) >= 0


def test_request_digest_distinguishes() -> None:
    assert request_digest("tools/call", {"a": True}) != request_digest("tools/call", {"a": 1})
    assert request_digest("tools/call", {"a": 1.5}) != request_digest("tools/call", {"a": 1})
    assert request_digest("tools/call", {"a": "1"}) != request_digest("tools/call", {"a": 1})
    assert request_digest("tools/call", {"a": None}) != request_digest("tools/call", {})
    assert request_digest("a", {}) != request_digest("b", {})
    nested_meta = {"arguments": {"_meta": 1}}
    assert request_digest("m", nested_meta) != request_digest("m", {"arguments": {}})


def test_request_digest_refuses_non_json() -> None:
    with pytest.raises(TypeError):
        request_digest("m", {"x": object()})


def test_request_digest_is_total_on_decoded_json() -> None:
    """Request params are attacker-controlled, and the JSON boundary decodes a number literal
    that overflows a double (``1e400``) to inf: the digest is defined for it, for NaN and for
    lone surrogates, so ContinuationRegistry.start/resume never raise on them."""
    weird: list[Any] = [math.inf, -math.inf, math.nan, "\ud800", "\udfff", "\ud83d\ude00"]
    digests = [request_digest("tools/call", {"arguments": {"x": v}}) for v in weird]
    # Each digests, and distinctly: from each other and from look-alike strings and numbers.
    look_alikes: list[Any] = ["Infinity", "-Infinity", "NaN", "inf", 1e308, "\U0001f600", None]
    digests += [request_digest("tools/call", {"arguments": {"x": v}}) for v in look_alikes]
    assert len(set(digests)) == len(weird) + len(look_alikes)
    # Deterministic, so a retry carrying the same value matches.
    assert request_digest("m", {"x": [math.nan]}) == request_digest("m", {"x": [math.nan]})
    assert request_digest("m", {"x": float("1e400")}) == request_digest("m", {"x": math.inf})
    # A token bound to such a request opens for the same request only.
    digest = request_digest("tools/call", {"arguments": {"x": math.inf}})
    token = _seal(request_digest=digest)
    assert _open(token, request_digest=digest) == PAYLOAD
    assert _reason(token, request_digest=request_digest("tools/call", {})) == "request_mismatch"


def test_module_is_pure() -> None:
    import erlmcp_py.core.state_token as mod

    source = Path(mod.__file__).read_text(encoding="utf-8")
    for banned in ("import trio", "import os", "import time", "import secrets", "import random"):
        assert banned not in source


# ---------------------------------------------------------------------------------------------
# Properties

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=15,
)
payloads = st.dictionaries(st.text(max_size=8), json_values, max_size=5)
principals = st.text(max_size=30)
times = st.floats(min_value=-1e9, max_value=1e12)
ttls = st.floats(min_value=1e-3, max_value=1e7)


def _json_round_trip(value: Any) -> Any:
    return json.loads(json.dumps(value))


@settings(deadline=None, max_examples=200)
@given(payloads, principals, times, ttls, st.text(max_size=20))
def test_property_round_trip(
    payload: dict[str, Any], principal: str, now: float, ttl: float, method: str
) -> None:
    digest = request_digest(method, {"p": payload})
    token = seal(
        payload, principal=principal, request_digest=digest, now=now, ttl=ttl, keyring=RING
    )
    expires = now + ttl
    opened = open_token(token, principal=principal, request_digest=digest, now=now, keyring=RING)
    assert opened == _json_round_trip(payload)
    with pytest.raises(errors.StateTokenExpired):
        open_token(token, principal=principal, request_digest=digest, now=expires, keyring=RING)
    with pytest.raises(errors.StateTokenWrongPrincipal):
        open_token(token, principal=principal + "x", request_digest=digest, now=now, keyring=RING)


@settings(deadline=None, max_examples=200)
@given(payloads, st.data())
def test_property_single_byte_tamper_refused(payload: dict[str, Any], data: st.DataObject) -> None:
    token = _seal(payload)
    raw = bytearray(_raw(token))
    i = data.draw(st.integers(0, len(raw) - 1))
    raw[i] ^= data.draw(st.integers(1, 255))
    with pytest.raises(StateTokenError) as info:
        _open(_text(bytes(raw)))
    assert info.value.reason in {"malformed", "unknown_key", "bad_signature"}


@settings(deadline=None)
@given(st.text(max_size=300))
def test_property_random_text_never_crashes(token: str) -> None:
    with pytest.raises(StateTokenError) as info:
        _open(token)
    assert info.value.reason in {"malformed", "unknown_key", "bad_signature", "too_large"}


def test_seal_refuses_ttl_below_clock_resolution() -> None:
    with pytest.raises(ValueError, match="too small"):
        _seal(now=1e12, ttl=1e-9)
