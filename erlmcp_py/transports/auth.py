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
  ``error="invalid_token"`` when a token was sent), so the client can find the issuer.
* **Verification.** Tokens are JWTs checked with PyJWT (with ``cryptography`` for RSA, EC and
  EdDSA keys: the most used, smallest-surface JOSE library for verifying, and ``cryptography``
  is already a dependency): the signature against the issuer's JWKS (fetched over HTTP on a
  worker thread and cached; a key id not in the cache fetches again, at most once per
  ``jwks_refetch_s``, so that a rotation at the issuer is picked up), ``exp`` and ``nbf``
  with a small leeway, ``iss`` equal to the issuer, ``aud`` naming this resource (RFC 8707:
  a token minted for another resource is refused), and a ``sub``. Only asymmetric
  algorithms are accepted.
* **Opaque tokens** (RFC 7662). A token that is not a JWT is sent to the issuer's
  introspection endpoint, when one is configured, and accepted only if the answer says it is
  active, for this issuer and this resource, and not expired; its ``sub`` and ``scope`` then
  count as a JWT's.
* **Scopes.** ``required_scopes`` must all be in the token's ``scope`` (or ``scp``), and a
  ``tools/call`` of a tool listed in ``tool_scopes`` needs that tool's scopes too; a token
  without them is answered 403 with ``error="insufficient_scope"`` and the scopes needed.
* **Principal.** The token's issuer and subject name the principal
  (``sub:<sub>@<issuer>``): it keys the fair limits, binds ``requestState`` and sessions
  (another principal's session id is unknown to it), and is the tenant of 2026-07-28 calls.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import jwt
import trio

__all__ = [
    "ALGORITHMS",
    "AuthConfig",
    "AuthRefused",
    "BearerVerifier",
    "Subject",
    "metadata_paths",
]

#: Signature algorithms accepted (asymmetric only: a shared secret would let any holder mint).
ALGORITHMS: Final = (
    *("RS256", "RS384", "RS512"),
    *("PS256", "PS384", "PS512"),
    *("ES256", "ES384", "EdDSA"),
)


@dataclass(frozen=True, slots=True)
class AuthConfig:
    """Who issues the tokens this server accepts, and for which resource.

    Attributes:
        issuer: The authorization server's issuer identifier (the token's ``iss``).
        resource: This MCP server's canonical URL, e.g. ``https://mcp.example.com/mcp``: the
            ``aud`` a token must name (RFC 8707) and the metadata's ``resource``.
        jwks_url: Where the issuer publishes its signing keys (JSON Web Key Set).
        required_scopes: Scopes every request needs (403 ``insufficient_scope`` otherwise).
        tool_scopes: Scopes a ``tools/call`` of a tool needs, by tool name, on top of
            ``required_scopes`` (403 ``insufficient_scope`` otherwise).
        scopes_supported: Scopes listed in the metadata (default: ``required_scopes``).
        leeway_s: Clock skew tolerated on ``exp`` and ``nbf``.
        jwks_cache_s: How long fetched keys are kept.
        jwks_refetch_s: Shortest time between two fetches for a key id not in the cache (a
            stream of made-up key ids cannot make the server hammer the issuer).
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
    introspection_url: str | None = None
    introspection_client: tuple[str, str] | None = None

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
        self._keys = jwt.PyJWKClient(
            config.jwks_url,
            cache_keys=True,
            lifespan=int(config.jwks_cache_s),
            timeout=5,
            cooldown_duration=config.jwks_refetch_s,
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

    async def verify(self, authorization: str | None) -> Subject:
        """Verify an ``Authorization`` header value.

        Raises:
            AuthRefused: 401 (no token, or one that does not verify) or 403 (scopes missing).
        """
        if authorization is None:
            raise self._refuse("Unauthorized: a bearer token is required", error=None)
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise self._refuse("Unauthorized: a bearer token is required", error=None)
        if token.count(".") != 2:  # not a JWT: an opaque token, for the issuer to judge
            return self._subject(await self._introspect(token))
        try:
            key = await trio.to_thread.run_sync(self._keys.get_signing_key_from_jwt, token)
            claims: Mapping[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=list(ALGORITHMS),
                audience=self.config.resource,
                issuer=self.config.issuer,
                leeway=self.config.leeway_s,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWKClientConnectionError:
            raise AuthRefused(
                503, self.challenge(), "Service Unavailable: the issuer's keys cannot be fetched"
            ) from None
        except (jwt.PyJWTError, json.JSONDecodeError, ValueError) as exc:
            raise self._refuse(f"Unauthorized: {type(exc).__name__}") from None
        return self._subject(claims)

    async def _introspect(self, token: str) -> Mapping[str, Any]:
        """The issuer's verdict on an opaque token (RFC 7662), checked as a JWT's claims are:
        active, this issuer, this resource in ``aud``, not expired."""
        url = self.config.introspection_url
        if url is None:
            raise self._refuse("Unauthorized: not a JWT")
        try:
            claims = await trio.to_thread.run_sync(_post_introspection, url, token, self.config)
        except (OSError, ValueError):
            raise AuthRefused(
                503, self.challenge(), "Service Unavailable: token introspection failed"
            ) from None
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        expires = claims.get("exp")
        if (
            claims.get("active") is not True
            or claims.get("iss", self.config.issuer) != self.config.issuer
            or self.config.resource not in audiences
            or (isinstance(expires, int | float) and expires + self.config.leeway_s < time.time())
        ):
            raise self._refuse("Unauthorized: the token is not active for this resource")
        return claims

    def _subject(self, claims: Mapping[str, Any]) -> Subject:
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise self._refuse("Unauthorized: the token names no subject")
        scopes = _scopes(claims)
        missing = [s for s in self.config.required_scopes if s not in scopes]
        if missing:
            challenge = self.challenge(
                "insufficient_scope", scope=" ".join(self.config.required_scopes)
            )
            raise AuthRefused(403, challenge, "Forbidden: insufficient scope")
        return Subject(f"sub:{subject[:256]}@{self.config.issuer}", scopes)

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


def _post_introspection(url: str, token: str, config: AuthConfig) -> Mapping[str, Any]:
    """POST ``token`` to the introspection endpoint (blocking: run it on a worker thread)."""
    import urllib.request
    from base64 import b64encode
    from urllib.parse import urlencode

    headers = {
        "content-type": "application/x-www-form-urlencoded",
        "accept": "application/json",
    }
    if config.introspection_client is not None:
        client_id, secret = config.introspection_client
        basic = b64encode(f"{client_id}:{secret}".encode()).decode("ascii")
        headers["authorization"] = f"Basic {basic}"
    body = urlencode({"token": token, "token_type_hint": "access_token"}).encode()
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        claims = json.loads(response.read(1 << 16))
    return claims if isinstance(claims, dict) else {}  # not an object: not active


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    raw = claims.get("scope", claims.get("scp"))
    if isinstance(raw, str):
        return frozenset(raw.split())
    if isinstance(raw, list):
        return frozenset(s for s in raw if isinstance(s, str))
    return frozenset()
