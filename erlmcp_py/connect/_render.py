"""Elicitations as inline terminal prompts: one typed prompt per field, then the user's choice.

Theory of operation
-------------------
:func:`ask_form` walks a form-mode ``requestedSchema`` field by field, in schema order. Each
field is shown as its label (``*`` when required), its description and, for choices, the
numbered options; then one input line is read through a :class:`Prompter`. The line is parsed
by the field's kind (:func:`~erlmcp_py.core.schema.field_kind`): text as typed, numbers with
``int``/``float`` (finite only), booleans from y/n words, choices by number (or by the exact
value or title), multi-selects as a comma list of numbers, dates as text in ``YYYY-MM-DD``. An
empty line takes the field's default, leaves an optional field out, or is refused for a
required one. The parsed value is then judged by the project's own
:func:`~erlmcp_py.core.validation.validate_answer` against the one-field schema, so the user
sees the server's rules (lengths, bounds, formats, item counts) before anything is sent, worded
from the catalog; the field is asked again until it passes. When every field has a value the
user picks Submit, Reject or Cancel; Submit sends the answer once the whole answer passes
``validate_answer``.

:func:`ask_url` shows a URL-mode request and offers to open the page in the browser (only on
a yes), then says what happened: the browser opened, or none could be (``webbrowser.open``
answers false when it finds none), and the URL is to be opened by hand. End of input answers
``cancel``; the caller cancels a prompt (Ctrl-C) by cancelling the task that awaits it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

import trio

from erlmcp_py.core.errors import SchemaNotAllowed
from erlmcp_py.core.i18n import Texts
from erlmcp_py.core.schema import FieldKind, enum_options, field_kind
from erlmcp_py.core.validation import AnswerError, validate_answer

__all__ = [
    "ANSWERS",
    "COMMANDS",
    "MISSING",
    "Answer",
    "FieldError",
    "FormField",
    "Prompter",
    "ask_field",
    "ask_form",
    "ask_url",
    "error_text",
    "form_field",
    "parse_field",
]

Action = Literal["accept", "decline", "cancel"]

_MULTI: Final = frozenset({FieldKind.MULTI_SELECT, FieldKind.TITLED_MULTI_SELECT})
_SINGLE: Final = frozenset(
    {FieldKind.SINGLE_SELECT, FieldKind.LEGACY_SINGLE_SELECT, FieldKind.TITLED_SINGLE_SELECT}
)


#: The history of the REPL's command lines (see :class:`Prompter`).
COMMANDS: Final = "commands"
#: The history of the answers typed into forms.
ANSWERS: Final = "answers"


class Prompter(Protocol):
    """Where prompts are written and answers read (the terminal, or a test's lines)."""

    async def ask(self, prompt: str, *, history: str | None = ANSWERS) -> str:
        """Show ``prompt`` and return the next input line without its line end.

        Args:
            prompt: The prompt.
            history: Which history the line joins and Up recalls from: :data:`COMMANDS`,
                :data:`ANSWERS`, or ``None`` for none (a numbered choice).

        Raises:
            EOFError: the input has ended.
        """
        ...

    def say(self, text: str) -> None:
        """Print ``text`` on lines of its own."""
        ...


@dataclass(frozen=True, slots=True)
class Answer:
    """What the user chose for one elicitation.

    Attributes:
        action: ``accept``, ``decline`` or ``cancel``.
        content: The form's values (form mode, ``accept`` only).
    """

    action: Action
    content: Mapping[str, Any] | None = None

    def result(self) -> dict[str, Any]:
        """The ``ElicitResult`` to send."""
        out: dict[str, Any] = {"action": self.action}
        if self.content is not None:
            out["content"] = dict(self.content)
        return out


class FieldError(ValueError):
    """A typed line does not parse as its field's kind; ``text`` is the message to show."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class _Missing:
    """The empty answer of an optional field without a default: the field is left out."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


@dataclass(frozen=True, slots=True)
class FormField:
    """One field of a requestedSchema, classified (``kind`` is ``None`` outside the MCP subset)."""

    name: str
    prop: Mapping[str, Any]
    required: bool
    kind: FieldKind | None  # None: outside the MCP subset; asked as JSON or text
    options: tuple[tuple[str, str | None], ...] = field(default=())

    @property
    def label(self) -> str:
        title = self.prop.get("title")
        return title if isinstance(title, str) and title else self.name


def form_field(name: str, prop: Mapping[str, Any], required: bool) -> FormField:
    """Classify property ``name`` of a requestedSchema for asking (a property outside the
    MCP subset, even one that is not an object, is asked as JSON or text)."""
    if not isinstance(prop, Mapping):
        prop = {}
    try:
        kind: FieldKind | None = field_kind(prop)
        options = enum_options(prop) if kind in _SINGLE | _MULTI else ()
    except (SchemaNotAllowed, ValueError):
        kind, options = None, ()
    return FormField(name, prop, required, kind, options)


# --------------------------------------------------------------------------------------------
# Parsing one line
# --------------------------------------------------------------------------------------------


def _number(text: str, integer: bool, t: Texts) -> int | float:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise FieldError(t("err_not_number")) from None
    if not math.isfinite(value):
        raise FieldError(t("err_not_number"))
    if integer:
        if not value.is_integer():
            raise FieldError(t("err_not_integer"))
        return int(value)
    return value


def _option(token: str, options: Sequence[tuple[str, str | None]], t: Texts) -> str:
    token = token.strip()
    if token.isdigit() and 1 <= int(token) <= len(options):
        return options[int(token) - 1][0]
    folded = token.casefold()
    for value, title in options:
        if token == value or (title is not None and title.casefold() == folded):
            return value
    raise FieldError(t("err_not_option", count=len(options)))


def parse_field(f: FormField, text: str, t: Texts) -> Any:
    """The JSON value a non-empty line gives field ``f``.

    Raises:
        FieldError: the line does not parse as the field's kind.
    """
    kind = f.kind
    if kind is FieldKind.BOOLEAN:
        word = text.strip().casefold()
        if word in t.words("yes_letters"):
            return True
        if word in t.words("no_letters"):
            return False
        raise FieldError(t("err_yes_no"))
    if kind in (FieldKind.INTEGER, FieldKind.NUMBER):
        return _number(text, kind is FieldKind.INTEGER, t)
    if kind in _SINGLE:
        return _option(text, f.options, t)
    if kind in _MULTI:
        tokens = [tok for tok in text.replace(" ", ",").split(",") if tok]
        chosen = [_option(tok, f.options, t) for tok in tokens]
        if len(set(chosen)) != len(chosen):
            raise FieldError(t("err_repeated"))
        return chosen
    if kind is None:
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


# --------------------------------------------------------------------------------------------
# Wording
# --------------------------------------------------------------------------------------------


def _fmt(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _format_word(fmt: object, t: Texts) -> str:
    key = f"format_{fmt}"
    try:
        return t(key)
    except KeyError:
        return str(fmt)


def error_text(error: AnswerError, t: Texts, options: int = 0) -> str:
    """One answer error, worded in the catalog's locale (never showing the value)."""
    c = error.constraint
    if c in ("minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems"):
        return t(f"err_{c}", limit=_fmt(error.expected))
    if c == "format":
        return t("err_format", what=_format_word(error.expected, t))
    if c in ("enum", "oneOf", "anyOf"):
        count = options or (len(error.expected) if isinstance(error.expected, tuple) else 0)
        return t("err_not_option", count=count)
    if c == "uniqueItems":
        return t("err_repeated")
    if c == "required":
        return t("err_required")
    if c in ("type", "finite") and error.expected in ("number", "integer", "finite number"):
        return t("err_not_integer" if error.expected == "integer" else "err_not_number")
    return error.message


def _hints(f: FormField, t: Texts) -> list[str]:
    p = f.prop
    hints: list[str] = []
    if f.kind is FieldKind.STRING:
        if "format" in p:
            hints.append(_format_word(p["format"], t))
        low, high = p.get("minLength"), p.get("maxLength")
        if low is not None and high is not None:
            hints.append(t("length_between", low=low, high=high))
        elif low:
            hints.append(t("length_min", low=low))
        elif high is not None:
            hints.append(t("length_max", high=high))
    elif f.kind in (FieldKind.INTEGER, FieldKind.NUMBER):
        hints.append(t("kind_integer" if f.kind is FieldKind.INTEGER else "kind_number"))
        low, high = p.get("minimum"), p.get("maximum")
        if low is not None and high is not None:
            hints.append(t("range_between", low=_fmt(low), high=_fmt(high)))
        elif low is not None:
            hints.append(t("range_min", low=_fmt(low)))
        elif high is not None:
            hints.append(t("range_max", high=_fmt(high)))
    elif f.kind is FieldKind.BOOLEAN:
        hints.append(t("yes_no"))
    elif f.kind in _SINGLE:
        hints.append(t("choose_one"))
    elif f.kind in _MULTI:
        hints.append(t("choose_many"))
        if not f.required and not p.get("minItems"):
            hints.append(t("choose_none"))
    if "default" in p:
        hints.append(t("default", value=_default_text(f, p["default"], t)))
    return hints


def _default_text(f: FormField, value: Any, t: Texts) -> str:
    if f.kind is FieldKind.BOOLEAN:
        return t("yes_letters" if value else "no_letters").split(",")[0]
    if f.kind in _SINGLE or f.kind in _MULTI:
        numbers = {v: str(i) for i, (v, _) in enumerate(f.options, 1)}
        chosen = value if isinstance(value, list) else [value]
        return ",".join(numbers.get(v, str(v)) for v in chosen)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _show_field(io: Prompter, f: FormField) -> None:
    head = f"{f.label}{' *' if f.required else ''}"
    description = f.prop.get("description")
    if isinstance(description, str) and description and description != f.label:
        head = f"{head} — {description}"
    io.say(head)
    for i, (value, title) in enumerate(f.options, 1):
        io.say(f"    {i}) {title if title is not None else value}")


# --------------------------------------------------------------------------------------------
# Asking
# --------------------------------------------------------------------------------------------


def _one_field_schema(f: FormField) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {f.name: dict(f.prop)},
        "required": [f.name] if f.required else [],
    }


def _check(schema: Mapping[str, Any], content: Mapping[str, Any]) -> tuple[AnswerError, ...]:
    """``validate_answer``'s errors; none when the server's schema is outside the MCP subset
    (the server judges such an answer itself)."""
    try:
        return validate_answer(schema, content).errors
    except SchemaNotAllowed:
        return ()


async def ask_field(io: Prompter, t: Texts, f: FormField) -> Any:
    """Ask one field until its line parses and passes validation.

    Returns:
        The field's value, or :data:`MISSING` when an optional field is left empty.

    Raises:
        EOFError: the input ended.
    """
    _show_field(io, f)
    hints = _hints(f, t)
    prompt = f"  [{'; '.join(hints)}] > " if hints else "  > "
    while True:
        line = await io.ask(prompt)
        if line == "":
            if "default" in f.prop:
                return f.prop["default"]
            if not f.required:
                return MISSING
            io.say(f"  ! {t('err_required')}")
            continue
        try:
            value = parse_field(f, line, t)
        except FieldError as exc:
            io.say(f"  ! {exc.text}")
            continue
        errors = _check(_one_field_schema(f), {f.name: value})
        if not errors:
            return value
        for error in errors:
            io.say(f"  ! {error_text(error, t, len(f.options))}")


async def _choose(io: Prompter, t: Texts) -> Action:
    words = {
        "submit": t("mcp.elicitation.action.accept"),
        "reject": t("mcp.elicitation.action.reject"),
        "cancel": t("mcp.elicitation.action.cancel"),
    }
    by_word: dict[str, Action] = {
        "1": "accept",
        "2": "decline",
        "3": "cancel",
        words["submit"].casefold(): "accept",
        words["reject"].casefold(): "decline",
        words["cancel"].casefold(): "cancel",
    }
    for word, action in list(by_word.items())[3:]:
        by_word.setdefault(word[0], action)
    prompt = t("action_prompt", **words)
    while True:
        choice = by_word.get((await io.ask(prompt, history=None)).strip().casefold())
        if choice is not None:
            return choice
        io.say(f"  ! {t('err_action', **words)}")


async def ask_form(io: Prompter, t: Texts, message: str, schema: Mapping[str, Any]) -> Answer:
    """Render a form-mode elicitation and return the user's answer.

    Args:
        io: Where to ask.
        t: The catalog in the user's locale.
        message: The request's ``message``.
        schema: Its ``requestedSchema``.

    Returns:
        ``accept`` with the content (after Submit, valid by ``validate_answer``), ``decline``
        (Reject) or ``cancel`` (Cancel, or the end of input).
    """
    properties = schema.get("properties")
    props: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
    listed = schema.get("required")
    required = {n for n in listed if isinstance(n, str)} if isinstance(listed, list) else set()
    fields = [form_field(name, prop, name in required) for name, prop in props.items()]
    io.say(t("server_asks"))
    for line in message.splitlines() or [""]:
        io.say(f"  {line}")
    if required:
        io.say(t("required_legend"))
    try:
        while True:
            content: dict[str, Any] = {}
            for f in fields:
                value = await ask_field(io, t, f)
                if value is not MISSING:
                    content[f.name] = value
            action = await _choose(io, t)
            if action != "accept":
                io.say(t("declined" if action == "decline" else "cancelled"))
                return Answer(action)
            errors = _check(schema, content)
            if not errors:
                io.say(t("sent"))
                return Answer("accept", content)
            for error in errors:
                io.say(f"  ! {error.field or ''}: {error_text(error, t)}")
    except EOFError:
        io.say(t("cancelled"))
        return Answer("cancel")


async def ask_url(
    io: Prompter, t: Texts, message: str, url: str, open_page: Callable[[str], object]
) -> Answer:
    """Render a URL-mode elicitation: show the page's URL, offer to open it.

    ``open_page`` (``webbrowser.open``) is called, in a thread, only when the user picks "open
    it in the browser"; a false result (or an error) means no browser could be opened, and
    the user is told to open the URL themselves. Both "open" choices answer ``accept`` (the
    user agrees to go to the page).

    Returns:
        ``accept``, ``decline`` or ``cancel`` (also at the end of input).
    """
    io.say(t("url_asks"))
    for line in message.splitlines():
        io.say(f"  {line}")
    io.say(f"  {url}")
    prompt = t(
        "url_choice",
        reject=t("mcp.elicitation.action.reject"),
        cancel=t("mcp.elicitation.action.cancel"),
    )
    try:
        while True:
            choice = (await io.ask(prompt, history=None)).strip()
            if choice == "1":
                if await _opened(open_page, url):
                    io.say(f"{t('mcp.elicitation.url_mode.opening')}: {url}")
                else:
                    io.say(t("url_no_browser", url=url))
                return Answer("accept")
            if choice == "2":
                return Answer("accept")
            if choice == "3":
                io.say(t("declined"))
                return Answer("decline")
            if choice == "4":
                io.say(t("cancelled"))
                return Answer("cancel")
            io.say(f"  ! {t('err_url_choice')}")
    except EOFError:
        io.say(t("cancelled"))
        return Answer("cancel")


async def _opened(open_page: Callable[[str], object], url: str) -> bool:
    """Whether ``open_page`` opened ``url`` (``webbrowser.open`` may wait for the browser's
    command: it runs in a thread, left behind if the prompt is cancelled)."""
    try:
        return bool(await trio.to_thread.run_sync(open_page, url, abandon_on_cancel=True))
    except Exception:  # webbrowser.Error, OSError: no browser to run
        return False
