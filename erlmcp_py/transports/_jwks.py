"""The issuer's signing keys (its JSON Web Key Set), fetched over HTTP and kept for a while.

Theory of operation
-------------------
* **Lifetime.** A fetched set is trusted for ``lifetime_s``; after that none of its keys is
  used until a fetch succeeds. So a key the issuer withdrew, or replaced under the same key id
  (``kid``), stops verifying at the latest ``lifetime_s`` after the issuer's change, and at the
  first fetch after it when one comes sooner. A failed fetch keeps the set it had (with its
  own age): it neither drops nor extends it.
* **Fetches.** One at a time (single flight), and at most one *starts* per ``cooldown_s``,
  whether the last one succeeded or failed: a failing issuer is asked once per cooldown, never
  once per request. A fetch is wanted when the set is missing or past its lifetime, when a
  token names a key id the set lacks (the issuer may have added a key), and when a token's
  signature fails under the cached key of its id (the issuer may have replaced that key).
* **Waiting.** A token whose key is in the set within its lifetime is answered without any
  wait. One that wants a fetch waits for the fetch under way (bounded by the fetch's own
  timeout); during the cooldown it gets, at once, the answer the set it has gives.
* The fetch runs shielded from the cancellation of the request that started it: the other
  requests waiting for it depend on it, and its timeout bounds it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

import jwt
import structlog
import trio
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

from erlmcp_py.transports._issuer_http import IssuerUnreachable, fetch_json

__all__ = ["KeySet", "KeysUnavailable", "SigningKey"]

log = structlog.get_logger("erlmcp.auth")

#: A JWKS larger than this is a failed fetch (the largest public ones, with certificate
#: chains, are tens of KiB).
MAX_JWKS_BYTES: Final = 512 * 1024

PublicKey: TypeAlias = (
    rsa.RSAPublicKey | ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey | ed448.Ed448PublicKey
)

_CURVES: Final[Mapping[str, type[ec.EllipticCurve]]] = {
    "ES256": ec.SECP256R1,
    "ES384": ec.SECP384R1,
}


@dataclass(frozen=True, slots=True)
class SigningKey:
    """One public key of the set.

    Attributes:
        kid: Its key id (``None``: the JWK has none).
        alg: The one algorithm the JWK allows (its ``alg``), or ``None``: any that fits the
            key's type.
        key: The key itself.
        jwk: The JWK's canonical JSON: two keys are the same key when it is the same.
    """

    kid: str | None
    alg: str | None
    key: PublicKey = field(compare=False)
    jwk: str

    def fits(self, alg: str) -> bool:
        """Whether a signature by ``alg`` can be checked with this key: its type and curve
        are the algorithm's, and the JWK, if it names an algorithm, names this one."""
        if self.alg is not None and self.alg != alg:
            return False
        key = self.key
        if alg[:2] in ("RS", "PS"):
            return isinstance(key, rsa.RSAPublicKey)
        if alg in _CURVES:
            return isinstance(key, ec.EllipticCurvePublicKey) and isinstance(
                key.curve, _CURVES[alg]
            )
        if alg == "EdDSA":
            return isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey)
        return False


class KeysUnavailable(Exception):
    """No set within its lifetime, and none could be fetched now."""


def parse_jwks(document: Any) -> dict[str | None, tuple[SigningKey, ...]]:
    """The signature keys of a JWKS document (parsed JSON), by key id.

    Keys for another use (``use`` other than ``sig``), of a type or curve this server does
    not verify with, private or symmetric keys are left out.

    Raises:
        TypeError: the document is not a JWKS (not an object with a ``keys`` list).
    """
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise TypeError("not a JSON Web Key Set")
    found: dict[str | None, list[SigningKey]] = {}
    for jwk in document["keys"]:
        key = _signing_key(jwk)
        if key is not None:
            found.setdefault(key.kid, []).append(key)
    return {kid: tuple(keys) for kid, keys in found.items()}


def _signing_key(jwk: Any) -> SigningKey | None:
    if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
        return None
    kid, alg = jwk.get("kid"), jwk.get("alg")
    if not isinstance(kid, str | None) or not isinstance(alg, str | None):
        return None
    try:
        parsed = jwt.PyJWK(jwk).key
    except (jwt.PyJWTError, ValueError, TypeError, KeyError):
        return None  # an unsupported or broken key verifies nothing
    if not isinstance(parsed, PublicKey):  # a private or symmetric key: never a signer's
        return None
    return SigningKey(kid, alg, parsed, json.dumps(jwk, sort_keys=True))


class KeySet:
    """The keys at ``url`` (see the module docstring).

    Args:
        url: The JWKS URL (``https``, or ``http`` to a loopback host).
        lifetime_s: How long a fetched set is trusted.
        cooldown_s: Shortest time between the starts of two fetches.
        timeout_s: Longest time one fetch takes.
    """

    def __init__(self, url: str, *, lifetime_s: float, cooldown_s: float, timeout_s: float) -> None:
        self.url = url
        self.lifetime_s = lifetime_s
        self.cooldown_s = cooldown_s
        self.timeout_s = timeout_s
        self._keys: dict[str | None, tuple[SigningKey, ...]] = {}
        self._fetched_at: float | None = None  # when the set in _keys was asked for
        self._attempted_at: float | None = None  # when the last fetch started
        self._under_way: trio.Event | None = None

    def _fresh(self) -> bool:
        return (
            self._fetched_at is not None
            and trio.current_time() < self._fetched_at + self.lifetime_s
        )

    async def keys_for(
        self, kid: str | None, *, not_these: tuple[SigningKey, ...] | None = None
    ) -> tuple[SigningKey, ...]:
        """The keys under ``kid`` (empty: the issuer has none).

        Args:
            kid: The token's key id (``None``: it names none).
            not_these: Keys of ``kid`` a signature just failed with: a fetch is wanted, and
                the answer may be them again when the set has not changed.

        Raises:
            KeysUnavailable: no set within its lifetime, and none could be fetched now.
        """
        if self._fresh():
            found = self._keys.get(kid, ())
            if found and found != not_these:
                return found
        await self._refreshed()
        if not self._fresh():
            raise KeysUnavailable(f"the keys at {self.url} cannot be fetched")
        return self._keys.get(kid, ())

    async def _refreshed(self) -> None:
        """Return once the fetch under way ends, or the one this call may start (not during
        the cooldown: then at once)."""
        if self._under_way is not None:
            with trio.move_on_after(self.timeout_s):
                await self._under_way.wait()
            return
        now = trio.current_time()
        if self._attempted_at is not None and now < self._attempted_at + self.cooldown_s:
            return
        self._attempted_at = now
        self._under_way = done = trio.Event()
        try:
            with trio.CancelScope(shield=True):
                await self._fetch(now)
        finally:
            self._under_way = None
            done.set()

    async def _fetch(self, started: float) -> None:
        try:
            document = await fetch_json(
                "GET",
                self.url,
                headers=[("Accept", "application/json")],
                timeout_s=self.timeout_s,
                max_bytes=MAX_JWKS_BYTES,
            )
            keys = parse_jwks(document)
        except (IssuerUnreachable, TypeError) as exc:
            log.warning("jwks_fetch_failed", url=self.url, error=str(exc)[:200])
            return
        self._keys, self._fetched_at = keys, started
        log.info("jwks_fetched", url=self.url, keys=sum(len(k) for k in keys.values()))
