"""A replica for the forwarder-gone test: opens a runtime on the store named by argv[1],
prints its replica id, forwards one request of kind ``test.notes`` to the replica argv[2]
names (taking its notes), and waits to be killed."""

from __future__ import annotations

import sys

import trio

from erlmcp_py import open_runtime


async def main(store: str, holder: str) -> None:
    async with open_runtime({"store": store}) as runtime:
        print(runtime.store.replica, flush=True)
        await runtime.forward_request(holder, "test.notes", {}, 60.0, lambda note: None)
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2])
