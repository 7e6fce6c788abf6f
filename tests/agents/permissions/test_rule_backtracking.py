"""A rule's wildcards never backtrack without bound, and match exactly what they always matched.

With several ``*`` in a rule, the plain translation (``a.*b.*c``) made Python's regex engine try
every way to place the pieces: ``Bash(x*x*x*x*y)`` took 17 s over a command of 800 characters,
``Read(*a*a*a*a*b)`` 8 s over a path of 200, ``Read(**/a/**/a/**/a/**/a/**/b)`` seconds over
100 components, each holding the event loop (a match cannot be cancelled). The properties here
compare the translation with the plain one, kept below as the reference, on generated rules
and texts; the hostile cases run in a process of their own with a deadline.
"""

from __future__ import annotations

import posixpath
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agents.permissions import RuleSet
from agents.permissions._bash import _component_regex
from agents.permissions._paths import compile_path_pattern
from agents.permissions._rules import Alternation, PermissionRule, bash_pattern_regex
from agents.permissions._stars import stars

from ..tools.toolkit import printed_within_a_deadline

# -- the reference: the plain translation, as it was -------------------------------------------


def _plain_bash(pattern: str) -> str:
    pattern = " ".join(pattern.split())
    if pattern.endswith(":*"):
        pattern = pattern[:-2] + " *"
    suffix = ""
    if pattern.endswith(" *"):
        pattern, suffix = pattern[:-2], "(?: .*)?"
    return ".*".join(re.escape(piece) for piece in pattern.split("*")) + suffix


def _plain_component(component: str) -> str:
    out: list[str] = []
    for ch in component:
        if ch == "*":
            if not out or out[-1] != "[^/]*":
                out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(ch))
    return "".join(out)


def _plain_path(spec: str) -> tuple[str, str]:
    anchor = "cwd"
    any_depth = False
    if spec.startswith("//"):
        anchor, rest = "root", spec[2:]
    elif spec == "~" or spec.startswith("~/"):
        anchor, rest = "home", spec[2:]
    elif spec.startswith("/"):
        rest = spec[1:]
    elif spec.startswith("./"):
        rest = spec[2:]
    else:
        rest = spec
        any_depth = "/" not in spec.rstrip("/")
    rest = rest.strip("/")
    if ".." in rest.split("/") or "." in rest.split("/") or "//" in rest:
        rest = posixpath.normpath(rest).lstrip("/")
        rest = "" if rest == "." else rest
    components = rest.split("/") if rest else []
    pieces: list[str] = []
    for index, component in enumerate(components):
        last = index == len(components) - 1
        if component == "**":
            if last:
                if pieces:
                    pieces[-1] = pieces[-1].removesuffix("/")
                pieces.append("(?:/.*)?" if pieces else ".*")
            else:
                pieces.append("(?:.*/)?")
        else:
            pieces.append(_plain_component(component) + ("" if last else "/"))
    body = "".join(pieces)
    if not body:
        return anchor, ".*"
    if any_depth and not body.startswith(".*"):
        body = "(?:.*/)?" + body
    if not body.endswith((".*", "(?:/.*)?")):
        body += "(?:/.*)?"
    return anchor, body


def _matches(body: str, text: str) -> bool:
    return re.fullmatch(body, text, re.DOTALL) is not None


# -- generated rules and texts, over few letters so that pieces recur --------------------------

_BASH_PIECES = st.sampled_from(["a", "b", "ab", "aa", " ", "*", "**", ":*", " *", "a b"])
_BASH_PATTERNS = st.lists(_BASH_PIECES, min_size=1, max_size=7).map("".join)
_BASH_TEXTS = st.text(alphabet="ab \n", max_size=14)

_COMPONENTS = st.sampled_from(["a", "b", "ab", "*", "**", "?", "a*", "*a", "*a*b", "a?", "..", "."])
_PATH_PATTERNS = st.builds(
    lambda lead, parts, tail: lead + "/".join(parts) + tail,
    st.sampled_from(["", "./", "/", "//", "~/"]),
    st.lists(_COMPONENTS, min_size=1, max_size=6),
    st.sampled_from(["", "/"]),
)
_PATHS = st.lists(st.sampled_from(["a", "b", "ab", "ba", "aab", ""]), max_size=7).map("/".join)


@settings(max_examples=1500, deadline=None)
@given(pattern=_BASH_PATTERNS, text=_BASH_TEXTS)
@example(pattern="a*aa*a", text="aaaa")
@example(pattern="a*b*b", text="abb")
@example(pattern="a*b*a *", text="abba a")
def test_a_bash_pattern_matches_what_the_plain_translation_matches(pattern: str, text: str) -> None:
    assert _matches(bash_pattern_regex(pattern), text) == _matches(_plain_bash(pattern), text)


