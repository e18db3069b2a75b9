"""Every upstream elicitation goes through the runtime, as a local ``ctx.elicit``: the official
SDK's ``MCPServer`` as the upstream (a subprocess over stdio), the gateway in this process,
the client stack as the user.

What the upstream receives is checked where it lands: the SDK tool's own result, and the
answers it recorded (``answers.jsonl``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio

from erlmcp_py.client import ClientRequestError, ServerRequest
from erlmcp_py.core.schema import RequestedSchema
from tests.gateway.support import EVERYTHING, recorded, text, through_gateway

PERSON = {"name": "Ada", "age": 36}


def form(field: dict[str, Any]) -> dict[str, Any]:
    """A form of one field, ``x``."""
    return {"type": "object", "properties": {"x": field}}


@pytest.fixture
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the upstream (started by the gateway in this process) writes what it received."""
    monkeypatch.setenv("GATEWAY_TEST_MARKS", str(tmp_path))
    return tmp_path


class User:
    """The client's user: answers each question from a script, and remembers every request
    and notification."""

    def __init__(self, *answers: dict[str, Any] | None) -> None:
        self.answers = list(answers)
        self.asked: list[ServerRequest] = []
        self.notes: list[tuple[str, dict[str, Any]]] = []
        self.changed = trio.Event()

    def __call__(self, request: ServerRequest) -> dict[str, Any] | None:
        self.asked.append(request)
        self._changed()
        if not self.answers:
            return None  # the user never answers
        return self.answers.pop(0)

    def notified(self, method: str, params: Any) -> None:
        self.notes.append((method, dict(params)))
        self._changed()

    def _changed(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def wait(self, predicate: Any) -> None:
        while not predicate():
            await self.changed.wait()

    def notes_named(self, method: str) -> list[dict[str, Any]]:
        return [params for name, params in self.notes if name == method]


async def test_the_sdks_titled_schema_is_asked_without_its_title_and_the_answer_goes_back(
    marks: Path,
) -> None:
    user = User({"action": "accept", "content": PERSON})
    async with through_gateway(user) as (_, client):
        result = await client.call_tool("ask_person")
    assert text(result) == "accept: Ada (36)"
    (asked,) = user.asked
    schema = asked.params["requestedSchema"]
    assert "title" not in schema  # the SDK's "title": "Person" is dropped on the way
    assert schema["properties"]["name"] == {
        "description": "Your name",
        "title": "Name",
        "type": "string",
    }
    assert schema["required"] == ["name", "age"]
    RequestedSchema(schema, "2025-11-25")  # what the client gets is in the MCP subset
    assert recorded(marks, "answers.jsonl") == [{"action": "accept", "data": PERSON}]


async def test_an_invalid_answer_is_asked_again_and_the_upstream_receives_only_the_valid_one(
    marks: Path,
) -> None:
    user = User(
        {"action": "accept", "content": {"name": "Ada", "age": "thirty-six"}},
        {"action": "accept", "content": {"name": "Ada", "age": 200}},
        {"action": "accept", "content": PERSON},
    )
    async with through_gateway(user) as (_, client):
        result = await client.call_tool("ask_person")
    assert text(result) == "accept: Ada (36)"
    assert [r.method for r in user.asked] == ["elicitation/create"] * 3
    first, second, third = (r.params["message"] for r in user.asked)
    assert first == "Who are you?"
    assert "- age: must be a whole number (got string)" in second
    assert "- age:" in third
    assert "150" in third
    assert recorded(marks, "answers.jsonl") == [{"action": "accept", "data": PERSON}]


async def test_answers_that_stay_invalid_end_as_a_cancel_for_the_upstream(marks: Path) -> None:
    bad = {"action": "accept", "content": {"name": "Ada"}}  # "age" is required
    user = User(*[bad] * 4)
    async with through_gateway(user) as (_, client):
        result = await client.call_tool("ask_person")
    assert text(result) == "cancel"
    assert len(user.asked) == 4  # the question and its three re-prompts
    assert recorded(marks, "answers.jsonl") == [{"action": "cancel"}]


async def test_a_decline_and_a_cancel_reach_the_upstream(marks: Path) -> None:
    user = User({"action": "decline"}, {"action": "cancel"})
    async with through_gateway(user) as (_, client):
        assert text(await client.call_tool("ask_person")) == "decline"
        assert text(await client.call_tool("ask_person")) == "cancel"


async def test_a_question_nobody_answers_is_cancelled_for_the_upstream_and_the_client_told(
    marks: Path,
) -> None:
    user = User()  # never answers
    runtime = {"form_deadline_s": 1.0, "warn_before_s": 0.5}
    async with through_gateway(user, runtime=runtime, on_notification=user.notified) as (
        _,
        client,
    ):
        start = trio.current_time()
        result = await client.call_tool("ask_person")
        waited = trio.current_time() - start
    assert text(result) == "cancel"
    assert 1.0 <= waited < 5.0
    assert recorded(marks, "answers.jsonl") == [{"action": "cancel"}]
    (asked,) = user.asked
    cancelled = user.notes_named("notifications/cancelled")
    assert [c["requestId"] for c in cancelled] == [asked.id]
    (warning,) = [m for m in user.notes_named("notifications/message") if m["level"] == "warning"]
    assert warning["logger"] == "erlmcp.elicitation"


async def test_a_question_ends_with_the_call_it_belongs_to(marks: Path) -> None:
    user = User()
    async with through_gateway(user, on_notification=user.notified) as (_, client):
        with trio.move_on_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "ask_person")
                await user.wait(lambda: user.asked)
                nursery.cancel_scope.cancel()  # the client cancels its call
        await user.wait(lambda: user.notes_named("notifications/cancelled"))
        # the session goes on
        assert text(await client.call_tool("echo", {"text": "on"})) == "on"
    (asked,) = user.asked
    (cancelled,) = user.notes_named("notifications/cancelled")
    assert cancelled["requestId"] == asked.id  # the client is told to drop the question


