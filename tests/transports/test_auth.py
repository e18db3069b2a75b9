"""Bearer-token authentication over real sockets: an issuer on 127.0.0.1 serving its JWKS over
HTTP (keys made per test), the MCP server as its resource server, raw HTTP and the official
``mcp`` client sending the token."""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import time
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx2
import jwt
import pytest
import structlog
import trio
import trio.testing
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from hypothesis import HealthCheck, given, settings, strategies as st

from erlmcp_py.app import ConfigError, auth_config, build_parser, load_serve_config
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.mcp.server import Server
from erlmcp_py.transports._server import serve
from erlmcp_py.transports.auth import AuthConfig, AuthRefused, BearerVerifier, Subject
from erlmcp_py.transports.http import HttpConfig, Listening, serve_http
from tests.deploy.support import free_port, serve_command
from tests.transports import test_http_mrtr as mrtr
from tests.transports.test_http import (
    INIT,
    TIMEOUT,
    McpHttp,
    Probe,
    build_server,
    call,
    message,
)

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey


@dataclass
class Issuer:
    """An authorization server's signing side: its keys, served as a JWKS over HTTP.

    Its JWKS endpoint counts the fetches, answers ``jwks_status`` (a failing issuer: 503), and
    while ``hold`` is an unset event, answers only once it is set (a slow issuer, for as long
    as the test wants).
    """

    url: str = ""
    keys: dict[str, PrivateKey] = field(default_factory=dict)
    opaque: dict[str, dict[str, Any]] = field(default_factory=dict)  # token -> its claims
    introspected: list[str] = field(default_factory=list)  # the Authorization headers seen
    fetches: int = 0  # requests for the JWKS
    jwks_status: int = 200
    jwks_body: bytes | None = None  # instead of the JWKS of ``keys``
    junk_keys: list[dict[str, Any]] = field(default_factory=list)  # published before them
    hold: trio.Event | None = None
    held: trio.Event = field(default_factory=trio.Event)  # a fetch waits for ``hold``

    def add_key(self, kid: str, key: PrivateKey | None = None) -> None:
        """``key`` (default: a new EC P-256 key) under ``kid``, replacing one already there."""
        self.keys[kid] = key if key is not None else ec.generate_private_key(ec.SECP256R1())

    def jwks(self) -> dict[str, Any]:
        out = []
        for kid, key in self.keys.items():
            public = key.public_key()
            if isinstance(public, ec.EllipticCurvePublicKey):  # its JWK names its algorithm
                jwk = {**jwt.algorithms.ECAlgorithm.to_jwk(public, as_dict=True), "alg": "ES256"}
            elif isinstance(public, rsa.RSAPublicKey):  # none named: RS* and PS* both fit
                jwk = jwt.algorithms.RSAAlgorithm.to_jwk(public, as_dict=True)
            else:
                jwk = jwt.algorithms.OKPAlgorithm.to_jwk(public, as_dict=True)
            out.append({**jwk, "kid": kid, "use": "sig"})
        return {"keys": [*self.junk_keys, *out]}

    def token(self, audience: str, *, kid: str = "k1", alg: str = "ES256", **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": self.url, "aud": audience, "sub": "alice", "iat": now, "exp": now + 300}
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(body, self.keys[kid], algorithm=alg, headers={"kid": kid})

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["path"] == "/introspect":
            form = b""
            while True:
                message = await receive()
                form += message.get("body", b"")
                if not message.get("more_body"):
                    break
            token = parse_qs(form.decode())["token"][0]
            headers = dict(scope["headers"])
            self.introspected.append(headers.get(b"authorization", b"").decode())
            answer = self.opaque.get(token, {"active": False})
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": json.dumps(answer).encode()})
            return
        status, body = 404, b"{}"
        if scope["path"] == "/jwks":
            self.fetches += 1
            if self.hold is not None:
                self.held.set()
                await self.hold.wait()
            status = self.jwks_status
            body = json.dumps(self.jwks()).encode() if status == 200 else b"{}"
            body = self.jwks_body if self.jwks_body is not None else body
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def issuer() -> AsyncIterator[Issuer]:
    app = Issuer()
    app.add_key("k1")
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(partial(serve, app, "127.0.0.1", 0))
        app.url = binds[0]
        yield app
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def protected(
    iss: Issuer, *, server: Server | None = None, **auth: Any
) -> AsyncIterator[Listening]:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    settings = AuthConfig(issuer=iss.url, resource=resource, jwks_url=f"{iss.url}/jwks", **auth)
    server = server or build_server(Probe())
    async with server.running(), trio.open_nursery() as nursery:
        listening: Listening = await nursery.start(
            partial(serve_http, server, port=port, config=HttpConfig(auth=settings))
        )
        assert listening.url == resource
        yield listening
        nursery.cancel_scope.cancel()


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_the_resource_metadata_names_the_issuer() -> None:
    async with issuer() as iss, protected(iss, required_scopes=("mcp",)) as listening:
        base = listening.url.rsplit("/", 1)[0]
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            for path in (
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
            ):
                answer = await http.get(base + path)
                assert answer.status_code == 200
                assert answer.json() == {
                    "resource": listening.url,
                    "authorization_servers": [iss.url],
                    "bearer_methods_supported": ["header"],
                    "scopes_supported": ["mcp"],
                }


async def test_a_request_without_a_token_is_challenged_with_the_metadata_url() -> None:
    async with issuer() as iss, protected(iss) as listening:
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            answer = await McpHttp(http, listening.url).post(message("initialize", INIT, id=0))
        assert answer.status_code == 401
        base = listening.url.rsplit("/", 1)[0]
        assert answer.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
        )


