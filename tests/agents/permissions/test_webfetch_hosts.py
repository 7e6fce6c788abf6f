"""WebFetch domain rules judge the host the fetch connects to: the URL is read by the WebFetch
tool's own client (httpx), so no spelling of a denied host — a full stop of another script, an
IDNA (``xn--``) form, a user part, case, a trailing dot — gets past its rule."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.permissions import RuleSet


def denied(rule: str, url: str) -> bool:
    rules = RuleSet.from_strings(deny=[rule], allow=["WebFetch"])
    return rules.match("deny", "WebFetch", {"url": url}, cwd="/repo", home="/h") is not None


@pytest.mark.parametrize(
    ("rule", "url"),
    [
        ("WebFetch(domain:evil.com)", "https://evil\u3002com/"),  # ideographic full stop
        ("WebFetch(domain:evil.com)", "https://evil\uff0ecom/"),  # fullwidth full stop
        ("WebFetch(domain:evil.com)", "https://evil\uff61com/"),  # halfwidth ideographic
        ("WebFetch(domain:evil.com)", "https://EVIL.COM./x"),
        ("WebFetch(domain:evil.com)", "https://good.org\\@evil.com/"),
        ("WebFetch(domain:evil.com)", "https://good.org;@evil.com/"),
        ("WebFetch(domain:*.evil.com)", "https://api\u3002evil\u3002com/"),
        ("WebFetch(domain:exämple.com)", "https://xn--exmple-cua.com/"),
        ("WebFetch(domain:exämple.com)", "https://EXÄMPLE.com/"),
        ("WebFetch(domain:xn--exmple-cua.com)", "https://exämple.com/"),
        ("WebFetch(domain:*.exämple.com)", "https://api.xn--exmple-cua.com/"),
        ("WebFetch(domain:EXÄMPLE.com)", "https://exämple.com/"),
    ],
)
def test_a_denied_host_is_denied_however_it_is_spelled(rule: str, url: str) -> None:
    assert httpx.URL(url).host  # the fetch would go somewhere: this is a real spelling
    assert denied(rule, url)


@pytest.mark.parametrize(
    ("rule", "url"),
    [
        ("WebFetch(domain:127.0.0.1)", "http://127.1/"),
        ("WebFetch(domain:127.0.0.1)", "http://0x7f000001/"),
        ("WebFetch(domain:127.0.0.1)", "http://2130706433/"),
        ("WebFetch(domain:127.0.0.1)", "http://017700000001/"),
        ("WebFetch(domain:127.0.0.1)", "http://0x7f.0.0.1/"),
        ("WebFetch(domain:127.0.0.1)", "http://[::ffff:127.0.0.1]/"),
        ("WebFetch(domain:127.0.0.1)", "http://[::ffff:7f00:1]/"),
        ("WebFetch(domain:127.1)", "http://127.0.0.1/"),
        ("WebFetch(domain:169.254.169.254)", "http://2852039166/latest/meta-data/"),
        ("WebFetch(domain:[::1])", "http://[0:0:0:0:0:0:0:1]/"),
        ("WebFetch(domain:[::1])", "http://[::1]:8080/"),
    ],
)
def test_a_denied_address_is_denied_however_it_is_written(rule: str, url: str) -> None:
    """An IP address has many spellings that reach the same machine (the resolver reads
    ``127.1``, ``0x7f000001``, ``2130706433`` and ``017700000001`` as ``127.0.0.1``; an
    IPv4-mapped IPv6 address is the IPv4 one): a rule on one covered none of the others."""
    assert httpx.URL(url).host
    assert denied(rule, url)


@pytest.mark.parametrize(
    ("rule", "url"),
    [
        ("WebFetch(domain:127.0.0.1)", "http://127.0.0.2/"),
        ("WebFetch(domain:127.0.0.1)", "http://127.0.0.1.example.com/"),
        ("WebFetch(domain:127.0.0.1)", "http://localhost/"),  # another name: judged by name
        ("WebFetch(domain:10.0.0.1)", "http://10.0.0.10/"),
        ("WebFetch(domain:abc)", "http://0xabc/"),  # a name, and the address 0.0.10.188
    ],
)
def test_another_address_is_not_taken_for_the_denied_one(rule: str, url: str) -> None:
    assert not denied(rule, url)


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.com.good.org/",
        "https://evil.com@good.org/",
        "https://good.org/?evil.com",
        "https://good.org/#@evil.com",
    ],
)
def test_another_host_is_not_taken_for_the_denied_one(url: str) -> None:
    assert not denied("WebFetch(domain:evil.com)", url)


def test_a_wildcard_inside_a_non_ascii_label_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"non-ASCII label 'ä\*'.*xn--"):
        RuleSet.from_strings(deny=["WebFetch(domain:ä*.com)"])


def test_a_domain_rule_that_is_no_host_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"invalid host label"):
        RuleSet.from_strings(deny=["WebFetch(domain:ex\u200bämple.com)"])


_DOTS = st.sampled_from([".", "\u3002", "\uff0e", "\uff61"])
_CASE = st.sampled_from([str.lower, str.upper, str.title])
_BEFORE = st.sampled_from(["", "user@", "a:b@", "good.org\\@", "good.org;@", "x@y@"])
_AFTER = st.sampled_from(["", ".", ":8443", ".:80", "/p?q#f", "/\\@good.org"])


@st.composite
def spellings(draw: Any) -> str:
    """A URL spelling ``evil.com`` or ``exämple.com`` (either form of its label) with the pieces
    parsers disagree on; its real host is whatever httpx makes of it."""
    label = draw(st.sampled_from(["evil", "exämple", "xn--exmple-cua", "api.evil"]))
    name = draw(_CASE)(label) + draw(_DOTS) + draw(_CASE)("com")
    scheme = draw(st.sampled_from(["http", "https", "HTTPS"]))
    return f"{scheme}://{draw(_BEFORE)}{name}{draw(_AFTER)}"


@given(spellings())
def test_a_domain_rule_matches_exactly_when_the_client_would_connect_to_its_host(
    url: str,
) -> None:
    """The oracle is the request httpx builds for the URL: its host is where bytes go."""
    try:
        host = httpx.Request("GET", url).url.raw_host.decode().rstrip(".")
    except httpx.InvalidURL:
        return
    for rule, target in [
        ("WebFetch(domain:evil.com)", "evil.com"),
        ("WebFetch(domain:exämple.com)", "xn--exmple-cua.com"),
        ("WebFetch(domain:*.evil.com)", "api.evil.com"),
    ]:
        assert denied(rule, url) is (host == target), (rule, url, host)
