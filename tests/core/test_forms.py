"""The form definition language: definitions, compilation, URL-mode detection, answer validation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from erlmcp_py.core import validation
from erlmcp_py.core.errors import FormDefinitionError, SchemaNotAllowed
from erlmcp_py.core.forms import (
    FIELD_TYPES,
    CompiledForm,
    Condition,
    FormDefinition,
    TextField,
    compile_form,
    load_form,
    sensitive_name,
    sensitive_reason,
    validate_form_answer,
    visible_fields,
)
from erlmcp_py.core.schema import check_requested_schema
from erlmcp_py.core.urlpolicy import UrlPolicy

V = "2025-11-25"


def form(*fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": "f", "title": "A form", "fields": list(fields), **extra}


def compiled(*fields: dict[str, Any], version: str = V, **extra: Any) -> CompiledForm:
    return compile_form(form(*fields, **extra), version)


def wire(c: CompiledForm, name: str) -> dict[str, Any]:
    assert c.requested_schema is not None
    prop: dict[str, Any] = c.requested_schema["properties"][name]
    return prop


def errors(c: CompiledForm, content: object) -> list[tuple[str | None, str]]:
    result = validate_form_answer(c, content)
    assert result.ok == (not result.errors)
    return [(e.field, e.constraint) for e in result.errors]


def ok(c: CompiledForm, content: dict[str, Any]) -> dict[str, Any]:
    result = validate_form_answer(c, content)
    assert result.ok, result.errors
    assert result.content is not None
    return result.content


def problems(definition: object) -> list[tuple[str, str]]:
    with pytest.raises(FormDefinitionError) as info:
        compile_form(definition, V)  # type: ignore[arg-type]
    return list(info.value.problems)


# --- example forms of the language ----------------------------------------------------------

API_KEY_FORM: dict[str, Any] = {
    "id": "api_key_form",
    "title": "API Key Configuration",
    "description": "Please provide your API credentials",
    "fields": [
        {
            "id": "api_key",
            "type": "text",
            "label": "API Key",
            "required": True,
            "validation": {"minLength": 32, "maxLength": 64, "pattern": "^sk-[a-zA-Z0-9]{40,}$"},
            "rendering": {
                "placeholder": "sk-...",
                "inputType": "password",
                "helpText": "Found in your account settings",
            },
        },
        {
            "id": "region",
            "type": "select",
            "label": "Region",
            "required": True,
            "options": [
                {"value": "us-east-1", "title": "US East (Virginia)"},
                {"value": "us-west-2", "title": "US West (Oregon)"},
                {"value": "eu-west-1", "title": "Europe (Ireland)"},
            ],
            "default": "us-east-1",
        },
    ],
    "timeout": 300000,
}


def test_api_key_form_needs_url_mode() -> None:
    c = compile_form(API_KEY_FORM, V)
    assert c.mode == "url"
    assert c.requested_schema is None
    assert c.url_mode_fields == ("api_key",)
    assert c.needs_url_mode is not None
    assert "api_key" in c.needs_url_mode
    assert "password" in c.needs_url_mode
    assert c.timeout_s == 300.0
    assert c.message == "API Key Configuration\n\nPlease provide your API credentials"
    # the server-side schema still exists (a hosted URL-mode page validates with it)
    assert c.validation_schema["properties"]["api_key"]["pattern"] == "^sk-[a-zA-Z0-9]{40,}$"
    good = {"api_key": "sk-" + "a" * 40, "region": "eu-west-1"}
    assert ok(c, good) == good


def test_json_text_and_model_inputs() -> None:
    text = json.dumps(API_KEY_FORM)
    model = load_form(text)
    assert isinstance(model, FormDefinition)
    assert load_form(model) is model
    assert load_form(text.encode()) == model
    assert compile_form(model, V).validation_schema == compile_form(text, V).validation_schema


# --- text ---------------------------------------------------------------------------------------

USERNAME = {
    "id": "username",
    "type": "text",
    "label": "Username",
    "required": True,
    "default": "",
    "validation": {"minLength": 3, "maxLength": 32, "pattern": "^[a-zA-Z0-9_-]+$"},
    "rendering": {
        "placeholder": "Enter username",
        "inputType": "text",
        "helpText": "3-32 alphanumeric characters",
        "autocomplete": "username",
    },
}


def test_text_field() -> None:
    c = compiled(USERNAME)
    assert c.mode == "form"
    assert wire(c, "username") == {
        "type": "string",
        "title": "Username",
        "description": "3-32 alphanumeric characters",
        "minLength": 3,
        "maxLength": 32,
    }
    assert c.requested_schema is not None
    assert c.requested_schema["required"] == ["username"]
    assert "pattern" not in wire(c, "username")  # not allowed on the wire
    assert c.validation_schema["properties"]["username"]["pattern"] == "^[a-zA-Z0-9_-]+$"
    assert ok(c, {"username": "alice_1"}) == {"username": "alice_1"}
    assert errors(c, {}) == [("username", "required")]
    assert errors(c, {"username": "al"}) == [("username", "minLength")]
    assert errors(c, {"username": "x" * 33}) == [("username", "maxLength")]
    assert errors(c, {"username": "al ice"}) == [("username", "pattern")]
    assert errors(c, {"username": 12345}) == [("username", "type")]
    # ECMA-262 `$`: a trailing newline does not sneak past the pattern
    assert errors(c, {"username": "alice\n"}) == [("username", "pattern")]
    # ECMA-262 \d is ASCII only
    digits = compiled(
        {"id": "code", "type": "text", "label": "Code", "validation": {"pattern": r"^\d+$"}}
    )
    assert ok(digits, {"code": "123"})
    assert errors(digits, {"code": "\u0661\u0662"}) == [("code", "pattern")]


@pytest.mark.parametrize(
    ("fmt", "good", "bad", "on_wire"),
    [
        ("email", "a@example.com", "not-an-email", True),
        ("uri", "https://example.com/", "no scheme", True),
        ("date", "2026-02-02", "2026-02-30", True),
        ("date-time", "2026-02-02T10:00:00Z", "2026-02-02 10:00", True),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567", False),
        ("hostname", "api.example.com", "-bad-.com", False),
        ("ipv4", "192.0.2.1", "::1", False),
        ("ipv6", "2001:db8::1", "192.0.2.1", False),
    ],
)
def test_text_formats(fmt: str, good: str, bad: str, on_wire: bool) -> None:
    c = compiled({"id": "v", "type": "text", "label": "V", "validation": {"format": fmt}})
    assert (wire(c, "v").get("format") == fmt) is on_wire
    assert ok(c, {"v": good}) == {"v": good}
    assert errors(c, {"v": bad}) == [("v", "format")]


# --- number -------------------------------------------------------------------------------------


def test_number_field_integer_via_multiple_of_one() -> None:
    port = {
        "id": "port",
        "type": "number",
        "label": "Port Number",
        "required": True,
        "default": 8080,
        "validation": {"minimum": 1024, "maximum": 65535, "multipleOf": 1},
        "rendering": {"placeholder": "8080", "step": 1, "helpText": "Valid port range"},
    }
    c = compiled(port)
    assert wire(c, "port") == {
        "type": "integer",
        "title": "Port Number",
        "description": "Valid port range",
        "minimum": 1024,
        "maximum": 65535,
        "default": 8080,
    }
    assert ok(c, {"port": 8443.0}) == {"port": 8443}
    assert type(ok(c, {"port": 8443.0})["port"]) is int
    assert errors(c, {"port": 80}) == [("port", "minimum")]
    assert errors(c, {"port": 70000}) == [("port", "maximum")]
    assert errors(c, {"port": 8080.5}) == [("port", "type")]
    assert errors(c, {"port": "8080"}) == [("port", "type")]
    assert errors(c, {"port": True}) == [("port", "type")]


def test_number_field_server_only_rules() -> None:
    c = compiled(
        {
            "id": "ratio",
            "type": "number",
            "label": "Ratio",
            "validation": {"exclusiveMinimum": 0, "maximum": 10, "multipleOf": 0.5},
        }
    )
    # exclusive bounds cannot travel; the wire gets the looser inclusive hint
    assert wire(c, "ratio") == {"type": "number", "title": "Ratio", "minimum": 0, "maximum": 10}
    assert ok(c, {"ratio": 2.5}) == {"ratio": 2.5}
    assert errors(c, {"ratio": 0}) == [("ratio", "exclusiveMinimum")]
    assert errors(c, {"ratio": 2.25}) == [("ratio", "multipleOf")]
    assert errors(c, {"ratio": float("nan")}) == [("ratio", "finite")]
    assert errors(c, {"ratio": float("inf")}) == [("ratio", "finite")]


def test_integer_exclusive_bounds_are_exact_on_the_wire() -> None:
    c = compiled(
        {
            "id": "n",
            "type": "number",
            "label": "N",
            "validation": {"integer": True, "exclusiveMinimum": 0, "exclusiveMaximum": 10.5},
        }
    )
    assert wire(c, "n") == {"type": "integer", "title": "N", "minimum": 1, "maximum": 10}
    assert errors(c, {"n": 0}) == [("n", "exclusiveMinimum")]
    assert ok(c, {"n": 10}) == {"n": 10}


# --- boolean ------------------------------------------------------------------------------------


def test_boolean_field_and_downlevel() -> None:
    flag = {
        "id": "enable_ssl",
        "type": "boolean",
        "label": "Enable SSL/TLS",
        "default": True,
        "rendering": {"displayStyle": "checkbox", "helpText": "Encrypt connections"},
    }
    for version in ("2025-06-18", "2025-11-25", "2026-07-28"):
        c = compiled(flag, version=version)
        assert wire(c, "enable_ssl")["default"] is True  # boolean defaults exist in every version
        assert c.requested_schema is not None
        check_requested_schema(c.requested_schema, version)
        assert c.requested_schema.allowed_in(version)  # a checked schema, for this version
    c = compiled(flag)
    assert ok(c, {"enable_ssl": False}) == {"enable_ssl": False}
    assert ok(c, {}) == {"enable_ssl": True}  # default filled in
    assert validate_form_answer(c, {}, apply_defaults=False).content == {}
    assert errors(c, {"enable_ssl": "yes"}) == [("enable_ssl", "type")]
    assert errors(c, {"enable_ssl": 1}) == [("enable_ssl", "type")]


# --- date ---------------------------------------------------------------------------------------


def test_date_field() -> None:
    c = compiled(
        {
            "id": "start_date",
            "type": "date",
            "label": "Start Date",
            "required": True,
            "default": "2026-02-02",
            "validation": {"format": "date", "minimum": "2026-01-01", "maximum": "2026-12-31"},
            "rendering": {"displayFormat": "YYYY-MM-DD", "enableTime": False},
        }
    )
    assert wire(c, "start_date") == {
        "type": "string",
        "title": "Start Date",
        "format": "date",
        "default": "2026-02-02",
    }
    assert ok(c, {"start_date": "2026-01-01"})
    assert ok(c, {"start_date": "2026-12-31"})
    assert errors(c, {"start_date": "2025-12-31"}) == [("start_date", "minimum")]
    assert errors(c, {"start_date": "2027-01-01"}) == [("start_date", "maximum")]
    assert errors(c, {"start_date": "2026-02-30"}) == [("start_date", "format")]
    assert errors(c, {"start_date": "20260202"}) == [("start_date", "format")]


def test_date_time_field() -> None:
    c = compiled(
        {
            "id": "at",
            "type": "date",
            "label": "At",
            "validation": {
                "format": "date-time",
                "minimum": "2026-01-01",
                "maximum": "2026-06-30T12:00:00Z",
            },
        }
    )
    assert wire(c, "at")["format"] == "date-time"
    assert ok(c, {"at": "2026-03-01T09:30:00+01:00"})
    assert ok(c, {"at": "2026-06-30T23:00:00+12:00"})  # 11:00Z: before the bound
    assert ok(c, {"at": "2026-01-01t00:00:00z"})  # RFC 3339 allows lower-case t/z
    assert errors(c, {"at": "2025-12-31T23:00:00Z"}) == [("at", "minimum")]
    assert errors(c, {"at": "2026-06-30T12:00:01Z"}) == [("at", "maximum")]
    assert errors(c, {"at": "2026-03-01"}) == [("at", "format")]


# --- select -------------------------------------------------------------------------------------


def test_select_untitled_and_titled() -> None:
    untitled = {
        "id": "log_level",
        "type": "select",
        "label": "Log Level",
        "default": "info",
        "options": ["debug", "info", "warning"],
    }
    titled = {
        "id": "region",
        "type": "select",
        "label": "Region",
        "options": [
            {"value": "us-east-1", "title": "US East"},
            {"value": "eu-west-1", "label": "Europe"},  # options with labels
            "ap-south-1",
        ],
    }
    c = compiled(untitled, titled)
    assert wire(c, "log_level") == {
        "type": "string",
        "title": "Log Level",
        "enum": ["debug", "info", "warning"],
        "default": "info",
    }
    assert wire(c, "region")["oneOf"] == [
        {"const": "us-east-1", "title": "US East"},
        {"const": "eu-west-1", "title": "Europe"},
        {"const": "ap-south-1", "title": "ap-south-1"},
    ]
    assert ok(c, {"region": "eu-west-1"}) == {"log_level": "info", "region": "eu-west-1"}
    assert errors(c, {"log_level": "trace"}) == [("log_level", "enum")]
    result = validate_form_answer(c, {"region": "mars"})
    assert result.errors[0].expected == ("us-east-1", "eu-west-1", "ap-south-1")
    # 2025-06-18 clients get the legacy enum + enumNames shape, without the default
    old = compiled(untitled, titled, version="2025-06-18")
    assert wire(old, "region")["enumNames"] == ["US East", "Europe", "ap-south-1"]
    assert "default" not in wire(old, "log_level")


# --- multi_select -------------------------------------------------------------------------------

FEATURES = {
    "id": "features",
    "type": "multi_select",
    "label": "Enabled Features",
    "default": ["logging", "metrics"],
    "options": [
        {"value": "logging", "title": "Application Logging"},
        {"value": "metrics", "title": "Performance Metrics"},
        {"value": "tracing", "title": "Distributed Tracing"},
    ],
    "validation": {"minItems": 1, "maxItems": 2},
}


def test_multi_select() -> None:
    c = compiled(FEATURES)
    prop = wire(c, "features")
    assert prop["type"] == "array"
    assert prop["minItems"] == 1
    assert prop["maxItems"] == 2
    assert prop["items"]["anyOf"][2] == {"const": "tracing", "title": "Distributed Tracing"}
    assert prop["default"] == ["logging", "metrics"]
    assert ok(c, {"features": ["tracing"]}) == {"features": ["tracing"]}
    assert errors(c, {"features": []}) == [("features", "minItems")]
    assert errors(c, {"features": ["logging", "metrics", "tracing"]}) == [("features", "maxItems")]
    assert errors(c, {"features": ["logging", "logging"]}) == [("features", "uniqueItems")]
    result = validate_form_answer(c, {"features": ["logging", "nope"]})
    assert [(e.constraint, e.path) for e in result.errors] == [("enum", "/features/1")]
    assert errors(c, {"features": "logging"}) == [("features", "type")]
    with pytest.raises(SchemaNotAllowed) as info:
        compiled(FEATURES, version="2025-06-18")
    assert info.value.path == "/properties/features"


def test_multi_select_selection_aliases_and_bad_bounds() -> None:
    field = {**FEATURES, "validation": {"minSelections": 2}, "default": None}
    assert wire(compiled(field), "features")["minItems"] == 2
    bad = {**FEATURES, "validation": {"minItems": 4}, "default": None}
    assert problems(form(bad)) == [
        ("fields.0.validation.minItems", "minItems exceeds the 3 options")
    ]


# --- url ----------------------------------------------------------------------------------------

WEBHOOK = {
    "id": "webhook_url",
    "type": "url",
    "label": "Webhook URL",
    "required": True,
    "validation": {
        "format": "uri",
        "allowedSchemes": ["https"],
        "blockPrivateIPs": True,
        "blockLocalhost": True,
    },
    "rendering": {"placeholder": "https://api.example.com/webhook", "testButton": True},
}


@pytest.mark.parametrize(
    ("url", "constraint"),
    [
        ("http://192.168.1.1/webhook", "allowedSchemes"),
        ("https://192.168.1.1/webhook", "blockPrivateIPs"),
        ("https://169.254.169.254/", "blockPrivateIPs"),
        ("https://[::ffff:10.0.0.1]/", "blockPrivateIPs"),
        ("https://0x7f.1/", "blockLocalhost"),
        ("https://localhost/", "blockLocalhost"),
        ("https://user@example.com/", "format"),
        ("https://xn--bcher-kva.de/", "format"),
        ("javascript:alert(1)", "allowedSchemes"),
        ("not a url", "format"),
    ],
)
def test_url_field_refusals(url: str, constraint: str) -> None:
    c = compiled(WEBHOOK)
    result = validate_form_answer(c, {"webhook_url": url})
    assert [(e.field, e.constraint) for e in result.errors] == [("webhook_url", constraint)]
    assert url not in result.errors[0].message


def test_url_field_accepts_public_https() -> None:
    c = compiled(WEBHOOK)
    assert wire(c, "webhook_url") == {
        "type": "string",
        "title": "Webhook URL",
        "format": "uri",
        "maxLength": 2048,
    }
    url = "https://api.example.com/webhook?x=1"
    assert ok(c, {"webhook_url": url}) == {"webhook_url": url}  # the answer is not rewritten


def test_url_field_policy_and_schemes() -> None:
    dev_field = {**WEBHOOK, "validation": {"allowedSchemes": ["http", "https"]}}
    dev = compile_form(form(dev_field), V, url_policy=UrlPolicy(allow_http_loopback_dev=True))
    assert ok(dev, {"webhook_url": "http://localhost:8000/hook"})
    assert errors(dev, {"webhook_url": "http://example.com/"}) == [
        ("webhook_url", "allowedSchemes")
    ]
    https_only_dev = compile_form(
        form(WEBHOOK), V, url_policy=UrlPolicy(allow_http_loopback_dev=True)
    )
    assert errors(https_only_dev, {"webhook_url": "http://localhost:8000/"}) == [
        ("webhook_url", "allowedSchemes")
    ]
    assert problems(form({**WEBHOOK, "validation": {"blockPrivateIPs": False}}))[0][0] == (
        "fields.0.validation.blockPrivateIPs"
    )
    assert problems(form({**WEBHOOK, "default": "https://10.0.0.1/"})) == [
        (
            "fields.0.default",
            "Webhook URL: must not point at a private or reserved address [private].",
        )
    ]


# --- file ---------------------------------------------------------------------------------------

CONFIG_FILE = {
    "id": "config_file",
    "type": "file",
    "label": "Configuration File",
    "required": True,
    "validation": {
        "maxSize": 10485760,
        "allowedMimeTypes": ["application/json", "text/yaml"],
        "allowedExtensions": [".json", "YAML", ".yml"],
    },
    "rendering": {"acceptAttribute": ".json,.yaml,.yml", "dragAndDrop": True},
}


def test_file_field_needs_url_mode_and_validates_metadata() -> None:
    c = compiled(USERNAME, CONFIG_FILE)
    assert c.mode == "url"
    assert c.requested_schema is None
    assert c.url_mode_fields == ("config_file",)
    assert "file upload" in (c.needs_url_mode or "")
    meta = {"filename": "app.YAML", "content_type": "text/yaml", "size": 120}
    assert ok(c, {"username": "bob", "config_file": meta})["config_file"] == meta
    big = {**meta, "size": 10485761}
    assert errors(c, {"username": "bob", "config_file": big}) == [("config_file", "maxSize")]
    exe = {**meta, "content_type": "application/x-msdownload"}
    assert errors(c, {"username": "bob", "config_file": exe}) == [
        ("config_file", "allowedMimeTypes")
    ]
    txt = {**meta, "filename": "app.txt"}
    assert errors(c, {"username": "bob", "config_file": txt}) == [
        ("config_file", "allowedExtensions")
    ]
    assert errors(c, {"username": "bob", "config_file": {"size": 1}}) == [
        ("config_file", "required")
    ]
    assert problems(form({**CONFIG_FILE, "default": {"filename": "x"}}))[0][0].startswith(
        "fields.0.default"
    )


# --- sensitive fields ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "password",
        "Password",
        "user_password",
        "newPassword",
        "passwd",
        "pass-phrase",
        "api_key",
        "apiKey",
        "API-Key",
        "APIKEY",
        "Your API key",
        "x-api-key",
        "access_token",
        "accessToken",
        "refresh-token",
        "token",
        "github_token",
        "client_secret",
        "secret",
        "aws_secret_access_key",
        "credential",
        "credentials",
        "credit_card",
        "creditCardNumber",
        "card number",
        "SSN",
        "user_ssn",
        "cvv",
        "PIN",
        "otp",
        "private_key",
        "Passwort",
        "contraseña",
    ],
)
def test_sensitive_names(name: str) -> None:
    assert sensitive_name(name) is not None
    c = compiled({"id": "x", "type": "text", "label": name})
    assert c.mode == "url"
    assert c.requested_schema is None


@pytest.mark.parametrize(
    "name",
    [
        "username",
        "email",
        "max_tokens",
        "tokenizer",
        "pinned",
        "spin",
        "secretary",
        "passenger",
        "compass",
        "description",
        "region",
        "session_name",
        "classname",
    ],
)
def test_not_sensitive_names(name: str) -> None:
    assert sensitive_name(name) is None
    assert compiled({"id": "x", "type": "text", "label": name}).mode == "form"


def test_sensitive_signals_and_overrides() -> None:
    def reason(**field: Any) -> str | None:
        base = {"id": "x", "type": "text", "label": "Something"}
        definition = load_form(form({**base, **field}))
        return sensitive_reason(definition.fields[0])

    assert reason() is None
    assert reason(rendering={"inputType": "password"}) == "its inputType is password"
    assert reason(rendering={"autocomplete": "section-a current-password"}) is not None
    assert reason(rendering={"autocomplete": "cc-number"}) is not None
    assert reason(sensitive=True) == "it is marked sensitive"
    assert reason(id="api_key") == "its id looks like 'apikey'"
    # the name heuristic can be overridden ...
    assert reason(id="token_budget", label="Token budget", sensitive=False) is None
    # ... an explicit password input cannot
    assert reason(sensitive=False, rendering={"inputType": "password"}) is not None
    # choices and yes/no fields cannot carry a typed secret: the heuristic skips them
    assert reason(type="boolean", id="remember_password", label="Remember password") is None
    select = {"type": "select", "id": "token_type", "label": "Token type", "options": ["a"]}
    assert reason(**select) is None
    assert reason(type="number", id="pin", label="PIN") == "its id looks like 'pin'"
    assert reason(type="boolean", sensitive=True) == "it is marked sensitive"


def test_needs_url_mode_lists_every_offending_field() -> None:
    c = compiled(
        {"id": "api_key", "type": "text", "label": "Key"},
        {"id": "name", "type": "text", "label": "Name"},
        CONFIG_FILE,
    )
    assert c.url_mode_fields == ("api_key", "config_file")
    assert c.needs_url_mode is not None
    assert c.needs_url_mode.count("field ") == 2


# --- conditional display and requirements ------------------------------------------------------

SMTP = (
    {"id": "use_smtp", "type": "boolean", "label": "Use SMTP"},
    {
        "id": "smtp_port",
        "type": "number",
        "label": "SMTP Port",
        "required": True,
        "validation": {"integer": True, "minimum": 1, "maximum": 65535},
        "rendering": {
            "conditionalDisplay": {"operator": "equals", "field": "use_smtp", "value": True}
        },
    },
)


def test_conditional_display() -> None:
    c = compiled(*SMTP)
    assert c.requested_schema is not None
    assert c.requested_schema["required"] == []  # the wire cannot say "required when shown"
    assert c.validation_schema["allOf"] == [
        {
            "if": {"required": ["use_smtp"], "properties": {"use_smtp": {"const": True}}},
            "then": {"required": ["smtp_port"]},
        }
    ]
    assert ok(c, {}) == {}
    assert ok(c, {"use_smtp": True, "smtp_port": 25}) == {"use_smtp": True, "smtp_port": 25}
    assert errors(c, {"use_smtp": True}) == [("smtp_port", "required")]
    assert errors(c, {"use_smtp": True, "smtp_port": 0}) == [("smtp_port", "minimum")]
    # hidden: the value is treated as absent, even when it is invalid
    assert ok(c, {"use_smtp": False, "smtp_port": "garbage"}) == {"use_smtp": False}
    assert visible_fields(c, {"use_smtp": False}) == ("use_smtp",)
    assert visible_fields(c, {"use_smtp": True}) == ("use_smtp", "smtp_port")


def test_chained_conditions_and_operators() -> None:
    c = compiled(
        {"id": "reason", "type": "select", "label": "Reason", "options": ["price", "other"]},
        {
            "id": "other_reason",
            "type": "text",
            "label": "Other reason",
            "required": True,
            "showWhen": {"field": "reason", "value": "other"},
        },
        {
            "id": "detail",
            "type": "text",
            "label": "Detail",
            "showWhen": {"field": "other_reason", "operator": "present"},
            "requiredWhen": {"field": "reason", "operator": "in", "value": ["other"]},
        },
        {
            "id": "note",
            "type": "text",
            "label": "Note",
            "showWhen": {"field": "reason", "operator": "not_equals", "value": "price"},
        },
    )
    assert visible_fields(c, {}) == ("reason", "note")
    assert visible_fields(c, {"reason": "price"}) == ("reason",)
    assert visible_fields(c, {"reason": "other"}) == ("reason", "other_reason", "note")
    both = {"reason": "other", "other_reason": "x"}
    assert visible_fields(c, both) == ("reason", "other_reason", "detail", "note")
    assert errors(c, {"reason": "other"}) == [("other_reason", "required")]
    assert errors(c, both) == [("detail", "required")]
    # reason=price hides other_reason, which hides detail in turn
    assert ok(c, {"reason": "price", "other_reason": "x", "detail": "y", "note": "z"}) == {
        "reason": "price"
    }


def test_form_level_dependencies() -> None:
    c = compiled(
        {"id": "kind", "type": "select", "label": "Kind", "options": ["a", "b", "c"]},
        {"id": "tags", "type": "multi_select", "label": "Tags", "options": ["x", "y"]},
        {"id": "for_a", "type": "text", "label": "For A"},
        {"id": "not_b", "type": "text", "label": "Not B"},
        {"id": "when_x", "type": "text", "label": "When x"},
        validation={
            "dependencies": {
                "for_a": {"condition": {"field": "kind", "value": "a"}, "action": "show"},
                "not_b": {"condition": {"field": "kind", "value": "b"}, "action": "hide"},
                "when_x": [
                    {
                        "condition": {"field": "tags", "operator": "contains", "value": "x"},
                        "action": "require",
                    },
                    {
                        "condition": {"field": "kind", "operator": "not_in", "value": ["c"]},
                        "action": "enable",
                    },
                ],
            }
        },
    )
    assert visible_fields(c, {"kind": "a"}) == ("kind", "tags", "for_a", "not_b", "when_x")
    assert visible_fields(c, {"kind": "b"}) == ("kind", "tags", "when_x")
    assert visible_fields(c, {"kind": "c"}) == ("kind", "tags", "not_b")
    assert errors(c, {"tags": ["x"]}) == [("when_x", "required")]
    assert ok(c, {"kind": "c", "tags": ["x"]}) == {"kind": "c", "tags": ["x"]}


def test_hidden_rendering_hint_and_allow_partial() -> None:
    c = compiled(
        {"id": "name", "type": "text", "label": "Name", "required": True},
        {
            "id": "source",
            "type": "text",
            "label": "Source",
            "default": "form",
            "rendering": {"hidden": True},
        },
    )
    assert c.requested_schema is not None
    assert list(c.requested_schema["properties"]) == ["name"]
    assert ok(c, {"name": "n", "source": "forged"}) == {"name": "n", "source": "form"}
    partial = compiled(
        {"id": "name", "type": "text", "label": "Name", "required": True}, allow_partial=True
    )
    assert partial.requested_schema is not None
    assert partial.requested_schema["required"] == []
    assert ok(partial, {}) == {}


def test_cross_field_rules() -> None:
    c = compiled(
        {"id": "start", "type": "date", "label": "Start"},
        {"id": "end", "type": "date", "label": "End"},
        {"id": "lo", "type": "number", "label": "Low"},
        {"id": "hi", "type": "number", "label": "High"},
        validation={
            "rules": [
                {"left": "start", "operator": "le", "right": "end"},
                {
                    "left": "lo",
                    "operator": "lt",
                    "right": "hi",
                    "message": "Low must be below High",
                },
            ]
        },
    )
    assert ok(c, {"start": "2026-01-01", "end": "2026-01-01", "lo": 1, "hi": 2})
    assert ok(c, {"start": "2026-01-01"})  # rules need both sides
    result = validate_form_answer(c, {"start": "2026-02-01", "end": "2026-01-01", "lo": 2, "hi": 2})
    assert [(e.field, e.constraint, e.expected) for e in result.errors] == [
        ("start", "rule", "start le end"),
        ("lo", "rule", "lo lt hi"),
    ]
    assert result.errors[1].message == "Low: Low must be below High."


# --- answers as a whole -------------------------------------------------------------------------


def test_answer_shape_errors_never_echo_values() -> None:
    c = compiled(USERNAME)
    result = validate_form_answer(c, ["x"])
    assert [(e.field, e.constraint) for e in result.errors] == [(None, "type")]
    result = validate_form_answer(c, {"username": "bob", "sk-SECRET-KEY": "sk-SECRET-VALUE"})
    assert [(e.field, e.constraint, e.actual_items) for e in result.errors] == [
        (None, "additionalProperties", 1)
    ]
    assert "SECRET" not in repr(result)


def test_errors_are_in_form_order_and_summarised() -> None:
    c = compiled(USERNAME, FEATURES, WEBHOOK)
    result = validate_form_answer(c, {"webhook_url": "https://10.1.1.1/", "features": []})
    assert [e.field for e in result.errors] == ["username", "features", "webhook_url"]
    text = validation.summarize(result.errors)
    assert text.startswith("The answer was not accepted (3 problems):")


def test_compiled_hints_and_schema_validity() -> None:
    c = compiled(USERNAME, *SMTP)
    assert c.hints["username"]["placeholder"] == "Enter username"
    assert c.hints["username"]["helpText"] == "3-32 alphanumeric characters"
    assert c.hints["smtp_port"]["conditionalDisplay"]["field"] == "use_smtp"
    Draft202012Validator.check_schema(c.validation_schema)
    assert c.validation_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert c.validation_schema["additionalProperties"] is False
    with pytest.raises(TypeError):
        c.validation_schema["x"] = 1
    assert FIELD_TYPES == (
        "text",
        "number",
        "boolean",
        "date",
        "select",
        "multi_select",
        "url",
        "file",
    )


def test_python_construction() -> None:
    definition = FormDefinition(
        id="py",
        title="Built in Python",
        fields=(
            TextField(type="text", id="name", label="Name", required=True),
            TextField(
                type="text",
                id="nick",
                label="Nick",
                show_when=Condition(field="name", operator="present"),
            ),
        ),
    )
    c = compile_form(definition, V)
    assert ok(c, {"name": "a", "nick": "b"}) == {"name": "a", "nick": "b"}


# --- bad definitions: clear, located errors -----------------------------------------------------


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        (
            {"title": "t", "fields": [{"id": "a", "type": "text", "label": "A"}]},
            ("id", "Field required"),
        ),
        (form(), ("fields", "at least 1 item")),
        (
            form({"id": "a", "type": "color", "label": "A"}),
            ("fields.0", "does not match any of the expected tags"),
        ),
        (form({"id": "a", "type": "text"}), ("fields.0.label", "Field required")),
        (
            form({"id": "a b", "type": "text", "label": "A"}),
            ("fields.0.id", "should match pattern"),
        ),
        (
            form({"id": "a", "type": "text", "label": "A", "validation": {"minLenght": 3}}),
            ("fields.0.validation.minLenght", "Extra inputs are not permitted"),
        ),
        (
            form({"id": "a", "type": "text", "label": "A", "validation": {"minLength": "3"}}),
            ("fields.0.validation.minLength", "valid integer"),
        ),
        (
            form(
                {
                    "id": "a",
                    "type": "text",
                    "label": "A",
                    "validation": {"minLength": 5, "maxLength": 2},
                }
            ),
            ("fields.0.validation", "lower bound is greater"),
        ),
        (
            form({"id": "a", "type": "text", "label": "A", "validation": {"pattern": "("}}),
            ("fields.0.validation", "not a valid regular expression"),
        ),
        (
            form({"id": "a", "type": "text", "label": "A", "rendering": {"inputType": "color"}}),
            ("fields.0.rendering.inputType", "Input should be"),
        ),
        (
            form({"id": "a", "type": "number", "label": "A", "default": "5"}),
            ("fields.0.default.int", "valid integer"),
        ),
        (
            form({"id": "a", "type": "number", "label": "A", "validation": {"multipleOf": 0}}),
            ("fields.0.validation.multipleOf", "greater than 0"),
        ),
        (
            form({"id": "a", "type": "select", "label": "A", "options": []}),
            ("fields.0.options", "at least 1 item"),
        ),
        (
            form({"id": "a", "type": "select", "label": "A", "options": ["x", "x"]}),
            ("fields.0.options", "unique"),
        ),
        (
            form({"id": "a", "type": "date", "label": "A", "validation": {"minimum": "soon"}}),
            ("fields.0.validation", "not an ISO date"),
        ),
        (
            form(
                {
                    "id": "a",
                    "type": "date",
                    "label": "A",
                    "validation": {"minimum": "2026-02-01", "maximum": "2026-01-01"},
                }
            ),
            ("fields.0.validation", "minimum is after maximum"),
        ),
        (
            form(
                {"id": "a", "type": "url", "label": "A", "validation": {"allowedSchemes": ["ftp"]}}
            ),
            ("fields.0.validation.allowedSchemes.0", "Input should be"),
        ),
        (
            form(
                {
                    "id": "a",
                    "type": "text",
                    "label": "A",
                    "showWhen": {"field": "b", "operator": "in", "value": "x"},
                }
            ),
            ("fields.0.showWhen", "non-empty list"),
        ),
        (
            form(
                {
                    "id": "a",
                    "type": "text",
                    "label": "A",
                    "showWhen": {"field": "b", "operator": "present", "value": 1},
                }
            ),
            ("fields.0.showWhen", "takes no value"),
        ),
    ],
)
def test_structural_errors(definition: dict[str, Any], expected: tuple[str, str]) -> None:
    found = problems(definition)
    assert any(loc == expected[0] and expected[1] in msg for loc, msg in found), found


A = {"id": "a", "type": "text", "label": "A"}


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        (form(A, A), ("fields.1.id", "duplicate field id 'a'")),
        (
            form({**A, "showWhen": {"field": "zz", "value": "x"}}),
            ("fields.0.showWhen.field", "unknown field 'zz'"),
        ),
        (
            form({**A, "showWhen": {"field": "a", "value": "x"}}),
            ("fields.0.showWhen.field", "a field cannot depend on itself"),
        ),
        (
            form({**A, "requiredWhen": {"field": "zz", "operator": "present"}}),
            ("fields.0.requiredWhen.field", "unknown field 'zz'"),
        ),
        (form({**A, "dependencies": ["zz"]}), ("fields.0.dependencies.0", "unknown field 'zz'")),
        (
            form(
                {**A, "showWhen": {"field": "b", "value": "x"}},
                {"id": "b", "type": "text", "label": "B", "showWhen": {"field": "a", "value": "y"}},
            ),
            ("fields.1", "conditions form a cycle"),
        ),
        (
            form(
                {**A, "showWhen": {"field": "s", "value": "nope"}},
                {"id": "s", "type": "select", "label": "S", "options": ["x"]},
            ),
            ("fields.0.showWhen.value", "'nope' is not an option of 's'"),
        ),
        (
            form(
                {**A, "showWhen": {"field": "b", "value": "true"}},
                {"id": "b", "type": "boolean", "label": "B"},
            ),
            ("fields.0.showWhen.value", "compare it with true or false"),
        ),
        (
            form(
                {**A, "showWhen": {"field": "b", "operator": "contains", "value": "x"}},
                {"id": "b", "type": "text", "label": "B"},
            ),
            ("fields.0.showWhen.value", "'contains' needs a multi_select field"),
        ),
        (
            form(
                {
                    **A,
                    "showWhen": {"field": "a2", "value": "x"},
                    "rendering": {"conditionalDisplay": {"field": "a2", "value": "y"}},
                },
                {**A, "id": "a2"},
            ),
            ("fields.0.showWhen", "not both"),
        ),
        (
            form(
                A,
                validation={
                    "dependencies": {
                        "zz": {"condition": {"field": "a", "value": "x"}, "action": "show"}
                    }
                },
            ),
            ("validation.dependencies.zz", "unknown field 'zz'"),
        ),
        (
            form(
                A,
                {"id": "n", "type": "number", "label": "N"},
                validation={"rules": [{"left": "a", "operator": "lt", "right": "n"}]},
            ),
            ("validation.rules.0", "two number fields or two date fields"),
        ),
        (
            form({"id": "s", "type": "select", "label": "S", "options": ["x"], "default": "y"}),
            ("fields.0.default", "must be one of: x"),
        ),
        (
            form(
                {
                    "id": "t",
                    "type": "text",
                    "label": "T",
                    "default": "ab",
                    "validation": {"minLength": 3},
                }
            ),
            ("fields.0.default", "at least 3 characters"),
        ),
        (
            form(
                {
                    "id": "m",
                    "type": "multi_select",
                    "label": "M",
                    "options": ["x", "y"],
                    "default": ["x", "x"],
                }
            ),
            ("fields.0.default", "must not repeat a choice"),
        ),
    ],
)
def test_semantic_errors(definition: dict[str, Any], expected: tuple[str, str]) -> None:
    found = problems(definition)
    assert any(loc == expected[0] and expected[1] in msg for loc, msg in found), found


def test_error_message_lists_every_problem() -> None:
    with pytest.raises(FormDefinitionError) as info:
        load_form(form({"id": "a", "type": "text"}, {"id": "b", "type": "nope", "label": "B"}))
    text = str(info.value)
    assert "fields.0.label" in text
    assert "fields.1" in text
    assert isinstance(info.value, ValueError)


def test_unknown_version() -> None:
    with pytest.raises(ValueError, match="no form elicitation"):
        compile_form(form(A), "2024-11-05")


# --- properties ---------------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 1.5]),
    st.sampled_from(["x", "y", ""]),
)
values = st.one_of(scalars, st.lists(st.sampled_from(["x", "y", "z"]), max_size=3))


@st.composite
def conditions(draw: st.DrawFn) -> Condition:
    op = draw(
        st.sampled_from(["equals", "not_equals", "in", "not_in", "present", "absent", "contains"])
    )
    single = st.one_of(st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, 1.5, "x", "y"]))
    if op in ("present", "absent"):
        value: Any = None
    elif op in ("in", "not_in"):
        value = tuple(draw(st.lists(single, min_size=1, max_size=3)))
    else:
        value = draw(single)
    return Condition.model_validate({"field": "c", "operator": op, "value": value})


@given(cond=conditions(), content=st.dictionaries(st.sampled_from(["c", "d"]), values, max_size=2))
def test_condition_python_and_json_schema_agree(cond: Condition, content: dict[str, Any]) -> None:
    schema_says = Draft202012Validator(cond.json_schema()).is_valid(content)
    assert cond.holds(content) == schema_says


TEXT_FIELD = st.fixed_dictionaries(
    {"type": st.just("text"), "label": st.just("T")},
    optional={
        "required": st.booleans(),
        "validation": st.fixed_dictionaries(
            {},
            optional={
                "minLength": st.integers(0, 3),
                "pattern": st.sampled_from(["^[a-z]*$", "b"]),
            },
        ),
    },
)
NUMBER_FIELD = st.fixed_dictionaries(
    {"type": st.just("number"), "label": st.just("N")},
    optional={
        "required": st.booleans(),
        "validation": st.fixed_dictionaries(
            {},
            optional={
                "minimum": st.integers(-5, 0),
                "exclusiveMaximum": st.integers(1, 5),
                "integer": st.booleans(),
            },
        ),
    },
)
SELECT_FIELD = st.fixed_dictionaries(
    {"type": st.just("select"), "label": st.just("S"), "options": st.just(["a", "b"])},
    optional={"required": st.booleans()},
)
answer_values = st.one_of(
    st.text(alphabet="abAB \n1", max_size=5),
    st.integers(-7, 7),
    st.sampled_from([0.5, 2.0, -1.5, True, False, None, "a", "b", ["a"]]),
)


@st.composite
def forms_and_answers(draw: st.DrawFn) -> tuple[CompiledForm, dict[str, Any]]:
    kinds = draw(
        st.lists(st.one_of(TEXT_FIELD, NUMBER_FIELD, SELECT_FIELD), min_size=1, max_size=4)
    )
    fields = [{**k, "id": f"f{i}"} for i, k in enumerate(kinds)]
    if len(fields) > 1 and draw(st.booleans()):
        fields[-1]["showWhen"] = {"field": "f0", "operator": "present"}
    c = compile_form(form(*fields), V)
    answer: dict[str, Any] = draw(
        st.dictionaries(st.sampled_from([f["id"] for f in fields]), answer_values)
    )
    return c, answer


@settings(max_examples=150, deadline=None)
@given(case=forms_and_answers())
def test_accepted_answers_satisfy_the_wire_schema(
    case: tuple[CompiledForm, dict[str, Any]],
) -> None:
    """What the full rules accept, the (looser) wire schema accepts too."""
    c, answer = case
    result = validate_form_answer(c, answer)
    assert c.requested_schema is not None
    if result.ok:
        assert result.content is not None
        assert validation.validate_answer(c.requested_schema, result.content).ok
        # and the server-side JSON Schema agrees on the cleaned content
        assert Draft202012Validator(c.validation_schema).is_valid(result.content)
    else:
        assert result.errors


@settings(max_examples=100, deadline=None)
@given(case=forms_and_answers(), marker=st.sampled_from(["QQSECRETQQ", "qq\nsecret"]))
def test_errors_never_contain_submitted_values(
    case: tuple[CompiledForm, dict[str, Any]], marker: str
) -> None:
    c, answer = case
    poisoned = {k: marker for k in answer} | {"QQSECRETQQ_key": marker}
    result = validate_form_answer(c, poisoned)
    assert not result.ok
    assert marker not in repr(result.errors)
    assert "QQSECRETQQ" not in repr(result.errors)
