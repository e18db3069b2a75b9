"""Upstreams that misbehave, for the gateway's lifetime tests (newline-delimited JSON-RPC on
stdio, written by hand). ``python odd_upstreams.py MODE``:

* ``exits``: answers ``initialize``, then exits (status 3) once the client says initialized;
* ``refuses``: answers ``initialize`` with a JSON-RPC error;
* ``silent``: reads and never answers.
"""

from __future__ import annotations

import json
import sys


def main(mode: str) -> int:
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if mode == "silent":
            continue
        if method == "initialize" and mode == "refuses":
            error = {"code": -32602, "message": "Unsupported protocol version", "data": {"x": 1}}
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
        elif method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "odd", "version": "1"},
            }
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        elif method == "notifications/initialized":
            return 3
        else:
            continue
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
