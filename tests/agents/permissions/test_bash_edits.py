"""Edit deny and ask rules against the files well-known Bash commands change.

``Edit(./.env)`` denied a Write or Edit of ``.env``, and a redirection or ``tee`` into it; but
``rm .env``, ``sed -i … .env``, ``cp x .env``, ``mv x .env`` or ``truncate -s0 .env`` went
through, in ``bypassPermissions`` and, worse, in ``acceptEdits``, whose whole point is to approve
such commands *inside the rules*. Each now counts as an Edit of the files it changes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.permissions import PermissionResultDeny
from agents.permissions._editing import edited_paths
from agents.permissions._getopt import gnu_options

from .helpers import Recorder, decide, make_gate


async def outcome(project: Path, command: str, rule: str, mode: str) -> tuple[str, bool]:
    """The decision, and whether the callback was asked (it refuses)."""
    refuse = Recorder(PermissionResultDeny(message="no"))
    gate = make_gate(str(project), mode=mode, deny=[rule], callback=refuse, home=str(project))
    decided = await decide(gate, "Bash", {"command": command})
    return decided.behavior, bool(refuse.calls)


CHANGES_ENV = [
    "rm .env",
    "rm -f -- .env",
    "rm -rf .",
    "rmdir .env",
    "unlink .env",
    "shred -n 3 .env",
    "touch .env",
    "mkdir -p .env",
    "truncate -s0 .env",
    "truncate --size=0 .env",
    "sed -i s/a/b/ .env",
    "sed -i.bak -e s/a/b/ .env",
    "sed --in-place s/a/b/ .env",
    "sed -ni s/a/b/p .env",
    "mv .env elsewhere",
    "mv notes .env",
    "mv -t src .env",
    "cp notes .env",
    "cp -r notes src .env",
    "cp --target-directory=. src/.env",
    "ln -sf notes .env",
    "install -m 600 notes .env",
    "sudo rm .env",
    "timeout 5 rm .env",
    "cd src && rm ../.env",
    "rm .e*",
    "rm .env{,}",
    "rm .e{nv,x}",
    "echo ok; rm .env",
]


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions", "default"])
@pytest.mark.parametrize("command", CHANGES_ENV)
async def test_a_command_changing_a_denied_file_is_denied(
    project: Path, command: str, mode: str
) -> None:
    (project / ".env").write_text("KEY=1\n")
    (project / "src").mkdir()
    behavior, asked = await outcome(project, command, "Edit(./.env)", mode)
    assert (behavior, asked) == ("deny", False)


@pytest.mark.parametrize(
    ("command", "rule", "asked"),
    [
        ("cp -r src out", "Edit(./out/.env)", False),  # the tree lands as out/
        ("cp -a src out", "Edit(./out/.env)", False),
        ("mv src out", "Edit(./out/.env)", False),
        ("cp -rT src notes", "Edit(./notes/.env)", False),  # src's contents into notes itself
        ("cp --parents src/.env out", "Edit(./out/src/.env)", False),
        ("install -d out/.env", "Edit(./out/.env)", False),  # every operand a directory made
        ("install -d out/.env other", "Edit(./out/.env)", False),
        ("cp -b notes .env", "Edit(./.env~)", False),  # the replaced file kept as .env~
        ("sed -i.bak s/a/b/ notes", "Edit(./notes.bak)", False),
        ("cp --backup=numbered notes .env", "Edit(./.env.~1~)", True),  # numbered at run time
    ],
)
async def test_what_lands_beside_or_beneath_the_destination_is_judged(
    project: Path, command: str, rule: str, asked: bool
) -> None:
    """A tree copied or moved, a path copied with its parents, directories made, a backup of
    what was replaced: each is a file the command changes, judged as an Edit (a backup whose
    name is numbered at run time asks)."""
    (project / "src").mkdir()
    (project / "src" / ".env").write_text("KEY=1\n")
    (project / "notes").mkdir()
    (project / ".env").write_text("KEY=1\n")
    assert await outcome(project, command, rule, "acceptEdits") == ("deny", asked)


@pytest.mark.parametrize("command", CHANGES_ENV)
async def test_an_edit_ask_rule_asks_for_them(project: Path, command: str) -> None:
    (project / ".env").write_text("KEY=1\n")
    (project / "src").mkdir()
    refuse = Recorder(PermissionResultDeny(message="no"))
    gate = make_gate(
        str(project), mode="acceptEdits", ask=["Edit(./.env)"], callback=refuse, home=str(project)
    )
    await decide(gate, "Bash", {"command": command})
    assert refuse.calls


@pytest.mark.parametrize(
    "command",
    [
        "rm notes",
        "rm -rf build",
        "touch src/x",
        "mkdir -m 700 out",
        "sed -i s/a/b/ notes",
        "sed -n p .env",  # reads it (a Read rule's business), changes nothing
        "sed s/a/b/ .env",
        "cp .env notes",  # reads it
        "mv notes src/",
        "rm -rf src",  # a tree without the denied file
        "mv src elsewhere",
    ],
)
async def test_commands_changing_other_files_are_approved_as_before(
    project: Path, command: str
) -> None:
    (project / ".env").write_text("KEY=1\n")
    (project / "src").mkdir()
    behavior, asked = await outcome(project, command, "Edit(./.env)", "acceptEdits")
    assert (behavior, asked) == ("allow", False)


@pytest.mark.parametrize(
    "command", ["ln -s .env link", "truncate -s 0 notes", "cat .env", "rm -f notes/.env"]
)
async def test_other_commands_pass_where_the_mode_lets_them(project: Path, command: str) -> None:
    """A new symbolic link to the file does not change it; others change other files."""
    (project / ".env").write_text("KEY=1\n")
    behavior, asked = await outcome(project, command, "Edit(./.env)", "bypassPermissions")
    assert (behavior, asked) == ("allow", False)


@pytest.mark.parametrize("command", ["rm $F", "mv notes $DEST", "cp x {$a,b}", "cd $D && rm x"])
async def test_a_changed_file_known_only_at_run_time_asks(project: Path, command: str) -> None:
    """As a redirection into ``$F`` does: it might be the denied file (even where the mode
    would approve anything)."""
    behavior, asked = await outcome(project, command, "Edit(./.env)", "bypassPermissions")
    assert (behavior, asked) == ("deny", True)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["rm", "-f", "a", "b"], ["/r/a", "/r/b"]),
        (["mv", "a", "b", "d/"], ["/r/a", "/r/b", "/r/d", "/r/d/a", "/r/d/b"]),
        (["cp", "-t", "d", "a"], ["/r/d", "/r/d/a"]),
        (["cp", "a", "b"], ["/r/b", "/r/b/a"]),
        (["ln", "/x/a"], ["/r", "/r/a"]),
        (["sed", "-e", "s/a/b/", "-i", "f"], ["/r/f"]),
        (["sed", "s/a/b/", "f"], []),
        (["truncate", "-s", "0", "f"], ["/r/f"]),
        (["touch", "-d", "yesterday", "f"], ["/r/f"]),
        (["rm", None], None),
        (["echo", "x"], []),
    ],
)
def test_the_files_each_command_changes(argv: list[str | None], expected: list[str]) -> None:
    found = edited_paths(argv, ["/r"], "/h")
    assert (None if found is None else [c.path for c in found]) == expected


def test_a_directory_removed_or_moved_is_changed_whole(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("")
    for argv in (["rm", "-r", "d", "f"], ["rm", "-fR", "d", "f"], ["mv", "d", "f", "to"]):
        found = edited_paths(argv, [str(tmp_path)], "/h") or []
        whole = {c.path: c.whole for c in found}
        assert (whole[str(tmp_path / "d")], whole[str(tmp_path / "f")]) == (True, False), argv
    found = edited_paths(["rm", "d"], [str(tmp_path)], "/h") or []
    assert not any(c.whole for c in found)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-rn5", "f"], [("-r", None), ("-n", "5"), (None, "f")]),
        (["-rn", "5", "f"], [("-r", None), ("-n", "5"), (None, "f")]),
        (["--lines=", "x"], [("--lines", ""), (None, "x")]),
        (["--lines", "3"], [("--lines", "3")]),
        (["-i.bak", "f"], [("-i", ".bak"), (None, "f")]),
        (["-i", "f"], [("-i", ""), (None, "f")]),
        (["--in-place", "f"], [("--in-place", ""), (None, "f")]),
        (["--foo=1", "f"], [("--foo", None), (None, "f")]),
        (["-", "--", "-r"], [(None, "-"), (None, "-r")]),
        ([None, "-n", None], [(None, None), ("-n", None)]),
        (["-n"], [("-n", "")]),
    ],
)
def test_arguments_are_read_as_gnu_getopt_reads_them(
    args: list[str | None], expected: list[tuple[str | None, str | None]]
) -> None:
    """One grammar for the reading and the file-changing commands: clusters, glued and next-word
    values, an optional glued value (``sed -i.bak``), ``-`` and ``--``."""
    valued = frozenset({"-n", "--lines"})
    assert list(gnu_options(args, valued, frozenset({"-i", "--in-place"}))) == expected
