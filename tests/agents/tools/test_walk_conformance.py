"""Glob's in-process listing lists what ``rg --files`` lists, over generated trees.

Each tree has nested directories, hidden files, ``.gitignore``/``.ignore``/``.rgignore`` files
with negations, directory-only and anchored patterns, ``**``, classes, comments and trailing
spaces, symbolic links to files and directories, and ``.git`` entries; both listings run over
it (and over a subdirectory, so that ignore files above the root count) and must be equal.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agents.tools import _walk, search
from agents.tools.base import ToolContext
from agents.tools.search import find_ripgrep, glob_tool

from .toolkit import call, printed_within_a_deadline, text_of

pytestmark = pytest.mark.skipif(find_ripgrep() is None, reason="ripgrep (rg) is not installed")

NAMES = ["a", "b", "ab", ".h", "x.py", "y.pyc", "z.txt", "build", "Ab"]
DIRS = ["a", "b", "src", ".hid", "build", "node"]
IGNORE_FILES = [".gitignore", ".ignore", ".rgignore"]


@st.composite
def patterns(draw: st.DrawFn) -> str:
    """One line of an ignore file, from the syntax the in-process walk translates."""
    segment = st.sampled_from(
        ["a", "b", "ab", "x.py", "*.py", "*.py[cd]", "?", "*", "build", ".h", "src", "**",
         ".hid", "[ab]", "*b", "node"]
    )  # fmt: skip
    parts = draw(st.lists(segment, min_size=1, max_size=3))
    line = "/".join(parts)
    # more wildcards than a regex matches in bounded time go to ripgrep (tested apart); each
    # ``*`` is one at most, and a pattern without a ``/`` gets a ``**/`` in front
    assume(line.count("*") + ("/" not in line) <= 3)
    if draw(st.booleans()):
        line = "/" + line
    if draw(st.booleans()):
        line += "/"
    if draw(st.integers(0, 3)) == 0:
        line = "!" + line
    elif draw(st.integers(0, 5)) == 0:
        line = draw(st.sampled_from(["\\#", "\\!"])) + line  # escaped first characters
    return line + draw(st.sampled_from(["", "", " ", "  "]))


@st.composite
def ignore_text(draw: st.DrawFn) -> str:
    lines = draw(st.lists(patterns(), max_size=5))
    extra = draw(st.sampled_from(["", "# a comment\n", "\n\n"]))
    return extra + "\n".join(lines) + "\n"


@st.composite
def trees(draw: st.DrawFn) -> dict[str, str]:
    """Relative path → what it is: file text, ``dir``, ``link:<target>`` or an ignore file."""
    entries: dict[str, str] = {}
    dirs = [""]
    for _ in range(draw(st.integers(0, 6))):
        parent = draw(st.sampled_from(dirs))
        path = os.path.join(parent, draw(st.sampled_from(DIRS)))
        if path not in dirs:
            dirs.append(path)
            entries[path] = "dir"
    for _ in range(draw(st.integers(1, 12))):
        parent = draw(st.sampled_from(dirs))
        entries.setdefault(os.path.join(parent, draw(st.sampled_from(NAMES))), "file")
    for _ in range(draw(st.integers(0, 4))):
        parent = draw(st.sampled_from(dirs))
        entries[os.path.join(parent, draw(st.sampled_from(IGNORE_FILES)))] = "ignore:" + draw(
            ignore_text()
        )
    for _ in range(draw(st.integers(0, 2))):
        parent = draw(st.sampled_from(dirs))
        target = draw(st.sampled_from([*dirs[1:], *[p for p, k in entries.items() if k == "file"]]
                                      or [""]))  # fmt: skip
        entries.setdefault(os.path.join(parent, "ln"), "link:" + target)
    if draw(st.booleans()):
        entries[os.path.join(draw(st.sampled_from(dirs)), ".git")] = draw(
            st.sampled_from(["dir", "file"])
        )
    return entries


def build(root: Path, entries: dict[str, str]) -> None:
    for rel, kind in sorted(entries.items(), key=lambda kv: kv[1] != "dir"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "dir":
            path.mkdir(exist_ok=True)
        elif kind == "file":
            if not path.exists():
                path.write_text("x")
        elif kind.startswith("ignore:"):
            if path.is_dir():
                continue
            path.write_text(kind.removeprefix("ignore:"))
        elif kind.startswith("link:") and not path.exists():
            os.symlink(root / kind.removeprefix("link:"), path)


@contextmanager
def no_global_git_ignore(home: Path) -> Iterator[None]:
    """HOME and XDG_CONFIG_HOME pointed at an empty directory, for both listings: no global
    git ignore file applies."""
    saved = {k: os.environ.get(k) for k in ("HOME", "XDG_CONFIG_HOME")}
    os.environ["HOME"] = str(home)
    os.environ["XDG_CONFIG_HOME"] = str(home / ".config")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def rg_files(root: str) -> set[str]:
    rg = find_ripgrep()
    assert rg is not None
    done = subprocess.run(
        [rg, "--files", "--null", "--no-config", "--no-require-git", "--hidden", "--glob",
         "!.git", root],
        capture_output=True, cwd=root, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return {p for p in done.stdout.decode(errors="surrogateescape").split("\0") if p}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees())
def test_the_walk_lists_what_ripgrep_lists(tree: dict[str, str]) -> None:
    """Over generated trees the in-process listing equals ripgrep's, at the root and in each
    subdirectory (where the ignore files above it count too)."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(os.path.realpath(tmp))
        root = base / "tree"
        root.mkdir()
        build(root, tree)
        subdirectories = [
            p
            for p in root.rglob("*")
            if p.is_dir() and not p.is_symlink() and ".git" not in p.parts
        ]
        with no_global_git_ignore(base / "home"):
            for directory in [root, *subdirectories]:
                walked = _walk.list_files(str(directory))
                assert walked is not None, f"the walk gave up on {tree}"
                assert sorted(walked) == sorted(rg_files(str(directory))), (tree, directory)