async def test_the_questions_own_timeout_in_its_meta_is_its_deadline(marks: Path) -> None:
    user = User()
    async with through_gateway(user, on_notification=user.notified) as (_, client):
        start = trio.current_time()
        result = await client.call_tool("ask_with_timeout", {"seconds": 0.5})
        waited = trio.current_time() - start
    assert text(result) == "cancel"
    assert 0.5 <= waited < 4.0  # not the policy's 300 s
    assert len(user.notes_named("notifications/cancelled")) == 1


@pytest.mark.parametrize(
    ("schema", "keyword", "path"),
    [
        (form({"type": "string", "pattern": "a+"}), "pattern", "/properties/x"),
        ({**form({"$ref": "#/$defs/X"}), "$defs": {}}, "$defs", "/"),
        (form({"type": "object"}), "type", "/properties/x"),
    ],
    ids=["pattern", "defs", "nesting"],
)  # fmt: skip
async def test_a_schema_outside_the_form_subset_is_an_error_naming_the_keyword_and_nobody_is_asked(
    schema: dict[str, Any], keyword: str, path: str, marks: Path
) -> None:
    user = User()
    async with through_gateway(user) as (_, client):
        result = await client.call_tool("ask_raw", {"schema": schema})
    refused = text(result)
    assert refused.startswith("refused: ")
    assert f"outside the MCP form subset: {keyword!r} at {path}" in refused
    assert user.asked == []


@pytest.mark.parametrize(
    "annotations",
    [
        {"$schema": "https://json-schema.org/draft/2020-12/schema"},
        {"description": "About you", "additionalProperties": False},
        {"title": "Person", "$comment": "generated", "examples": [{"name": "Bo"}]},
    ],
    ids=["$schema", "description+additionalProperties", "title+comment+examples"],
)
async def test_harmless_annotations_of_other_sdks_never_refuse_a_question(
    annotations: dict[str, Any], marks: Path
) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "examples": ["Ada"]}},
        "required": ["name"],
        **annotations,
    }
    user = User({"action": "accept", "content": {"name": "Ada"}})
    async with through_gateway(user) as (_, client):
        result = await client.call_tool("ask_raw", {"schema": schema})
    assert json.loads(text(result)) == {"action": "accept", "content": {"name": "Ada"}}
    sent = user.asked[0].params["requestedSchema"]
    assert set(sent) <= {"type", "properties", "required", "$schema"}
    assert sent["properties"] == {"name": {"type": "string"}}


async def test_a_client_without_elicitation_makes_the_upstream_get_an_error_it_can_handle(
    marks: Path,
) -> None:
    user = User()
    async with through_gateway(user, capabilities={}) as (_, client):
        result = await client.call_tool(
            "ask_raw", {"schema": {"type": "object", "properties": {"a": {"type": "string"}}}}
        )
        caps = json.loads(text(await client.call_tool("client_caps")))
    assert text(result).startswith("refused: ")
    assert "the client declared no elicitation capability" in text(result)
    assert caps == {}  # nothing was declared upstream either
    assert user.asked == []


async def test_a_form_only_client_makes_url_questions_an_error_for_the_upstream(
    marks: Path,
) -> None:
    user = User()
    async with through_gateway(user, capabilities={"elicitation": {"form": {}}}) as (_, client):
        result = await client.call_tool("ask_url", {"url": "https://signin.example.com/a"})
    assert text(result) == "refused: the client does not support url-mode elicitation"
    assert user.asked == []


