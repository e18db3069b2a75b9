"""One bounded HTTP/1.1 exchange with the authorization server: its JWKS, its introspection.

``h11`` on trio's own sockets (TLS with the system's trust store for ``https``), so a slow
issuer holds only the tasks that wait for it, never a worker thread another request needs.
Each exchange has a connection of its own (``Connection: close``), follows no redirect, and is
bounded: connecting, the TLS handshake, the request and the whole answer within ``timeout_s``,
an answer body of at most ``max_bytes``. Whatever goes wrong, including an answer other than
200 with a JSON body, is one :class:`IssuerUnreachable` saying what.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import h11
import trio

__all__ = ["IssuerUnreachable", "fetch_json"]

_READ = 65536
_HEAD_BYTES = 16384  # the answer's status line and headers, at most


class IssuerUnreachable(Exception):
    """An exchange that did not give a JSON document: no connection, no answer in time, a
    broken or oversized answer, a status other than 200, a body that is not JSON."""


@dataclass(frozen=True, slots=True)
class _Reply:
    """The issuer's answer: its status and whole body."""

    status: int
    body: bytes


@cache
def _tls() -> ssl.SSLContext:
    # One context for the process: loading the trust store costs milliseconds.
    return ssl.create_default_context()


async def fetch_json(
    method: str,
    url: str,
    *,
    headers: Sequence[tuple[str, str]] = (),
    body: bytes = b"",
    timeout_s: float,
    max_bytes: int,
) -> Any:
    """Send one request to ``url`` (``http`` or ``https``); the JSON document it answers 200.

    Raises:
        IssuerUnreachable: no answer within ``timeout_s``, a connection or protocol failure,
            a body over ``max_bytes``, a status other than 200, a body that is not JSON.
    """
    reply = await _exchange(
        method, url, headers=headers, body=body, timeout_s=timeout_s, max_bytes=max_bytes
    )
    if reply.status != 200:
        raise IssuerUnreachable(f"HTTP {reply.status}")
    try:
        return json.loads(reply.body)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply for the parser
        raise IssuerUnreachable("the answer is not JSON") from None


async def _exchange(
    method: str,
    url: str,
    *,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    timeout_s: float,
    max_bytes: int,
) -> _Reply:
    """One request to ``url`` and its whole answer (:func:`fetch_json`'s bounds)."""
    parts = urlsplit(url)
    secure = parts.scheme == "https"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    request = h11.Request(
        method=method,
        target=target,
        headers=[
            ("Host", parts.netloc),
            ("User-Agent", "erlmcp-py"),
            ("Connection", "close"),
            ("Content-Length", str(len(body))),
            *headers,
        ],
    )
    try:
        with trio.fail_after(timeout_s):
            stream: trio.abc.Stream = await trio.open_tcp_stream(
                parts.hostname or "", parts.port or (443 if secure else 80)
            )
            if secure:
                stream = trio.SSLStream(
                    stream, _tls(), server_hostname=parts.hostname, https_compatible=True
                )
            async with stream:
                return await _send_and_read(stream, request, body, max_bytes)
    except trio.TooSlowError:
        raise IssuerUnreachable(f"no answer within {timeout_s:g} s") from None
    except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
        raise IssuerUnreachable(f"{type(exc).__name__}: {exc}") from None


async def _send_and_read(
    stream: trio.abc.Stream, request: h11.Request, body: bytes, max_bytes: int
) -> _Reply:
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=_HEAD_BYTES)
    for sent in (request, h11.Data(data=body), h11.EndOfMessage()):
        await stream.send_all(conn.send(sent) or b"")
    status: int | None = None
    chunks: list[bytes] = []
    size = 0
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(bytes(await stream.receive_some(_READ)))
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            size += len(event.data)
            if size > max_bytes:
                raise IssuerUnreachable(f"the answer exceeds {max_bytes} bytes")
            chunks.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage) and status is not None:
            return _Reply(status, b"".join(chunks))
        elif isinstance(event, h11.ConnectionClosed):
            raise IssuerUnreachable("the connection closed before the answer ended")
