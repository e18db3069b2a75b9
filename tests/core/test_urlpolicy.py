"""URL policy: lexical checks, literal-address normalisation and classification (pure, no I/O)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import assume, given, strategies as st

from erlmcp_py.core import urlpolicy as up
from erlmcp_py.core.errors import UnsafeURLError
from erlmcp_py.core.urlpolicy import UrlPolicy, check_address, judge_address, parse_url

STRICT = UrlPolicy()
DEV = UrlPolicy(allow_http_loopback_dev=True)
MARK = UrlPolicy(idn="mark")


def reason_of(url: str, policy: UrlPolicy = STRICT) -> str:
    with pytest.raises(UnsafeURLError) as info:
        parse_url(url, policy)
    assert info.value.reason in up.REASONS
    return info.value.reason


# --- refused: (url, reason) -----------------------------------------------------------------------
REFUSED: list[tuple[str, str]] = [
    # schemes
    ("javascript:alert(1)", "scheme"),
    ("JavaScript:alert(1)", "scheme"),
    ("data:text/html,<script>alert(1)</script>", "scheme"),
    ("file:///etc/passwd", "scheme"),
    ("ftp://example.com/", "scheme"),
    ("ws://example.com/", "scheme"),
    ("wss://example.com/", "scheme"),
    ("gopher://example.com/", "scheme"),
    ("http://example.com/", "scheme"),
    ("HTTP://example.com/", "scheme"),
    ("http://127.0.0.1/", "scheme"),
    ("//example.com/", "malformed"),
    ("example.com", "malformed"),
    ("https:example.com", "malformed"),
    ("https:/example.com", "malformed"),
    ("", "malformed"),
    ("1https://example.com", "malformed"),
    # userinfo and @-tricks
    ("https://user@example.com/", "userinfo"),
    ("https://user:pass@example.com/", "userinfo"),
    ("https://good.com@127.0.0.1/", "userinfo"),
    ("https://good.com:443@evil.com/", "userinfo"),
    ("https://@example.com/", "userinfo"),
    ("https://127.0.0.1#@good.com", "loopback"),
    ("https://127.0.0.1?@good.com", "loopback"),
    ("https://127.0.0.1/@good.com", "loopback"),
    # missing host
    ("https://", "host_missing"),
    ("https:///path", "host_missing"),
    ("https://:443/", "host_missing"),
    ("https://./", "host_missing"),
    ("https://?q", "host_missing"),
    # forbidden characters
    ("https://example.com\\@127.0.0.1/", "malformed"),
    ("https:\\\\example.com/", "malformed"),
    ("https://exa\tmple.com/", "malformed"),
    ("https://example.com/\n", "malformed"),
    ("https://example.com\r\n/", "malformed"),
    (" https://example.com/", "malformed"),
    ("https://example.com/a b", "malformed"),
    ("https://example.com\x00.evil/", "malformed"),
    ("https://example.com/\x7f", "malformed"),
    ("https://example.com/\u200b", "malformed"),
    ("https://example.com/\u202eevil", "malformed"),
    ("https://example.com/\u00a0", "malformed"),
    ("https://example.com/\u3000", "malformed"),
    ("https://exa%6dple.com/", "malformed"),
    ("https://127.0.0.%31/", "malformed"),
    ("https://ex!ample.com/", "malformed"),
    ("https://exa*mple.com/", "malformed"),
    ("https://a..b/", "malformed"),
    ("https://example.com../", "malformed"),
    ("https://" + "a" * 64 + ".com/", "malformed"),
    # ports
    ("https://example.com:0/", "port"),
    ("https://example.com:65536/", "port"),
    ("https://example.com:99999999/", "port"),
    ("https://example.com:-1/", "port"),
    ("https://example.com:8o/", "port"),
    ("https://example.com:\u0663/", "port"),
    ("https://example.com:80:80/", "malformed"),
    # localhost names
    ("https://localhost/", "loopback"),
    ("https://LOCALHOST/", "loopback"),
    ("https://localhost./", "loopback"),
    ("https://sub.localhost/", "loopback"),
    ("https://a.b.LocalHost./", "loopback"),
    ("https://localhost:8443/", "loopback"),
    # IPv4 loopback in every spelling
    ("https://127.0.0.1/", "loopback"),
    ("https://127.0.0.1./", "loopback"),
    ("https://127.1/", "loopback"),
    ("https://127.0.1/", "loopback"),
    ("https://2130706433/", "loopback"),
    ("https://0x7f000001/", "loopback"),
    ("https://0X7F000001/", "loopback"),
    ("https://017700000001/", "loopback"),
    ("https://0177.0.0.1/", "loopback"),
    ("https://0177.1/", "loopback"),
    ("https://0x7f.1/", "loopback"),
    ("https://0x7f.0x0.0x0.0x1/", "loopback"),
    ("https://0x7f.0.0.01/", "loopback"),
    ("https://127.000.000.001/", "loopback"),
    ("https://127.255.255.254/", "loopback"),
    ("https://127.0.0.1:8443/", "loopback"),
    # other v4 ranges
    ("https://10.0.0.1/", "private"),
    ("https://012.0.0.1/", "private"),
    ("https://167772161/", "private"),
    ("https://172.16.0.1/", "private"),
    ("https://172.31.255.255/", "private"),
    ("https://192.168.1.1/", "private"),
    ("https://0xc0a80101/", "private"),
    ("https://192.168.257/", "private"),
    ("https://169.254.169.254/latest/meta-data/", "link_local"),
    ("https://0xa9fea9fe/", "link_local"),
    ("https://100.64.0.1/", "cgnat"),
    ("https://100.127.255.255/", "cgnat"),
    ("https://224.0.0.1/", "multicast"),
    ("https://239.255.255.250/", "multicast"),
    ("https://0.0.0.0/", "unspecified"),
    ("https://0/", "unspecified"),
    ("https://0x0/", "unspecified"),
    ("https://0.0.0.1/", "reserved"),
    ("https://0.1.2.3/", "reserved"),
    ("https://255.255.255.255/", "broadcast"),
    ("https://4294967295/", "broadcast"),
    ("https://240.0.0.1/", "reserved"),
    ("https://192.0.2.1/", "reserved"),
    ("https://198.51.100.7/", "reserved"),
    ("https://203.0.113.9/", "reserved"),
    ("https://198.18.0.1/", "reserved"),
    ("https://198.19.255.255/", "reserved"),
    ("https://192.0.0.8/", "reserved"),
    ("https://192.88.99.1/", "reserved"),
    # invalid numeric hosts
    ("https://4294967296/", "malformed"),
    ("https://256.0.0.1/", "malformed"),
    ("https://1.2.3.4.5/", "malformed"),
    ("https://1.2.3.256/", "malformed"),
    ("https://1.2.65536/", "malformed"),
    ("https://08.0.0.1/", "malformed"),
    ("https://0x7g.0.0.1/", "malformed"),
    ("https://7f.0.0.1/", "malformed"),
    ("https://example.0x1/", "malformed"),
    ("https://example.123/", "malformed"),
    ("https://1..1/", "malformed"),
    ("https://" + "1" * 60 + "/", "malformed"),
    # IPv6
    ("https://[::1]/", "loopback"),
    ("https://[0:0:0:0:0:0:0:1]/", "loopback"),
    ("https://[::]/", "unspecified"),
    ("https://[::ffff:127.0.0.1]/", "loopback"),
    ("https://[::ffff:7f00:1]/", "loopback"),
    ("https://[::FFFF:7F00:0001]/", "loopback"),
    ("https://[::ffff:10.0.0.1]/", "private"),
    ("https://[::ffff:a9fe:a9fe]/", "link_local"),
    ("https://[::ffff:0.0.0.0]/", "unspecified"),
    ("https://[::127.0.0.1]/", "loopback"),
    ("https://[::7f00:1]/", "loopback"),
    ("https://[::10.1.2.3]/", "private"),
    ("https://[::8.8.8.8]/", "reserved"),
    ("https://[::ffff:0:127.0.0.1]/", "loopback"),
    ("https://[64:ff9b::127.0.0.1]/", "loopback"),
    ("https://[64:ff9b::a00:1]/", "private"),
    ("https://[64:ff9b::a9fe:a9fe]/", "link_local"),
    ("https://[64:ff9b:1::1]/", "reserved"),
    ("https://[2002:7f00:1::]/", "loopback"),
    ("https://[2002:c0a8:101::1]/", "private"),
    ("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "reserved"),
    ("https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "loopback"),
    ("https://[fe80::1]/", "link_local"),
    ("https://[febf::1]/", "link_local"),
    ("https://[fe80::1%25eth0]/", "zone_id"),
    ("https://[fe80::1%eth0]/", "zone_id"),
    ("https://[2606:4700::1111%251]/", "zone_id"),
    ("https://[fec0::1]/", "site_local"),
    ("https://[fc00::1]/", "unique_local"),
    ("https://[fd12:3456:789a::1]/", "unique_local"),
    ("https://[ff02::1]/", "multicast"),
    ("https://[ff05::1:3]/", "multicast"),
    ("https://[2001:db8::1]/", "reserved"),
    ("https://[3fff::1]/", "reserved"),
    ("https://[2001:2::1]/", "reserved"),
    ("https://[100::1]/", "reserved"),
    ("https://[4000::1]/", "reserved"),
    ("https://[::2]/", "reserved"),
    ("https://[::1/", "malformed"),
    ("https://[::1]x/", "malformed"),
    ("https://[127.0.0.1]/", "malformed"),
    ("https://[v1.fe]/", "malformed"),
    ("https://[::ffff:127.1]/", "malformed"),
    ("https://[gggg::1]/", "malformed"),
    ("https://::1/", "malformed"),
    ("https://fe80::1/", "malformed"),
    ("https://ex[a]mple.com/", "malformed"),
    # IDN / punycode (default policy refuses)
    ("https://xn--bcher-kva.de/", "idn"),
    ("https://XN--BCHER-KVA.de/", "idn"),
    ("https://www.xn--80ak6aa92e.com/", "idn"),
    ("https://bücher.de/", "idn"),
    ("https://\u0430pple.com/", "idn"),
    ("https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", "idn"),
    ("https://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/", "idn"),
    # length
    ("https://example.com/" + "a" * 2100, "too_long"),
]


@pytest.mark.parametrize(("url", "reason"), REFUSED)
def test_refused(url: str, reason: str) -> None:
    assert reason_of(url) == reason


ACCEPTED: list[tuple[str, str]] = [
    ("https://example.com/path?q=1", "https://example.com/path?q=1"),
    ("https://example.com", "https://example.com/"),
    ("https://example.com?q", "https://example.com/?q"),
    ("https://example.com#frag", "https://example.com/#frag"),
    ("HTTPS://EXAMPLE.COM/Path", "https://example.com/Path"),
    ("https://example.com./", "https://example.com/"),
    ("https://example.com:443/", "https://example.com/"),
    ("https://example.com:0443/", "https://example.com/"),
    ("https://example.com:/", "https://example.com/"),
    ("https://example.com:8443/x", "https://example.com:8443/x"),
    ("https://example.com/a?b=c&d=e#f@g", "https://example.com/a?b=c&d=e#f@g"),
    ("https://good.com#@127.0.0.1", "https://good.com/#@127.0.0.1"),
    ("https://good.com/@127.0.0.1", "https://good.com/@127.0.0.1"),
    ("https://example.com/ü?x=é", "https://example.com/%C3%BC?x=%C3%A9"),
    ("https://example.com/%41", "https://example.com/%41"),
    ("https://under_score.example.com/", "https://under_score.example.com/"),
    ("https://127.0.0.1.nip.io/", "https://127.0.0.1.nip.io/"),
    ("https://8.8.8.8", "https://8.8.8.8/"),
    ("https://8.8.8.8:8443/", "https://8.8.8.8:8443/"),
    ("https://134744072/", "https://8.8.8.8/"),
    ("https://0x8.0x8.0x8.0x8/", "https://8.8.8.8/"),
    ("https://010.010.010.010/", "https://8.8.8.8/"),
    ("https://0127.0.0.1/", "https://87.0.0.1/"),
    ("https://1.1/", "https://1.0.0.1/"),
    ("https://[2606:4700::1111]", "https://[2606:4700::1111]/"),
    ("https://[2606:4700:0:0:0:0:0:1111]:8443/", "https://[2606:4700::1111]:8443/"),
    ("https://[2001:4860:4860::8888]/", "https://[2001:4860:4860::8888]/"),
    ("https://[::ffff:8.8.8.8]/", "https://[::ffff:808:808]/"),
    ("https://[64:ff9b::8.8.8.8]/", "https://[64:ff9b::808:808]/"),
    ("https://[2002:808:808::1]/", "https://[2002:808:808::1]/"),
    ("https://100.63.255.255/", "https://100.63.255.255/"),
    ("https://100.128.0.0/", "https://100.128.0.0/"),
    ("https://172.32.0.1/", "https://172.32.0.1/"),
    ("https://172.15.255.255/", "https://172.15.255.255/"),
    ("https://192.167.255.255/", "https://192.167.255.255/"),
    ("https://localhost.example.com/", "https://localhost.example.com/"),
    ("https://notlocalhost/", "https://notlocalhost/"),
]


@pytest.mark.parametrize(("url", "normalised"), ACCEPTED)
def test_accepted(url: str, normalised: str) -> None:
    assert parse_url(url, STRICT).url == normalised


def test_parsed_fields() -> None:
    p = parse_url("HTTPS://Example.COM.:8443/a?b#c")
    assert (p.scheme, p.host, p.port, p.rest, p.ip, p.idn) == (
        "https",
        "example.com",
        8443,
        "/a?b#c",
        None,
        False,
    )
    assert p.needs_resolution
    assert p.netloc == "example.com:8443"
    v6 = parse_url("https://[2606:4700::1111]/")
    assert v6.ip == ipaddress.ip_address("2606:4700::1111")
    assert not v6.needs_resolution
    assert v6.netloc == "[2606:4700::1111]"
    assert parse_url("https://134744072").ip == ipaddress.ip_address("8.8.8.8")


def test_default_policy_used_when_none() -> None:
    assert parse_url("https://example.com").url == "https://example.com/"
    with pytest.raises(UnsafeURLError):
        parse_url("https://localhost/")


def test_not_a_string() -> None:
    with pytest.raises(UnsafeURLError) as info:
        parse_url(b"https://example.com/")  # type: ignore[arg-type]
    assert info.value.reason == "malformed"


def test_max_length_boundary() -> None:
    policy = UrlPolicy(max_length=30)
    ok = "https://example.com/" + "a" * 10
    assert len(ok) == 30
    assert parse_url(ok, policy).url == ok
    assert reason_of(ok + "a", policy) == "too_long"
    # normalisation can grow the URL (percent-encoding); the result is checked too
    assert reason_of("https://example.com/" + "é" * 9, policy) == "too_long"
    assert reason_of("https://example.com/", UrlPolicy(max_length=19)) == "too_long"


# --- dev mode -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "normalised"),
    [
        ("http://127.0.0.1:8000/cb", "http://127.0.0.1:8000/cb"),
        ("http://127.1/", "http://127.0.0.1/"),
        ("http://2130706433:80/", "http://127.0.0.1/"),
        ("http://[::1]:9000/", "http://[::1]:9000/"),
        ("http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/"),
        ("http://localhost:8000/", "http://localhost:8000/"),
        ("http://app.localhost/", "http://app.localhost/"),
        ("https://localhost/", "https://localhost/"),
        ("https://127.0.0.1:443/", "https://127.0.0.1/"),
        ("https://example.com/", "https://example.com/"),
    ],
)
def test_dev_allows_loopback(url: str, normalised: str) -> None:
    assert parse_url(url, DEV).url == normalised


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://example.com/", "scheme"),
        ("http://8.8.8.8/", "scheme"),
        ("http://[2606:4700::1111]/", "scheme"),
        ("http://10.0.0.1/", "private"),
        ("https://10.0.0.1/", "private"),
        ("https://169.254.169.254/", "link_local"),
        ("http://0.0.0.0/", "unspecified"),
        ("https://[fe80::1]/", "link_local"),
        ("ftp://127.0.0.1/", "scheme"),
        ("http://user@localhost/", "userinfo"),
    ],
)
def test_dev_still_refuses_non_loopback(url: str, reason: str) -> None:
    assert reason_of(url, DEV) == reason


# --- IDN marking ----------------------------------------------------------------------------------


def test_idn_mark_flags_and_normalises() -> None:
    p = parse_url("https://Bücher.de/x", MARK)
    assert p.idn
    assert p.host == "xn--bcher-kva.de"
    assert p.display_host == "bücher.de"
    assert p.url == "https://xn--bcher-kva.de/x"
    q = parse_url("https://xn--bcher-kva.de/", MARK)
    assert q.idn
    assert q.display_host == "bücher.de"
    assert not parse_url("https://example.com/", MARK).idn


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        # fullwidth digits normalise to 127.0.0.1
        ("https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", "loopback"),
        ("https://127\u30020\u30020\u30021/", "loopback"),  # ideographic full stops
        ("https://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/", "loopback"),
        ("https://exa\u200dmple.com/", "malformed"),  # zero-width joiner
        ("https://xn--bcher-kva.10.0.0.1/", "malformed"),
    ],
)
def test_idn_mark_still_judges_normalised_host(url: str, reason: str) -> None:
    assert reason_of(url, MARK) == reason


# --- judge_address / check_address ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("100.64.0.0", "cgnat"),
        ("169.254.0.1", "link_local"),
        ("224.0.0.251", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("255.255.255.255", "broadcast"),
        ("240.0.0.0", "reserved"),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("fe80::1%eth0", "link_local"),
        ("fc00::", "unique_local"),
        ("fec0::", "site_local"),
        ("ff02::fb", "multicast"),
        ("::ffff:192.168.0.1", "private"),
        ("64:ff9b::100.64.0.1", "cgnat"),
        ("8.8.8.8", None),
        ("1.1.1.1", None),
        ("2606:4700::1111", None),
        ("64:ff9b::1.1.1.1", None),
        ("::ffff:1.1.1.1", None),
    ],
)
def test_judge_address(address: str, reason: str | None) -> None:
    assert judge_address(address) == reason
    assert judge_address(ipaddress.ip_address(address.split("%")[0])) == reason


def test_judge_address_rejects_garbage_text() -> None:
    with pytest.raises(UnsafeURLError) as info:
        judge_address("not-an-ip")
    assert info.value.reason == "malformed"


def test_check_address() -> None:
    check_address(ipaddress.ip_address("8.8.8.8"))
    check_address(ipaddress.ip_address("127.0.0.1"), DEV, scheme="http")
    with pytest.raises(UnsafeURLError, match="loopback"):
        check_address(ipaddress.ip_address("127.0.0.1"))
    with pytest.raises(UnsafeURLError) as info:
        check_address(ipaddress.ip_address("8.8.8.8"), DEV, scheme="http")
    assert info.value.reason == "scheme"


def test_policy_validation() -> None:
    with pytest.raises(ValueError, match="idn"):
        UrlPolicy(idn="allow")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_length"):
        UrlPolicy(max_length=0)
    with pytest.raises(ValueError, match="resolve_timeout"):
        UrlPolicy(resolve_timeout=0)


def test_reason_constants_are_stable() -> None:
    assert {
        "scheme",
        "userinfo",
        "host_missing",
        "too_long",
        "loopback",
        "private",
        "link_local",
        "cgnat",
        "multicast",
        "unspecified",
        "broadcast",
        "reserved",
        "unique_local",
        "zone_id",
        "idn",
        "unresolvable",
        "malformed",
    } <= up.REASONS


# --- hypothesis: every literal spelling of a blocked IPv4 address is refused ----------------------

BLOCKED_V4: list[tuple[str, str]] = [
    ("0.0.0.0/8", "reserved"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "cgnat"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link_local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "reserved"),
    ("192.0.2.0/24", "reserved"),
    ("192.88.99.0/24", "reserved"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "reserved"),
    ("198.51.100.0/24", "reserved"),
    ("203.0.113.0/24", "reserved"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
]


def expected_v4(value: int) -> str | None:
    """Independent oracle: the test's own table, then the stdlib's notion of global."""
    ip = ipaddress.IPv4Address(value)
    if value == 0:
        return "unspecified"
    if value == 0xFFFFFFFF:
        return "broadcast"
    for net, reason in BLOCKED_V4:
        if ip in ipaddress.IPv4Network(net):
            return reason
    return None if ip.is_global else "reserved"


def _number(value: int, radix: str, upper: bool) -> str:
    if radix == "hex":
        text = format(value, "X" if upper else "x")
        return ("0X" if upper else "0x") + text
    if radix == "oct":
        return "0" + format(value, "o")
    return str(value)


@st.composite
def v4_spellings(draw: st.DrawFn, value: int) -> str:
    """Any WHATWG-valid spelling of ``value``: 1-4 parts, each dec/oct/hex, optional dot."""
    octets = list(ipaddress.IPv4Address(value).packed)
    parts_count = draw(st.integers(1, 4))
    head = octets[: parts_count - 1]
    tail_octets = octets[parts_count - 1 :]
    last = int.from_bytes(bytes(tail_octets), "big")
    radix = st.sampled_from(["dec", "oct", "hex"])
    numbers = [*head, last]
    text = ".".join(_number(n, draw(radix), draw(st.booleans())) for n in numbers)
    if draw(st.booleans()):
        text += "."
    return text


@st.composite
def v6_wrappings(draw: st.DrawFn, value: int) -> str:
    """IPv6 forms that embed ``value``: mapped, compatible, NAT64, 6to4 (dotted or hex)."""
    dotted = str(ipaddress.IPv4Address(value))
    hexed = f"{value >> 16:x}:{value & 0xFFFF:x}"
    embedded = draw(st.sampled_from([dotted, hexed]))
    form = draw(st.sampled_from(["mapped", "nat64", "sixtofour", "compatible"]))
    if form == "mapped":
        return f"[::ffff:{embedded}]"
    if form == "nat64":
        return f"[64:ff9b::{embedded}]"
    if form == "sixtofour":
        return f"[2002:{hexed}::{draw(st.integers(0, 0xFFFF)):x}]"
    assume(value > 1)  # ::0 and ::1 are the unspecified/loopback addresses themselves
    return f"[::{embedded}]"


blocked_values = st.sampled_from(BLOCKED_V4).flatmap(
    lambda row: st.integers(
        int(ipaddress.IPv4Network(row[0]).network_address),
        int(ipaddress.IPv4Network(row[0]).broadcast_address),
    )
)


@given(data=st.data(), value=blocked_values)
def test_blocked_v4_refused_in_any_spelling(data: st.DataObject, value: int) -> None:
    expected = expected_v4(value)
    assert expected is not None
    host = data.draw(v4_spellings(value))
    port = data.draw(st.sampled_from(["", ":443", ":8443"]))
    assert reason_of(f"https://{host}{port}/x") == expected


@given(data=st.data(), value=blocked_values)
def test_blocked_v4_refused_inside_v6(data: st.DataObject, value: int) -> None:
    host = data.draw(v6_wrappings(value))
    reason = reason_of(f"https://{host}/")
    assert reason not in ("malformed", "scheme", "userinfo")


public_values = st.builds(
    lambda first, rest: (first << 24) | rest,
    st.integers(1, 223).filter(lambda o: o not in (10, 100, 127, 169, 172, 192, 198, 203)),
    st.integers(0, 2**24 - 1),
)


@given(data=st.data(), value=public_values)
def test_public_v4_passes_in_any_spelling(data: st.DataObject, value: int) -> None:
    assume(expected_v4(value) is None)
    host = data.draw(v4_spellings(value))
    parsed = parse_url(f"https://{host}/")
    assert parsed.ip == ipaddress.IPv4Address(value)
    assert parsed.url == f"https://{ipaddress.IPv4Address(value)}/"
    mapped = parse_url(f"https://[::ffff:{ipaddress.IPv4Address(value)}]/")
    assert mapped.ip is not None


@given(value=st.integers(0, 2**32 - 1))
def test_judge_v4_matches_oracle(value: int) -> None:
    assert judge_address(ipaddress.IPv4Address(value)) == expected_v4(value)


@given(value=st.integers(0x2000 << 112, (0x4000 << 112) - 1))
def test_global_unicast_v6_judged_consistently(value: int) -> None:
    ip = ipaddress.IPv6Address(value)
    reason = judge_address(ip)
    if reason is None:
        assert ip.is_global
        assert parse_url(f"https://[{ip}]/").ip == ip
    else:
        assert reason_of(f"https://[{ip}]/") == reason


@given(st.text(max_size=60))
def test_parse_url_never_crashes(text: str) -> None:
    reason: str | None
    try:
        parsed = parse_url("https://" + text)
    except UnsafeURLError as exc:
        reason = exc.reason
    else:
        reason = None
        assert parsed.url.startswith("https://")
        assert parsed.url.isascii()
        assert parse_url(parsed.url).url == parsed.url  # normalisation is idempotent
    assert reason is None or reason in up.REASONS
