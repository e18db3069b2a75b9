"""ElicitationActor.live is derived (registry size minus retained terminal ids); it must
always equal the number of records that have not ended, through answers, cancels,
deadlines, and evictions by count and by age."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py import ElicitationRequest, Tenant, open_runtime
from erlmcp_py.actors.elicitation import ElicitationActor
from erlmcp_py.testing import MemoryPeer

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ALICE = Tenant("alice", "ws1", "conv1")


def _check(actor: Any) -> None:
    assert isinstance(actor, ElicitationActor)
    assert actor.live == sum(r.outcome is None for r in actor.records.values())


@pytest.mark.parametrize("max_records", [1, 3, 100])
async def test_live_counts_the_records_that_have_not_ended(
    autojump_clock: trio.testing.MockClock, max_records: int
) -> None:
    config = {"rate": 1000, "retention_max_records": max_records, "retention_max_age_s": 50.0}
    async with open_runtime(config) as rt:
        peer = MemoryPeer()
        handles = []
        for i in range(8):
            handles.append(
                await rt.create_elicitation(
                    ElicitationRequest(f"q{i}", requested_schema=SCHEMA), peer=peer, tenant=ALICE
                )
            )
            actor = handles[0]._record.actor  # type: ignore[union-attr]
            _check(actor)
        assert actor.live == 8
        peer.answer(peer.requests[0].id, {"action": "accept", "content": {"name": "A"}})
        peer.answer(peer.requests[1].id, {"action": "decline"})
        await rt.cancel_elicitation(handles[2].id, tenant=ALICE)
        await trio.testing.wait_all_tasks_blocked()
        _check(actor)
        assert actor.live == 5
        await trio.sleep(60)  # the first endings age out of the retention (and the registry)
        await rt.list_elicitations(tenant=ALICE)  # an API call evicts what has aged
        _check(actor)
        peer.answer(peer.requests[3].id, {"action": "cancel"})
        await trio.sleep(400)  # the rest time out
        _check(actor)
        assert actor.live == 0
        assert len(actor.records) == len(actor.retention) <= max_records
