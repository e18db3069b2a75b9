"""A replica for the death test: opens a runtime on the store named by argv[1], starts one
elicitation that nobody answers, prints its id, and waits to be killed."""

from __future__ import annotations

import sys

import trio

from erlmcp_py import ElicitationRequest, Tenant, open_runtime
from erlmcp_py.testing import MemoryPeer

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


async def main(store: str) -> None:
    async with open_runtime({"store": store}) as runtime:
        handle = await runtime.create_elicitation(
            ElicitationRequest("Who are you?", requested_schema=SCHEMA),
            peer=MemoryPeer(peer_id="dying"),
            tenant=Tenant(sys.argv[2]),
        )
        print(handle.id, flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