# -- URL mode ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "refusal"),
    [
        ("https://10.0.0.7/login", "private"),  # the literal address
        ("https://vault.internal/login", "private"),  # after DNS: the host resolves to 10.1.2.3
        ("http://signin.example.com/login", "http is allowed only towards loopback"),
        ("javascript:alert(1)", "scheme"),
    ],
    ids=["literal-private", "dns-private", "http", "javascript"],
)
async def test_an_unsafe_url_is_refused_to_the_upstream_with_32602_and_the_user_never_sees_it(
    url: str, refusal: str, marks: Path
) -> None:
    user = User()
    async with through_gateway(user) as (_, client):
        result = await client.call_tool("ask_url", {"url": url})
    refused = text(result)
    assert refused.startswith("refused: URL refused: "), refused
    assert refusal in refused.lower()
    assert user.asked == []


async def test_a_url_question_is_accepted_at_consent_and_completed_by_the_upstream(
    marks: Path,
) -> None:
    user = User({"action": "accept"})
    async with through_gateway(user, on_notification=user.notified) as (_, client):
        consent = await client.call_tool(
            "ask_url", {"url": "https://signin.example.com/a", "elicitation_id": "up-7"}
        )
        assert text(consent) == "accept"  # the upstream goes on as soon as the user consents
        (asked,) = user.asked
        assert asked.params["mode"] == "url"
        assert asked.params["url"] == "https://signin.example.com/a"
        runtime_id = asked.params["elicitationId"]
        assert runtime_id != "up-7"  # the client sees the runtime's id
        assert text(await client.call_tool("complete_url", {"elicitation_id": "up-7"})) == (
            "completed"
        )
        await user.wait(lambda: user.notes_named("notifications/elicitation/complete"))
    (complete,) = user.notes_named("notifications/elicitation/complete")
    assert complete == {"elicitationId": runtime_id}


async def test_a_declined_url_question_is_declined_for_the_upstream(marks: Path) -> None:
    user = User({"action": "decline"})
    async with through_gateway(user) as (_, client):
        result = await client.call_tool("ask_url", {"url": "https://signin.example.com/a"})
    assert text(result) == "decline"


# -- secrets ----------------------------------------------------------------------------------


async def test_a_secret_is_never_asked_in_form_mode_and_without_a_page_is_refused(
    marks: Path,
) -> None:
    user = User()
    async with through_gateway(user) as (_, client):
        result = await client.call_tool("ask_key")
    refused = text(result)
    assert refused.startswith("refused: ")
    assert "api_key" in refused
    assert "serve over HTTP" in refused
    assert user.asked == []


# -- capabilities and the audit log -------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "upstream_sees"),
    [
        (EVERYTHING, EVERYTHING),
        ({"elicitation": {"url": {}}}, {"elicitation": {"url": {}}}),
        (
            {"elicitation": {}, "sampling": {"tools": {}}, "experimental": {"x": {}}},
            {"elicitation": {"form": {}}, "sampling": {"tools": {}}},
        ),
        ({"roots": {}}, {"roots": {}}),
        ({}, {}),
    ],
    ids=["everything", "url-only", "form-sampling", "roots", "nothing"],
)
async def test_the_upstream_is_told_only_what_the_client_really_has(
    declared: dict[str, Any], upstream_sees: dict[str, Any], marks: Path
) -> None:
    async with through_gateway(User(), capabilities=declared) as (_, client):
        seen = json.loads(text(await client.call_tool("client_caps")))
    assert seen == upstream_sees


async def test_the_audit_log_says_who_was_asked_what_and_the_outcome_never_the_values(
    marks: Path,
) -> None:
    user = User({"action": "accept", "content": {"name": "Zebedee-Quux", "age": 36}})
    with structlog.testing.capture_logs() as logs:
        async with through_gateway(user) as (_, client):
            await client.call_tool("ask_person")
    (line,) = [e for e in logs if e["event"] == "gateway_question"]
    assert line["outcome"] == "Accepted"
    assert line["mode"] == "form"
    assert line["message"] == "Who are you?"
    assert line["fields"] == ["name", "age"]
    assert line["annotations_dropped"] == ["/title"]
    assert line["user"] == "local"
    assert line["principal"]
    assert "Zebedee-Quux" not in repr(logs)


async def test_a_refused_question_is_in_the_audit_log_with_its_reason(marks: Path) -> None:
    with structlog.testing.capture_logs() as logs:
        async with through_gateway(User()) as (_, client):
            await client.call_tool("ask_url", {"url": "https://10.0.0.7/x"})
    (line,) = [e for e in logs if e["event"] == "gateway_question"]
    assert (line["outcome"], line["reason"], line["mode"]) == ("refused", "unsafe_url", "url")


async def test_the_rate_limit_of_the_downstream_principal_applies(marks: Path) -> None:
    user = User(*[{"action": "decline"}] * 5)
    async with through_gateway(user, runtime={"rate": 2}) as (_, client):
        assert text(await client.call_tool("ask_person")) == "decline"
        assert text(await client.call_tool("ask_person")) == "decline"
        with pytest.raises(ClientRequestError) as refused:  # the SDK tool raises the error
            await client.call_tool("ask_person")
    assert "too many questions for this user" in refused.value.message
    assert len(user.asked) == 2
