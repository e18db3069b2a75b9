"""Bearer-token authentication over real sockets: an issuer on 127.0.0.1 serving its JWKS over
HTTP (keys made per test), the MCP server as its resource server, raw HTTP and the official
``mcp`` client sending the token."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import parse_qs

import httpx2
import jwt
import trio
from cryptography.hazmat.primitives.asymmetric import ec

from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.mcp.server import Server
from erlmcp_py.transports._server import serve
from erlmcp_py.transports.auth import AuthConfig
from erlmcp_py.transports.http import HttpConfig, Listening, serve_http
from tests.deploy.support import free_port
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


@dataclass
class Issuer:
    """An authorization server's signing side: its keys, served as a JWKS over HTTP."""

    url: str = ""
    keys: dict[str, ec.EllipticCurvePrivateKey] = field(default_factory=dict)
    opaque: dict[str, dict[str, Any]] = field(default_factory=dict)  # token -> its claims
    introspected: list[str] = field(default_factory=list)  # the Authorization headers seen

    def add_key(self, kid: str) -> None:
        self.keys[kid] = ec.generate_private_key(ec.SECP256R1())

    def jwks(self) -> dict[str, Any]:
        out = []
        for kid, key in self.keys.items():
            jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
            out.append({**jwk, "kid": kid, "use": "sig", "alg": "ES256"})
        return {"keys": out}

    def token(self, audience: str, *, kid: str = "k1", **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": self.url, "aud": audience, "sub": "alice", "iat": now, "exp": now + 300}
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(body, self.keys[kid], algorithm="ES256", headers={"kid": kid})

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
        body = json.dumps(self.jwks()).encode() if scope["path"] == "/jwks" else b"{}"
        status = 200 if scope["path"] == "/jwks" else 404
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
            first = mrtr.ok(await mrtr.Modern(http, listening.url).call())
            assert first["resultType"] == "input_required"
        assert probe.tenants == [Tenant(user=f"sub:bob@{iss.url}")]
        other = bearer(iss.token(listening.url, sub="eve"))
        async with httpx2.AsyncClient(timeout=TIMEOUT, headers=other) as http:
            key, _ = mrtr.only_request(first)
            retry = await mrtr.Modern(http, listening.url).call(
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
