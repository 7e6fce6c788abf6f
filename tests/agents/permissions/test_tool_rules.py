"""WebFetch domains, MCP servers, Agent types and bare tool names."""

from __future__ import annotations

from typing import Any

import pytest

from agents.permissions import RuleSet


def matches(rule: str, tool: str, tool_input: dict[str, Any]) -> bool:
    rules = RuleSet.from_strings(deny=[rule])
    return rules.match("deny", tool, tool_input, cwd="/repo", home="/home/u") is not None


@pytest.mark.parametrize(
    ("rule", "url", "expected"),
    [
        ("WebFetch(domain:example.com)", "https://example.com/x", True),
        ("WebFetch(domain:example.com)", "http://EXAMPLE.com.:8080/", True),
        ("WebFetch(domain:example.com)", "https://api.example.com/", False),
        ("WebFetch(domain:example.com)", "https://example.com.evil.org/", False),
        ("WebFetch(domain:example.com)", "https://evil.org/?u=example.com", False),
        ("WebFetch(domain:example.com)", "https://user@example.com/", True),
        ("WebFetch(domain:*.example.com)", "https://api.example.com/", True),
        ("WebFetch(domain:*.example.com)", "https://a.b.example.com/", True),
        ("WebFetch(domain:*.example.com)", "https://example.com/", False),
        ("WebFetch(domain:example.com)", "http://[::1", False),
        ("WebFetch(domain:example.com)", "not a url", False),
        ("WebFetch", "https://anything.org", True),
    ],
)
def test_webfetch_domain_rules_match_the_exact_host_or_a_wildcard(
    rule: str, url: str, expected: bool
) -> None:
    """`domain:h` is the exact host (any port, any case); `domain:*.h` its subdomains."""
    assert matches(rule, "WebFetch", {"url": url}) is expected


@pytest.mark.parametrize(
    ("rule", "tool", "expected"),
    [
        ("mcp__github", "mcp__github__create_issue", True),
        ("mcp__github", "mcp__github2__create_issue", False),
        ("mcp__github__*", "mcp__github__list", True),
        ("mcp__github__create_issue", "mcp__github__create_issue", True),
        ("mcp__github__create_issue", "mcp__github__delete_repo", False),
        ("Bash", "Bash", True),
        ("Write", "Edit", False),
        ("Frobnicate", "Frobnicate", True),
    ],
)
def test_bare_and_mcp_rules_match_tool_names(rule: str, tool: str, expected: bool) -> None:
    """`mcp__server` and `mcp__server__*` cover the whole server; other names are exact."""
    assert matches(rule, tool, {}) is expected


@pytest.mark.parametrize(
    ("rule", "agent", "expected"),
    [
        ("Agent(Explore)", "Explore", True),
        ("Agent(Explore)", "general-purpose", False),
        ("Agent(test-*)", "test-runner", True),
        ("Task(Explore)", "Explore", True),
    ],
)
def test_agent_rules_match_the_subagent_type(rule: str, agent: str, expected: bool) -> None:
    """`Agent(type)` matches the Agent tool's `subagent_type`."""
    assert matches(rule, "Agent", {"subagent_type": agent}) is expected


def test_specifier_on_a_tool_without_specifier_semantics_matches_nothing() -> None:
    """`WebSearch(x)` has no defined meaning, so it never matches."""
    assert not matches("WebSearch(x)", "WebSearch", {"query": "x"})
