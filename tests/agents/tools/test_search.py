"""Glob and Grep on ripgrep: patterns, ordering, .gitignore, output modes, limits, errors."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
import trio

from agents.permissions import RuleSet
from agents.permissions._checked import FileAccess
from agents.tools import search
from agents.tools.base import ToolContext
from agents.tools.search import GLOB_LIMIT, glob_tool, grep_tool

from .toolkit import call, printed_within_a_deadline, text_of, wait_gone

GLOB, GREP = glob_tool(), grep_tool()


def _tree(root: Path, files: dict[str, str]) -> None:
    """Create ``files``; later entries get later modification times."""
    for i, (name, body) in enumerate(files.items()):
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
        os.utime(p, (1_000_000 + i, 1_000_000 + i))


# --- Glob ---------------------------------------------------------------------------------


async def test_glob_double_star_newest_first(tmp_path: Path, ctx: ToolContext) -> None:
    _tree(tmp_path, {"a.py": "", "pkg/b.py": "", "pkg/deep/c.py": "", "d.txt": ""})
    out = await call(GLOB, {"pattern": "**/*.py"}, ctx)
    assert text_of(out).splitlines() == [
        str(tmp_path / "pkg/deep/c.py"),
        str(tmp_path / "pkg/b.py"),
        str(tmp_path / "a.py"),
    ]
    assert out.data is not None and out.data["numFiles"] == 3


async def test_glob_star_is_top_level_only(tmp_path: Path, ctx: ToolContext) -> None:
    _tree(tmp_path, {"a.py": "", "pkg/b.py": ""})
    out = await call(GLOB, {"pattern": "*.py"}, ctx)
    assert text_of(out) == str(tmp_path / "a.py")


async def test_glob_path_and_subdir_pattern(tmp_path: Path, ctx: ToolContext) -> None:
    _tree(tmp_path, {"src/x/a.ts": "", "src/y.ts": "", "other/b.ts": ""})
    out = await call(GLOB, {"pattern": "src/**/*.ts"}, ctx)
    assert sorted(text_of(out).splitlines()) == [
        str(tmp_path / "src/x/a.ts"),
        str(tmp_path / "src/y.ts"),
    ]
    out = await call(GLOB, {"pattern": "*.ts", "path": str(tmp_path / "other")}, ctx)
    assert text_of(out) == str(tmp_path / "other/b.ts")


async def test_glob_absolute_pattern(tmp_path: Path, ctx: ToolContext) -> None:
    _tree(tmp_path, {"src/a.py": "", "b.py": ""})
    out = await call(GLOB, {"pattern": f"{tmp_path}/src/*.py"}, ctx)
    assert text_of(out) == str(tmp_path / "src/a.py")


async def test_glob_respects_gitignore(tmp_path: Path, ctx: ToolContext) -> None:
    _tree(
        tmp_path, {".gitignore": "build/\n*.log\n", "build/out.py": "", "keep.py": "", "x.log": ""}
    )
    out = await call(GLOB, {"pattern": "**/*"}, ctx)
    names = {os.path.basename(p) for p in text_of(out).splitlines()}
    assert names == {".gitignore", "keep.py"}


async def test_glob_caps_results_with_a_note(tmp_path: Path, ctx: ToolContext) -> None:
    _tree(tmp_path, {f"f{i:03}.txt": "" for i in range(GLOB_LIMIT + 5)})
    out = text_of(await call(GLOB, {"pattern": "*.txt"}, ctx))
    lines = out.splitlines()
    assert len([line for line in lines if line.endswith(".txt")]) == GLOB_LIMIT
    assert "Results are truncated" in lines[-1]
    assert "105" in lines[-1]


async def test_glob_no_match(tmp_path: Path, ctx: ToolContext) -> None:
    out = await call(GLOB, {"pattern": "*.rs"}, ctx)
    assert text_of(out) == "No files found"
    assert not out.is_error


async def test_glob_missing_directory(tmp_path: Path, ctx: ToolContext) -> None:
    out = await call(GLOB, {"pattern": "*", "path": str(tmp_path / "gone")}, ctx)
    assert out.is_error
    assert text_of(out) == f"Directory does not exist: {tmp_path / 'gone'}"


async def test_glob_path_is_a_file(tmp_path: Path, ctx: ToolContext) -> None:
    _tree(tmp_path, {"f.txt": ""})
    out = await call(GLOB, {"pattern": "*", "path": str(tmp_path / "f.txt")}, ctx)
    assert text_of(out).startswith("Path is not a directory")


async def test_glob_without_ripgrep(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "find_ripgrep", lambda: None)
    out = await call(GLOB, {"pattern": "*"}, ctx)
    assert out.is_error
    assert text_of(out).startswith("ripgrep (rg) is not available")


# --- Grep ---------------------------------------------------------------------------------


@pytest.fixture
def code(tmp_path: Path) -> Path:
    _tree(
        tmp_path,
        {
            "old.py": "import os\ndef Foo():\n    return 1\n",
            "mid.js": "function foo() {}\n",
            "new.py": "x = 1\n# foo here\ny = 2\nz = foo\n",
            "README.md": "nothing\n",
        },
    )
    return tmp_path


async def test_grep_files_with_matches_is_default_newest_first(
    code: Path, ctx: ToolContext
) -> None:
    out = text_of(await call(GREP, {"pattern": "foo"}, ctx))
    assert out.splitlines() == ["Found 2 files", str(code / "new.py"), str(code / "mid.js")]


async def test_grep_case_insensitive(code: Path, ctx: ToolContext) -> None:
    out = text_of(await call(GREP, {"pattern": "foo", "-i": True}, ctx))
    assert out.splitlines()[0] == "Found 3 files"


async def test_grep_content_mode_has_line_numbers(code: Path, ctx: ToolContext) -> None:
    out = text_of(
        await call(
            GREP, {"pattern": "foo", "output_mode": "content", "path": str(code / "new.py")}, ctx
        )
    )
    assert out.splitlines() == ["2:# foo here", "4:z = foo"]
    out = text_of(
        await call(
            GREP,
            {"pattern": "foo", "output_mode": "content", "-n": False, "path": str(code / "new.py")},
            ctx,
        )
    )
    assert out.splitlines() == ["# foo here", "z = foo"]


async def test_grep_content_in_directory_names_files(code: Path, ctx: ToolContext) -> None:
    out = text_of(await call(GREP, {"pattern": "function", "output_mode": "content"}, ctx))
    assert out == f"{code / 'mid.js'}:1:function foo() {{}}"


async def test_grep_context_lines(code: Path, ctx: ToolContext) -> None:
    base = {"pattern": "^y", "output_mode": "content", "path": str(code / "new.py")}
    assert text_of(await call(GREP, {**base, "-A": 1}, ctx)).splitlines() == [
        "3:y = 2",
        "4-z = foo",
    ]
    assert text_of(await call(GREP, {**base, "-B": 1}, ctx)).splitlines() == [
        "2-# foo here",
        "3:y = 2",
    ]
    assert len(text_of(await call(GREP, {**base, "-C": 2}, ctx)).splitlines()) == 4


async def test_grep_glob_and_type_filters(code: Path, ctx: ToolContext) -> None:
    out = text_of(await call(GREP, {"pattern": "foo", "glob": "*.js"}, ctx))
    assert out.splitlines()[1:] == [str(code / "mid.js")]
    out = text_of(await call(GREP, {"pattern": "foo", "type": "py", "-i": True}, ctx))
    assert out.splitlines()[1:] == [str(code / "new.py"), str(code / "old.py")]
    out = text_of(await call(GREP, {"pattern": "foo", "glob": "*.{js,md}"}, ctx))
    assert out.splitlines()[1:] == [str(code / "mid.js")]


async def test_grep_count_mode(code: Path, ctx: ToolContext) -> None:
    out = text_of(
        await call(
            GREP, {"pattern": "o", "output_mode": "count", "path": str(code / "new.py")}, ctx
        )
    )
    assert out.splitlines()[0] == "4"
    assert "Found 4 total occurrences across 1 file." in out


async def test_grep_head_limit_and_offset(code: Path, ctx: ToolContext) -> None:
    base = {"pattern": ".", "output_mode": "content", "path": str(code / "new.py")}
    out = text_of(await call(GREP, {**base, "head_limit": 2}, ctx))
    assert out.splitlines()[:2] == ["1:x = 1", "2:# foo here"]
    assert "Showing 2 of 4 lines" in out
    out = text_of(await call(GREP, {**base, "head_limit": 1, "offset": 2}, ctx))
    assert out.splitlines()[0] == "3:y = 2"
    out = text_of(await call(GREP, {"pattern": "foo", "head_limit": 1}, ctx))
    assert out.splitlines() == ["Found 2 files (showing 1 from entry 1)", str(code / "new.py")]


async def test_grep_multiline(code: Path, ctx: ToolContext) -> None:
    base = {"pattern": r"def Foo\(\):.*return", "path": str(code / "old.py")}
    assert text_of(await call(GREP, base, ctx)) == "No files found"
    out = text_of(await call(GREP, {**base, "multiline": True}, ctx))
    assert out.splitlines()[0] == "Found 1 file"


async def test_grep_pattern_starting_with_dash(tmp_path: Path, ctx: ToolContext) -> None:
    _tree(tmp_path, {"a.txt": "--flag\n"})
    out = text_of(await call(GREP, {"pattern": "--flag", "output_mode": "content"}, ctx))
    assert out.endswith("1:--flag")


async def test_grep_respects_gitignore(tmp_path: Path, ctx: ToolContext) -> None:
    _tree(tmp_path, {".gitignore": "dist/\n", "dist/a.js": "needle\n", "src.js": "needle\n"})
    out = text_of(await call(GREP, {"pattern": "needle"}, ctx))
    assert out.splitlines()[1:] == [str(tmp_path / "src.js")]


async def test_grep_no_matches(code: Path, ctx: ToolContext) -> None:
    out = await call(GREP, {"pattern": "zzz_nothing", "output_mode": "content"}, ctx)
    assert text_of(out) == "No matches found"
    assert not out.is_error


async def test_grep_invalid_regex_is_an_error(code: Path, ctx: ToolContext) -> None:
    out = await call(GREP, {"pattern": "foo("}, ctx)
    assert out.is_error
    assert text_of(out).startswith("Grep failed: rg: regex parse error")
    assert "unclosed group" in text_of(out)


async def test_grep_missing_path(tmp_path: Path, ctx: ToolContext) -> None:
    out = await call(GREP, {"pattern": "x", "path": str(tmp_path / "gone")}, ctx)
    assert text_of(out) == f"Path does not exist: {tmp_path / 'gone'}"


async def test_grep_negative_context_is_an_error(code: Path, ctx: ToolContext) -> None:
    out = await call(GREP, {"pattern": "x", "output_mode": "content", "-A": -1}, ctx)
    assert text_of(out) == "-A must be >= 0, got -1"


async def test_grep_dash_fields_are_validated(ctx: ToolContext) -> None:
    from agents.tools.base import ToolInputError

    with pytest.raises(ToolInputError, match=r"\$\.-i"):
        GREP.validate({"pattern": "x", "-i": "yes"})
    with pytest.raises(ToolInputError, match=r"\$\.output_mode"):
        GREP.validate({"pattern": "x", "output_mode": "lines"})


async def test_grep_without_ripgrep(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "find_ripgrep", lambda: None)
    out = await call(GREP, {"pattern": "x"}, ctx)
    assert out.is_error
    assert "pip install ripgrep==14.1.0" in text_of(out)


def test_find_ripgrep_falls_back_to_the_venv(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    search.find_ripgrep.cache_clear()
    try:
        found = search.find_ripgrep()
        venv_rg = os.path.join(os.path.dirname(sys.executable), "rg")
        assert found == (venv_rg if os.path.exists(venv_rg) else None)
    finally:
        search.find_ripgrep.cache_clear()


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "d/e/a.py", True),
        ("src/**", "src/a/b.c", True),
        ("*.{ts,tsx}", "x.tsx", True),
        ("*.{ts,tsx}", "x.js", False),
        ("file?.[ch]", "file1.c", True),
        ("file?.[!ch]", "file1.c", False),
        ("a+b(1).txt", "a+b(1).txt", True),
    ],
)
def test_glob_regex(pattern: str, path: str, matches: bool) -> None:
    assert bool(search.glob_regex(pattern).fullmatch(path)) is matches


async def test_glob_parent_relative_pattern(tmp_path: Path, ctx: ToolContext) -> None:
    _tree(tmp_path, {"x/a.py": "", "y/b.py": ""})
    ctx.cwd = str(tmp_path / "y")
    out = await call(GLOB, {"pattern": "../x/*.py"}, ctx)
    assert text_of(out) == str(tmp_path / "x/a.py")


async def test_grep_cancellation_kills_the_search_process_group(
    tmp_path: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow search is killed, with its whole process group, when the call is cancelled."""
    pid_file = tmp_path / "rg.pid"
    fake = tmp_path / "slow-rg"
    fake.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nsleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setattr(search, "find_ripgrep", lambda: str(fake))
    with trio.move_on_after(0.3) as scope:
        await call(GREP, {"pattern": "x(?=y)"}, ctx)  # a look-ahead: ripgrep's to run
    assert scope.cancelled_caught
    pgid = int(pid_file.read_text())
    assert await wait_gone(pgid)


