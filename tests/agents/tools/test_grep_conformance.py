"""Grep's in-process search prints what ripgrep prints, over generated trees and patterns.

The patterns mix what the in-process search translates (literals, classes, ``\\w``, groups,
alternation, anchors, quantifiers) with what it must leave to ripgrep (look-arounds, flag
groups, Unicode classes, non-ASCII text, bare braces); the files mix ASCII lines with non-ASCII
ones, carriage returns, tabs, long lines, NUL bytes, byte-order marks and a missing last newline.
Whenever the in-process search answers, its output must equal ripgrep's for the same command
line (up to the order of the files, which ripgrep's parallel search does not keep).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.tools import _grep, search
from agents.tools.base import ToolContext
from agents.tools.search import GrepInput, find_ripgrep, grep_tool

from .test_walk_conformance import no_global_git_ignore
from .toolkit import call, text_of

pytestmark = pytest.mark.skipif(find_ripgrep() is None, reason="ripgrep (rg) is not installed")

ATOMS = [
    "foo", "bar", "a", "Foo", "o b", "1", "_", "-", "\\.", "\\(", "\\{\\}", ".", "\\w", "\\d",
    "\\s", "\\W", "\\S", "\\D", "\\t", "[a-c]", "[^a ]", "[\\w.]", "[.*+?]", "[(|)$]",
    "[0-9_]", "[a-]", "[^\\s]", "\\b", "\\B", "^", "$", "(foo|ba)", "(?:a|)", "()", "x",
]  # fmt: skip
#: Outside the subset: ripgrep must run these.
OUTSIDE = [
    "{", "}", "é", "(?i)a", "a(?=b)", "\\x41", "[[:alpha:]]", "\\p{L}", "[]a]", "\\n", "\\",
    "[a-c&&b]", "\\1",
]  # fmt: skip
QUANTIFIERS = ["", "", "", "*", "+", "?", "{2}", "{1,2}", "*?", "+?", "{,2}", "{2,1}", "**"]
LINES = [
    b"foo", b"bar baz", b"Foo.bar()", b"x\ty", b"", b"  ", b"a1_2", b"{}", b"foo\r", b"ab c",
    b"ba ba", b"-x-", b"(foo)", b"\x0b\x0c", b"o b", b"FOO", b"aaa", b"22 a", b"foo_bar1",
]  # fmt: skip
#: Lines that send most searches to ripgrep (non-ASCII, invalid UTF-8, too long).
RARE_LINES = [
    "h\u00e9llo foo".encode(),
    "\u212a K".encode(),
    b"caf\xe9 foo",
    b"a" * 450 + b"foo",
    b"foo " * 150,
]
NAMES = ["a.txt", "b.py", "c", ".h", "d.md"]
DIRS = ["", "", "src", "src/deep", ".hid", "build"]


@st.composite
def patterns(draw: st.DrawFn) -> str:
    atom = (
        st.sampled_from(ATOMS) | st.sampled_from(OUTSIDE)
        if draw(st.integers(0, 3)) == 0
        else st.sampled_from(ATOMS)
    )
    pieces = [
        draw(atom) + draw(st.sampled_from(QUANTIFIERS)) for _ in range(draw(st.integers(1, 4)))
    ]
    if draw(st.integers(0, 4)) == 0:
        return "|".join(pieces)
    return "".join(pieces)


@st.composite
def file_bytes(draw: st.DrawFn) -> bytes:
    line = st.sampled_from(LINES)
    if draw(st.integers(0, 4)) == 0:
        line = line | st.sampled_from(RARE_LINES)
    lines = draw(st.lists(line, max_size=8))
    data = b"\n".join(lines)
    if lines and draw(st.booleans()):
        data += b"\n"
    special = draw(st.integers(0, 12))
    if special == 0:
        data = data[: len(data) // 2] + b"\0" + data[len(data) // 2 :]
    elif special == 1:
        data = b"\xef\xbb\xbf" + data
    return data


@st.composite
def trees(draw: st.DrawFn) -> dict[str, bytes]:
    tree: dict[str, bytes] = {}
    for _ in range(draw(st.integers(1, 8))):
        rel = os.path.join(draw(st.sampled_from(DIRS)), draw(st.sampled_from(NAMES)))
        tree[rel] = draw(file_bytes())
    if draw(st.booleans()):
        tree[".gitignore"] = b"build/\n*.md\n"
    return tree


@st.composite
def requests(draw: st.DrawFn) -> GrepInput:
    mode = draw(st.sampled_from(["files_with_matches", "count", "content"]))
    context = draw(st.sampled_from([None, None, 0, 1, 2]))
    before = draw(st.sampled_from([None, 0, 1, 3]))
    after = draw(st.sampled_from([None, 0, 1, 2]))
    return GrepInput(
        pattern=draw(patterns()), output_mode=mode, case_insensitive=draw(st.booleans()),
        line_numbers=draw(st.booleans()), context=context, before=before, after=after,
    )  # fmt: skip


def ripgrep(args: GrepInput, target: str, is_dir: bool) -> bytes | None:
    """ripgrep's output for Grep's command line, or None if it failed (a pattern it rejects)."""
    rg = find_ripgrep()
    assert rg is not None
    cwd = target if is_dir else os.path.dirname(target)
    argv = [rg, *search._grep_args(args, target, is_dir)]
    done = subprocess.run(argv, capture_output=True, cwd=cwd, check=False)
    if done.returncode == 2:
        return None
    return done.stdout


def normalized(out: bytes, mode: str, is_dir: bool) -> tuple[Counter[bytes], dict[bytes, list]]:
    """The output's lines as a multiset, and each file's lines in order (with the ``--`` between
    its own groups): what must agree when the order of the files does not."""
    if mode == "files_with_matches" and is_dir:
        records = [r for r in out.split(b"\0") if r]
        return Counter(records), {}
    lines = out.split(b"\n")
    per_file: dict[bytes, list[bytes]] = {}
    last: bytes | None = None
    pending = False
    for line in lines:
        if line == b"--":
            pending = True
            continue
        name = line.partition(b"\0")[0] if is_dir else b""
        if pending and name == last:
            per_file.setdefault(name, []).append(b"--")
        pending = False
        per_file.setdefault(name, []).append(line)
        last = name
    return Counter(lines), per_file


def in_process(args: GrepInput, target: str, is_dir: bool) -> bytes | None:
    files = _grep.files_searched(target, is_dir)
    assert files is not None
    return _grep.search(
        files, pattern=args.pattern, is_dir=is_dir, mode=args.output_mode,
        case_insensitive=args.case_insensitive, numbers=args.line_numbers, before=args.before,
        after=args.after, context=args.context,
    )  # fmt: skip


def build(root: Path, tree: dict[str, bytes]) -> None:
    for rel, data in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees(), args=requests())
def test_the_in_process_search_prints_what_ripgrep_prints(
    tree: dict[str, bytes], args: GrepInput
) -> None:
    """Over generated trees, patterns and options, in a directory and on one file, the
    in-process search either declines or prints ripgrep's output (files in any order)."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(os.path.realpath(tmp))
        root = base / "tree"
        root.mkdir()
        build(root, tree)
        one_file = str(root / sorted(tree)[0])
        with no_global_git_ignore(base / "home"):
            for target, is_dir in ((str(root), True), (one_file, False)):
                ours = in_process(args, target, is_dir)
                if ours is None:
                    continue
                theirs = ripgrep(args, target, is_dir)
                assert theirs is not None, f"ripgrep rejects {args.pattern!r}, we searched"
                mode = args.output_mode
                assert normalized(ours, mode, is_dir) == normalized(theirs, mode, is_dir), (
                    ours,
                    theirs,
                )


