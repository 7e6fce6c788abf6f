"""Parsing rule strings, building rule sets, and the package's public namespace."""

from __future__ import annotations

import re
import types

import pytest

import agents.permissions as permissions
from agents.permissions import PermissionRule, RuleSet, parse_rule


@pytest.mark.parametrize(
    ("text", "tool", "specifier"),
    [
        ("Bash", "Bash", None),
        ("  Read  ", "Read", None),
        ("Bash(npm *)", "Bash", "npm *"),
        ("Bash(npm run test:*)", "Bash", "npm run test:*"),
        ("Bash(echo $(date))", "Bash", "echo $(date)"),
        ("Read(./secrets/**)", "Read", "./secrets/**"),
        ("Edit(//etc/**)", "Edit", "//etc/**"),
        ("WebFetch(domain:example.com)", "WebFetch", "domain:example.com"),
        ("mcp__github", "mcp__github", None),
        ("mcp__github__*", "mcp__github__*", None),
        ("mcp__github__create_issue", "mcp__github__create_issue", None),
        ("Agent(Explore)", "Agent", "Explore"),
        ("Frobnicate", "Frobnicate", None),
    ],
)
def test_parse_rule_accepts_well_formed_rules(text: str, tool: str, specifier: str | None) -> None:
    """Well-formed rules parse into tool and specifier, unknown tool names included."""
    assert parse_rule(text) == PermissionRule(tool, specifier)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Bash(npm", "missing ')'"),
        ("Bash((npm)", "missing ')'"),
        ("Bash(a(b)", "missing ')'"),
        ("Bash)", "unexpected ')'"),
        ("Bash(a)b", "text after ')'"),
        ("Bash(a))", "unbalanced parentheses"),
        ("Bash(a)(b)", "unbalanced parentheses"),
        ("", "empty rule"),
        ("   ", "empty rule"),
        ("(npm *)", "empty tool name"),
        ("Bash()", "empty specifier (write the bare tool name to match every call)"),
        ("Ba sh", "invalid tool name 'Ba sh'"),
        ("Bash*", "invalid tool name 'Bash*'"),
        ("WebFetch(example.com)", "WebFetch specifier must be 'domain:<host>'"),
        ("WebFetch(domain:)", "WebFetch specifier must be 'domain:<host>'"),
    ],
)
def test_parse_rule_rejects_malformed_rules_naming_them(text: str, why: str) -> None:
    """A malformed rule is a ValueError quoting the rule and saying what is wrong."""
    expected = f"malformed permission rule {text!r}: {why}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        parse_rule(text)


@pytest.mark.parametrize("text", ["Bash", "Bash(npm *)", "Read(./a/**)", "mcp__s__*"])
def test_rule_str_gives_the_rule_back(text: str) -> None:
    """str(rule) round-trips through parse_rule."""
    assert str(parse_rule(text)) == text
    assert parse_rule(str(parse_rule(text))) == parse_rule(text)


def test_from_strings_parses_every_kind() -> None:
    """RuleSet.from_strings fills allow, deny and ask in order."""
    rules = RuleSet.from_strings(allow=["Read", "Bash(ls *)"], deny=["WebSearch"], ask=["Write"])
    assert rules.allow == (PermissionRule("Read"), PermissionRule("Bash", "ls *"))
    assert rules.deny == (PermissionRule("WebSearch"),)
    assert rules.ask == (PermissionRule("Write"),)


def test_from_strings_raises_on_the_first_malformed_rule() -> None:
    """A malformed rule anywhere fails the whole set at startup."""
    with pytest.raises(ValueError, match=r"^malformed permission rule 'Bash\(npm': missing '\)'$"):
        RuleSet.from_strings(allow=["Read"], deny=["Bash(npm"])


def test_ruleset_rejects_unparsed_strings() -> None:
    """RuleSet entries must be parsed rules, not raw strings."""
    with pytest.raises(TypeError, match=r"^RuleSet.allow entries must be PermissionRule, got str$"):
        RuleSet(allow=("Read",))  # type: ignore[arg-type]


def test_removed_tools_lists_bare_deny_rules_only() -> None:
    """Only specifier-less deny rules remove tools from the model's list."""
    rules = RuleSet.from_strings(
        allow=["Grep"], deny=["WebSearch", "Bash(rm *)", "mcp__github"], ask=["Write"]
    )
    assert rules.removed_tools() == frozenset({"WebSearch", "mcp__github"})
    assert rules.removes_tool("mcp__github__create_issue")
    assert rules.removes_tool("WebSearch")
    assert not rules.removes_tool("Bash")
    assert not rules.removes_tool("Grep")


def test_public_names_are_exported_once_and_nothing_private_leaks() -> None:
    """__all__ lists each public name once; every listed name exists and none is private."""
    names = permissions.__all__
    assert len(names) == len(set(names))
    for name in names:
        assert not name.startswith("_")
        assert hasattr(permissions, name)
    public = {
        n
        for n, v in vars(permissions).items()
        if not n.startswith("_") and n != "annotations" and not isinstance(v, types.ModuleType)
    }  # public submodules (``agents.permissions.files``) are reached by import, not __all__
    assert public == set(names)