# --- search results obey Read deny rules ----------------------------------------------------


@pytest.fixture
def guarded(tmp_path: Path, ctx: ToolContext) -> Path:
    """A project with `.env` and `secrets/` that deny rules cover; `ctx.files` applies them."""
    _tree(
        tmp_path,
        {
            ".env": "SECRET=alpha\n",
            "secrets/k.txt": "SECRET=beta\n",
            "sub/.env": "SECRET=gamma\n",
            "app.py": "a\nSECRET = None\nb\n",
        },
    )
    rules = RuleSet.from_strings(deny=["Read(./.env)", "Read(./secrets/**)"])
    ctx.files = FileAccess(str(tmp_path), "/h", rules.read_deny_matcher(str(tmp_path), "/h"))
    return tmp_path


@pytest.mark.parametrize("mode", ["files_with_matches", "content", "count"])
async def test_grep_withholds_denied_files_in_every_output_mode(
    guarded: Path, ctx: ToolContext, mode: str
) -> None:
    """An ancestor of the denied files is searched; their names and lines are left out and the
    result says how many files were withheld."""
    out = await call(GREP, {"pattern": "SECRET", "output_mode": mode}, ctx)
    text = text_of(out)
    assert "alpha" not in text and "beta" not in text
    assert f"{guarded}/.env" not in text and "secrets" not in text
    assert str(guarded / "app.py") in text and str(guarded / "sub" / ".env") in text
    assert text.endswith("(2 files withheld: a Read deny rule covers them)")
    assert out.data is not None and out.data["withheld"] == 2


