"""The store's wire format: store URLs, key names, the bucket's integers, records and forwarded
calls as they travel, tasks' records with what replaying them takes, their journals' answers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from erlmcp_py.core.errors import (
    AlreadyTerminal,
    AnswerInFlight,
    ElicitationNotFound,
    ExtensionDenied,
    InvalidAnswer,
    ResultTooLarge,
    StoreUnavailable,
    ValidatorError,
)
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.policy import RatePolicy
from erlmcp_py.core.store_wire import (
    BucketParams,
    Keys,
    StoreTask,
    StoreTicket,
    StoreUrl,
    TaskReplay,
    decode_call,
    decode_record,
    decode_task,
    decode_task_answer,
    decode_task_call,
    decode_ticket,
    encode_call,
    encode_record,
    encode_task,
    encode_task_answer,
    encode_task_call,
    encode_ticket,
    error_from_wire,
    error_to_wire,
    parse_store_url,
    retry_after_s,
    tenant_digest,
    visible_to,
)
from erlmcp_py.core.validation import AnswerError

ALICE = Tenant("alice", "ws1", "c1")
ROW = {
    "id": "abc",
    "mode": "form",
    "status": "active",
    "client": "peer-1",
    "created_at": 100.0,
    "deadline": 400.0,
    "sent_at": 100.5,
    "ended_at": None,
    "extensions_used": 0,
    "reprompts_used": 0,
    "outcome": None,
}


def test_store_urls_name_memory_or_a_redis_server_with_options() -> None:
    assert parse_store_url("memory") == StoreUrl()
    url = parse_store_url("redis://10.0.0.5:6380/2?prefix=prod&timeout=0.25&heartbeat_ttl=9")
    assert (url.kind, url.host, url.port, url.db, url.prefix) == ("redis", "10.0.0.5", 6380, 2,
                                                                   "prod")  # fmt: skip
    assert (url.timeout_s, url.heartbeat_s, url.heartbeat_ttl_s) == (0.25, 1.0, 9.0)
    assert str(url) == "redis://10.0.0.5:6380/2"
    assert parse_store_url("valkey://cache").port == 6379


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("postgres://db/1", "redis://HOST:PORT/DB"),
        ("redis://", "names no host"),
        ("redis://h:99999/0", "bad port"),
        ("redis://h/zero", "database must be a number"),
        ("redis://user@h/0", "a user without a password"),
        ("rediss://:secret@h/0", "got a rediss: URL"),
        ("redis://h/0?speed=1", "unknown store URL option"),
        ("redis://h/0?timeout=-1", "positive number"),
        ("redis://h/0?prefix=a:b", "prefix"),
        ("redis://h/0?heartbeat=5&heartbeat_ttl=2", "longer than heartbeat"),
    ],
)
def test_a_bad_store_url_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_store_url(text)


def test_a_store_password_is_taken_and_never_shown() -> None:
    url = parse_store_url("redis://app:s%40cret@h:6380/1")
    assert (url.username, url.password) == ("app", "s@cret")
    assert "cret" not in repr(url)
    assert "cret" not in str(url)
    assert parse_store_url("redis://:pw@h").username is None
    with pytest.raises(ValueError) as refused:
        parse_store_url("redis://:pw@h:port/0")
    assert "pw" not in str(refused.value)


def test_every_key_starts_with_the_prefix() -> None:
    keys = Keys("p")
    names = [keys.bucket("c"), keys.replicas, keys.pending_prefix, keys.live_prefix,
             keys.record_prefix, keys.index_prefix, keys.channel("r"), keys.task("t"),
             keys.task_journal("t"), keys.task_set_prefix, keys.orphans]  # fmt: skip
    assert all(name.startswith("p:") for name in names)
    assert len(set(names)) == len(names)


def test_the_bucket_is_the_core_bucket_in_microseconds() -> None:
    params = BucketParams.from_policy(RatePolicy(rate=10, window_s=60, capacity=10))
    assert (params.window_us, params.rate, params.capacity_level) == (60_000_000, 10, 600_000_000)
    assert params.max_pending_global == 0  # none
    # one token short at rate 10: 6 s, rounded up to the next whole microsecond
    assert retry_after_s(6_000_000) == 6.000001
    with pytest.raises(ValueError, match="too large"):
        BucketParams.from_policy(RatePolicy(rate=10**9, window_s=10**7, capacity=10**9))


def test_a_record_reads_back_as_written() -> None:
    record = decode_record(encode_record(ROW, ALICE, "r1"), 5_000, None)
    assert (dict(record.row), record.tenant, record.replica) == (ROW, ALICE, "r1")
    assert not record.terminal


def test_a_dead_replicas_live_record_reads_as_failed_when_it_was_found_dead() -> None:
    record = decode_record(encode_record(ROW, ALICE, "r1"), 5_000, 7_500)
    assert (record.row["status"], record.row["outcome"]) == ("failed", "Failed")
    assert record.row["ended_at"] == 103.0  # sent_at + 2.5 s, on the holder's clock
    ended = dict(ROW, status="completed", outcome="Accepted", ended_at=120.0)
    kept = decode_record(encode_record(ended, ALICE, "r1"), 5_000, 7_500)
    assert dict(kept.row) == ended  # an outcome stays what it was


@given(st.text(max_size=8), st.text(max_size=8), st.text(max_size=8))
def test_another_tenants_record_is_invisible(user: str, workspace: str, conv: str) -> None:
    other = Tenant(user, workspace, conv)
    record = decode_record(encode_record(ROW, ALICE, "r1"), 0, None)
    assert (visible_to(record, other) is None) == (other != ALICE)
    assert (tenant_digest(other) == tenant_digest(ALICE)) == (other == ALICE)


def test_a_forwarded_call_and_its_errors_cross_the_wire() -> None:
    assert decode_call(encode_call("extend", "abc", ALICE, 30.0)) == ("extend", "abc", ALICE, 30.0)
    with pytest.raises(ValueError):
        decode_call({"op": "delete", "id": "abc", "tenant": ["a", "", ""]})
    error = AnswerError("age", "minimum", 0, "/age", "age: too small", "integer")
    for original in (
        ElicitationNotFound("abc"),
        AlreadyTerminal("completed"),
        ExtensionDenied("max_extensions", 2),
        ResultTooLarge(10, 5),
        AnswerInFlight("abc"),
        InvalidAnswer((error,), "age: too small"),
        ValidatorError("abc", "KeyError"),
    ):
        again = error_from_wire(error_to_wire(original))
        assert type(again) is type(original)
        assert str(again) == str(original)
    assert error_from_wire(error_to_wire(InvalidAnswer((error,), "x"))).errors == (error,)
    assert isinstance(error_from_wire(error_to_wire(RuntimeError("boom"))), StoreUnavailable)


def test_a_ticket_reads_back_with_who_asks_on_every_replica() -> None:
    ticket = StoreTicket(
        "t" * 43,
        "https://mcp.example/elicit/" + "t" * 43,
        "csrf",
        Tenant("u", "w", "c"),
        "Your key?",
        {"type": "object", "properties": {"key": {"type": "string"}}},
        {"key": {"sensitive": True}},
        "replica-a",
        server="Acme <Cloud>",
        tool="Sign in",
    )
    assert decode_ticket(ticket.token, encode_ticket(ticket), None, "open") == ticket
    written = json.loads(encode_ticket(ticket))
    del written["server"], written["tool"]  # as a replica of an earlier release writes it
    read = decode_ticket(ticket.token, json.dumps(written), "e-1", "used")
    assert (read.server, read.tool, read.elicitation_id, read.state) == ("", "", "e-1", "used")


def test_a_durable_tasks_record_carries_what_replaying_it_takes_and_names_its_holder() -> None:
    replay = TaskReplay(
        tool="approve",
        call={"tool": "approve", "arguments": {"item": "INV-7"}, "id": 3},
        client_id="alice",
        protocol_version="2026-07-28",
        capabilities={"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
        required=True,
        issued=("who", "elicitation"),
        cancel_requested=False,
        message_key="who",
        charged=2,
        blocked="url_elicitation",
    )
    record = StoreTask("t1", {"taskId": "t1", "status": "working"}, "alice", "r1", replay)
    assert record.durable
    assert not StoreTask("t1", {}, "alice", "r1").durable
    assert decode_task(encode_task(record)) == record
    assert decode_task(encode_task(record), "r2").replica == "r2"  # taken over since
    text = json.loads(encode_task(record))
    text["replay"]["charged"] = "2"
    with pytest.raises(TypeError):
        decode_task(json.dumps(text))
    with pytest.raises(TypeError):
        decode_task(json.dumps({**text, "replay": []}))


def test_a_journals_answer_and_a_forwarded_task_call_cross_the_wire() -> None:
    answer = ("who", "q" * 24, {"action": "accept", "content": {"name": "Ada"}})
    assert decode_task_answer(encode_task_answer(answer)) == answer
    assert decode_task_answer(encode_task_answer((None, "q", {"action": "decline"})))[0] is None
    for bad in ("{}", "[1, 2]", '[1, "q", {}]', '["k", 2, {}]', '["k", "q", []]'):
        with pytest.raises((TypeError, ValueError)):
            decode_task_answer(bad)
    call = encode_task_call("update", "t1", "alice", {"responses": {"who": {}}})
    assert decode_task_call(json.loads(json.dumps(call))) == (
        "update",
        "t1",
        "alice",
        {"responses": {"who": {}}},
    )
    assert decode_task_call(encode_task_call("cancel", "t1", "alice"))[0] == "cancel"
    with pytest.raises(ValueError):
        decode_task_call({**call, "op": "get"})
    with pytest.raises(TypeError):
        decode_task_call({**call, "principal": None})
