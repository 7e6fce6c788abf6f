"""Recursive reads that follow symbolic links: a link in the tree to a file or directory a Read
deny rule covers is read through, so the rule covers the command (a repository may ship
``docs/keys -> ~/.ssh``); readers that do not follow links are judged by the tree alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.permissions import RuleSet
from agents.permissions import _reading as reading


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``src/deep/envlink -> .env``; ``docs/keys -> secrets``; ``docs/back -> src``."""
    proj = tmp_path / "proj"
    (proj / "src" / "deep").mkdir(parents=True)
    (proj / "secrets").mkdir()
    (proj / "secrets" / "key").write_text("k")
    (proj / ".env").write_text("SECRET=1")
    (proj / "src" / "deep" / "envlink").symlink_to(proj / ".env")
    (proj / "docs").mkdir()
    (proj / "docs" / "back").symlink_to(proj / "src")
    (proj / "docs" / "keys").symlink_to(proj / "secrets")
    return proj


def deny(project: Path, command: str, rule: str) -> str | None:
    rules = RuleSet.from_strings(deny=[rule])
    found = rules.match("deny", "Bash", {"command": command}, cwd=str(project), home="/h")
    return None if found is None else str(found)


@pytest.mark.parametrize(
    "command",
    [
        "grep -R SECRET src",
        "grep -Rn SECRET src",
        "grep --dereference-recursive SECRET src",
        "rg -L SECRET src",
        "rg --follow SECRET",
        "cp -rL src /tmp/copy",
        "cp -R --dereference src /tmp/copy",
        "diff -r src /nonexistent",
        "grep -R SECRET docs",  # through docs/back -> src, then the link inside it
    ],
)
def test_a_link_following_read_reaches_a_denied_file_through_a_link(
    project: Path, command: str
) -> None:
    assert deny(project, command, "Read(./.env)") == "Read(./.env)"


@pytest.mark.parametrize("command", ["grep -R k docs", "rg -L k docs", "diff -r docs /x"])
def test_a_link_following_read_reaches_a_denied_directory_through_a_link(
    project: Path, command: str
) -> None:
    assert deny(project, command, "Read(./secrets/**)") == "Read(./secrets/**)"


@pytest.mark.parametrize(
    "command",
    [
        "grep -r SECRET src",
        "rg SECRET src",
        "cp -r src /tmp/copy",
        "cp -rLP src /tmp/copy",  # the last of -L/-P wins
        "diff -r --no-dereference src /x",
        "rg -L --no-follow SECRET src",
    ],
)
def test_a_reader_that_does_not_follow_links_is_judged_by_the_tree(
    project: Path, command: str
) -> None:
    """grep -r, rg and cp -r read a link in the tree as a link: the denied file is not read."""
    assert deny(project, command, "Read(./.env)") is None


def test_a_link_following_read_of_a_tree_without_links_to_denied_files_passes(
    project: Path,
) -> None:
    (project / "lib").mkdir()
    (project / "lib" / "ok").symlink_to(project / "src" / "deep")
    (project / "src" / "deep" / "envlink").unlink()
    assert deny(project, "grep -R SECRET lib", "Read(./.env)") is None


def test_a_tree_too_big_to_walk_counts_as_reading_everything(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the walk's bound the links cannot all be known: the read is judged as one of
    ``/`` (denied by any Read deny rule), never as "no link found"."""
    for i in range(8):
        (project / "src" / f"f{i}").write_text("")
    monkeypatch.setattr(reading, "WALK_LIMIT", 5)
    (project / "src" / "deep" / "envlink").unlink()
    assert deny(project, "grep -R SECRET src", "Read(./.env)") == "Read(./.env)"
    assert deny(project, "grep -r SECRET src", "Read(./.env)") is None


def test_a_cycle_of_links_is_walked_once(project: Path) -> None:
    (project / "src" / "deep" / "up").symlink_to(project / "src")
    found = reading.reading_paths(["grep", "-R", "x", "src"], str(project), "/h")
    paths = [r.path for r in found]
    assert paths.count(str(project / "src")) == 1
    assert str(project / ".env") in paths