@settings(max_examples=1500, deadline=None)
@given(pattern=_PATH_PATTERNS, path=_PATHS)
@example(pattern="**/a/**/b", path="a/b/a/b")
@example(pattern="**/ab*/**/b", path="ab/abb/b")
@example(pattern="a/**/b/**", path="a/b/b")
@example(pattern="**/a/**/a", path="a/ab/a")
@example(pattern="a/**/**/b", path="a/b")
@example(pattern="**/**/a/**/**", path="b/a")
def test_a_path_pattern_matches_what_the_plain_translation_matches(pattern: str, path: str) -> None:
    anchor, body = compile_path_pattern(pattern)
    plain_anchor, plain_body = _plain_path(pattern)
    assert anchor == plain_anchor
    assert _matches(body, path) == _matches(plain_body, path), (body, plain_body)


@settings(max_examples=500, deadline=None)
@given(pieces=st.lists(st.sampled_from(["", "a", "b", "ab", "ba", "aa"]), min_size=1, max_size=6),
       text=st.text(alphabet="ab", max_size=14))  # fmt: skip
def test_stars_match_what_a_plain_join_matches(pieces: list[str], text: str) -> None:
    """The translation of Agent and WebFetch patterns (``*`` any text)."""
    assert _matches(stars(pieces), text) == _matches(".*".join(pieces), text)


@settings(max_examples=300, deadline=None)
@given(patterns=st.lists(_BASH_PATTERNS, min_size=1, max_size=5), text=_BASH_TEXTS)
def test_fused_bash_rules_name_the_rule_the_plain_ones_name(patterns: list[str], text: str) -> None:
    """In an alternation the first rule that matches is the one reported, as before."""
    rules = [PermissionRule("Bash", p) for p in patterns]
    pairs = list(zip(patterns, rules, strict=True))
    new = Alternation.build([(bash_pattern_regex(p), r) for p, r in pairs])
    old = Alternation.build([(_plain_bash(p), r) for p, r in pairs])
    assert new.match(text) == old.match(text)


