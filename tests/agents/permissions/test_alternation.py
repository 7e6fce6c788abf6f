"""An alternation of rules names the rule a plain, rule-by-rule match would name."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.permissions._rules import Alternation, PermissionRule, bash_pattern_regex

_PIECES = st.sampled_from(["ls", "git", "status", "-la", "*", "x", "a b", ":*", " *", "(", "."])
_PATTERNS = st.lists(_PIECES, min_size=1, max_size=4).map("".join).filter(lambda p: p.strip())
_TEXTS = st.lists(st.sampled_from(["ls", "git", "status", "-la", "x", "(", ".", " "]), max_size=5)


def _one_by_one(rules: list[tuple[str, PermissionRule]], text: str) -> PermissionRule | None:
    """The first rule whose own regex matches the whole text (the alternation's order)."""
    for body, rule in rules:
        if re.fullmatch(body, text, re.DOTALL):
            return rule
    return None


@settings(max_examples=400, deadline=None)
@given(patterns=st.lists(_PATTERNS, min_size=1, max_size=6), words=_TEXTS)
def test_an_alternation_matches_the_rule_a_match_rule_by_rule_finds(
    patterns: list[str], words: list[str]
) -> None:
    """Whatever the rules and the text, the fused regex returns the first rule that matches."""
    rules = [(bash_pattern_regex(p), PermissionRule("Bash", p)) for p in patterns]
    text = " ".join(words)
    assert Alternation.build(rules).match(text) == _one_by_one(rules, text)


def test_an_alternation_names_the_rule_of_a_body_with_groups_of_its_own() -> None:
    """A body with capturing groups inside still names its own rule (the outermost group of
    a match closes last)."""
    first, second = PermissionRule("Read", "a"), PermissionRule("Read", "b")
    alternation = Alternation.build([("(x)(y)?", first), ("((z))w", second)])
    assert alternation.match("x") is first
    assert alternation.match("xy") is first
    assert alternation.match("zw") is second
    assert alternation.match("q") is None


@pytest.mark.parametrize("text", ["ls", "ls -la", "git status"])
def test_an_alternation_names_the_first_of_two_rules_that_match(text: str) -> None:
    """Two rules matching the same text: the first listed is the one named."""
    rules = [(bash_pattern_regex("*"), PermissionRule("Bash", "*"))]
    rules.append((bash_pattern_regex(text), PermissionRule("Bash", text)))
    assert Alternation.build(rules).match(text) == PermissionRule("Bash", "*")
