"""check_url: the resolver step, with a fake resolver; the only real lookup is "localhost"."""

from __future__ import annotations

import socket
from collections.abc import Sequence

import pytest
import trio

import erlmcp_py
from erlmcp_py import UnsafeURLError, UrlPolicy, check_url
from erlmcp_py.actors.urlcheck import default_resolver

DEV = UrlPolicy(allow_http_loopback_dev=True)


class FakeResolver:
    """Answers from a table and records every lookup."""

    def __init__(self, table: dict[str, Sequence[str]]) -> None:
        self.table = table
        self.calls: list[str] = []

    async def __call__(self, host: str) -> Sequence[str]:
        self.calls.append(host)
        await trio.lowlevel.checkpoint()
        try:
            return self.table[host]
        except KeyError:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None


async def reason(url: str, resolver: FakeResolver, policy: UrlPolicy | None = None) -> str:
    with pytest.raises(UnsafeURLError) as info:
        await check_url(url, policy, resolver=resolver)
    return info.value.reason


async def test_public_name_passes_and_is_normalised() -> None:
    r = FakeResolver({"example.com": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]})
    assert await check_url("HTTPS://Example.com.:443/a?b", resolver=r) == "https://example.com/a?b"
    assert r.calls == ["example.com"]


async def test_mixed_public_and_private_is_refused() -> None:
    r = FakeResolver({"rebind.example": ["8.8.8.8", "10.0.0.7"]})
    with pytest.raises(UnsafeURLError) as info:
        await check_url("https://rebind.example/", resolver=r)
    assert info.value.reason == "private"
    assert "rebind.example" in info.value.detail
    assert "10.0.0.7" in info.value.detail


@pytest.mark.parametrize(
    ("addresses", "expected"),
    [
        (["127.0.0.1"], "loopback"),
        (["::1"], "loopback"),
        (["169.254.169.254"], "link_local"),
        (["fe80::1%eth0"], "link_local"),
        (["100.64.1.1"], "cgnat"),
        (["::ffff:192.168.0.1"], "private"),
        (["64:ff9b::7f00:1"], "loopback"),
        (["8.8.8.8", "fd00::1"], "unique_local"),
        (["0.0.0.0"], "unspecified"),
        (["224.0.0.1"], "multicast"),
        ([], "unresolvable"),
        (["not-an-address"], "unresolvable"),
    ],
)
async def test_unsafe_resolutions(addresses: list[str], expected: str) -> None:
    r = FakeResolver({"host.example": addresses})
    assert await reason("https://host.example/", r) == expected


async def test_unknown_name_is_unresolvable() -> None:
    assert await reason("https://nowhere.invalid/", FakeResolver({})) == "unresolvable"


async def test_literal_ip_is_not_resolved() -> None:
    r = FakeResolver({})
    assert await check_url("https://8.8.8.8:8443/x", resolver=r) == "https://8.8.8.8:8443/x"
    assert await reason("https://0x7f.1/", r) == "loopback"
    assert r.calls == []


async def test_lexical_refusal_happens_before_resolution() -> None:
    r = FakeResolver({"example.com": ["8.8.8.8"]})
    assert await reason("http://example.com/", r) == "scheme"
    assert await reason("https://u@example.com/", r) == "userinfo"
    assert await reason("https://localhost/", r) == "loopback"
    assert await reason("https://xn--bcher-kva.de/", r) == "idn"
    assert r.calls == []


async def test_idn_mark_resolves_punycode() -> None:
    r = FakeResolver({"xn--bcher-kva.de": ["8.8.4.4"]})
    url = await check_url("https://bücher.de/", UrlPolicy(idn="mark"), resolver=r)
    assert url == "https://xn--bcher-kva.de/"
    assert r.calls == ["xn--bcher-kva.de"]


async def test_dev_http_localhost_requires_loopback_answers() -> None:
    ok = FakeResolver({"localhost": ["127.0.0.1", "::1"]})
    assert await check_url("http://localhost:8000/cb", DEV, resolver=ok) == (
        "http://localhost:8000/cb"
    )
    bad = FakeResolver({"localhost": ["127.0.0.1", "93.184.215.14"]})
    assert await reason("http://localhost:8000/", bad, DEV) == "scheme"
    private = FakeResolver({"app.localhost": ["10.0.0.1"]})
    assert await reason("https://app.localhost/", private, DEV) == "private"


async def test_resolver_timeout(autojump_clock: trio.testing.MockClock) -> None:
    async def hang(host: str) -> Sequence[str]:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    start = trio.current_time()
    with pytest.raises(UnsafeURLError) as info:
        await check_url("https://slow.example/", UrlPolicy(resolve_timeout=2.0), resolver=hang)
    assert info.value.reason == "unresolvable"
    assert "within 2.0 s" in info.value.detail
    assert trio.current_time() - start == pytest.approx(2.0)


async def test_resolver_answering_in_time(autojump_clock: trio.testing.MockClock) -> None:
    async def slowish(host: str) -> Sequence[str]:
        await trio.sleep(1.5)
        return ["1.1.1.1"]

    assert await check_url("https://fine.example/", resolver=slowish) == "https://fine.example/"


async def test_resolver_unicode_error_is_unresolvable() -> None:
    async def broken(host: str) -> Sequence[str]:
        raise UnicodeError("label too long")

    with pytest.raises(UnsafeURLError) as info:
        await check_url("https://ok.example/", resolver=broken)
    assert info.value.reason == "unresolvable"


async def test_real_resolver_localhost() -> None:
    # The only lookup in the suite that uses the system resolver; "localhost" never leaves the host.
    addresses = await default_resolver("localhost")
    assert addresses
    assert len(addresses) == len(set(addresses))
    url = await check_url("http://localhost:8000/cb", DEV)
    assert url == "http://localhost:8000/cb"
    with pytest.raises(UnsafeURLError) as info:
        await check_url("https://localhost/")
    assert info.value.reason == "loopback"


def test_public_exports() -> None:
    for name in ("check_url", "UrlPolicy", "UnsafeURLError"):
        assert name in erlmcp_py.__all__
    assert erlmcp_py.__all__ == sorted(erlmcp_py.__all__)
