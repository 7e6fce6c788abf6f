"""Bash rules: splitting compound commands and matching each part."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.permissions import RuleSet
from agents.permissions._bash import split_command

from .strategies import command_lines

CWD = "/repo"
HOME = "/home/u"


def matched(rules: RuleSet, kind: str, command: str) -> str | None:
    rule = rules.match(kind, "Bash", {"command": command}, cwd=CWD, home=HOME)  # type: ignore[arg-type]
    return None if rule is None else str(rule)


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("npm test", ["npm test"]),
        ("npm test && rm -rf x", ["npm test", "rm -rf x"]),
        ("a || b ; c | d |& e & f", ["a", "b", "c", "d", "e", "f"]),
        ("a\nb", ["a", "b"]),
        ("echo 'a && b; c'", ["echo 'a && b; c'"]),
        ('echo "a | b"', ['echo "a | b"']),
        ("echo a\\;b", ["echo a\\;b"]),
        ("echo $(rm -rf x)", ["rm -rf x", "echo $(rm -rf x)"]),
        ("echo `rm x`", ["rm x", "echo `rm x`"]),
        ('echo "$(id)"', ["id", 'echo "$(id)"']),
        ("diff <(ls a) <(ls b)", ["ls a", "ls b", "diff <(ls a) <(ls b)"]),
        ("(cd a && make)", ["cd a", "make"]),
        ("if true; then rm x; fi", ["true", "rm x"]),
        ("for f in a; do rm $f; done", ["for f in a", "rm $f"]),
        ("x=$((1 + 2))", ["x=$((1 + 2))"]),
        ("npm test 2>&1 | tee log", ["npm test 2>&1", "tee log"]),
        ("cat <<EOF\nrm -rf x\nEOF\nls", ["cat << EOF", "ls"]),
        ("cat <<EOF\n$(rm x)\nEOF", ["cat << EOF", "rm x"]),
        ("cat <<'EOF'\n$(rm x)\nEOF", ["cat << 'EOF'"]),
        ("ls # && rm x", ["ls"]),
        ("", []),
        ("   ;  ", []),
    ],
)
def test_split_command_finds_every_part(command: str, parts: list[str]) -> None:
    """Compound commands split on operators and newlines; substitutions are parts too."""
    assert [c.text for c in split_command(command)] == parts


ALLOW_CASES = [
    # (allow rules, command, allowed)
    (["Bash(npm *)"], "npm test", True),
    (["Bash(npm *)"], "npm", True),
    (["Bash(npm *)"], "npmx install", False),
    (["Bash(npm *)"], "npm test && rm -rf x", False),
    (["Bash(npm *)"], "npm test; curl x | sh", False),
    (["Bash(npm *)", "Bash(echo *)"], "echo $(rm -rf x)", False),
    (["Bash(echo *)"], "echo `rm x`", False),
    (["Bash(echo *)"], 'echo "$(rm x)"', False),
    (["Bash(echo *)"], "echo 'a && rm -rf x'", True),
    (["Bash(npm *)"], "npm test\nrm x", False),
    (["Bash(npm *)"], "npm test &", True),
    (["Bash(npm *)", "Bash(git *)"], "npm test && git status", True),
    (["Bash(ls *)"], "ls -la", True),
    (["Bash(ls *)"], "ls", True),
    (["Bash(ls *)"], "lsof", False),
    (["Bash(ls:*)"], "ls -la", True),
    (["Bash(ls:*)"], "lsof", False),
    (["Bash(npm run test:*)"], "npm run test --watch", True),
    (["Bash(npm run test:*)"], "npm run testx", False),
    (["Bash(git status)"], "git status", True),
    (["Bash(git status)"], "git status   ", True),
    (["Bash(git status)"], "git status -s", False),
    (["Bash(git * main)"], "git push origin main", True),
    (["Bash(git * main)"], "git push origin dev", False),
    (["Bash(ls*)"], "lsof", True),
    (["Bash(*)"], "anything | at all", True),
    (["Bash"], "rm -rf / && anything", True),
    (["Bash(npm *)"], "timeout 30 npm test", True),
    (["Bash(npm *)"], "time npm test", True),
    (["Bash(npm *)"], "nice -n 5 npm test", True),
    (["Bash(npm *)"], "nohup npm test", True),
    (["Bash(npm *)"], "stdbuf -oL npm test", True),
    (["Bash(npm *)"], "command npm test", True),
    (["Bash(npm *)"], "FOO=1 npm test", False),
    (["Bash(npm *)"], "", False),
]


@pytest.mark.parametrize(("allow", "command", "allowed"), ALLOW_CASES)
def test_allow_rules_cover_a_command_only_if_every_part_matches(
    allow: list[str], command: str, allowed: bool
) -> None:
    """An allow rule applies to a compound command only when each part matches an allow rule."""
    assert (matched(RuleSet.from_strings(allow=allow), "allow", command) is not None) is allowed


DENY_CASES = [
    # (deny rule, command, denied)
    ("Bash(rm *)", "rm x", True),
    ("Bash(rm *)", "FOO=1 rm x", True),
    ("Bash(rm *)", "A=1 B=2 rm x", True),
    ("Bash(rm *)", "timeout 5 rm x", True),
    ("Bash(rm *)", "timeout -s KILL 5 rm x", True),
    ("Bash(rm *)", "FOO=1 timeout 5 nice -n 2 rm x", True),
    ("Bash(rm *)", "env A=1 rm x", True),
    ("Bash(rm *)", "ls && rm -rf x", True),
    ("Bash(rm *)", "ls | rm -rf x", True),
    ("Bash(rm *)", "echo $(rm -rf x)", True),
    ("Bash(rm *)", "echo `rm x`", True),
    ("Bash(rm *)", 'echo "${X:-$(rm x)}"', True),
    ("Bash(rm *)", "/bin/rm x", True),
    ("Bash(rm *)", "'rm' -rf x", True),
    ("Bash(rm *)", "if true; then rm x; fi", True),
    ("Bash(rm *)", "(cd a && rm b)", True),
    ("Bash(rm *)", "rm", True),
    ("Bash(rm *)", "rmdir x", False),
    ("Bash(rm *)", "echo rm x", False),
    ("Bash(rm *)", "cat <<'EOF'\nrm x\nEOF", False),
    ("Bash(curl *)", "npm test; curl x | sh", True),
    ("Bash(git push *)", "git push origin main", True),
    ("Bash(git push *)", "git pull", False),
]


@pytest.mark.parametrize(("deny", "command", "denied"), DENY_CASES)
def test_deny_rules_cover_a_command_if_any_part_matches(
    deny: str, command: str, denied: bool
) -> None:
    """A deny rule applies if any part matches it, also behind wrappers and assignments."""
    assert (matched(RuleSet.from_strings(deny=[deny]), "deny", command) is not None) is denied


def test_ask_rules_use_the_deny_semantics() -> None:
    """Ask rules, like deny rules, catch any part of a compound command."""
    rules = RuleSet.from_strings(ask=["Bash(git push *)"])
    assert matched(rules, "ask", "npm test && FOO=1 git push origin") == "Bash(git push *)"
    assert matched(rules, "ask", "npm test") is None


def test_matching_returns_the_rule_that_matched() -> None:
    """The returned rule is one that covers the command (here the first part's)."""
    rules = RuleSet.from_strings(allow=["Bash(npm *)", "Bash(git status)"])
    assert matched(rules, "allow", "npm ci && git status") == "Bash(npm *)"
    assert matched(rules, "allow", "git status && npm ci") == "Bash(git status)"


ALLOWED = {"npm", "ls", "echo"}
DENIED = {"rm", "curl"}
PROPERTY_RULES = RuleSet.from_strings(
    allow=["Bash(npm *)", "Bash(ls *)", "Bash(echo *)", "Bash(git status)"],
    deny=["Bash(rm *)", "Bash(curl:*)"],
)


def _part_allowed(name: str, args: list[str]) -> bool:
    return name in ALLOWED or (name == "git" and args == ["status"])


@given(command_lines())
def test_allow_decision_implies_every_part_allowed_and_none_denied(
    line: tuple[str, list[tuple[str, list[str]]]],
) -> None:
    """For generated compound commands, allow ⇔ every part allowed; deny ⇔ some part denied."""
    command, runs = line
    allow = matched(PROPERTY_RULES, "allow", command)
    deny = matched(PROPERTY_RULES, "deny", command)
    assert (allow is not None) == all(_part_allowed(name, args) for name, args in runs)
    assert (deny is not None) == any(name in DENIED for name, _ in runs)
    if allow is not None and deny is None:
        assert all(_part_allowed(n, a) and n not in DENIED for n, a in runs)


@given(st.text())
def test_matching_never_raises_on_arbitrary_text(command: str) -> None:
    """Any text at all is split and matched without an exception."""
    split_command(command)
    for kind in ("allow", "deny", "ask"):
        matched(PROPERTY_RULES, kind, command)


@given(st.text(alphabet="$()`'\"\\;&|<> \nab{}#", max_size=60))
def test_matching_never_raises_on_shell_punctuation(command: str) -> None:
    """Unbalanced quotes, parens and substitutions never make the tokenizer raise."""
    split_command(command)
    matched(PROPERTY_RULES, "deny", command)


def test_deep_nesting_does_not_exhaust_the_stack() -> None:
    """Thousands of nested substitutions are handled without recursion errors."""
    command = "echo " + "$(" * 5000 + "rm x" + ")" * 5000
    assert split_command(command)
    assert matched(PROPERTY_RULES, "allow", command) is None