@pytest.mark.parametrize("pattern", ["o\\sb", "o\\Wb", "o[^x]b", "o\\Db", "o\\S?\\s+b", "o.b"])
def test_a_match_never_spans_two_lines(tmp_path: Path, pattern: str) -> None:
    """Without ``multiline`` no atom matches a newline, as in ripgrep, although each file is
    searched whole."""
    build(tmp_path, {"a.txt": b"foo\nbar\n", "b.txt": b"fo\n\nb\n"})
    target = os.path.realpath(tmp_path)
    for mode in ("files_with_matches", "count", "content"):
        args = GrepInput(pattern=pattern, output_mode=mode)
        assert in_process(args, target, True) == ripgrep(args, target, True) == b""


@pytest.mark.parametrize(
    "pattern",
    ["foo", "NEEDLE_\\w+", "def\\s+\\w+\\(", "^import (trio|os)$", "[A-Z][a-z]+Error", "a.*b",
     "log\\.(info|warn)", "x{2,3}", "\\bfoo\\b", "interface\\{\\}"],
)  # fmt: skip
def test_common_patterns_are_searched_in_process(pattern: str) -> None:
    assert _grep.translate(pattern) is not None


@pytest.mark.parametrize(
    "pattern",
    ["a(?=b)", "(?i)foo", "\\p{L}", "[[:alpha:]]", "\\x41", "a{", "é", "(a)\\1", "[a&&b]",
     "\\Qa\\E", "a{,2}", "(?P<n>a)", "\\A", "\\z", "[]a]", "\\u0041"],
)  # fmt: skip
def test_patterns_outside_the_subset_go_to_ripgrep(pattern: str) -> None:
    assert _grep.translate(pattern) is None


