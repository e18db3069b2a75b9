"""Bearer-token authentication of the HTTP transport: an OAuth 2.1 resource server.

Theory of operation
-------------------
Per the MCP authorization specification (2025-06-18, 2025-11-25), the server is an OAuth 2.1
*resource server*: an authorization server (the issuer) gives clients access tokens, and every
request to the MCP endpoint carries one as ``Authorization: Bearer <token>``.

* **Discovery** (RFC 9728). ``GET /.well-known/oauth-protected-resource`` (and the same with
  the endpoint's path appended, ``…/oauth-protected-resource/mcp``) answers the protected
  resource metadata: this resource's identifier, its authorization server, the scopes and
  that tokens travel in the header.
* **Challenge.** A request without a token, or with one that does not verify, is answered
  401 with ``WWW-Authenticate: Bearer resource_metadata="<metadata URL>"`` (plus
  ``error="invalid_token"`` when a token was sent), so the client can find the issuer. A
  request with two ``Authorization`` fields is answered 400 ``error="invalid_request"``
  (see :meth:`BearerVerifier.verify`). Whatever a token holds, a refusal is one of these
  answers, never a server error.
* **The issuer's URLs** (its identifier, its JWKS, its introspection endpoint) are ``https``,
  or ``http`` to a loopback host (:func:`check_issuer_url`; :class:`AuthConfig` refuses others).
* **Verification.** Tokens are JWTs checked with PyJWT (with ``cryptography`` for RSA, EC and
  EdDSA keys: the most used, smallest-surface JOSE library for verifying, and ``cryptography``
  is already a dependency). The header's ``alg`` must be one of :data:`ALGORITHMS` (asymmetric
  only) and fit the key its ``kid`` names (type, curve, and the JWK's own ``alg`` if it has
  one); the signature is checked against the issuer's JWKS, kept by
  :mod:`~erlmcp_py.transports._jwks` (fetched on trio's own sockets, single flight, trusted
  for ``jwks_cache_s``, at most one fetch per ``jwks_refetch_s`` whether the issuer answers
  or fails; a token whose key is cached never waits for a fetch). Then ``exp`` and ``nbf``
  with a small leeway, ``iss`` equal to the issuer, ``aud`` naming this resource (RFC 8707: a
  token minted for another resource is refused), and a ``sub`` (a string of at most
  :data:`MAX_SUBJECT` characters). RSA keys shorter than 2048 bits verify nothing.
* **Opaque tokens** (RFC 7662). A token that is not a JWT is sent to the issuer's
  introspection endpoint, when one is configured, and accepted only if the answer says it is
  active, for this issuer and this resource, and not expired; its ``sub`` and ``scope`` then
  count as a JWT's.
* **Scopes.** ``required_scopes`` must all be in the token's ``scope`` (else ``scp``; a
  space-separated string or a list of strings, any other shape is refused), and a
  ``tools/call`` of a tool
  listed in ``tool_scopes`` needs that tool's scopes too; a token without them is answered
  403 with ``error="insufficient_scope"`` and the scopes needed.
* **Principal.** The token's whole subject and the issuer name the principal
  (``sub:<sub>@<issuer>``; the issuer has no ``@``, so the two parts are told apart from the
  right and two issuers' subjects never meet): it keys the fair limits, binds
  ``requestState`` and sessions (another principal's session id is unknown to it), and is the
  tenant of 2026-07-28 calls. A subject is never shortened: one too long is refused.
"""

from __future__ import annotations

import ipaddress
import re
import time
from base64 import b64encode
from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlencode, urlsplit, urlunsplit

import jwt
import structlog

from erlmcp_py.transports._issuer_http import IssuerUnreachable, fetch_json
from erlmcp_py.transports._jwks import KeySet, KeysUnavailable, SigningKey

__all__ = [
    "ALGORITHMS",
    "MAX_SUBJECT",
    "AuthConfig",
    "AuthRefused",
    "BearerVerifier",
    "Subject",
    "check_issuer_url",
    "metadata_paths",
]

log = structlog.get_logger("erlmcp.auth")

#: Signature algorithms accepted (asymmetric only: a shared secret would let any holder mint).
ALGORITHMS: Final = (
    *("RS256", "RS384", "RS512"),
    *("PS256", "PS384", "PS512"),
    *("ES256", "ES384", "EdDSA"),
)

#: Longest ``sub`` accepted, in characters. The subject is the principal whole (it keys limits,
#: sessions, ``requestState``, tenants and log lines), never a prefix of it.
MAX_SUBJECT: Final = 1024

