"""Grep's in-process search never backtracks without bound: Python's ``re`` is a backtracking
engine where ripgrep's is linear, so a model's pattern over a hostile file would otherwise hold
the event loop (or a worker thread nothing can stop) for minutes. What could take long goes to
ripgrep, whose output the in-process search copies."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.tools import _grep

from .test_grep_conformance import build
from .toolkit import printed_within_a_deadline


@pytest.mark.parametrize(
    "pattern", ["(a+)+b", "(a|a)+b", "(?:a*)*b", "(a|aa){2}c", "(\\w+\\w+)+x", "(.*a){3}x"]
)
def test_a_quantified_group_goes_to_ripgrep(pattern: str) -> None:
    assert _grep.translate(pattern) is None


@pytest.mark.parametrize("pattern", ["a*a*a*b", "\\w+\\s+\\w+\\(\\w+", "a?" * 7, "(a|b)(c|d)" * 4])
def test_too_many_unbounded_quantifiers_or_choices_go_to_ripgrep(pattern: str) -> None:
    assert _grep.translate(pattern) is None


@pytest.mark.parametrize(
    ("pattern", "degree", "width"),
    [
        ("NEEDLE_\\w+", 0, 1),  # the last quantifier gives back nothing
        ("foo.*", 0, 1),
        ("a.*b", 1, 1),
        ("\\w+$", 1, 1),
        ("a{2,}", 1, 1),  # it may fail after taking: a run of one 'a' at each position
        ("a+|b", 1, 2),
        ("def\\s+\\w+\\(", 2, 1),
        ("^import (trio|os)$", 0, 2),
        ("x{2,5}y?", 0, 8),
    ],
)
def test_what_bounds_a_searchs_backtracking(pattern: str, degree: int, width: int) -> None:
    translated = _grep.translate(pattern)
    assert translated is not None
    assert (translated.degree, translated.width) == (degree, width)


def test_a_hostile_file_goes_to_ripgrep_and_a_small_one_is_searched_here(tmp_path: Path) -> None:
    """Lines of 400 'a's: `a.*b` would take 80 000 steps a line; a few lines are searched here,
    a file of thousands goes to ripgrep."""
    build(tmp_path, {"few.txt": b"a" * 400 + b"\n", "many.txt": (b"a" * 400 + b"\n") * 5000})
    few, many = str(tmp_path / "few.txt"), str(tmp_path / "many.txt")
    args = {"pattern": "a.*b", "is_dir": False, "mode": "content"}
    assert _grep.search([few], **args) == b""  # type: ignore[arg-type]
    assert _grep.search([many], **args) is None  # type: ignore[arg-type]


@given(lines=st.lists(st.integers(0, 600), max_size=30), degree=st.integers(1, 2))
def test_the_worst_case_counts_every_way_to_share_a_line(lines: list[int], degree: int) -> None:
    """At each position of a line of ``L`` bytes, ``k`` quantifiers can share what follows in
    ``C(L - p + k, k)`` ways: the estimate is at least their sum (and the bytes themselves)."""
    data = b"\n".join(b"a" * n for n in lines)
    exact = sum(math.comb(n - p + degree, degree) for n in lines for p in range(n + 1))
    assert _grep._worst_case(data, degree) >= exact + len(data)


def test_an_exponential_pattern_over_a_long_line_answers_at_once(tmp_path: Path) -> None:
    """Run in a process of its own with a deadline: without the guard it takes hours."""
    build(tmp_path, {"f.txt": b"a" * 60 + b"\n"})
    script = (
        "import sys; from agents.tools import _grep; "
        f"print(_grep.search([{str(tmp_path / 'f.txt')!r}], pattern='(a+)+b', is_dir=False, "
        "mode='content'))"
    )
    assert printed_within_a_deadline(script) == "None"