def _ascii_tree(root: Path) -> None:
    build(root, {"a.py": b"NEEDLE_one = 1\n", "pkg/b.py": b"x = 2\nNEEDLE_two\n", "c.txt": b""})


async def _count_processes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    started: list[list[str]] = []
    original = search.run_ripgrep

    async def counting(args: list[str], cwd: str) -> tuple[int, bytes, bytes]:
        started.append(args)
        return await original(args, cwd)

    monkeypatch.setattr(search, "run_ripgrep", counting)
    return started


async def test_grep_on_a_small_tree_starts_no_process(
    tmp_path: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ascii_tree(tmp_path)
    started = await _count_processes(monkeypatch)
    out = await call(grep_tool(), {"pattern": "NEEDLE_\\w+", "output_mode": "content"}, ctx)
    assert sorted(text_of(out).splitlines()) == [
        f"{tmp_path}/a.py:1:NEEDLE_one = 1",
        f"{tmp_path}/pkg/b.py:2:NEEDLE_two",
    ]
    assert started == []


async def test_grep_with_a_pattern_outside_the_subset_runs_ripgrep(
    tmp_path: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ascii_tree(tmp_path)
    started = await _count_processes(monkeypatch)
    out = await call(grep_tool(), {"pattern": "NEEDLE_(?:one|two)\\b", "glob": "*.py"}, ctx)
    assert "Found 2 files" in text_of(out)
    assert len(started) == 1


async def test_grep_over_non_ascii_text_with_a_class_runs_ripgrep(
    tmp_path: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rust's ``\\w`` is Unicode-aware: ``é`` is a word character to ripgrep, not to bytes."""
    build(tmp_path, {"a.txt": "caf\u00e9\n".encode()})
    started = await _count_processes(monkeypatch)
    out = await call(grep_tool(), {"pattern": "caf\\w", "output_mode": "count"}, ctx)
    assert text_of(out).startswith(f"{tmp_path}/a.txt:1")
    assert len(started) == 1


async def test_grep_past_the_walk_limit_runs_ripgrep_and_finds_the_same(
    tmp_path: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    build(tmp_path, {f"d/f{i}.py": b"NEEDLE_%d\n" % i for i in range(30)})
    small = await call(grep_tool(), {"pattern": "NEEDLE_\\d", "output_mode": "count"}, ctx)
    started = await _count_processes(monkeypatch)
    monkeypatch.setattr("agents.tools._walk.WALK_LIMIT", 10)
    monkeypatch.setattr(_grep, "list_files", lambda root: _walk_limited(root))
    big = await call(grep_tool(), {"pattern": "NEEDLE_\\d", "output_mode": "count"}, ctx)
    assert len(started) == 1
    assert sorted(text_of(big).splitlines()) == sorted(text_of(small).splitlines())


def _walk_limited(root: str) -> list[str] | None:
    from agents.tools import _walk

    return _walk.list_files(root, limit=10)


def test_a_file_with_a_nul_byte_goes_to_ripgrep(tmp_path: Path) -> None:
    """ripgrep takes it for binary and still searches the lines before the NUL: not emulated."""
    build(tmp_path, {"a.txt": b"  \n\x00foo"})
    target = os.path.realpath(tmp_path)
    args = GrepInput(pattern=".", output_mode="files_with_matches")
    assert in_process(args, target, True) is None
    assert ripgrep(args, target, True) == f"{target}/a.txt\0".encode()