async def test_grep_content_keeps_its_format_around_withheld_files(
    guarded: Path, ctx: ToolContext
) -> None:
    """Match and context lines keep ``path:n:`` / ``path-n-``; without numbers ``path:``."""
    base = {"pattern": "SECRET", "output_mode": "content", "glob": "*.py"}
    out = text_of(await call(GREP, {**base, "-C": 1}, ctx))
    app = guarded / "app.py"
    assert out.splitlines() == [f"{app}-1-a", f"{app}:2:SECRET = None", f"{app}-3-b"]
    out = text_of(await call(GREP, {**base, "-n": False}, ctx))
    assert out == f"{app}:SECRET = None"


async def test_glob_withholds_denied_files(guarded: Path, ctx: ToolContext) -> None:
    out = await call(GLOB, {"pattern": "**/*"}, ctx)
    text = text_of(out)
    assert set(text.split("\n\n")[0].splitlines()) == {
        str(guarded / "app.py"),
        str(guarded / "sub" / ".env"),
    }
    assert out.data is not None and out.data["withheld"] == 2
    assert "2 files withheld" in text


async def test_glob_that_only_finds_denied_files_says_so(guarded: Path, ctx: ToolContext) -> None:
    out = text_of(await call(GLOB, {"pattern": "*/k.txt"}, ctx))
    assert out == "No files found\n\n(1 file withheld: a Read deny rule covers them)"


