"""The hosted page's front door under attack, on a real socket: targets that are not a token,
forms that are not the page's, bodies too large or of the wrong type. Each gets its own 4xx
(never a 500), and the question stays answerable by the page's own form afterwards.
"""

from __future__ import annotations

import pytest

from tests.transports.test_http11_strict import exchange, port_of, responses
from tests.transports.test_page import CSRF, asked, page_server, tool_text

FORM = "application/x-www-form-urlencoded"
#: Where a target names the ticket's token.
TOKEN = "{token}"


@pytest.mark.parametrize(
    ("target", "status"),
    [
        ("/elicit/../mcp", 404),
        ("/elicit/%2e%2e/mcp", 404),
        ("/elicit/%2e%2e%2fmcp", 404),
        ("/elicit/{token}%2F..", 404),
        ("/elicit/{token}%2f", 404),
        ("/elicit/{token}/", 404),
        ("/elicit/{token}/..", 404),
        ("/elicit//{token}", 404),
        ("/elicit/./{token}", 404),
        ("/elicit/%c0%ae%c0%ae/{token}", 404),  # overlong UTF-8 dots
        ("/elicit/%c0%af{token}", 404),  # overlong UTF-8 slash
        ("/elicit/{token}%00", 404),
        ("/elicit/{token}%20", 404),
        ("/elicit/{token}%ff", 404),
        ("/elicit/{token}{token}", 404),
        ("/elicit/", 404),
        ("/elicit%2F{token}", 404),  # not the page's path: never decoded into it
        ("/ELICIT/{token}", 404),
        ("/elicit/%u0041{token}", 400),  # not a percent-encoding
        ("/elicit/{token}#x", 400),  # no fragment in a request target
        ("/elicit/\\{token}", 400),
    ],
)
async def test_a_target_that_is_not_a_token_is_refused_with_its_4xx(
    target: str, status: int
) -> None:
    async with page_server() as listening, asked(listening) as (c, events, url):
        token = url.rsplit("/", 1)[1]
        raw = target.replace(TOKEN, token).encode()
        for method in (b"GET", b"POST"):
            request = method + b" " + raw + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            request += b"Content-Type: " + FORM.encode() + b"\r\nContent-Length: 0\r\n\r\n"
            answer = await exchange(port_of(listening.url), request)
            assert [s for s, _ in responses(answer)] == [status], (method, answer)
        page = await c.http.get(url)
        assert page.status_code == 200  # the ticket is untouched
        csrf = CSRF.findall(page.text)[0]
        await c.http.post(url, data={"_csrf": csrf, "_action": "cancel"})
        assert tool_text(await events.rest()) == "cancel by client"


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "multipart/form-data; boundary=x", "application/json", "form"],
)
async def test_a_form_of_another_content_type_is_refused_415(content_type: str | None) -> None:
    async with page_server() as listening, asked(listening) as (c, events, url):
        csrf = CSRF.findall((await c.http.get(url)).text)[0]
        body = f"_csrf={csrf}&_action=accept&user=u&api_key=k".encode()
        headers = {} if content_type is None else {"content-type": content_type}
        refused = await c.http.post(url, content=body, headers=headers)
        assert refused.status_code == 415
        # the media type is case-insensitive and takes parameters (RFC 9110 §8.3.1)
        done = await c.http.post(
            url, content=body, headers={"content-type": FORM.upper() + "; charset=UTF-8"}
        )
        assert done.status_code == 200
        assert tool_text(await events.rest()) == "accept user=u key=k"


async def test_a_form_missing_the_csrf_value_or_with_a_wrong_one_is_refused_403() -> None:
    async with page_server() as listening, asked(listening) as (c, events, url):
        csrf = CSRF.findall((await c.http.get(url)).text)[0]
        for data in (
            {"_action": "accept", "user": "u", "api_key": "k"},
            {"_csrf": "", "_action": "accept", "user": "u", "api_key": "k"},
            {"_csrf": csrf[:-1], "_action": "accept", "user": "u", "api_key": "k"},
            {"_csrf": csrf + "x", "_action": "accept", "user": "u", "api_key": "k"},
            # a value sent twice is read as its last (the field a form sends last wins)
            {"_csrf": [csrf, "wrong"], "_action": "accept", "user": "u", "api_key": "k"},
        ):
            assert (await c.http.post(url, data=data)).status_code == 403, data
        unknown = await c.http.post(url, data={"_csrf": csrf, "_action": "delete"})
        assert unknown.status_code == 400
        # fields the form does not have are ignored; of a field sent twice, the last counts
        done = await c.http.post(
            url,
            data={
                "_csrf": ["wrong", csrf],
                "_action": ["decline", "accept"],
                "user": ["first", "last"],
                "api_key": "k",
                "admin": "1",
                "_extra": "x",
            },
        )
        assert done.status_code == 200
        assert tool_text(await events.rest()) == "accept user=last key=k"


