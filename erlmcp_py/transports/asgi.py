"""The Streamable HTTP endpoint as an ASGI application, for an ASGI server of your own on trio
(hypercorn's trio worker) or mounted beside other routes.

:func:`~erlmcp_py.transports.http.serve_http` serves a server on the project's own HTTP/1.1
layer. :class:`McpApp` is the same :class:`~erlmcp_py.transports.http.HttpTransport` with
the runtime and the session host around it, started and stopped by the ASGI lifespan
protocol: an ASGI server that runs lifespan (hypercorn does) needs nothing else. Where a
framework owns the lifespan (a Starlette ``Mount``, which does not pass it on), enter
:meth:`McpApp.running` in the framework's own lifespan instead.

Everything runs in the trio run of the ASGI server: the app must be served by a trio worker
(``hypercorn --worker-class trio``), not asyncio. The hosted elicitation page needs to know
where browsers reach it: set :attr:`HttpConfig.public_url` (``serve_http`` learns it from the
address it binds).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

import structlog
import trio

from erlmcp_py.transports.http import HttpConfig, HttpTransport

if TYPE_CHECKING:
    from erlmcp_py.mcp.server import Server
    from erlmcp_py.transports._server import Message, Receive, Scope, Send

__all__ = ["McpApp"]

log = structlog.get_logger("erlmcp.http.asgi")

_NOT_STARTED = b"the MCP endpoint is not running (its ASGI lifespan has not started)\n"


class McpApp:
    """``server``'s Streamable HTTP endpoint as an ASGI application.

    Args:
        server: The MCP server.
        config: Transport policy (its ``path``, default ``/mcp``, is where the endpoint
            answers; set ``public_url`` for the hosted page).
    """

    def __init__(self, server: Server, config: HttpConfig | None = None) -> None:
        self.server = server
        self.config = config or HttpConfig()
        #: The transport while the app runs (``None`` before startup and after shutdown).
        self.transport: HttpTransport | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[HttpTransport]:
        """Run the endpoint (its runtime, unless the server's already runs, and its session
        host) until the block exits; then end its sessions and calls."""
        async with AsyncExitStack() as stack:
            runtime = self.server.runtime
            if runtime is None:
                runtime = await stack.enter_async_context(self.server.running())
            nursery = await stack.enter_async_context(trio.open_nursery())
            transport = HttpTransport(self.server, runtime, self.config)
            await nursery.start(transport.run)
            if transport.policy.public is not None:
                transport.page.serve_at(transport.policy.public)
            self.transport = transport
            try:
                yield transport
            finally:
                self.transport = None
                transport.close_all()
                nursery.cancel_scope.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        transport = self.transport
        if transport is None:
            if kind == "http":
                await _answer(send, 503, _NOT_STARTED)
            return
        await transport(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """The whole life of the app, in the ASGI server's lifespan task."""
        message: Message = await receive()
        if message["type"] != "lifespan.startup":
            return
        started = False
        try:
            async with self.running():
                await send({"type": "lifespan.startup.complete"})
                started = True
                while (await receive())["type"] != "lifespan.shutdown":
                    pass
        except Exception as exc:
            phase = "shutdown" if started else "startup"
            log.exception(f"asgi_{phase}_failed")
            await send({"type": f"lifespan.{phase}.failed", "message": str(exc) or repr(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})


async def _answer(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
