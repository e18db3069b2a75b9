"""Sealed MRTR ``requestState`` for protocol 2026-07-28 (pure: no I/O, no clock, no randomness).

The state travels through the client, so it is attacker-controlled (what it binds and how it
is refused: docs/mrtr.md, "requestState"). How it is sealed:

* **Integrity and confidentiality**: AES-256-GCM-SIV (RFC 8452, through ``cryptography``), an
  authenticated cipher that stays safe when a nonce repeats. The header (version, key id,
  issue time, expiry) is its associated data, so every byte that decides anything is
  authenticated; the payload is encrypted, because it may carry the suspended tool's data
  (earlier answers, internal ids) through the client, the LLM host and their logs. The nonce
  is synthetic: HMAC-SHA256 of the header and plaintext under a key of its own, cut to 12
  bytes, so :func:`seal` draws nothing and stays pure (equal inputs give equal tokens, which
  reveals nothing since the expiry differs; a repeated nonce is what GCM-SIV is built to
  tolerate).
* **Binding**: the principal (authenticated user) and a digest of the originating request
  (:func:`request_digest`: method + params minus ``_meta``/``inputResponses``/``requestState``)
  are sealed in, as keyed hashes at the head of the plaintext; presenting the token for
  another principal or another request is refused, each with its own reason.
* **Expiry**: the issue time (``now``) and an absolute expiry (``now + ttl``), both on the
  caller's clock, sit in the header and are trusted only after the token opens. A token is
  refused at or past its expiry, and also when it was issued more than ``max_skew`` seconds
  after the verifier's ``now`` (a clock that stepped back, or another node's clock running
  ahead): otherwise such a token would live longer than its ttl. A non-finite ``now`` fails
  closed.
* **Rotation**: a :class:`KeyRing` seals with its current key and opens with any key it still
  holds (:func:`parse_keyring` reads one from text). Per master key, independent cipher, nonce
  and binding keys are derived with HMAC-SHA256 (HKDF-Expand, one block).

Single use is *not* enforced here (it needs server-side state); the caller does that if needed.

Token layout (then base64url, no padding; decoding is canonical — one text per token)::

    version   1 byte    0x03
    kid_len   1 byte    1..64
    kid       kid_len   ASCII key id
    issued    8 bytes   IEEE-754 double, big-endian (seconds on the caller's clock)
    expires   8 bytes   IEEE-754 double, big-endian (seconds on the caller's clock)
    nonce    12 bytes   HMAC-SHA256(nonce_key, header || plaintext)[:12]   header = bytes 0..expires
    sealed    n + 16    AES-256-GCM-SIV(aead_key, nonce, plaintext, associated data = header)

    plaintext = HMAC(bind_key, "principal\0" || principal)[:16]
             || HMAC(bind_key, "request\0" || request_digest)[:16]
             || canonical JSON of the payload (sorted keys, UTF-8)

Tokens of the earlier layouts (versions 1 and 2) are refused as ``malformed``.

Checks on open, in this order (each its own error, see :class:`StateTokenError`): size
(``too_large``), shape and version (``malformed``), key id (``unknown_key``), authentication
(``bad_signature``), then, on authentic tokens only, expiry (``expired``), issue time
(``not_yet_valid``), principal (``wrong_principal``) and request (``request_mismatch``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import struct
from collections.abc import Callable, Iterable, Mapping
from json.encoder import (  # type: ignore[attr-defined]  # typeshed omits the C encoder
    c_make_encoder,
    encode_basestring,
)
from typing import Any, Final, NoReturn

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

from erlmcp_py.core.errors import (
    StateTokenBadSignature,
    StateTokenError,
    StateTokenExpired,
    StateTokenMalformed,
    StateTokenNotYetValid,
    StateTokenRequestMismatch,
    StateTokenTooLarge,
    StateTokenUnknownKey,
    StateTokenWrongPrincipal,
)

__all__ = [
    "DEFAULT_MAX_SKEW_S",
    "MAX_TOKEN_CHARS",
    "MIN_KEY_BYTES",
    "TOKEN_VERSION",
    "KeyRing",
    "StateTokenError",
    "open_token",
    "parse_keyring",
    "request_digest",
    "seal",
]

TOKEN_VERSION: Final = 3
#: Shortest accepted master key, in bytes.
MIN_KEY_BYTES: Final = 32
#: Default size limit of a token, in characters (checked before decoding, and when sealing).
MAX_TOKEN_CHARS: Final = 64 * 1024
_MAX_KID_LEN: Final = 64
#: Default tolerance, in seconds, for a token issued ahead of the verifier's clock.
DEFAULT_MAX_SKEW_S: Final = 60.0

_NONCE_LEN: Final = 12
_AEAD_TAG_LEN: Final = 16
_BIND_LEN: Final = 16
_TIMES: Final = struct.Struct(">dd")  # issued, expires
_MIN_RAW: Final = 2 + 1 + _TIMES.size + _NONCE_LEN + _AEAD_TAG_LEN + 2 * _BIND_LEN + 2  # "{}"

_LABEL_AEAD: Final = b"erlmcp-py/state-token/v3/aead\x01"
_LABEL_NONCE: Final = b"erlmcp-py/state-token/v3/nonce\x01"
_LABEL_BIND: Final = b"erlmcp-py/state-token/v3/bind\x01"
_LABEL_PRINCIPAL: Final = b"principal\x00"
_LABEL_REQUEST: Final = b"request\x00"

#: Top-level request params that are not part of the request's identity.
_UNSALIENT_PARAMS: Final = frozenset({"_meta", "inputResponses", "requestState"})


# --------------------------------------------------------------------------------------------
# Keys


_IPAD: Final = bytes(x ^ 0x36 for x in range(256))
_OPAD: Final = bytes(x ^ 0x5C for x in range(256))


class _Mac:
    """HMAC-SHA256 (RFC 2104) under one derived key (32 bytes, within SHA-256's 64-byte
    block), whose padded key states are hashed once: each use then costs two hash copies and
    the message, never the key again."""

    __slots__ = ("_inner", "_outer")

    def __init__(self, key: bytes) -> None:
        block = key.ljust(64, b"\0")
        self._inner = hashlib.sha256(block.translate(_IPAD))
        self._outer = hashlib.sha256(block.translate(_OPAD))

    def digest(self, message: bytes) -> bytes:
        inner = self._inner.copy()
        inner.update(message)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()


class _DerivedKeys:
    __slots__ = ("aead", "bind", "nonce")

    def __init__(self, master: bytes) -> None:
        self.aead = AESGCMSIV(hmac.digest(master, _LABEL_AEAD, "sha256"))
        self.nonce = _Mac(hmac.digest(master, _LABEL_NONCE, "sha256"))
        self.bind = _Mac(hmac.digest(master, _LABEL_BIND, "sha256"))


def _check_kid(kid: object) -> str:
    if (
        not isinstance(kid, str)
        or not 1 <= len(kid) <= _MAX_KID_LEN
        or not kid.isascii()
        or not kid.isprintable()
    ):
        raise ValueError("key id must be 1..64 printable ASCII characters")
    return kid


def _check_key(key: object) -> bytes:
    if not isinstance(key, bytes | bytearray):
        raise TypeError("key must be bytes")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"key must be at least {MIN_KEY_BYTES} bytes")
    return bytes(key)


class KeyRing:
    """The keys that seal and open state tokens: one current key plus older ones for rotation.

    A ring is immutable; :meth:`rotate` and :meth:`retire` return new rings. Tokens are sealed
    with the current key and opened with whichever key of the ring their key id names, so a
    rotation keeps outstanding tokens valid until the old key is retired. Every instance of a
    multi-node deployment must hold the same ring.

    Args:
        current_kid: Id of the sealing key (1..64 printable ASCII characters; it is visible in
            tokens, so do not put secrets in it).
        current_key: The sealing key, at least 32 random bytes (``secrets.token_bytes(32)``;
            the examples below use constant keys for brevity only).
        previous: Older keys still accepted for opening, by key id.

    Raises:
        ValueError: A key is too short, a key id is invalid, or a key id is used twice.
        TypeError: A key is not bytes.

    Example:
        >>> ring = KeyRing("2026-01", b"k" * 32)
        >>> ring = ring.rotate("2026-02", b"n" * 32)   # old tokens still open
        >>> ring = ring.retire("2026-01")              # now they don't
    """

    __slots__ = ("_current_kid", "_derived", "_masters")

    def __init__(
        self,
        current_kid: str,
        current_key: bytes | bytearray,
        *,
        previous: Mapping[str, bytes | bytearray] | Iterable[tuple[str, bytes | bytearray]] = (),
    ) -> None:
        items = previous.items() if isinstance(previous, Mapping) else previous
        masters: dict[str, bytes] = {_check_kid(current_kid): _check_key(current_key)}
        for kid, key in items:
            if _check_kid(kid) in masters:
                raise ValueError(f"duplicate key id {kid!r}")
            masters[kid] = _check_key(key)
        self._current_kid = current_kid
        self._masters = masters
        self._derived = {kid: _DerivedKeys(key) for kid, key in masters.items()}

    @property
    def current_kid(self) -> str:
        """The id of the key new tokens are sealed with."""
        return self._current_kid

    @property
    def kids(self) -> tuple[str, ...]:
        """Every key id the ring accepts, current first."""
        return tuple(self._masters)

    def __contains__(self, kid: object) -> bool:
        return kid in self._masters

    def rotate(self, new_kid: str, new_key: bytes | bytearray) -> KeyRing:
        """Return a ring sealing with a new key and still opening with every key of this one.

        Args:
            new_kid: Id of the new current key (must not be in the ring).
            new_key: The new key, at least 32 bytes.
        """
        return KeyRing(new_kid, new_key, previous=self._masters)

    def retire(self, kid: str) -> KeyRing:
        """Return a ring without the older key ``kid``: tokens sealed with it stop opening.

        Args:
            kid: Id of a previous (not the current) key.

        Raises:
            KeyError: ``kid`` is not a previous key of this ring.
        """
        if kid == self._current_kid or kid not in self._masters:
            raise KeyError(kid)
        previous = {k: v for k, v in self._masters.items() if k not in (kid, self._current_kid)}
        return KeyRing(self._current_kid, self._masters[self._current_kid], previous=previous)

    def _keys(self, kid: str) -> _DerivedKeys | None:
        return self._derived.get(kid)

    def __repr__(self) -> str:  # never shows key material
        previous = tuple(k for k in self._masters if k != self._current_kid)
        return f"KeyRing(current={self._current_kid!r}, previous={previous!r})"


def parse_keyring(text: str) -> KeyRing:
    """Read a :class:`KeyRing` from text: a key file's content or an environment variable.

    One key per entry, ``KID=KEY`` with ``KEY`` the base64 (standard or URL-safe, padding
    optional) of at least 32 random bytes; entries are separated by newlines or commas, blank
    lines and lines starting with ``#`` are skipped. The first entry is the current key (new
    tokens are sealed with it); the others still open the tokens they sealed. To rotate, put
    a new entry first; to retire a key, remove its entry.

    Example: ``2026-02=<base64 of 32 bytes>,2026-01=<base64 of 32 bytes>``

    Raises:
        ValueError: no entry, an entry that is not ``KID=KEY``, a key that is not base64 or is
            too short, an invalid or repeated key id. The message names the entry by its
            position and key id, never the key.
    """
    entries: list[tuple[str, bytes]] = []
    for line in text.replace(",", "\n").splitlines():
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        kid, sep, encoded = entry.partition("=")
        position = len(entries) + 1
        if not sep:
            raise ValueError(f"key entry {position}: expected KID=KEY")
        kid = kid.strip()
        encoded = encoded.strip().replace("-", "+").replace("_", "/")
        try:
            key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"key entry {position} ({kid[:64]!r}): not base64") from None
        try:
            _check_kid(kid)
            _check_key(key)
        except ValueError as exc:
            raise ValueError(f"key entry {position} ({kid[:64]!r}): {exc}") from None
        entries.append((kid, key))
    if not entries:
        raise ValueError("no key entry")
    (current_kid, current_key), *previous = entries
    return KeyRing(current_kid, current_key, previous=previous)


# --------------------------------------------------------------------------------------------
# Request digest


def _normalize(value: Any) -> Any:
    # JSON does not tell 1 from 1.0 (JavaScript cannot even write 1.0): digest them alike.
    # Strings and dicts (the most common values) are told apart without the ABC check.
    if isinstance(value, str):
        return value
    if type(value) is float:
        return int(value) if value.is_integer() else value
    if isinstance(value, dict | Mapping):
        return {k: _normalize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalize(v) for v in value]
    return value


def _canonical_encoder(*, allow_nan: bool) -> Callable[[Any], str]:
    """One canonical JSON encoder (sorted keys, no whitespace, not ASCII-escaped), built once:
    CPython's C encoder, which :class:`json.JSONEncoder` builds anew on every call.

    No circular check: what it encodes is decoded JSON or a payload built from it, both trees.
    A value that is not JSON raises ``TypeError``, as :func:`json.dumps` does.
    """

    def default(value: object) -> NoReturn:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    assert c_make_encoder is not None, "CPython's C JSON encoder is required"
    encode = c_make_encoder(
        None, default, encode_basestring, None, ":", ",", True, False, allow_nan
    )

    def canonical(value: Any) -> str:
        return "".join(encode(value, 0))

    return canonical


_DIGEST: Final = _canonical_encoder(allow_nan=True)
#: The payload's canonical JSON (:func:`~erlmcp_py.core.schema.canonical_json`), one encoder.
_PAYLOAD: Final = _canonical_encoder(allow_nan=False)


def _digest_json(value: Any) -> bytes:
    # Total on what a JSON decoder can hand us, which is attacker-controlled: a number literal
    # that overflows a double (``1e400``) decodes to ±inf, and some decoders pass NaN or lone
    # surrogates. Both encodings stay injective: ``Infinity``/``NaN`` are bare words, unlike
    # the strings ``"Infinity"``/``"NaN"``; UTF-8 with surrogatepass encodes each code point
    # on its own (a lone-surrogate pair and the astral character it spells differ). Not
    # ensure_ascii: it writes both of those as the same ``\ud83d\ude00``.
    return _DIGEST(value).encode("utf-8", "surrogatepass")


def request_digest(method: str, params: Mapping[str, Any] | None) -> str:
    """Digest the identity of a request, to bind a state token to it.

    The digest covers the method and the params, minus the top-level members that legitimately
    change between an original request and its retry: ``_meta``, ``inputResponses`` and
    ``requestState`` (so passing the retry's params as they are is fine). It is SHA-256 over
    canonical JSON: sorted keys, no whitespace, UTF-8, integral floats written as integers.
    The params are attacker-controlled, so every value a JSON decoder can produce is digested
    (``±inf`` from an overflowing literal, NaN, lone surrogates), each distinctly.

    Args:
        method: The JSON-RPC method, e.g. ``"tools/call"``.
        params: The request params (``None`` when absent).

    Returns:
        64 lowercase hex digits.

    Raises:
        TypeError: ``params`` holds a value that is not JSON (never from a JSON decoder).
    """
    salient = {k: _normalize(v) for k, v in (params or {}).items() if k not in _UNSALIENT_PARAMS}
    canonical = _digest_json({"method": method, "params": salient})
    return hashlib.sha256(canonical).hexdigest()


# --------------------------------------------------------------------------------------------
# Seal / open


def _bind(mac: _Mac, label: bytes, value: str) -> bytes:
    return mac.digest(label + value.encode("utf-8", "surrogatepass"))[:_BIND_LEN]


_TO_URLSAFE: Final = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE: Final = bytes.maketrans(b"-_", b"+/")


def _b64encode(raw: bytes) -> str:
    """base64url without padding (:func:`base64.urlsafe_b64encode`, its steps inline)."""
    return binascii.b2a_base64(raw, newline=False).translate(_TO_URLSAFE).rstrip(b"=").decode()


def _b64decode(text: str) -> bytes:
    """:func:`base64.urlsafe_b64decode` of ASCII ``text`` padded, its steps inline: characters
    outside the alphabet are skipped (see the canonical check in :func:`open_token`).

    Raises:
        binascii.Error: not base64.
    """
    padded = text + "=" * (-len(text) % 4)
    return binascii.a2b_base64(padded.encode("ascii").translate(_FROM_URLSAFE))


def _token_chars(raw_len: int) -> int:
    return (raw_len * 4 + 2) // 3


def seal(
    payload: dict[str, Any],
    *,
    principal: str,
    request_digest: str,
    now: float,
    ttl: float,
    keyring: KeyRing,
    max_chars: int = MAX_TOKEN_CHARS,
) -> str:
    """Seal ``payload`` into a URL-safe ``requestState`` token.

    Args:
        payload: A JSON object with string keys (it comes back from :func:`open_token` equal
            after a JSON round trip: tuples become lists).
        principal: The authenticated principal the token is for (e.g. the OAuth ``sub``).
        request_digest: :func:`request_digest` of the originating request.
        now: The current time on the caller's clock, in seconds (sealed as the issue time).
        ttl: Lifetime in seconds (> 0).
        keyring: Seals with ``keyring.current_kid``.
        max_chars: Size limit of the token.

    Returns:
        The token: base64url text without padding.

    Raises:
        StateTokenTooLarge: The token would exceed ``max_chars``.
        ValueError: ``now``/``ttl`` are not finite or ``ttl <= 0``; ``payload`` holds
            NaN/Infinity or a lone surrogate.
        TypeError: ``payload`` is not a dict or holds a value that is not JSON.
    """
    if not isinstance(payload, dict):
        raise TypeError("payload must be a dict")
    try:
        expires = now + ttl
        finite = math.isfinite(now) and math.isfinite(ttl) and math.isfinite(expires)
    except OverflowError:  # an int beyond any double
        finite = False
    if not (finite and ttl > 0):
        raise ValueError("now and ttl must be finite, ttl > 0")
    if not expires > now:
        raise ValueError("ttl is too small to move the expiry past now")
    kid = keyring.current_kid
    keys = keyring._keys(kid)
    assert keys is not None
    body = _PAYLOAD(payload).encode()
    kid_bytes = kid.encode("ascii")
    raw_len = (
        2 + len(kid_bytes) + _TIMES.size + _NONCE_LEN + _AEAD_TAG_LEN + 2 * _BIND_LEN + len(body)
    )
    if _token_chars(raw_len) > max_chars:
        raise StateTokenTooLarge(_token_chars(raw_len), max_chars)
    header = bytes((TOKEN_VERSION, len(kid_bytes))) + kid_bytes + _TIMES.pack(now, expires)
    plaintext = (
        _bind(keys.bind, _LABEL_PRINCIPAL, principal)
        + _bind(keys.bind, _LABEL_REQUEST, request_digest)
        + body
    )
    nonce = keys.nonce.digest(header + plaintext)[:_NONCE_LEN]
    return _b64encode(header + nonce + keys.aead.encrypt(nonce, plaintext, header))


def open_token(
    token: str,
    *,
    principal: str,
    request_digest: str,
    now: float,
    keyring: KeyRing,
    max_chars: int = MAX_TOKEN_CHARS,
    max_skew: float = DEFAULT_MAX_SKEW_S,
) -> dict[str, Any]:
    """Verify and open a ``requestState`` token sealed by :func:`seal`.

    Args:
        token: The token as the client sent it (attacker-controlled).
        principal: The authenticated principal of the retrying request.
        request_digest: :func:`request_digest` of the retrying request.
        now: The current time on the caller's clock, in seconds (not finite: refused as
            ``expired``).
        keyring: Any key of the ring may have sealed the token.
        max_chars: Size limit, checked before anything else.
        max_skew: How far, in seconds, the token's issue time may lie ahead of ``now`` (the
            sealer's clock running ahead of this one).

    Returns:
        The payload.

    Raises:
        StateTokenTooLarge: ``reason == "too_large"``.
        StateTokenMalformed: ``reason == "malformed"`` (not text, not canonical base64url,
            truncated, unknown version).
        StateTokenUnknownKey: ``reason == "unknown_key"``.
        StateTokenBadSignature: ``reason == "bad_signature"``.
        StateTokenExpired: ``reason == "expired"`` (``now`` at or past the expiry).
        StateTokenNotYetValid: ``reason == "not_yet_valid"`` (issued after ``now + max_skew``).
        StateTokenWrongPrincipal: ``reason == "wrong_principal"``.
        StateTokenRequestMismatch: ``reason == "request_mismatch"``.
        ValueError: ``max_skew`` is negative or not finite (a caller bug, not a token's).
    """
    if not (math.isfinite(max_skew) and max_skew >= 0):
        raise ValueError("max_skew must be finite and >= 0")
    if not isinstance(token, str):
        raise StateTokenMalformed("not a string")
    if len(token) > max_chars:
        raise StateTokenTooLarge(len(token), max_chars)
    if not token.isascii():
        raise StateTokenMalformed("not base64url")
    try:
        raw = _b64decode(token)
    except binascii.Error:
        raise StateTokenMalformed("not base64url") from None
    # The decoder skips foreign characters and ignores trailing bits: insist on the one text.
    if _b64encode(raw) != token:
        raise StateTokenMalformed("not canonical base64url")
    if len(raw) < _MIN_RAW:
        raise StateTokenMalformed("truncated")
    if raw[0] != TOKEN_VERSION:  # the earlier layouts included: see the module docstring
        raise StateTokenMalformed("unknown version")
    kid_len = raw[1]
    if not 1 <= kid_len <= _MAX_KID_LEN or len(raw) < _MIN_RAW - 1 + kid_len:
        raise StateTokenMalformed("bad key id length")
    head_end = 2 + kid_len + _TIMES.size
    try:
        kid = raw[2 : 2 + kid_len].decode("ascii")
    except UnicodeDecodeError:
        raise StateTokenMalformed("bad key id") from None
    keys = keyring._keys(kid)
    if keys is None:
        raise StateTokenUnknownKey()
    header = raw[:head_end]
    nonce = raw[head_end : head_end + _NONCE_LEN]
    try:
        plaintext = keys.aead.decrypt(nonce, raw[head_end + _NONCE_LEN :], header)
    except InvalidTag:
        raise StateTokenBadSignature() from None
    # Authentic from here on.
    issued, expires = _TIMES.unpack_from(raw, 2 + kid_len)
    try:
        now_finite = math.isfinite(now)
    except OverflowError:  # an int beyond any double
        now_finite = False
    if not (now_finite and now < expires):  # fail closed on a NaN or infinite clock
        raise StateTokenExpired(expires)
    if issued - max_skew > now:
        raise StateTokenNotYetValid(issued)
    if not hmac.compare_digest(
        plaintext[:_BIND_LEN], _bind(keys.bind, _LABEL_PRINCIPAL, principal)
    ):
        raise StateTokenWrongPrincipal()
    if not hmac.compare_digest(
        plaintext[_BIND_LEN : 2 * _BIND_LEN], _bind(keys.bind, _LABEL_REQUEST, request_digest)
    ):
        raise StateTokenRequestMismatch()
    try:
        payload = json.loads(plaintext[2 * _BIND_LEN :].decode())
    except ValueError:  # only a key compromise or a bug could get here (UnicodeError too)
        raise StateTokenMalformed("payload") from None
    if not isinstance(payload, dict):
        raise StateTokenMalformed("payload")
    return payload