async def test_a_form_too_large_is_refused_413_and_its_connection_closed() -> None:
    async with page_server() as listening, asked(listening) as (c, events, url):
        csrf = CSRF.findall((await c.http.get(url)).text)[0]
        target = url.split("127.0.0.1:", 1)[1].split("/", 1)[1]
        head = b"POST /" + target.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        head += b"Content-Type: " + FORM.encode() + b"\r\n"
        huge = b"_csrf=" + csrf.encode() + b"&_action=accept&user=" + b"u" * (5 << 20)
        for framing, body in (
            (b"Content-Length: %d\r\n" % len(huge), huge),
            (b"Transfer-Encoding: chunked\r\n", b"%x\r\n%s\r\n0\r\n\r\n" % (len(huge), huge)),
        ):
            answer = await exchange(port_of(listening.url), head + framing + b"\r\n" + body)
            assert [s for s, _ in responses(answer)] == [413], answer[:300]
            assert b"connection: close" in answer.split(b"\r\n\r\n", 1)[0]
        # a form that is not UTF-8 is read with replacement characters, not refused
        done = await c.http.post(
            url,
            content=b"_csrf=" + csrf.encode() + b"&_action=accept&user=%ff%c0%af&api_key=k",
            headers={"content-type": FORM},
        )
        assert done.status_code == 200
        assert tool_text(await events.rest()) == "accept user=\ufffd\ufffd\ufffd key=k"


async def test_a_number_field_takes_only_the_html_number_grammar() -> None:
    # Python's float() also reads "1_000", "١٢", " +5" and "infinity": an HTML form's number
    # (a valid floating-point number, HTML §2.3.4.3) is none of them
    async with page_server() as listening, asked(listening, "everything") as (c, events, url):
        csrf = CSRF.findall((await c.http.get(url)).text)[0]
        base = {"_csrf": csrf, "_action": "accept", "name": "Ada", "password": "pw"}
        for field, value in (
            ("ratio", "1_000"),
            ("ratio", "\u0661\u0662"),
            ("ratio", "infinity"),
            ("ratio", "nan"),
            ("ratio", "1e999"),
            ("ratio", "0x10"),
            ("ratio", "1."),
            ("age", "2_0"),
            ("age", "\uff12\uff10"),  # full-width digits
            ("age", "9" * 5000),
        ):
            refused = await c.http.post(url, data={**base, field: value})
            assert refused.status_code == 422, (field, value, refused.status_code)
        done = await c.http.post(url, data={**base, "age": "30", "ratio": "-.5e1"})
        assert done.status_code == 200
        assert '"ratio": -5.0' in tool_text(await events.rest())


async def test_head_is_answered_as_get_without_a_body_and_other_methods_405() -> None:
    # RFC 9110 §9.1: a general-purpose server supports GET and HEAD
    async with page_server() as listening, asked(listening) as (c, events, url):
        head = await c.http.head(url)
        assert head.status_code == 200
        assert head.content == b""
        assert int(head.headers["content-length"]) > 0
        assert head.headers["content-type"] == "text/html; charset=utf-8"
        for method in ("PUT", "DELETE", "PATCH", "OPTIONS"):
            refused = await c.http.request(method, url)
            assert refused.status_code == 405, method
            assert refused.headers["allow"] == "GET, HEAD, POST"
        csrf = CSRF.findall((await c.http.get(url)).text)[0]
        await c.http.post(url, data={"_csrf": csrf, "_action": "decline"})
        assert tool_text(await events.rest()) == "decline"
