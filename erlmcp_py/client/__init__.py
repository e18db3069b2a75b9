"""Calling an MCP server from trio: one session over stdio, Streamable HTTP or memory.

Example (the server asks for a name while the tool runs; ``fill_in`` is the user)::

    import trio

    from erlmcp_py.client import connect_stdio


    def fill_in(request):
        assert request.method == "elicitation/create"
        return {"action": "accept", "content": {"name": "Ada"}}


    async def main():
        async with connect_stdio(["erlmcp-py", "serve"], handler=fill_in) as session:
            print(session.server_info["name"])
            result = await session.call_tool("demo_string")
            print(result["content"][0]["text"])


    trio.run(main)

``connect_http(url, headers=[("Authorization", "Bearer …")])`` and
``connect_in_memory(server)`` give the same session; ``protocol_version="2026-07-28"`` speaks
the stateless era (every request carries ``_meta``, and a tool's questions come back as input
rounds the session answers through the same handler and retries).

Each job lives in its own private module:

* ``_wire`` -- the :class:`Wire` interface: one JSON-RPC message out, the next one in;
* ``_stdio``, ``_http``, ``_memory`` -- the three wires: a server subprocess, a Streamable
  HTTP endpoint (h11 on trio's sockets), a :class:`~erlmcp_py.mcp.server.Server` in this
  process;
* ``_session`` -- :class:`ClientSession`: correlation, server requests and notifications,
  cancellation both ways, progress, both protocol eras, the typed MCP methods;
* ``_rounds`` -- the 2026-07-28 input rounds (``InputRequiredResult`` → answers → retry);
* ``_connect`` -- ``connect_stdio``, ``connect_http``, ``connect_in_memory``: wire, session and
  handshake in one block;
* ``_scripted`` -- :class:`StdioClient` and :class:`MemoryClient`: sessions that record
  everything and let a test or a demo send anything.

A JSON-RPC error answer is :class:`ClientRequestError` (``erlmcp_py.ClientRequestError``),
whichever side sent it; a server that can no longer answer is :class:`ConnectionLost`.
"""

from erlmcp_py.client._connect import (
    connect_http as connect_http,
    connect_in_memory as connect_in_memory,
    connect_stdio as connect_stdio,
)
from erlmcp_py.client._http import (
    ENDPOINT_PATH as ENDPOINT_PATH,
    EndpointNotFound as EndpointNotFound,
    HttpWire as HttpWire,
    endpoint_suggestion as endpoint_suggestion,
    open_http_wire as open_http_wire,
)
from erlmcp_py.client._memory import MemoryWire as MemoryWire, open_memory_wire as open_memory_wire
from erlmcp_py.client._rounds import (
    INPUT_REQUIRED as INPUT_REQUIRED,
    InputRoundsExhausted as InputRoundsExhausted,
    call_until_complete as call_until_complete,
    with_request_meta as with_request_meta,
)
from erlmcp_py.client._scripted import (
    MemoryClient as MemoryClient,
    ScriptedClient as ScriptedClient,
    StdioClient as StdioClient,
    answer_input as answer_input,
    open_memory_client as open_memory_client,
    open_stdio_client as open_stdio_client,
)
from erlmcp_py.client._session import (
    CLIENT_INFO as CLIENT_INFO,
    DEFAULT_CAPABILITIES as DEFAULT_CAPABILITIES,
    MAX_ROUNDS as MAX_ROUNDS,
    ClientSession as ClientSession,
    Handler as Handler,
    InputHandler as InputHandler,
    OnNotification as OnNotification,
    OnProgress as OnProgress,
    OnUnmatched as OnUnmatched,
    ServerRequest as ServerRequest,
    SessionOptions as SessionOptions,
    open_client_session as open_client_session,
)
from erlmcp_py.client._stdio import (
    MAX_INBOUND_BYTES as MAX_INBOUND_BYTES,
    StdioWire as StdioWire,
    open_stdio_wire as open_stdio_wire,
)
from erlmcp_py.client._wire import (
    ConnectionLost as ConnectionLost,
    Inbound as Inbound,
    Refused as Refused,
    ServerExited as ServerExited,
    Undeliverable as Undeliverable,
    Wire as Wire,
)
from erlmcp_py.mcp.errors import ClientRequestError as ClientRequestError

__all__ = [
    "CLIENT_INFO",
    "ClientRequestError",
    "ClientSession",
    "ConnectionLost",
    "DEFAULT_CAPABILITIES",
    "ENDPOINT_PATH",
    "EndpointNotFound",
    "Handler",
    "HttpWire",
    "INPUT_REQUIRED",
    "Inbound",
    "InputHandler",
    "InputRoundsExhausted",
    "MAX_INBOUND_BYTES",
    "MAX_ROUNDS",
    "MemoryClient",
    "MemoryWire",
    "OnNotification",
    "OnProgress",
    "OnUnmatched",
    "Refused",
    "ScriptedClient",
    "ServerExited",
    "ServerRequest",
    "SessionOptions",
    "StdioClient",
    "StdioWire",
    "Undeliverable",
    "Wire",
    "answer_input",
    "call_until_complete",
    "connect_http",
    "connect_in_memory",
    "connect_stdio",
    "endpoint_suggestion",
    "open_client_session",
    "open_http_wire",
    "open_memory_client",
    "open_memory_wire",
    "open_stdio_client",
    "open_stdio_wire",
    "with_request_meta",
]