async def test_a_search_rooted_in_a_denied_directory_is_refused(
    guarded: Path, ctx: ToolContext
) -> None:
    for tool, args in (
        (GLOB, {"pattern": "secrets/*"}),
        (GREP, {"pattern": "x", "path": "secrets"}),
    ):
        out = await call(tool, args, ctx)
        assert out.is_error
        assert text_of(out) == f"Permission to read {guarded}/secrets is denied by a Read deny rule"


async def test_a_search_through_a_linked_root_withholds_by_real_path(
    guarded: Path, ctx: ToolContext, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A root reached through a link: files are listed under the link, judged by their real
    path too."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "view").symlink_to(guarded / "secrets")
    out = await call(GREP, {"pattern": "SECRET", "path": str(elsewhere / "view")}, ctx)
    assert out.is_error and "denied by a Read deny rule" in text_of(out)
    (elsewhere / "all").symlink_to(guarded)
    out = await call(GREP, {"pattern": "SECRET", "path": str(elsewhere / "all")}, ctx)
    assert text_of(out).splitlines()[:3] == [
        "Found 2 files",
        str(elsewhere / "all" / "app.py"),
        str(elsewhere / "all" / "sub" / ".env"),
    ]
    assert "2 files withheld" in text_of(out)


async def test_searches_without_deny_rules_withhold_nothing(code: Path, ctx: ToolContext) -> None:
    ctx.files = FileAccess(str(code), "/h", RuleSet().read_deny_matcher(str(code), "/h"))
    out = await call(GREP, {"pattern": "foo"}, ctx)
    assert "withheld" not in text_of(out) and text_of(out).startswith("Found 2 files")


async def test_grep_and_glob_expand_tilde_user_like_the_gate(ctx: ToolContext) -> None:
    """``~root`` is root's home directory, as the permission rules read it."""
    out = await call(GLOB, {"pattern": "nothing-matches-this-*", "path": "~root"}, ctx)
    assert text_of(out) == "No files found"


_SEARCH_BESIDE_PIPES = """
import os, tempfile, trio
from agents.tools.base import ToolContext
from agents.tools.search import glob_tool, grep_tool
root = tempfile.mkdtemp()
os.mkfifo(os.path.join(root, "fifo"))
os.mkfifo(os.path.join(root, ".gitignore"))  # a repository may hold one
os.symlink("/dev/zero", os.path.join(root, ".ignore"))  # or a link to a device without end
os.makedirs(os.path.join(root, ".git", "info"))
os.mkfifo(os.path.join(root, ".git", "info", "exclude"))
open(os.path.join(root, "a.txt"), "w").write("needle here\\n")
async def main():
    ctx = ToolContext(cwd=root, agent_id="main", tool_use_id="t", session_id="s")
    grep, glob = grep_tool(), glob_tool()
    for tool, args in ((grep, {"pattern": "needle"}),
                       (grep, {"pattern": "needle", "path": os.path.join(root, "fifo")}),
                       (grep, {"pattern": "needle", "output_mode": "content"}),
                       (glob, {"pattern": "*.txt"})):
        out = await tool.handler(tool.validate(args), ctx)
        print(out.is_error, repr(str(out.content).replace(root, "ROOT")))
trio.run(main)
"""


def test_named_pipes_in_the_tree_never_hold_a_search() -> None:
    """A named pipe named as Grep's path, or standing as an ignore file (``.gitignore``,
    ``.git/info/exclude``), is not a file to open: opening one waited for a writer, on the
    event loop, so the session hung; nor is a link to ``/dev/zero`` as ``.ignore`` a file to
    read to its end. Searched in a process of its own with a deadline."""
    assert printed_within_a_deadline(_SEARCH_BESIDE_PIPES, seconds=30).splitlines() == [
        "False 'Found 1 file\\nROOT/a.txt'",
        "False 'No files found'",
        "False 'ROOT/a.txt:1:needle here'",
        "False 'ROOT/a.txt'",
    ]