async def test_a_valid_token_is_served_and_every_bad_one_refused() -> None:
    async with issuer() as iss, protected(iss) as listening:
        aud = listening.url
        other = Issuer(url=iss.url)
        other.add_key("k1")  # the same key id, another key: a forged signature
        bad = {
            "forged": other.token(aud),
            "expired": iss.token(aud, exp=int(time.time()) - 600),
            "not yet valid": iss.token(aud, nbf=int(time.time()) + 600),
            "other audience": iss.token("https://other.example/mcp"),
            "other issuer": iss.token(aud, iss="https://evil.example"),
            "no subject": iss.token(aud, sub=None),
            "shared secret": jwt.encode(
                {"iss": iss.url, "aud": aud, "sub": "x", "exp": int(time.time()) + 60},
                "secret-secret-secret-secret-secret",
                algorithm="HS256",
                headers={"kid": "k1"},
            ),
            "not a jwt": "hello",
        }
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            with trio.fail_after(TIMEOUT):
                good = McpHttp(http, listening.url)
                token = bearer(iss.token(aud))
                response = await http.post(
                    listening.url,
                    content=message("initialize", INIT, id=0),
                    headers={**good.headers(), **token},
                )
                assert response.status_code == 200, response.text
                for why, value in bad.items():
                    refused = await http.post(
                        listening.url,
                        content=message("initialize", INIT, id=0),
                        headers={**good.headers(), **bearer(value)},
                    )
                    assert refused.status_code == 401, why
                    challenge = refused.headers["www-authenticate"]
                    assert challenge.startswith('Bearer error="invalid_token"'), why
        assert listening.transport.refusals["auth_401"] == len(bad)


