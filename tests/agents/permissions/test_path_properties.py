"""Properties over random trees of directories and symlinks: a path the rules deny is never read
or written through any spelling that reaches it, and ordinary reads inside the project pass."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agents.permissions import PermissionCheck, PermissionGate, RuleSet
from agents.permissions._paths import absolute, real
from agents.tools.base import ToolContext
from agents.tools.files import read_tool, write_tool

from .strategies import spellings, trees

SECRET = "the-secret-content"


@contextmanager
def built(tree: dict[str, list[tuple[str, ...]]]) -> Iterator[Path]:
    """The tree on disk in a fresh temporary root (removed afterwards)."""
    root = Path(tempfile.mkdtemp(prefix="tree-"))
    try:
        for d in tree["dirs"]:
            root.joinpath(*d).mkdir(parents=True, exist_ok=True)
        for f in tree["files"]:
            root.joinpath(*f).write_text(SECRET if f == tree["files"][0] else "plain")
        for link in tree["links"]:
            arrow = link.index("->")
            at, style, target = link[:arrow], link[arrow + 1], link[arrow + 2 :]
            path = root.joinpath(*at)
            if style == "abs":
                path.symlink_to(root.joinpath(*target))
            else:
                path.symlink_to(os.path.relpath(root.joinpath(*target), path.parent))
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def reaches(cwd: Path, spelling: str, denied: Path) -> bool:
    """Whether the kernel, opening ``spelling`` from ``cwd``, lands on the denied file."""
    joined = os.path.join(cwd, spelling)
    try:
        os.stat(joined)
    except OSError:
        return False
    return os.path.realpath(joined) == os.path.realpath(denied)


async def ask(gate: PermissionGate, tool: str, tool_input: dict[str, str]) -> str:
    check = PermissionCheck(tool, tool_input, "t", read_only=tool == "Read")
    return (await gate.check(check, {})).behavior


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tree=trees(), spelled=st.lists(spellings(), min_size=1, max_size=10))
@example(  # the escape: `..` after a link that leaves the project
    tree={
        "dirs": [("proj",), ("out",), ("out", "a")],
        "files": [("out", "fa")],
        "links": [("proj", "la", "->", "abs", "out", "a")],
    },
    spelled=["la/../fa"],
)
@example(  # `sub/l/../.env`: `..` after a link to a sibling lands on the denied file
    tree={
        "dirs": [("proj",), ("out",), ("proj", "a"), ("proj", "b")],
        "files": [("proj", "fa")],
        "links": [("proj", "a", "la", "->", "rel", "proj", "b")],
    },
    spelled=["a/la/../fa"],
)
async def test_a_denied_file_is_never_reached_through_any_spelling(
    tree: dict[str, list[tuple[str, ...]]], spelled: list[str]
) -> None:
    """With deny Read/Edit on one file, every spelling the kernel resolves to it (through links,
    `.` and `..`) is denied — even in bypassPermissions — and the tools never return it."""
    with built(tree) as root:
        cwd = root / "proj"
        denied = root.joinpath(*tree["files"][0])
        rules = RuleSet.from_strings(deny=[f"Read(/{denied})", f"Edit(/{denied})"])
        gate = PermissionGate(
            mode="bypassPermissions", rules=rules, cwd=str(cwd), home="/nonexistent-home"
        )
        ctx = ToolContext(cwd=str(cwd), agent_id="main", tool_use_id="t", session_id="s")
        ctx.files = gate.files
        for spelling in spelled:
            path = os.path.join(cwd, spelling)
            hit = reaches(cwd, spelling, denied)
            read = await ask(gate, "Read", {"file_path": path})
            write = await ask(gate, "Write", {"file_path": path, "content": "pwned"})
            if hit:
                assert read == "deny" and write == "deny", spelling
            if read == "allow":
                out = await read_tool().handler(read_tool().validate({"file_path": path}), ctx)
                assert SECRET not in str(out.content), spelling
        assert content(str(denied)) == SECRET


@attrs.frozen
class Facts:
    """What the kernel says about a spelling (taken outside the async test body)."""

    path: str
    real: str
    exists: bool
    is_file: bool
    inside: bool


def facts(cwd: Path, spelling: str) -> Facts:
    path = os.path.join(cwd, spelling)
    resolved = os.path.realpath(path)
    inside = resolved.startswith(f"{os.path.realpath(cwd)}/")
    return Facts(path, resolved, os.path.exists(path), os.path.isfile(path), inside)


def mtime(path: str) -> int:
    return os.stat(path).st_mtime_ns


def content(path: str) -> str:
    return Path(path).read_text()


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tree=trees(), spelled=st.lists(spellings(), min_size=1, max_size=10))
async def test_reads_and_edits_inside_the_project_pass_without_asking(
    tree: dict[str, list[tuple[str, ...]]], spelled: list[str]
) -> None:
    """No rules: a read whose real target is inside the project passes in default mode, an
    edit in acceptEdits, and the tool then works on that very file; one outside asks."""
    with built(tree) as root:
        cwd = root / "proj"
        reading = PermissionGate(mode="default", cwd=str(cwd), home="/nonexistent-home")
        editing = PermissionGate(mode="acceptEdits", cwd=str(cwd), home="/nonexistent-home")
        for spelling in spelled:
            fact = facts(cwd, spelling)
            target = real(absolute(fact.path, str(cwd), "/nonexistent-home"))
            assert target == fact.real or not fact.exists
            behavior = await ask(reading, "Read", {"file_path": fact.path})
            if fact.is_file:
                assert (behavior == "allow") is fact.inside, spelling
            edit = await ask(editing, "Write", {"file_path": fact.path, "content": "x"})
            if fact.is_file:
                assert (edit == "allow") is fact.inside, spelling
        # the written side: an approved write lands on the file the kernel reaches
        for spelling in spelled:
            fact = facts(cwd, spelling)
            if not fact.is_file:
                continue
            ctx = ToolContext(cwd=str(cwd), agent_id="main", tool_use_id="t", session_id="s")
            ctx.files = editing.files
            ctx.state["read_files"] = {fact.real: mtime(fact.real)}
            if await ask(editing, "Write", {"file_path": fact.path, "content": "new"}) == "allow":
                check = write_tool().validate({"file_path": fact.path, "content": "new"})
                out = await write_tool().handler(check, ctx)
                assert not out.is_error, out.content
                assert content(fact.real) == "new"
