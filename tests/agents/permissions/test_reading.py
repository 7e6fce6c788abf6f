"""The files well-known reading commands read, and the Read deny rules that cover them in Bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.permissions import RuleSet
from agents.permissions._reading import reading_paths

CWD = "/repo"


def read_by(command: str) -> list[tuple[str, bool]]:
    return [(r.path, r.recursive) for r in reading_paths(command.split(), CWD, "/home/u")]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat a b", [("/repo/a", False), ("/repo/b", False)]),
        ("cat -n -- -weird", [("/repo/-weird", False)]),
        ("head -n 5 notes.txt", [("/repo/notes.txt", False)]),
        ("head -n5 notes.txt", [("/repo/notes.txt", False)]),
        ("tail -f --lines=3 log", [("/repo/log", False)]),
        ("less ~/x", [("/home/u/x", False)]),
        ("grep -n SECRET f1 ../f2", [("/repo/f1", False), ("/f2", False)]),
        ("grep -e SECRET f1", [("/repo/f1", False)]),
        ("grep -f pats.txt f1", [("/repo/pats.txt", False), ("/repo/f1", False)]),
        ("grep -rn SECRET src", [("/repo/src", True)]),
        ("grep SECRET", []),
        ("rg SECRET", [("/repo", True)]),
        ("rg -g '*.py' SECRET lib", [("/repo/lib", True)]),
        ("sed -n 1p .env", [("/repo/.env", False)]),
        ("sed -e s/a/b/ x", [("/repo/x", False)]),
        ("awk -F: '{print}' v=1 /etc/passwd", [("/etc/passwd", False)]),
        ("awk -f prog.awk data", [("/repo/prog.awk", False), ("/repo/data", False)]),
        ("cut -d, -f1 t.csv", [("/repo/t.csv", False)]),
        ("sort -o out.txt in.txt", [("/repo/in.txt", False)]),
        ("base64 -w0 key", [("/repo/key", False)]),
        ("xxd -l 16 key", [("/repo/key", False)]),
        ("od -An -tx1 key", [("/repo/key", False)]),
        ("strings bin", [("/repo/bin", False)]),
        ("diff a b", [("/repo/a", False), ("/repo/b", False)]),
        ("diff -r d1 d2", [("/repo/d1", True), ("/repo/d2", True)]),
        ("cp a b dest/", [("/repo/a", False), ("/repo/b", False)]),
        ("cp -t dest a", [("/repo/a", False)]),
        ("cp -r src dest", [("/repo/src", True)]),
        ("mv a b dest/", [("/repo/a", False), ("/repo/b", False)]),
        ("mv -t dest a", [("/repo/a", False)]),
        ("ln -s a b", [("/repo/a", False)]),
        ("ln -S .bak -sf a b", [("/repo/a", False)]),
        ("/bin/cat x", [("/repo/x", False)]),
        ("cat -", []),
        ("echo .env", []),
        ("python x.py", []),
    ],
)
def test_reading_commands_name_the_files_they_read(
    command: str, expected: list[tuple[str, bool]]
) -> None:
    """Options and their values, the pattern or program operand, and cp's destination are not
    files read; a recursive reader's directories are marked recursive."""
    assert read_by(command.replace("'", "")) == expected


def test_a_glob_argument_stands_for_the_files_it_matches(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("x")
    paths = [r.path for r in reading_paths(["cat", ".e*"], str(tmp_path), "/h")]
    assert str(tmp_path / ".env") in paths


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".env").write_text("SECRET=1")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "link").symlink_to(tmp_path / ".env")
    return tmp_path


def deny(project: Path, command: str, rule: str = "Read(./.env)") -> str | None:
    rules = RuleSet.from_strings(deny=[rule])
    found = rules.match("deny", "Bash", {"command": command}, cwd=str(project), home="/h")
    return None if found is None else str(found)


@pytest.mark.parametrize(
    "command",
    [
        "cat .env",
        "cat ./src/../.env",
        "cat src/link",
        "echo hi && head .env",
        "timeout 5 tail .env",
        "sudo cat .env",
        "FOO=1 base64 .env",
        "cat $(echo x) .env",
        "grep -r SECRET .",
        "rg SECRET",
        "cp .env copy",
        "cat .e*",
        "python3 script.py < .env",
        "wc -l 0<.env",
        # moved or linked under another name, the next read would not be judged as its own
        "mv .env notes",
        "mv -t /tmp .env",
        "ln .env notes",
        "ln -s .env notes",
    ],
)
def test_a_read_deny_rule_covers_a_reading_commands_files(project: Path, command: str) -> None:
    """As written, through `..` and links, after wrappers and in compound commands; a
    recursive read of a directory holding the denied file."""
    assert deny(project, command) == "Read(./.env)"


@pytest.mark.parametrize(
    "command",
    [
        "cat README",
        "grep -r SECRET src/sub",
        "cp README .env",
        "echo .env",
        "ls -la",
        "cat README > .env",
        "cat README 2>&1",
        "cat <<< .env",
        "mv README notes",
        "mv README .env",
        "ln -s README notes",
    ],
)
def test_commands_that_do_not_read_the_denied_file_pass(project: Path, command: str) -> None:
    """Other files, a recursive read that cannot reach it, cp's destination, non-readers."""
    (project / "src" / "sub").mkdir()
    assert deny(project, command) is None


def test_read_rules_in_bash_are_deny_and_ask_only(project: Path) -> None:
    """An allow rule for Read does not approve `cat` (only Bash rules approve commands)."""
    rules = RuleSet.from_strings(allow=["Read(./**)"], ask=["Read(./.env)"])
    cwd = str(project)
    assert rules.match("allow", "Bash", {"command": "cat x"}, cwd=cwd, home="/h") is None
    found = rules.match("ask", "Bash", {"command": "cat .env"}, cwd=cwd, home="/h")
    assert str(found) == "Read(./.env)"


def test_one_simple_command_is_judged_in_its_own_directory(project: Path) -> None:
    """The Bash analysis hands each simple command with the directory it runs in."""
    rules = RuleSet.from_strings(deny=["Read(./.env)"])
    cwd, sub = str(project), str(project / "src")
    found = rules.match_reads("deny", ("cat", "../.env"), cwd=cwd, home="/h", directory=sub)
    assert str(found) == "Read(./.env)"
    assert rules.match_reads("deny", ("cat", ".env"), cwd=cwd, home="/h", directory=sub) is None
    allow = rules.match_reads("allow", ("cat", "../.env"), cwd=cwd, home="/h", directory=sub)
    assert allow is None