def test_the_comparison_sees_a_planted_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property is not vacuous: a translation placing a middle piece at its *last* place
    (``(?>.*piece)``, greedy) instead of its first misses ``a*b*b`` over ``abb``."""

    def greedy(pieces: list[str], any_char: str = ".") -> str:
        middle = "".join(f"(?>{any_char}*{piece})" for piece in pieces[1:-1])
        return f"{pieces[0]}{middle}{any_char}*{pieces[-1]}" if len(pieces) > 1 else pieces[0]

    monkeypatch.setattr("agents.permissions._bash_rules.stars", greedy)
    assert _matches(bash_pattern_regex("a*b*b"), "abb") != _matches(_plain_bash("a*b*b"), "abb")


# -- the hostile cases: answered at once, in a process of their own ------------------------------


@pytest.mark.parametrize(
    ("rule", "tool", "field", "value"),
    [
        ("Bash(x*x*x*x*x*x*y)", "Bash", "command", "x" * 3000),
        ("Bash(git * -m * -m * -m * --amend)", "Bash", "command", "git" + " -m" * 2000),
        ("Read(*a*a*a*a*a*a*b)", "Read", "file_path", "a" * 3000),
        ("Read(**/a/**/a/**/a/**/a/**/a/**/b)", "Read", "file_path", "a/" * 1500),
        ("Read(**/a*a*a*a*a*b)", "Read", "file_path", "a/" * 500 + "a" * 3000),
        ("Read(**/**/**/**/**/**/b)", "Read", "file_path", "a/" * 1500 + "c"),
        ("Edit(src/**/a*a*a*a*a*b/**/x)", "Write", "file_path", "src/" + "a" * 3000 + "/x/y"),
        ("Agent(*a*a*a*a*a*a*b)", "Agent", "subagent_type", "a" * 3000),
    ],
)
def test_a_rule_of_many_stars_over_a_long_input_answers_at_once(
    rule: str, tool: str, field: str, value: str
) -> None:
    """Each took minutes or more with the plain translation (the first: hours)."""
    script = (
        "from agents.permissions import RuleSet; "
        f"rules = RuleSet.from_strings(deny=[{rule!r}]); "
        f"print(rules.match('deny', {tool!r}, {{{field!r}: {value!r}}}, cwd='/w', home='/h'))"
    )
    assert printed_within_a_deadline(script, seconds=30) == "None"


def test_the_hostile_cases_still_match_what_they_should() -> None:
    """The same rules still deny what they name."""
    rules = RuleSet.from_strings(
        deny=["Bash(x*x*x*x*x*x*y)", "Read(**/a/**/a/**/b)", "Read(*a*a*b)", "Agent(*a*b)"]
    )

    def match(tool: str, tool_input: dict[str, str]) -> str | None:
        rule = rules.match("deny", tool, tool_input, cwd="/w", home="/h")
        return None if rule is None else str(rule)

    assert match("Bash", {"command": "x" * 50 + "y"}) == "Bash(x*x*x*x*x*x*y)"
    assert match("Read", {"file_path": "/w/" + "a/" * 20 + "b/c"}) == "Read(**/a/**/a/**/b)"
    assert match("Read", {"file_path": "/w/d/" + "a" * 50 + "b"}) == "Read(*a*a*b)"
    assert match("Agent", {"subagent_type": "x" + "a" * 50 + "b"}) == "Agent(*a*b)"


# -- a Bash glob expanded against the directory (the model's pattern, the files' names) ------------


def _plain_glob_component(component: str) -> re.Pattern[str] | None:
    """A glob component as it was translated for expansion: each ``*`` a plain ``.*``."""
    out: list[str] = []
    i, n = 0, len(component)
    while i < n:
        c = component[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(component[i + 1]))
            i += 2
        elif c == "*":
            out.append(".*")
            i += 1
        elif c == "?":
            out.append(".")
            i += 1
        elif c == "[":
            j = i + 1
            if j < n and component[j] in "!^":
                j += 1
            if j < n and component[j] == "]":
                j += 1
            while j < n and component[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape("["))
                i += 1
                continue
            body = component[i + 1 : j]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            escaped = "".join("\\" + ch if ch in "\\^]" else ch for ch in body)
            out.append(f"[{'^' if negate else ''}{escaped}]")
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    try:
        return re.compile("".join(out), re.IGNORECASE | re.DOTALL)
    except re.error:
        return None


_GLOB_PIECES = st.sampled_from(["*", "**", "?", "a", "B", "b", "[ab]", "[!a]", "[]a]", "[*]",
                                "[a-", "\\*", "\\", ".", "\n", "é"])  # fmt: skip
_NAMES = st.text(st.sampled_from("aAbB.*\n-é"), max_size=12)


@given(st.lists(_GLOB_PIECES, max_size=8).map("".join), st.lists(_NAMES, max_size=6))
@example("*a*a*b", ["aab", "aaab", "ab", "xaxaxb", "AaB"])
@example("[*]*", ["*", "**", "a"])
@example("a**b", ["ab", "a*b", "b"])
@settings(max_examples=300)
def test_a_glob_component_matches_the_names_the_plain_translation_matched(
    component: str, names: list[str]
) -> None:
    """The same names match as with the plain translation (or both refuse the pattern)."""
    plain = _plain_glob_component(component)
    linear = _component_regex(component)
    assert (plain is None) is (linear is None)
    if plain is not None and linear is not None:
        for name in names:
            assert (linear.fullmatch(name) is None) is (plain.fullmatch(name) is None), name


def test_a_glob_of_many_stars_over_a_long_file_name_is_judged_at_once() -> None:
    """rm *a*a*a*a*a*a*a*a*b beside a file of 255 a's: the plain translation tried every way
    to place the a's (four stars over 200 a's: 16 s; eight, years), on the event loop."""
    script = (
        "import os, tempfile, trio\n"
        "from agents.permissions import PermissionCheck, PermissionGate, RuleSet\n"
        "async def main():\n"
        "    cwd = tempfile.mkdtemp()\n"
        "    open(os.path.join(cwd, 'a' * 255), 'w').close()\n"
        "    gate = PermissionGate(mode='acceptEdits', rules=RuleSet.from_strings(),\n"
        "                          can_use_tool=None, cwd=cwd, home='/home/nobody-test')\n"
        "    command = 'rm ' + '*a' * 8 + '*b ' + '*a' * 8 + '*'\n"
        "    check = PermissionCheck('Bash', {'command': command}, 't1', read_only=False)\n"
        "    hook_input = {'session_id': 's1', 'cwd': '/', 'transcript_path': '/t'}\n"
        "    print((await gate.check(check, hook_input)).behavior)\n"
        "trio.run(main)\n"
    )  # fmt: skip
    assert printed_within_a_deadline(script, seconds=30) == "allow"
