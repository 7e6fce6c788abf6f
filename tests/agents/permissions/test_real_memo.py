"""One check's real paths: a path resolved through the check's memo, which starts a new file from
its parent's real path when the check already knows it, lands where ``os.path.realpath`` says,
whatever order the paths come in; and ``absolute``'s shortcut for paths already normal."""

from __future__ import annotations

import os
import posixpath
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.permissions._memo import CallMemo
from agents.permissions._modes import WorkingDirs
from agents.permissions._paths import absolute

#: A small tree: directories, a file, links to each, a link to a link, a dangling link, a loop,
#: and a link that leaves the project.
_LAYOUT_DIRS = ["proj", "proj/src", "proj/src/deep", "outside", "outside/in"]
_LAYOUT_LINKS = {
    "proj/out": "../outside",
    "proj/src/up": "..",
    "proj/again": "out",
    "proj/dangling": "nowhere/at/all",
    "proj/loop": "loop",
    "proj/file_link": "src/f.txt",
    "proj/abs": "/",  # (replaced by the tree's own root below)
}
_NAMES = ["src", "deep", "out", "up", "again", "dangling", "loop", "f.txt", "file_link", "abs",
          "new", "in", "..", "."]  # fmt: skip


def _tree() -> Path:
    root = Path(tempfile.mkdtemp())
    for d in _LAYOUT_DIRS:
        (root / d).mkdir()
    (root / "proj/src/f.txt").write_text("")
    for link, target in _LAYOUT_LINKS.items():
        (root / link).symlink_to(str(root / "outside") if link == "proj/abs" else target)
    (root / "linked").symlink_to("proj")  # the session's directory, reached through a link
    return root


_ROOT = _tree()
_PROJ = str(_ROOT / "proj")
_CWD = str(_ROOT / "linked")

paths = st.lists(st.sampled_from(_NAMES), max_size=5).map(
    lambda names: "/".join([_CWD, *names])
)


@settings(max_examples=300, deadline=None)
@given(st.lists(paths, min_size=1, max_size=6))
def test_the_memo_resolves_every_path_as_realpath_does_in_any_order(queries: list[str]) -> None:
    """Parents first or children first, new files beneath links, dangling links, loops, a
    file used as a directory: each answer is ``os.path.realpath``'s (``..`` applied first, as
    the callers' ``absolute`` does for the kernel's order)."""
    session = WorkingDirs(_CWD, [], str(_ROOT / "home"))
    session.session_real(_CWD)  # the session has resolved its directory, as after a check
    memo = CallMemo(session)
    for query in queries:
        path = absolute(query, "/", "/h")  # (`..` after links, as the rules see paths)
        assert memo.real(path) == os.path.realpath(path), (query, path)
        parent = posixpath.dirname(path)
        assert memo.real(parent) == os.path.realpath(parent), (query, parent)


_SEGMENTS = st.sampled_from(["a", "b.c", ".", "..", "", ".x", "x.", "~", "~h"])


@settings(max_examples=500, deadline=None)
@given(st.lists(_SEGMENTS, max_size=6), st.booleans(), st.booleans())
def test_absolute_is_normpath_for_paths_without_dotdot(
    segments: list[str], leading: bool, trailing: bool
) -> None:
    """``absolute`` returns a path with no empty or ``.`` component untouched: the same answer
    as normalizing it (a leading ``//`` made ``/``), for every spelling without ``..``."""
    spelled = ("/" if leading else "") + "/".join(segments) + ("/" if trailing else "")
    if ".." in spelled.split("/"):
        return  # (resolved against the file system: `test_path_rules` covers it)
    got = absolute(spelled, "/repo/w", "/home/u")
    expanded = spelled if not spelled.startswith("~") else "/home/u" + spelled[1:]
    if spelled.startswith("~") and not spelled.startswith(("~/",)) and spelled != "~":
        return  # (`~user`: the password database's answer, not this property's)
    joined = expanded if expanded.startswith("/") else "/repo/w/" + expanded
    expected = posixpath.normpath(joined)
    if expected.startswith("//"):
        expected = "/" + expected.lstrip("/")
    assert got == expected, spelled
