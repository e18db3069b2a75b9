"""Clients at distinct loopback addresses, for the cluster's per-client tests.

Each client's connections leave from its own 127/8 address (all of 127.0.0.0/8 is loopback
on Linux), so HAProxy sees each at a different address, as it would see users on the
network. What a replica counts them as depends on whether it trusts HAProxy to name them.
"""

from __future__ import annotations

from typing import Any

import httpx2

from tests.transports.test_http_forwarded import alive, lives, open_session, peer
from tests.transports.test_http_mrtr import META, StatelessPoster

__all__ = ["alive", "ask_signup", "lives", "open_session", "peer"]


async def ask_signup(http: httpx2.AsyncClient, url: str, tag: str) -> str:
    """A 2026-07-28 call of the cluster server's ``signup``, whose first question takes one of
    the client's ``--rate`` tokens: ``"asked"`` (the question came, and was declined, which
    ends the call) or ``"rate limited"`` (the tool's error result)."""
    client = StatelessPoster(http, url)
    headers = client.headers("tools/call", "signup")
    params: dict[str, Any] = {"name": "signup", "arguments": {"tag": tag}, "_meta": META}
    response = await client.post("tools/call", params, headers=headers)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    if result.get("isError"):
        text = result["content"][0]["text"]
        assert "rate limited: retry after" in text, text
        return "rate limited"
    assert result["resultType"] == "input_required", result
    ((key, _),) = result["inputRequests"].items()
    declined = {**params, "requestState": result["requestState"]}
    declined["inputResponses"] = {key: {"action": "decline"}}
    done = await client.post("tools/call", declined, headers=headers)
    assert done.status_code == 200, done.text
    assert done.json()["result"]["content"][0]["text"] == "free: no account"
    return "asked"