def test_negation_re_includes_but_not_inside_an_ignored_directory(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path)) / "t"
    build(root, {"keep.log": "file", "drop.log": "file", "logs/x.log": "file",
                 ".gitignore": "ignore:*.log\n!keep.log\nlogs/\n!logs/x.log\n"})  # fmt: skip
    with no_global_git_ignore(tmp_path / "home"):
        walked = _walk.list_files(str(root))
        assert walked is not None
        assert sorted(walked) == sorted(rg_files(str(root))) == [
            str(root / ".gitignore"), str(root / "keep.log")
        ]  # fmt: skip


def test_an_ignore_file_above_the_root_counts(tmp_path: Path) -> None:
    top = Path(os.path.realpath(tmp_path)) / "top"
    build(top, {".ignore": "ignore:*.tmp\n", "sub/a.tmp": "file", "sub/b.py": "file"})
    with no_global_git_ignore(tmp_path / "home"):
        assert _walk.list_files(str(top / "sub")) == [str(top / "sub" / "b.py")]
        assert rg_files(str(top / "sub")) == {str(top / "sub" / "b.py")}


@pytest.mark.parametrize(
    "line",
    ["{a,b}.py", "a\\*b", "[!a].py", "*.[", "a[/]b", "*a*a*b", "a/**/b/**/c*d*e"],
    ids=lambda s: repr(s),
)
def test_patterns_the_walk_does_not_translate_go_to_ripgrep(tmp_path: Path, line: str) -> None:
    """Alternation, escapes, negated or unusual classes, more wildcards than a regex matches
    in bounded time (``re`` backtracks): the walk gives up (None)."""
    build(tmp_path, {".gitignore": f"ignore:{line}\n", "a.py": "file"})
    assert _walk.list_files(str(os.path.realpath(tmp_path))) is None


@pytest.mark.parametrize("line", ["*.py", "**/build/**", "*.py[co]", "a*b*", "/x/**/*.tmp"])
def test_common_patterns_are_translated(tmp_path: Path, line: str) -> None:
    build(tmp_path, {".gitignore": f"ignore:{line}\n", "a.py": "file"})
    assert _walk.list_files(str(os.path.realpath(tmp_path))) is not None