async def test_missing_scopes_are_403_insufficient_scope() -> None:
    async with (
        issuer() as iss,
        protected(iss, required_scopes=("mcp", "tools")) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        headers = {**McpHttp(http, listening.url).headers()}
        body = message("initialize", INIT, id=0)
        narrow = bearer(iss.token(listening.url, scope="mcp"))
        refused = await http.post(listening.url, content=body, headers={**headers, **narrow})
        assert refused.status_code == 403
        assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
        assert 'scope="mcp tools"' in refused.headers["www-authenticate"]
        wide = bearer(iss.token(listening.url, scope="mcp tools extra"))
        ok = await http.post(listening.url, content=body, headers={**headers, **wide})
        assert ok.status_code == 200


async def test_a_session_answers_only_the_subject_that_opened_it() -> None:
    async with issuer() as iss, protected(iss) as listening:
        alice_token = bearer(iss.token(listening.url))
        mallory_token = bearer(iss.token(listening.url, sub="mallory"))
        async with (
            httpx2.AsyncClient(timeout=TIMEOUT, headers=alice_token) as a,
            httpx2.AsyncClient(timeout=TIMEOUT, headers=mallory_token) as b,
        ):
            alice = McpHttp(a, listening.url)
            await alice.initialize()
            assert (await alice.post(message("ping", id=1))).status_code == 200
            stolen = McpHttp(b, listening.url)
            stolen.session_id = alice.session_id
            answer = await stolen.post(message("ping", id=1))
            assert answer.status_code == 404


async def test_the_subject_is_the_principal_of_stateless_calls() -> None:
    probe = mrtr.Probe()
    async with issuer() as iss, protected(iss, server=mrtr.build_server(probe)) as listening:
        token = bearer(iss.token(listening.url, sub="bob"))
        async with httpx2.AsyncClient(timeout=TIMEOUT, headers=token) as http:
            first = mrtr.ok(await mrtr.StatelessPoster(http, listening.url).call())
            assert first["resultType"] == "input_required"
        assert probe.tenants == [Tenant(user=f"sub:bob@{iss.url}")]
        other = bearer(iss.token(listening.url, sub="eve"))
        async with httpx2.AsyncClient(timeout=TIMEOUT, headers=other) as http:
            key, _ = mrtr.only_request(first)
            retry = await mrtr.StatelessPoster(http, listening.url).call(
                first["requestState"], {key: mrtr.ACCEPT_ADA}
            )
        assert retry.json()["error"]["data"]["reason"] == "wrong_principal"


async def test_a_key_the_issuer_rotates_in_is_fetched() -> None:
    async with (
        issuer() as iss,
        protected(iss, jwks_refetch_s=0) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        headers = McpHttp(http, listening.url).headers()
        body = message("initialize", INIT, id=0)
        first = bearer(iss.token(listening.url))
        assert await http.post(listening.url, content=body, headers={**headers, **first})
        iss.add_key("k2")
        rotated = bearer(iss.token(listening.url, kid="k2"))
        answer = await http.post(listening.url, content=body, headers={**headers, **rotated})
        assert answer.status_code == 200, answer.text


async def test_the_official_mcp_client_sends_its_bearer_token() -> None:
    from mcp import types
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client

    async def answer(_ctx: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    async with issuer() as iss, protected(iss) as listening:
        token = bearer(iss.token(listening.url))
        async with httpx2.AsyncClient(timeout=TIMEOUT, headers=token) as http:
            transport = streamable_http_client(listening.url, http_client=http)
            with trio.fail_after(TIMEOUT):
                async with Client(transport, mode="legacy", elicitation_callback=answer) as sdk:
                    result = await sdk.call_tool("ask", {"what": "name"})
        assert result.content[0].text.endswith('{"name": "Grace"}')
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            transport = streamable_http_client(listening.url, http_client=http)
            refused = False
            try:
                with trio.fail_after(TIMEOUT):
                    async with Client(transport, mode="legacy") as sdk:
                        await sdk.list_tools()
            except Exception:  # the SDK's own error for a 401 (it has no token to send)
                refused = True
            assert refused


async def test_the_subject_is_the_user_of_its_sessions_elicitations() -> None:
    probe = Probe()
    async with issuer() as iss, protected(iss, server=build_server(probe)) as listening:
        token = bearer(iss.token(listening.url, sub="carol"))
        async with httpx2.AsyncClient(timeout=TIMEOUT, headers=token) as http:
            client = McpHttp(http, listening.url)
            await client.initialize()
            with trio.fail_after(TIMEOUT):
                async with client.stream(call(1, what="name")) as events:
                    request = await events.next()
                    assert request is not None
                    await client.answer(request, {"action": "decline"})
                    await events.rest()
        assert [t.user for t in probe.tenants] == [f"sub:carol@{iss.url}"]


async def test_a_tool_with_scopes_of_its_own_needs_them() -> None:
    async with (
        issuer() as iss,
        protected(iss, tool_scopes={"ask": ("ask:run",)}) as listening,
    ):
        base = listening.url.rsplit("/", 1)[0]
        narrow = bearer(iss.token(listening.url, scope="mcp"))
        async with httpx2.AsyncClient(timeout=TIMEOUT, headers=narrow) as http:
            metadata = await http.get(base + "/.well-known/oauth-protected-resource/mcp")
            assert metadata.json()["scopes_supported"] == ["ask:run"]
            client = McpHttp(http, listening.url)
            await client.initialize()
            assert (await client.post(call(1, "chatty"))).status_code == 200
            refused = await client.post(call(2, "ask"))
            assert refused.status_code == 403
            assert refused.json()["id"] == 2
            challenge = refused.headers["www-authenticate"]
            assert challenge.startswith('Bearer error="insufficient_scope"')
            assert 'scope="ask:run"' in challenge
        wide = bearer(iss.token(listening.url, scope="mcp ask:run"))
        async with httpx2.AsyncClient(timeout=TIMEOUT, headers=wide) as http:
            client = McpHttp(http, listening.url)
            await client.initialize()
            with trio.fail_after(TIMEOUT):
                async with client.stream(call(3, "ask")) as events:
                    request = await events.next()
                    assert request is not None
                    assert request["method"] == "elicitation/create"
                    await client.answer(request, {"action": "decline"})
                    await events.rest()


async def test_an_opaque_token_is_introspected_at_the_issuer() -> None:
    async with issuer() as iss:
        settings = {
            "introspection_url": f"{iss.url}/introspect",
            "introspection_client": ("mcp-server", "s3cret"),
        }
        async with protected(iss, **settings) as listening:
            live = {"active": True, "sub": "dave", "aud": listening.url, "iss": iss.url}
            iss.opaque = {
                "opaque-good": {**live, "exp": int(time.time()) + 60},
                "opaque-revoked": {**live, "active": False},
                "opaque-elsewhere": {**live, "aud": "https://other.example/mcp"},
                "opaque-expired": {**live, "exp": int(time.time()) - 600},
            }
            async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
                headers = McpHttp(http, listening.url).headers()
                body = message("initialize", INIT, id=0)
                for token, status in [
                    ("opaque-good", 200),
                    ("opaque-revoked", 401),
                    ("opaque-elsewhere", 401),
                    ("opaque-expired", 401),
                    ("opaque-unknown", 401),
                ]:
                    answer = await http.post(
                        listening.url, content=body, headers={**headers, **bearer(token)}
                    )
                    assert answer.status_code == status, token
            assert iss.introspected[0] == "Basic bWNwLXNlcnZlcjpzM2NyZXQ="
    async with (  # no introspection endpoint: an opaque token is refused
        issuer() as iss,
        protected(iss) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        headers = {**McpHttp(http, listening.url).headers(), **bearer("opaque-good")}
        answer = await http.post(
            listening.url, content=message("initialize", INIT, id=0), headers=headers
        )
        assert answer.status_code == 401


async def initialize_with(http: httpx2.AsyncClient, url: str, token: str) -> httpx2.Response:
    """An ``initialize`` POST carrying ``token``."""
    headers = {**McpHttp(http, url).headers(), **bearer(token)}
    return await http.post(url, content=message("initialize", INIT, id=0), headers=headers)


def stranger_token(iss: Issuer, audience: str, kid: str) -> str:
    """A well-formed token for ``audience`` from ``iss``, signed by a key the issuer never
    published, under ``kid``."""
    now = int(time.time())
    claims = {"iss": iss.url, "aud": audience, "sub": "eve", "exp": now + 300}
    key = ec.generate_private_key(ec.SECP256R1())
    return jwt.encode(claims, key, algorithm="ES256", headers={"kid": kid})


async def test_subjects_sharing_a_long_prefix_are_two_principals() -> None:
    probe = mrtr.Probe()
    async with issuer() as iss, protected(iss, server=mrtr.build_server(probe)) as listening:
        alice_sub = "u" * 256 + "-alice"
        alice = bearer(iss.token(listening.url, sub=alice_sub))
        mallory = bearer(iss.token(listening.url, sub="u" * 256 + "-mallory"))
        async with (
            httpx2.AsyncClient(timeout=TIMEOUT, headers=alice) as a,
            httpx2.AsyncClient(timeout=TIMEOUT, headers=mallory) as m,
        ):
            first = mrtr.ok(await mrtr.StatelessPoster(a, listening.url).call())
            key, _ = mrtr.only_request(first)
            stolen = await mrtr.StatelessPoster(m, listening.url).call(
                first["requestState"], {key: mrtr.ACCEPT_ADA}
            )
            assert stolen.json()["error"]["data"]["reason"] == "wrong_principal"

            session = McpHttp(a, listening.url)
            await session.initialize()
            intruder = McpHttp(m, listening.url)
            intruder.session_id, intruder.version = session.session_id, session.version
            assert (await intruder.post(message("ping", id=1))).status_code == 404
            ended = await m.delete(listening.url, headers=intruder.headers())
            assert ended.status_code == 404
            assert (await session.post(message("ping", id=2))).status_code == 200

            resumed = await mrtr.StatelessPoster(a, listening.url).call(
                first["requestState"], {key: mrtr.ACCEPT_ADA}
            )
            assert mrtr.ok(resumed)["resultType"] == "input_required"  # her second question
        assert set(probe.tenants) == {Tenant(user=f"sub:{alice_sub}@{iss.url}")}


async def test_a_key_the_issuer_withdraws_is_refused_after_the_next_fetch() -> None:
    async with (
        issuer() as iss,
        protected(iss, jwks_refetch_s=0) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        iss.add_key("kold")
        old = iss.token(listening.url, kid="kold")
        assert (await initialize_with(http, listening.url, old)).status_code == 200
        del iss.keys["kold"]
        iss.add_key("knew")  # a token under the new key id makes the server fetch again
        new = iss.token(listening.url, kid="knew")
        assert (await initialize_with(http, listening.url, new)).status_code == 200
        refused = await initialize_with(http, listening.url, old)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith('Bearer error="invalid_token"')


async def test_a_key_replaced_under_its_key_id_is_the_new_one() -> None:
    async with (
        issuer() as iss,
        protected(iss, jwks_refetch_s=0) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        old = iss.token(listening.url)
        assert (await initialize_with(http, listening.url, old)).status_code == 200
        iss.add_key("k1")  # another key under the same key id
        new = iss.token(listening.url)
        answer = await initialize_with(http, listening.url, new)
        assert answer.status_code == 200, answer.text
        assert (await initialize_with(http, listening.url, old)).status_code == 401


@pytest.mark.parametrize(("lifetime", "cooldown"), [(60, 10), (5, 30)])  # 30 counts as 5
async def test_cached_keys_are_trusted_for_their_lifetime_only(
    mock_clock: trio.testing.MockClock, lifetime: float, cooldown: float
) -> None:
    settings = {"jwks_cache_s": lifetime, "jwks_refetch_s": cooldown}
    async with issuer() as iss, protected(iss, **settings) as listening:
        token = iss.token(listening.url)

        async def status_after(seconds: float) -> int:
            mock_clock.jump(seconds)
            async with httpx2.AsyncClient(timeout=TIMEOUT) as http:  # the jump ends idle ones
                return (await initialize_with(http, listening.url, token)).status_code

        assert await status_after(0) == 200
        del iss.keys["k1"]
        assert await status_after(lifetime - 1) == 200
        assert iss.fetches == 1
        assert await status_after(2) == 401
        assert iss.fetches == 2


async def test_a_slow_issuer_and_a_flood_of_unknown_key_ids_never_delay_a_cached_key() -> None:
    async with (
        issuer() as iss,
        protected(iss, jwks_refetch_s=0) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        token = iss.token(listening.url)
        assert (await initialize_with(http, listening.url, token)).status_code == 200
        assert iss.fetches == 1
        iss.hold = trio.Event()  # the issuer answers only when the test says
        flood: list[int] = []

        async def unknown_key() -> None:
            forged = stranger_token(iss, listening.url, secrets.token_hex(8))
            flood.append((await initialize_with(http, listening.url, forged)).status_code)

        try:
            async with trio.open_nursery() as nursery:
                for _ in range(60):
                    nursery.start_soon(unknown_key)
                with trio.fail_after(TIMEOUT):
                    await iss.held.wait()  # the flood's fetch is under way
                with trio.fail_after(1):
                    answer = await initialize_with(http, listening.url, token)
                assert answer.status_code == 200
                assert flood == []  # the flood still waits for the issuer
                iss.hold.set()
        finally:
            iss.hold.set()
        assert flood == [401] * 60
        assert iss.fetches == 2  # one fetch for the whole flood


async def test_a_failing_issuer_is_asked_once_per_cooldown(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with issuer() as iss, protected(iss, jwks_refetch_s=30) as listening:
        iss.jwks_status = 503
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            for _ in range(30):
                forged = stranger_token(iss, listening.url, secrets.token_hex(8))
                answer = await initialize_with(http, listening.url, forged)
                assert answer.status_code == 503
            token = iss.token(listening.url)
            assert (await initialize_with(http, listening.url, token)).status_code == 503
        assert iss.fetches == 1
        iss.jwks_status = 200
        mock_clock.jump(31)
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            assert (await initialize_with(http, listening.url, token)).status_code == 200
        assert iss.fetches == 2


async def test_an_issuer_slower_than_the_timeout_is_a_failed_fetch(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with issuer() as iss, protected(iss, issuer_timeout_s=5) as listening:
        token = iss.token(listening.url)
        iss.hold = trio.Event()
        statuses: list[int] = []

        async def first() -> None:
            async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
                statuses.append((await initialize_with(http, listening.url, token)).status_code)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(first)
            await iss.held.wait()
            mock_clock.jump(5.1)
        assert statuses == [503]
        iss.hold.set()
        mock_clock.jump(30)  # the cooldown
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            assert (await initialize_with(http, listening.url, token)).status_code == 200
        assert iss.fetches == 2


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 600 * 1024,  # over the size bound
        b"<html>not JSON</html>",
        b"[" * 100_000 + b"]" * 100_000,  # nested deeper than the JSON parser goes
        b'{"keys": {"kid": "k1"}}',
        b'"keys"',
    ],
    ids=["oversized", "not-json", "deep", "keys-not-a-list", "not-an-object"],
)
async def test_a_broken_jwks_is_a_failed_fetch(body: bytes) -> None:
    async with (
        issuer() as iss,
        protected(iss) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        iss.jwks_body = body
        with structlog.testing.capture_logs() as logs:
            answer = await initialize_with(http, listening.url, iss.token(listening.url))
        assert answer.status_code == 503
        assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["jwks_fetch_failed"]
        assert [e for e in logs if e["log_level"] in ("error", "critical")] == []


async def test_keys_the_server_cannot_use_are_left_out_of_the_set() -> None:
    async with (
        issuer() as iss,
        protected(iss) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        private = ec.generate_private_key(ec.SECP256R1())
        public = jwt.algorithms.ECAlgorithm.to_jwk(private.public_key(), as_dict=True)
        iss.junk_keys = [
            {**jwt.algorithms.ECAlgorithm.to_jwk(private, as_dict=True), "kid": "private"},
            {"kty": "oct", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0", "kid": "hmac"},
            {**public, "kid": "encryption", "use": "enc"},
            {"kty": "EC", "crv": "P-256", "x": "AAAA", "y": "AAAA", "kid": "broken"},
            {**public, "kid": 7},
            "not a key",
        ]
        for kid in ("private", "encryption"):
            claims = {"iss": iss.url, "aud": listening.url, "sub": "x", "exp": time.time() + 60}
            forged = jwt.encode(claims, private, algorithm="ES256", headers={"kid": kid})
            assert (await initialize_with(http, listening.url, forged)).status_code == 401
        hmac = jwt.encode(
            {"iss": iss.url, "aud": listening.url, "sub": "x", "exp": time.time() + 60},
            "secret-secret-secret-secret-secret-secret",
            algorithm="HS256",
            headers={"kid": "hmac"},
        )
        assert (await initialize_with(http, listening.url, hmac)).status_code == 401
        token = iss.token(listening.url)
        assert (await initialize_with(http, listening.url, token)).status_code == 200


async def test_a_token_whose_algorithm_does_not_fit_its_key_is_401_without_a_traceback() -> None:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    async with (
        issuer() as iss,
        protected(iss) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        claims = {"iss": iss.url, "aud": listening.url, "sub": "x", "exp": int(time.time()) + 60}
        mismatched = {  # key id k1 is an EC P-256 key
            alg: jwt.encode(claims, rsa_key, algorithm=alg, headers={"kid": "k1"})
            for alg in ("RS256", "PS256")
        }
        p384 = ec.generate_private_key(ec.SECP384R1())
        mismatched["ES384"] = jwt.encode(claims, p384, algorithm="ES384", headers={"kid": "k1"})
        with structlog.testing.capture_logs() as logs:
            for alg, token in mismatched.items():
                answer = await initialize_with(http, listening.url, token)
                assert answer.status_code == 401, alg
                challenge = answer.headers["www-authenticate"]
                assert challenge.startswith('Bearer error="invalid_token"'), alg
        assert [e for e in logs if e["log_level"] in ("error", "critical")] == []


async def test_rsa_and_eddsa_keys_verify_their_algorithms_and_short_rsa_keys_nothing() -> None:
    async with (
        issuer() as iss,
        protected(iss) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        iss.add_key("rsa", rsa.generate_private_key(public_exponent=65537, key_size=2048))
        iss.add_key("ed", ed25519.Ed25519PrivateKey.generate())
        with warnings.catch_warnings():  # PyJWT warns when it signs with a short key
            warnings.simplefilter("ignore")
            iss.add_key("short", rsa.generate_private_key(public_exponent=65537, key_size=1024))
            short = iss.token(listening.url, kid="short", alg="RS256")
        for kid, alg in [("rsa", "RS256"), ("rsa", "PS384"), ("ed", "EdDSA"), ("k1", "ES256")]:
            token = iss.token(listening.url, kid=kid, alg=alg)
            answer = await initialize_with(http, listening.url, token)
            assert answer.status_code == 200, (kid, alg, answer.text)
        for kid, alg in [("rsa", "ES256"), ("ed", "ES256"), ("k1", "EdDSA")]:
            key = {"ES256": ec.generate_private_key(ec.SECP256R1())}.get(alg)
            key = key or ed25519.Ed25519PrivateKey.generate()
            claims = {"iss": iss.url, "aud": listening.url, "sub": "x", "exp": time.time() + 60}
            token = jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})
            assert (await initialize_with(http, listening.url, token)).status_code == 401
        refused = await initialize_with(http, listening.url, short)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith('Bearer error="invalid_token"')


async def test_a_second_authorization_header_is_refused() -> None:
    async with (
        issuer() as iss,
        protected(iss) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        valid = f"Bearer {iss.token(listening.url)}"
        for pair in ([valid, "Bearer junk"], ["Bearer junk", valid], [valid, valid]):
            headers = [
                *McpHttp(http, listening.url).headers().items(),
                *(("authorization", value) for value in pair),
            ]
            answer = await http.post(
                listening.url, content=message("initialize", INIT, id=0), headers=headers
            )
            assert answer.status_code == 400, pair
            challenge = answer.headers["www-authenticate"]
            assert challenge.startswith('Bearer error="invalid_request"')


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


#: Values of every JSON type, for claims and header members in the wrong shape.
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
ISSUER_URL = "http://127.0.0.1:1"  # replaced by the issuer's own URL when a token is built
RESOURCE = "http://127.0.0.1:2/mcp"


def usually(*common: Any) -> st.SearchStrategy[Any]:
    """One of ``common`` three times in four, else a value of any JSON type."""
    return st.integers(0, 3).flatmap(lambda n: st.sampled_from(common) if n else ODD)


@st.composite
def tokens(draw: st.DrawFn) -> tuple[dict[str, Any], Any, bool, str | None]:
    """A JWT's header, its payload, whether the issuer's key signs it, and a mutation of its
    text (a character replaced, an ``=`` or a ``.`` added, or none)."""
    now = int(time.time())
    header = {
        "alg": draw(usually("ES256", "ES384", "RS256", "PS256", "EdDSA", "none", "HS256")),
        "kid": draw(usually("k1", "k1", "other", "k" * 300)),
    }
    if draw(st.integers(0, 3)) == 0:
        header["crit"] = draw(usually(["exp"], ["b64"], []))
    claims = {
        "iss": draw(usually(ISSUER_URL)),
        "aud": draw(usually(RESOURCE, [RESOURCE], [RESOURCE, 7])),
        "sub": draw(st.text(min_size=1, max_size=20) | usually("s" * 1024, "s" * 1025)),
        "exp": draw(usually(now + 300, now - 300, str(now + 300))),
        "nbf": draw(usually(now - 10, now + 300)),
        "iat": draw(usually(now)),
        "scope": draw(usually("mcp", ["mcp"], ["mcp", 1])),
        "scp": draw(usually("mcp", ["mcp"])),
    }
    kept = draw(st.sets(st.sampled_from(sorted(claims))))
    payload: Any = {k: v for k, v in claims.items() if k in kept}
    payload = draw(usually(payload))
    mutation = draw(usually(None, None, "=", ".", "$") | st.text(min_size=1, max_size=1))
    return header, payload, draw(st.booleans()), mutation if isinstance(mutation, str) else None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tokens(), st.data())
def test_any_token_is_accepted_when_valid_or_refused_401_invalid_token(
    token: tuple[dict[str, Any], Any, bool, str | None], data: st.DataObject
) -> None:
    header, payload, signed, mutation = token

    async def check() -> None:
        async with issuer() as iss:
            payload_ = payload
            if isinstance(payload_, dict) and payload_.get("iss") == ISSUER_URL:
                payload_ = {**payload_, "iss": iss.url}
            config = AuthConfig(issuer=iss.url, resource=RESOURCE, jwks_url=f"{iss.url}/jwks")
            verifier = BearerVerifier(config)
            head = b64url(json.dumps(header).encode())
            body = b64url(json.dumps(payload_).encode())
            signing_input = f"{head}.{body}".encode()
            es256 = jwt.algorithms.ECAlgorithm(jwt.algorithms.ECAlgorithm.SHA256)
            signature = es256.sign(signing_input, iss.keys["k1"]) if signed else b"\x01" * 64
            text = f"{head}.{body}.{b64url(signature)}"
            if mutation is not None:
                at = data.draw(st.integers(0, len(text) - 1))
                text = (
                    text[:at]
                    + mutation
                    + text[at + (len(mutation) == 1 and mutation not in "=.") :]
                )
            authorization = f"Bearer {text}".encode("utf-8", "replace")
            outcome: Subject | AuthRefused
            try:
                outcome = await verifier.verify([(b"authorization", authorization)])
            except AuthRefused as refused:
                outcome = refused
            if isinstance(outcome, AuthRefused):
                assert outcome.status == 401, outcome.description
                assert outcome.challenge.startswith('Bearer error="invalid_token"')
            else:  # only a well-signed token verifies
                assert signed
                assert (header["alg"], header["kid"]) == ("ES256", "k1")
                assert outcome.principal == f"sub:{payload_['sub']}@{iss.url}"

    trio.run(check)


async def test_an_introspection_endpoint_that_fails_is_503_and_odd_answers_401() -> None:
    async with issuer() as iss:
        settings = {"introspection_url": f"{iss.url}/nowhere"}  # answers 404
        async with (
            protected(iss, **settings) as listening,
            httpx2.AsyncClient(timeout=TIMEOUT) as http,
        ):
            answer = await initialize_with(http, listening.url, "opaque-good")
            assert answer.status_code == 503
        async with (
            protected(iss, introspection_url=f"{iss.url}/introspect") as listening,
            httpx2.AsyncClient(timeout=TIMEOUT) as http,
        ):
            live = {"active": True, "sub": "dave", "aud": listening.url, "iss": iss.url}
            iss.opaque = {
                "opaque-exp-text": {**live, "exp": "tomorrow"},
                "opaque-scope-number": {**live, "scope": 7},
                "opaque-sub-list": {**live, "sub": ["dave"]},
                "opaque-long-sub": {**live, "sub": "d" * 1025},
                "opaque-good": live,
            }
            for token in iss.opaque:
                answer = await initialize_with(http, listening.url, token)
                assert answer.status_code == (200 if token == "opaque-good" else 401), token
            for token in ("with space", "semi;colon", "a,b"):
                answer = await initialize_with(http, listening.url, token)
                assert answer.status_code == 401
                assert answer.headers["www-authenticate"].startswith('Bearer error="invalid_token"')
            assert len(iss.introspected) == len(iss.opaque)  # odd characters are never sent


def test_issuer_urls_are_https_or_http_to_loopback() -> None:
    base = {"issuer": "https://id.example", "resource": RESOURCE}
    for url in ("https://id.example/jwks", "http://127.0.0.1:8/jwks", "http://[::1]/jwks"):
        assert AuthConfig(**base, jwks_url=url).jwks_url == url
    assert AuthConfig(**base, jwks_url="http://localhost/j", introspection_url="http://localhost/i")
    for field_, url in [
        ("jwks_url", "file:///etc/passwd"),
        ("introspection_url", "file:///etc/passwd"),
        ("jwks_url", "http://id.example/jwks"),
        ("jwks_url", "http://127.0.0.1.example/jwks"),
        ("issuer", "http://10.0.0.1"),
        ("jwks_url", "https://id.example/jwks#keys"),
        ("jwks_url", "https:///jwks"),
        ("jwks_url", "https://id.example:99999/jwks"),
    ]:
        fields = {**base, "jwks_url": "https://id.example/jwks", field_: url}
        with pytest.raises(ValueError, match=f"^{field_}: '"):
            AuthConfig(**fields)
    with pytest.raises(ValueError, match="no '@'") as refused:
        AuthConfig(**base, jwks_url="https://mcp:s3cret@id.example/jwks")
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    ("option", "url"),
    [
        ("--auth-jwks-url", "file:///etc/passwd"),
        ("--auth-introspection-url", "file:///etc/passwd"),
        ("--auth-issuer", "http://id.example"),
        ("--auth-jwks-url", "https://mcp:s3cret@id.example/jwks"),
    ],
)
def test_serve_refuses_an_issuer_url_that_is_not_https_in_one_line(option: str, url: str) -> None:
    options = {
        "--auth-issuer": "https://id.example",
        "--auth-resource": f"http://127.0.0.1:{free_port()}/mcp",
        "--auth-jwks-url": "https://id.example/jwks",
        option: url,
    }
    argv = [part for pair in options.items() for part in pair]
    command = serve_command("--transport", "http", "--port", str(free_port()), *argv)
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith(f"erlmcp-py: {option}: ")
    assert done.stderr.count("\n") == 1, done.stderr
    assert "s3cret" not in done.stderr


def test_a_config_file_with_an_issuer_url_that_is_not_https_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "serve.toml"
    config.write_text('auth_jwks_url = "file:///etc/passwd"\nauth_issuer = "https://id.example"\n')
    with pytest.raises(ConfigError) as refused:
        load_serve_config(str(config), {})
    assert refused.value.problems[0].startswith(f"{config}: auth_jwks_url: ")
    assert "is not an https URL" in refused.value.problems[0]


def test_the_key_lifetime_is_a_serve_option_and_a_config_key(tmp_path: Path) -> None:
    argv = ["serve", "--auth-issuer", "https://id.example", "--auth-resource", RESOURCE]
    argv += ["--auth-jwks-url", "https://id.example/jwks"]
    default = auth_config(build_parser().parse_args(argv))
    assert default is not None
    assert default.jwks_cache_s == 300
    configured = auth_config(build_parser().parse_args([*argv, "--auth-jwks-cache", "60"]))
    assert configured is not None
    assert configured.jwks_cache_s == 60
    with pytest.raises(ValueError, match="need --auth-issuer"):
        auth_config(build_parser().parse_args(["serve", "--auth-jwks-cache", "60"]))
    config = tmp_path / "serve.toml"
    config.write_text("auth_jwks_cache = 60\n")
    assert load_serve_config(str(config), {}).options() == {"auth_jwks_cache": 60.0}
