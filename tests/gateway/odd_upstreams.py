"""Upstreams that misbehave, for the gateway's lifetime tests (newline-delimited JSON-RPC on
stdio, written by hand). ``python odd_upstreams.py MODE``:

* ``exits``: answers ``initialize``, then exits (status 3) once the client says initialized;
* ``refuses``: answers ``initialize`` with a JSON-RPC error;
* ``silent``: reads and never answers;
* ``bursts``: its ``tools/call`` asks who the user is (``elicitation/create``), and once
  answered writes 20 progress reports (under the call's token) and 20 log messages and then
  its result, all in one write: the gateway reads them at once.
"""

from __future__ import annotations

import json
import sys

BURST = 20


def main(mode: str) -> int:
    call: dict[str, object] = {}  # the tools/call waiting for its question's answer
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if mode == "silent":
            continue
        if mode == "bursts" and method == "tools/call":
            call = {"id": message["id"], "token": message["params"]["_meta"]["progressToken"]}
            schema = {"type": "object", "properties": {"name": {"type": "string"}}}
            ask = {"message": "Who are you?", "requestedSchema": schema}
            question = {"jsonrpc": "2.0", "id": "q1", "method": "elicitation/create", "params": ask}
            sys.stdout.write(json.dumps(question) + "\n")
            sys.stdout.flush()
            continue
        if mode == "bursts" and message.get("id") == "q1" and "result" in message:
            burst = []
            for step in range(1, BURST + 1):
                progress = {"progressToken": call["token"], "progress": step, "total": BURST}
                burst.append({"method": "notifications/progress", "params": progress})
                log = {"level": "info", "data": f"step {step} of {BURST}"}
                burst.append({"method": "notifications/message", "params": log})
            result = {"content": [{"type": "text", "text": f"{BURST} steps"}]}
            burst.append({"id": call["id"], "result": result})
            sys.stdout.write("".join(json.dumps({"jsonrpc": "2.0", **m}) + "\n" for m in burst))
            sys.stdout.flush()
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
        elif method == "notifications/initialized" and mode == "bursts":
            continue
        elif method == "notifications/initialized":
            return 3
        elif method == "tools/list" and mode == "bursts":
            tool = {"name": "report", "inputSchema": {"type": "object"}}
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [tool]}}
        elif method == "ping":
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        else:
            continue
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
