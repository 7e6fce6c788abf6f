"""Glob's matching never backtracks without bound, and means what it meant.

``re`` backtracks: ``**/*a*a*a*a*a*a*a*a*a*b*`` over a long name took minutes on the event loop.
A glob's ``{a,b}`` are now expanded into patterns of their own, and one with more than two
wildcards that choose where they end is matched by an automaton, linear in the path. Properties
check, on generated globs and paths, that the matcher and the automaton alone match exactly what
the plain translation matched.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agents.tools._globs import MAX_ALTERNATIVES, _Automaton, _expand, _joined, glob_regex

from .toolkit import printed_within_a_deadline


def plain_regex(pattern: str) -> re.Pattern[str]:
    """The translation before the atomic rewrites: the meaning a glob must keep."""
    out: list[str] = []
    i, n, depth = 0, len(pattern), 0
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                i = end
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    out.extend(")" * depth)
    return re.compile("".join(out), re.DOTALL)


def _spellings(pattern: str) -> int:
    """How many patterns ``pattern``'s braces spell, without the limit."""
    try:
        return len(_expand(pattern))
    except ValueError:
        return MAX_ALTERNATIVES + 1


PIECES = [
    "a", "b", "ab", ".", "/", "*", "*", "**", "**/", "**/", "?", "[ab]", "[!a]", "[/a]", "{a,b}",
    "{*a,b*}", "{a,{b,/}}", "{", "}", ",", "\\*", "\\{",
]  # fmt: skip


@settings(max_examples=1000)
@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=7),
    paths=st.lists(st.text("ab./", max_size=10), min_size=1, max_size=6),
)
def test_a_glob_matches_what_its_plain_translation_matches(
    pieces: list[str], paths: list[str]
) -> None:
    """The matcher, and the automaton alone for every spelling however few its wildcards."""
    pattern = "".join(pieces)
    assume(_spellings(pattern) <= MAX_ALTERNATIVES)  # past it, an error (tested apart)
    fast, plain = glob_regex(pattern), plain_regex(pattern)
    automata = [_Automaton(_joined(spelling)) for spelling in _expand(pattern)]
    for path in paths:
        expected = bool(plain.fullmatch(path))
        assert bool(fast.fullmatch(path)) == expected, (pattern, path)
        assert any(a.fullmatch(path) for a in automata) == expected, (pattern, path, "automaton")


@pytest.mark.parametrize(
    "pattern",
    [
        "**/*a*a*a*a*a*a*a*a*a*b*",
        "*a*a*a*a*a*a*a*a*a*b",
        "{*a*a*a*a*a*a*a*a*b,x}",
        "a**a**a**a**a**a**a**a**b",
        "**/a**/a**/a**/a**/a**/a**/b",
    ],
)
def test_a_glob_of_many_stars_over_a_long_name_answers_at_once(pattern: str) -> None:
    """In a process of its own with a deadline: the plain translation takes minutes."""
    script = (
        "from agents.tools._globs import glob_regex; "
        f"print(bool(glob_regex({pattern!r}).fullmatch('d/' * 30 + 'a' * 200)))"
    )
    assert printed_within_a_deadline(script) == "False"


def test_too_many_alternatives_is_a_clear_error() -> None:
    pattern = "{a,b}" * 9
    with pytest.raises(
        ValueError, match=rf"^glob pattern '{re.escape(pattern)}' spells more than "
        rf"{MAX_ALTERNATIVES} patterns with its {{a,b}} alternatives$",
    ):  # fmt: skip
        glob_regex(pattern)