def test_a_hostile_ignore_line_over_a_long_name_answers_at_once(tmp_path: Path) -> None:
    """In a process of its own with a deadline: as a regex, the line takes minutes."""
    build(tmp_path, {".gitignore": "ignore:*a*a*a*a*a*a*a*b\n", "a" * 200: "file"})
    script = (
        "from agents.tools import _walk; "
        f"print(_walk.list_files({str(os.path.realpath(tmp_path))!r}))"
    )
    assert printed_within_a_deadline(script) == "None"


def test_git_info_exclude_patterns_go_to_ripgrep(tmp_path: Path) -> None:
    build(tmp_path, {".git/info/exclude": "file", "a.py": "file"})
    (tmp_path / ".git/info/exclude").write_text("# comments only\n")
    assert _walk.list_files(str(os.path.realpath(tmp_path))) is not None
    (tmp_path / ".git/info/exclude").write_text("*.py\n")
    assert _walk.list_files(str(os.path.realpath(tmp_path))) is None


def test_a_global_git_ignore_file_goes_to_ripgrep(tmp_path: Path) -> None:
    build(tmp_path / "t", {"a.py": "file"})
    home = tmp_path / "home"
    with no_global_git_ignore(home):
        assert _walk.list_files(str(os.path.realpath(tmp_path / "t"))) is not None
        (home / ".config" / "git").mkdir(parents=True)
        (home / ".config" / "git" / "ignore").write_text("*.py\n")
        assert _walk.list_files(str(os.path.realpath(tmp_path / "t"))) is None


def test_a_tree_past_the_limit_goes_to_ripgrep(tmp_path: Path) -> None:
    build(tmp_path, {f"f{i}.py": "file" for i in range(30)})
    assert _walk.list_files(str(os.path.realpath(tmp_path)), limit=29) is None
    assert _walk.list_files(str(os.path.realpath(tmp_path)), limit=30) is not None


async def test_glob_on_a_small_tree_starts_no_process(
    tmp_path: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    build(tmp_path, {"a.py": "file", "b/c.py": "file"})
    started: list[list[str]] = []

    async def counting(args: list[str], cwd: str) -> tuple[int, bytes, bytes]:
        started.append(args)
        raise AssertionError("ripgrep started")

    monkeypatch.setattr(search, "run_ripgrep", counting)
    out = await call(glob_tool(), {"pattern": "**/*.py"}, ctx)
    assert sorted(text_of(out).splitlines()) == [str(tmp_path / "a.py"), str(tmp_path / "b/c.py")]
    assert started == []


async def test_glob_past_the_limit_lists_with_ripgrep_and_finds_the_same(
    tmp_path: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    build(tmp_path, {**{f"d/f{i}.py": "file" for i in range(40)}, ".gitignore": "ignore:f1*\n"})
    small = await call(glob_tool(), {"pattern": "**/*.py"}, ctx)
    started: list[list[str]] = []
    original = search.run_ripgrep

    async def counting(args: list[str], cwd: str) -> tuple[int, bytes, bytes]:
        started.append(args)
        return await original(args, cwd)

    monkeypatch.setattr(search, "run_ripgrep", counting)
    monkeypatch.setattr(search, "WALK_LIMIT", 10)
    big = await call(glob_tool(), {"pattern": "**/*.py"}, ctx)
    assert len(started) == 1
    assert text_of(big) == text_of(small)
    assert "f1" not in text_of(big).replace(str(tmp_path), "")


def test_a_pattern_with_a_slash_above_the_root_sees_entries_as_if_in_the_root(
    tmp_path: Path,
) -> None:
    """ripgrep 14 matches an ignore file above the search root against ``root/name``: ``a/a/a``
    there does not reach ``a/a/a`` when searching ``a``, but does when searching ``a/a``."""
    top = Path(os.path.realpath(tmp_path)) / "t"
    build(top, {"a/a/a": "file", ".gitignore": "ignore:a/a/a\n"})
    with no_global_git_ignore(tmp_path / "home"):
        for root in (top / "a", top / "a" / "a"):
            walked = _walk.list_files(str(root))
            assert walked is not None
            assert sorted(walked) == sorted(rg_files(str(root)))
        assert _walk.list_files(str(top / "a")) == [str(top / "a/a/a")]
        assert _walk.list_files(str(top / "a/a")) == []
