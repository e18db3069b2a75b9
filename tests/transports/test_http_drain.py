"""The HTTP transport's event of its last call in flight ending (``calls_ended``), on which a
graceful stop's drain and settling wait: real sockets on 127.0.0.1, both protocol eras."""

from __future__ import annotations

import trio

from tests.transports import test_http_mrtr as mrtr
from tests.transports.test_http import TIMEOUT, call, client, serving


async def test_calls_ended_is_set_at_once_when_no_call_is_in_progress() -> None:
    async with serving() as listening, client(listening) as c:
        await c.initialize()
        assert listening.transport.calls_ended().is_set()


async def test_calls_ended_is_set_when_the_last_post_is_answered() -> None:
    async with serving() as listening, client(listening) as c:
        with trio.fail_after(TIMEOUT):
            await c.initialize()
            async with c.stream(call(1, "ask")) as events:
                asked = await events.next()
                assert asked is not None
                assert asked["method"] == "elicitation/create"
                ended = listening.transport.calls_ended()
                assert not ended.is_set()  # the call waits on its user
                await c.answer(asked, {"action": "accept", "content": {"name": "Ada"}})
                (answer,) = await events.rest()
            assert answer["id"] == 1
            await ended.wait()
            assert listening.transport.calls_in_progress == 0


async def test_calls_ended_is_set_when_a_suspended_call_finishes_between_rounds() -> None:
    """A 2026-07-28 call suspended between rounds ends with no request attached (its question
    times out and the tool returns): the event comes from the continuation registry."""
    runtime = {"form_deadline_s": 0.5, "warn_before_s": 0.0}
    async with (
        mrtr.serving(mrtr.Probe(), **runtime) as listening,
        mrtr.stateless_poster(listening) as c,
    ):
        with trio.fail_after(TIMEOUT):
            mrtr.only_request(mrtr.ok(await c.call()))  # suspended: unfinished
            assert listening.transport.calls_in_progress == 1
            ended = listening.transport.calls_ended()
            assert not ended.is_set()
            await ended.wait()
            assert listening.transport.calls_in_progress == 0