_MAX_KID: Final = 256  # a key id longer than this names no key of any issuer
_MAX_INTROSPECTION_BYTES: Final = 64 * 1024
#: RFC 6750 section 2.1: the characters of a bearer token.
_B64TOKEN: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_issuer_url(url: str) -> None:
    """Refuse an issuer, JWKS or introspection URL this server would not trust.

    Raises:
        ValueError: not ``https`` (nor ``http`` to a loopback host: ``localhost``,
            ``127.0.0.0/8``, ``::1``), no host, an ``@`` (credentials belong elsewhere; the
            message then does not repeat the URL), a fragment, white space or a malformed
            port; the message says which, in one line.
    """
    if "@" in url:
        raise ValueError("an issuer URL has no '@' (no credentials in it)")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a malformed port raises here)
    except ValueError as exc:
        raise ValueError(f"{url!r} is not a URL ({exc})") from None
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not host:
        raise ValueError(f"{url!r} is not an https URL with a host")
    if parts.scheme == "http" and not _is_loopback(host):
        raise ValueError(f"{url!r}: http is accepted only to a loopback host; use https")
    if parts.fragment or any(c.isspace() for c in url):
        raise ValueError(f"{url!r}: an issuer URL has no fragment and no white space")


@dataclass(frozen=True, slots=True)
class AuthConfig:
    """Who issues the tokens this server accepts, and for which resource.

    Attributes:
        issuer: The authorization server's issuer identifier (the token's ``iss``).
        resource: This MCP server's canonical URL, e.g. ``https://mcp.example.com/mcp``: the
            ``aud`` a token must name (RFC 8707) and the metadata's ``resource``.
        jwks_url: Where the issuer publishes its signing keys (JSON Web Key Set).
        (The issuer, JWKS and introspection URLs must pass :func:`check_issuer_url`.)
        required_scopes: Scopes every request needs (403 ``insufficient_scope`` otherwise).
        tool_scopes: Scopes a ``tools/call`` of a tool needs, by tool name, on top of
            ``required_scopes`` (403 ``insufficient_scope`` otherwise).
        scopes_supported: Scopes listed in the metadata (default: ``required_scopes``).
        leeway_s: Clock skew tolerated on ``exp`` and ``nbf``.
        jwks_cache_s: How long a fetched key set is trusted (default 5 minutes): past it, its
            keys verify again only once a fetch succeeds, so a key the issuer withdraws or
            replaces stops verifying at the latest this long after.
        jwks_refetch_s: Shortest time between the starts of two JWKS fetches, whether the
            issuer answered or failed (a stream of made-up key ids, or forged signatures,
            cannot make the server hammer the issuer); more than ``jwks_cache_s`` counts as
            ``jwks_cache_s``.
        issuer_timeout_s: Longest time one exchange with the issuer (a JWKS fetch, an
            introspection) may take.
        introspection_url: The issuer's token introspection endpoint (RFC 7662), for tokens
            that are not JWTs (opaque ones); ``None``: such tokens are refused.
        introspection_client: ``(client_id, client_secret)`` this server authenticates with
            at the introspection endpoint (HTTP Basic), if it needs to.
    """

    issuer: str
    resource: str
    jwks_url: str
    required_scopes: tuple[str, ...] = ()
    tool_scopes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    scopes_supported: tuple[str, ...] = ()
    leeway_s: float = 30.0
    jwks_cache_s: float = 300.0
    jwks_refetch_s: float = 30.0
    issuer_timeout_s: float = 5.0
    introspection_url: str | None = None
    introspection_client: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        for name in ("issuer", "jwks_url", "introspection_url"):
            url = getattr(self, name)
            if url is not None:
                try:
                    check_issuer_url(url)
                except ValueError as exc:
                    raise ValueError(f"{name}: {exc}") from None
        if not self.jwks_cache_s > 0 or not self.issuer_timeout_s > 0:
            raise ValueError("jwks_cache_s and issuer_timeout_s must be positive")
        if not self.jwks_refetch_s >= 0 or not self.leeway_s >= 0:
            raise ValueError("jwks_refetch_s and leeway_s must not be negative")

    @property
    def metadata_url(self) -> str:
        """The URL of this resource's metadata (RFC 9728: the well-known path, then the
        resource's own path)."""
        parts = urlsplit(self.resource)
        path = "/.well-known/oauth-protected-resource" + parts.path.rstrip("/")
        return urlunsplit((parts.scheme, parts.netloc, path, "", ""))

    def metadata(self) -> dict[str, Any]:
        """The protected resource metadata document (RFC 9728)."""
        out: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
        }
        per_tool = [scope for scopes in self.tool_scopes.values() for scope in scopes]
        scopes = self.scopes_supported or tuple(dict.fromkeys([*self.required_scopes, *per_tool]))
        if scopes:
            out["scopes_supported"] = list(scopes)
        return out


