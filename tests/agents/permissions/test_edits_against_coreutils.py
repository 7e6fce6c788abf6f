"""The files a file-changing command changes, as the rules see them, against what GNU coreutils
really change: each command runs in a scratch tree, and every entry it creates, removes or
rewrites must be one the analysis named (or lie beneath a directory it named whole).

The analysis is a second line of defence (a program it does not know writes what it likes), but
for the commands it does know, a file it misses is a way past an Edit deny rule.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agents.permissions._editing import Changed, edited_paths

pytestmark = pytest.mark.skipif(
    shutil.which("cp") is None or shutil.which("install") is None, reason="needs GNU coreutils"
)

#: The scratch tree: files, a directory with files in it (one nested), empty directories.
_FILES = {"f": "1\n", "g": "2\n", "d/x": "3\n", "d/sub/.env": "4\n"}
_DIRS = ["d", "d/sub", "e", "h/i"]

_NAMES = ["f", "g", "d", "e", "d/sub", "d/sub/.env", "new", "e/new", "d/x", "new/deep/x", "h/i"]
_OPTIONS = {
    "cp": ["-r", "-R", "-a", "-f", "-n", "-T", "--parents", "-l", "-s", "-b", "-u", "-v", "-S_b"],
    "mv": ["-f", "-n", "-T", "-b", "-u", "-v", "--backup", "--backup=simple", "-S .old"],
    "ln": ["-s", "-f", "-n", "-T", "-r", "-b"],
    "install": ["-d", "-D", "-m", "644", "-b", "-T"],
    "rm": ["-r", "-f", "-R", "-d"],
    "mkdir": ["-p", "-m", "700"],
    "touch": ["-c", "-a", "-m"],
    "rmdir": ["-p", "--ignore-fail-on-non-empty"],
    "truncate": ["-s", "0", "-c"],
}
_TARGETED = ["-t e", "-t d", "--target-directory=e"]
_SED_IN_PLACE = ["-i", "-i.bak", "-ibak_*", "--in-place=.orig", "-i", "-Ei~"]


def _snapshot(root: Path) -> dict[str, tuple[str, str]]:
    """Each entry beneath ``root`` by its path: its kind and what it holds (a directory's own
    times are left out: a child made or removed changes them)."""
    found: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                found[path] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                found[path] = ("dir", oct(os.stat(path).st_mode))
            else:
                stat = os.stat(path)
                digest = hashlib.sha1(Path(path).read_bytes()).hexdigest()
                found[path] = ("file", f"{digest} {oct(stat.st_mode)} {stat.st_ino}")
    return found


def _covered(path: str, changed: list[Changed]) -> bool:
    return any(c.path == path or (c.whole and path.startswith(c.path + "/")) for c in changed)


def _run(argv: list[str]) -> list[str]:
    """The entries ``argv`` creates, removes or rewrites in a fresh scratch tree that the
    analysis did not name; the command's own failure is fine (it may change files first)."""
    root = Path(tempfile.mkdtemp()).resolve()
    try:
        for d in _DIRS:
            (root / d).mkdir(parents=True, exist_ok=True)
        for name, text in _FILES.items():
            (root / name).write_text(text)
        before = _snapshot(root)
        predicted = edited_paths(argv, [str(root)], str(root / "home"))  # (as the gate, first)
        assert predicted is not None, argv
        subprocess.run(argv, cwd=root, capture_output=True, timeout=10, check=False)
        after = _snapshot(root)
        changed = [p for p in before.keys() | after.keys() if before.get(p) != after.get(p)]
        missed = sorted(p[len(str(root)) + 1 :] for p in changed if not _covered(p, predicted))
        return missed
    finally:
        shutil.rmtree(root, ignore_errors=True)


@st.composite
def _commands(draw: st.DrawFn) -> list[str]:
    name = draw(st.sampled_from([*sorted(_OPTIONS), "sed"]))
    if name == "sed":  # in place, with or without a backup, and a script
        words = [draw(st.sampled_from(_SED_IN_PLACE)), "s/1/9/"]
        return [name, *words, *draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=2))]
    options = draw(st.lists(st.sampled_from(_OPTIONS[name]), max_size=3, unique=True))
    words = " ".join(options).split()
    if name in ("cp", "mv", "ln", "install") and draw(st.booleans()):
        words += draw(st.sampled_from(_TARGETED)).split()
    words += draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=3))
    return [name, *words]


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(_commands())
@example(["cp", "-r", "d", "new"])  # the tree lands as new/
@example(["cp", "-a", "d", "e"])  # the tree lands in e/d/
@example(["mv", "d", "new"])  # the tree moves to new/
@example(["cp", "--parents", "d/sub/.env", "e"])  # lands as e/d/sub/.env
@example(["install", "-d", "new", "e/new"])  # every operand a directory made
@example(["cp", "-rT", "d", "e"])  # d's contents into e itself
@example(["mkdir", "-p", "new/deep/x"])  # new/ and new/deep/ made on the way
@example(["install", "-D", "f", "new/deep/x"])
@example(["install", "-d", "new/deep/x"])
@example(["rmdir", "-p", "h/i"])  # h/ goes too, once empty
@example(["mv", "-b", "f", "g"])  # g's old text kept as g~
@example(["sed", "-ibak_*", "s/1/9/", "d/x"])  # d/x's old text kept as d/bak_x
def test_every_entry_a_known_command_changes_is_named(argv: list[str]) -> None:
    assert _run(argv) == [], argv
