"""Glob words in a Bash line's reads, judged against Read deny rules: each pattern expanded
once per check, and at most ``MAX_GLOB_WORDS`` of them (each lists a directory on the event
loop), past which a word reads as its directory with everything beneath it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.permissions import _reading
from agents.permissions._reading import MAX_GLOB_WORDS, Globs, reading_paths

from .helpers import decide_bash


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The patterns ``glob.glob`` is called with."""
    calls: list[str] = []
    real = _reading.glob.glob

    def spy(pattern: str, *args: Any, **kwargs: Any) -> list[str]:
        calls.append(pattern)
        return real(pattern, *args, **kwargs)

    monkeypatch.setattr(_reading.glob, "glob", spy)
    return calls


def _tree(root: Path, files: int) -> None:
    for i in range(files):
        (root / f"f{i}.txt").write_text("x")
    (root / "secret").mkdir()
    (root / "secret" / "key.pem").write_text("k")


async def test_a_repeated_pattern_is_listed_once_per_check(
    tmp_path: Path, listed: list[str]
) -> None:
    """250 `cat *.txt f*` beside 200 files: two listings, not 500 (a line like it beside 2 000
    files held the event loop over 3 s), and the verdict is the same as for one of them."""
    _tree(tmp_path, 200)
    line = " && ".join(["cat *.txt f*"] * 250)
    many = await decide_bash(str(tmp_path), line, deny=["Read(./secret/**)"])
    assert len(listed) == 2
    one = await decide_bash(str(tmp_path), "cat *.txt f*", deny=["Read(./secret/**)"])
    assert many.behavior == one.behavior


async def test_past_the_limit_a_pattern_reads_as_its_directory(
    tmp_path: Path, listed: list[str]
) -> None:
    """More distinct patterns than the limit: only the limit's worth is listed, and a pattern
    past it that would reach a denied file is still denied (it reads as its directory)."""
    _tree(tmp_path, 5)
    words = " ".join(f"f{i}*" for i in range(MAX_GLOB_WORDS + 10))
    deny = ["Read(./secret/**)"]
    outcome = await decide_bash(str(tmp_path), f"cat {words} s*/key.pem", deny=deny)
    assert len(listed) == MAX_GLOB_WORDS
    # denied by the rule, not merely refused when asked
    assert outcome.behavior == "deny" and outcome.decided_by != "callback", outcome
    within = await decide_bash(str(tmp_path), "cat s*/key.pem", deny=deny)
    assert within.behavior == "deny" and within.decided_by == outcome.decided_by, within


def test_expanding_through_one_check_gives_what_expanding_afresh_gives(tmp_path: Path) -> None:
    """A check's cache changes nothing within the limit: the same reads, word by word."""
    _tree(tmp_path, 12)
    globs = Globs()
    lines = (["cat", "f1*", "*.txt"], ["head", "f1*"], ["grep", "-r", "x", "s*"], ["cat", "*.txt"])
    for argv in lines:
        assert reading_paths(argv, str(tmp_path), str(tmp_path), globs) == reading_paths(
            argv, str(tmp_path), str(tmp_path)
        )


async def test_a_path_is_judged_once_per_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same 200 matches read by 250 commands of a line are judged against the rules once
    each (the line held the event loop 0.8 s judging them again for every command)."""
    from agents.permissions import _path_rules

    _tree(tmp_path, 200)
    judged: list[object] = []
    real = _path_rules._match_read_argument

    def spy(*args: Any) -> Any:
        judged.append(args[1])
        return real(*args)

    monkeypatch.setattr(_path_rules, "_match_read_argument", spy)
    line = " && ".join(["cat *.txt f*"] * 250)
    await decide_bash(str(tmp_path), line, deny=["Read(./secret/**)"])
    assert len(judged) == len(set(judged)) <= 205  # 200 files, the two patterns


async def test_the_globs_of_file_changing_commands_share_the_checks_limit(
    tmp_path: Path, listed: list[str]
) -> None:
    """`rm` and `touch` globs judged against Edit rules are listed through the same check's
    cache and limit as the reads' (they were listed each time, without bound): past it, a
    file they change is not known, and an Edit rule makes the line ask."""
    _tree(tmp_path, 5)
    line = " && ".join(["rm -f *.txt f*"] * 250)
    await decide_bash(str(tmp_path), line, deny=["Edit(./secret/**)"])
    assert len(listed) == 2
    listed.clear()
    words = " ".join(f"f{i}*" for i in range(MAX_GLOB_WORDS + 10))
    outcome = await decide_bash(str(tmp_path), f"rm -f {words}", deny=["Edit(./secret/**)"])
    assert len(listed) == MAX_GLOB_WORDS
    assert outcome.behavior == "deny" and outcome.decided_by == "callback", outcome