def metadata_paths(config: AuthConfig) -> frozenset[str]:
    """The request paths answered with the metadata."""
    return frozenset({"/.well-known/oauth-protected-resource", urlsplit(config.metadata_url).path})


@dataclass(frozen=True, slots=True)
class Subject:
    """A verified token's holder.

    Attributes:
        principal: ``sub:<sub>@<issuer>``.
        scopes: The token's scopes.
    """

    principal: str
    scopes: frozenset[str]


class AuthRefused(Exception):
    """A request the resource server refuses: its status and ``WWW-Authenticate`` value."""

    def __init__(self, status: int, challenge: str, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.challenge = challenge
        self.description = description


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class BearerVerifier:
    """Checks ``Authorization`` headers against one issuer (see the module docstring).

    Args:
        config: The issuer and this resource.
    """

    def __init__(self, config: AuthConfig) -> None:
        self.config = config
        self._keys = KeySet(
            config.jwks_url,
            lifetime_s=config.jwks_cache_s,
            cooldown_s=min(config.jwks_refetch_s, config.jwks_cache_s),
            timeout_s=config.issuer_timeout_s,
        )

    def challenge(self, error: str | None = None, **params: str) -> str:
        """A ``WWW-Authenticate`` value pointing at the metadata."""
        parts = [f"resource_metadata={_quoted(self.config.metadata_url)}"]
        if error is not None:
            parts.insert(0, f"error={_quoted(error)}")
        parts += [f"{key}={_quoted(value)}" for key, value in params.items()]
        return "Bearer " + ", ".join(parts)

    def _refuse(self, description: str, error: str | None = "invalid_token") -> AuthRefused:
        return AuthRefused(401, self.challenge(error), description)

    def _unavailable(self, description: str) -> AuthRefused:
        return AuthRefused(503, self.challenge(), f"Service Unavailable: {description}")

    async def verify(self, headers: Iterable[tuple[bytes, bytes]]) -> Subject:
        """Verify a request's bearer token.

        Args:
            headers: The request's header fields, as ASGI gives them (name, value).

        Raises:
            AuthRefused: 401 (no token, or one that does not verify), 400 (two
                ``Authorization`` fields), 403 (scopes missing), or 503 (the issuer cannot
                be asked now).
        """
        fields = [value for name, value in headers if bytes(name).lower() == b"authorization"]
        if len(fields) > 1:
            # Authorization is a singleton field (RFC 9110 section 11.6.2: one set of
            # credentials), so two fields are a malformed request, not two chances: RFC 6750
            # section 3.1 answers one carrying more than one token 400 invalid_request.
            raise AuthRefused(
                400,
                self.challenge("invalid_request"),
                "Bad Request: more than one Authorization header",
            )
        if not fields:
            raise self._refuse("Unauthorized: a bearer token is required", error=None)
        scheme, _, token = bytes(fields[0]).decode("latin-1").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise self._refuse("Unauthorized: a bearer token is required", error=None)
        if not _B64TOKEN.fullmatch(token):
            raise self._refuse("Unauthorized: the token has characters no token has")
        if token.count(".") != 2:  # not a JWT: an opaque token, for the issuer to judge
            return self._subject(await self._introspect(token))
        return self._subject(await self._verify_jwt(token))

    async def _verify_jwt(self, token: str) -> Mapping[str, Any]:
        """The claims of a JWT whose header, signature and claims verify."""
        try:
            header = jwt.get_unverified_header(token)
        except (jwt.PyJWTError, RecursionError):
            raise self._refuse("Unauthorized: the token is malformed") from None
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg not in ALGORITHMS:
            raise self._refuse("Unauthorized: the token's algorithm is not accepted")
        if kid is not None and not (isinstance(kid, str) and 0 < len(kid) <= _MAX_KID):
            raise self._refuse("Unauthorized: the token's key id is malformed")
        try:
            keys = await self._keys.keys_for(kid)
            try:
                return self._decode(token, alg, keys)
            except jwt.InvalidSignatureError:
                # The issuer may have replaced the key under this id: a fetch (in its
                # cooldown, none) says.
                renewed = await self._keys.keys_for(kid, not_these=keys)
                if renewed == keys:
                    raise
                return self._decode(token, alg, renewed)
        except KeysUnavailable:
            raise self._unavailable("the issuer's keys cannot be fetched") from None
        except (jwt.PyJWTError, RecursionError) as exc:
            raise self._refuse(f"Unauthorized: {type(exc).__name__}") from None

    def _decode(self, token: str, alg: str, keys: tuple[SigningKey, ...]) -> Mapping[str, Any]:
        """The claims of ``token`` if one of ``keys`` verifies its signature by ``alg``."""
        if not keys:
            raise self._refuse("Unauthorized: the issuer has no key of the token's key id")
        fitting = [key for key in keys if key.fits(alg)]
        if not fitting:
            raise self._refuse("Unauthorized: the token's algorithm does not fit its key")
        for key in fitting[:-1]:  # several keys under one id (RFC 7517 allows it)
            with suppress(jwt.InvalidSignatureError):
                return self._claims(token, alg, key)
        return self._claims(token, alg, fitting[-1])

    def _claims(self, token: str, alg: str, key: SigningKey) -> Mapping[str, Any]:
        claims: Mapping[str, Any] = jwt.decode(
            token,
            key.key,
            algorithms=[alg],
            audience=self.config.resource,
            issuer=self.config.issuer,
            leeway=self.config.leeway_s,
            options={"require": ["exp", "iss", "aud", "sub"], "enforce_minimum_key_length": True},
        )
        return claims

    async def _introspect(self, token: str) -> Mapping[str, Any]:
        """The issuer's verdict on an opaque token (RFC 7662), checked as a JWT's claims are:
        active, this issuer, this resource in ``aud``, not expired."""
        url = self.config.introspection_url
        if url is None:
            raise self._refuse("Unauthorized: not a JWT")
        headers = [
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Accept", "application/json"),
        ]
        if self.config.introspection_client is not None:
            client_id, secret = self.config.introspection_client
            basic = b64encode(f"{client_id}:{secret}".encode()).decode("ascii")
            headers.append(("Authorization", f"Basic {basic}"))
        body = urlencode({"token": token, "token_type_hint": "access_token"}).encode()
        try:
            claims = await fetch_json(
                "POST",
                url,
                headers=headers,
                body=body,
                timeout_s=self.config.issuer_timeout_s,
                max_bytes=_MAX_INTROSPECTION_BYTES,
            )
        except IssuerUnreachable as exc:
            log.warning("introspection_failed", url=url, error=str(exc)[:200])
            raise self._unavailable("token introspection failed") from None
        if not isinstance(claims, dict):
            claims = {}  # not an object: not active
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        expires = claims.get("exp")
        if expires is not None and (
            not isinstance(expires, int | float) or isinstance(expires, bool)
        ):
            raise self._refuse("Unauthorized: the introspected exp is not a number")
        if (
            claims.get("active") is not True
            or claims.get("iss", self.config.issuer) != self.config.issuer
            or self.config.resource not in audiences
            or (expires is not None and expires + self.config.leeway_s < time.time())
        ):
            raise self._refuse("Unauthorized: the token is not active for this resource")
        return claims

    def _subject(self, claims: Mapping[str, Any]) -> Subject:
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise self._refuse("Unauthorized: the token names no subject")
        if len(subject) > MAX_SUBJECT:
            raise self._refuse(f"Unauthorized: the subject is over {MAX_SUBJECT} characters")
        scopes = _scopes(claims)
        if scopes is None:
            raise self._refuse("Unauthorized: the token's scope is neither a string nor a list")
        missing = [s for s in self.config.required_scopes if s not in scopes]
        if missing:
            challenge = self.challenge(
                "insufficient_scope", scope=" ".join(self.config.required_scopes)
            )
            raise AuthRefused(403, challenge, "Forbidden: insufficient scope")
        return Subject(f"sub:{subject}@{self.config.issuer}", scopes)

    def check_tool(self, subject: Subject, tool: str) -> None:
        """Refuse a ``tools/call`` of ``tool`` whose scopes ``subject`` lacks.

        Raises:
            AuthRefused: 403 ``insufficient_scope``, naming the scopes the tool needs.
        """
        needed = self.config.tool_scopes.get(tool, ())
        if any(s not in subject.scopes for s in needed):
            scope = " ".join(dict.fromkeys([*self.config.required_scopes, *needed]))
            challenge = self.challenge("insufficient_scope", scope=scope)
            raise AuthRefused(403, challenge, "Forbidden: insufficient scope for this tool")


def _scopes(claims: Mapping[str, Any]) -> frozenset[str] | None:
    """The token's scopes: ``scope``, else ``scp``, each a space-separated string or a list of
    strings (issuers write both); ``None``: the claim is there in another shape."""
    raw = claims["scope"] if "scope" in claims else claims.get("scp")
    if raw is None:
        return frozenset()
    if isinstance(raw, str):
        return frozenset(raw.split())
    if isinstance(raw, list) and all(isinstance(s, str) for s in raw):
        return frozenset(raw)
    return None
