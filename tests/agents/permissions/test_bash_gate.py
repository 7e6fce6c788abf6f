"""Bash calls through the gate: opaque constructs, writes, the shell's directory, usefulness."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agents.permissions import PermissionResultAllow, PermissionResultDeny, _memo
from agents.permissions._bash import MAX_COMMAND_BYTES, THREAD_BYTES, Analysis

from .helpers import Recorder, decide, make_gate


@pytest.fixture
def cwd(tmp_path: Path) -> str:
    project = tmp_path / "home" / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "a.py").write_text("")
    (project / "sub").mkdir()
    (tmp_path / "outside").mkdir()
    return str(project)


def _home(cwd: str) -> str:
    return str(Path(cwd).parent)


async def _outcome(cwd: str, command: str, **gate: object) -> tuple[str, str]:
    callback = Recorder(PermissionResultDeny(message="no"))
    made = make_gate(cwd, callback=callback, home=_home(cwd), **gate)  # type: ignore[arg-type]
    outcome = await decide(made, "Bash", {"command": command})
    return outcome.behavior, outcome.decided_by


# -- what cannot be analysed ---------------------------------------------------------------------


@pytest.mark.parametrize("command", ["$X", "f() { ls; }; f", "source env.sh", 'eval "$X"'])
async def test_an_opaque_command_asks_under_bypass_when_a_deny_rule_could_match(
    cwd: str, command: str
) -> None:
    """A construct the analysis cannot see into might be the denied command: it asks."""
    outcome = await _outcome(cwd, command, mode="bypassPermissions", deny=["Bash(rm *)"])
    assert outcome == ("deny", "callback")


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan", "auto", "bypassPermissions"])
@pytest.mark.parametrize("command", ["$X", "source env.sh && pytest", 'eval "$y"', "f() { ls; }"])
async def test_an_opaque_command_is_never_approved_by_a_mode(
    cwd: str, mode: str, command: str
) -> None:
    """What the analysis cannot see goes to the callback in every mode, even with no Bash rule
    at all (``bypassPermissions`` included: it is never auto-approved)."""
    assert await _outcome(cwd, command, mode=mode) == ("deny", "callback")


async def test_an_opaque_command_under_bypass_is_approved_by_the_callback(cwd: str) -> None:
    """The callback decides it: its allow runs the command."""
    callback = Recorder(PermissionResultAllow())
    gate = make_gate(cwd, mode="bypassPermissions", callback=callback, home=_home(cwd))
    outcome = await decide(gate, "Bash", {"command": "source env.sh && pytest"})
    assert (outcome.behavior, outcome.decided_by) == ("allow", "callback")
    assert len(callback.calls) == 1


@pytest.mark.parametrize("rule", ["Bash", "Bash(*)"])
async def test_an_opaque_command_under_bypass_is_approved_by_a_rule_naming_any_command(
    cwd: str, rule: str
) -> None:
    """An allow rule for every command is the user's explicit approval, not the mode's."""
    outcome = await _outcome(cwd, "$X", mode="bypassPermissions", allow=[rule])
    assert outcome == ("allow", "rule")


async def test_an_opaque_command_under_dont_ask_is_denied(cwd: str) -> None:
    """dontAsk never asks: what no rule pre-approves is denied."""
    assert await _outcome(cwd, "$X", mode="dontAsk") == ("deny", "mode")


@pytest.mark.parametrize("mode", ["default", "acceptEdits"])
async def test_an_opaque_command_is_never_allowed_by_a_prefix_rule(cwd: str, mode: str) -> None:
    """``Bash(ls *)`` does not cover ``ls; $X``, in any mode."""
    outcome = await _outcome(cwd, "ls; $X", mode=mode, allow=["Bash(ls *)"])
    assert outcome == ("deny", "callback")


async def test_bash_star_covers_what_cannot_be_analysed(cwd: str) -> None:
    """``Bash(*)`` names every command, so it allows even an opaque one."""
    assert await _outcome(cwd, "ls; $X", allow=["Bash(*)"]) == ("allow", "rule")


async def test_an_argument_that_may_become_a_denied_form_asks(cwd: str) -> None:
    """``git push $X`` may be ``git push --force``: the deny rule cannot be ruled out."""
    deny = ["Bash(git push --force *)"]
    outcome = await _outcome(cwd, "git push $X", mode="bypassPermissions", deny=deny)
    assert outcome == ("deny", "callback")
    outcome = await _outcome(cwd, "git push origin", mode="bypassPermissions", deny=deny)
    assert outcome == ("allow", "mode")


async def test_an_opaque_command_is_denied_under_dont_ask(cwd: str) -> None:
    """dontAsk never asks: what cannot be analysed is refused."""
    outcome = await _outcome(cwd, "$X", mode="dontAsk", allow=["Bash(ls *)"], deny=["Bash(rm *)"])
    assert outcome == ("deny", "mode")


async def test_a_command_over_the_size_limit_asks(cwd: str) -> None:
    """A command longer than the limit is not analysed: even a matching prefix rule asks."""
    command = "ls " + "x" * MAX_COMMAND_BYTES
    assert await _outcome(cwd, command, allow=["Bash(ls *)"]) == ("deny", "callback")
    outcome = await _outcome(cwd, command, mode="bypassPermissions", deny=["Bash(rm *)"])
    assert outcome == ("deny", "callback")


async def test_a_long_command_is_analysed_off_the_event_loop(
    cwd: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command of some kilobytes is analysed in a worker thread, never on the Trio loop."""
    threads: list[bool] = []
    real = _memo.analyze

    def recording(command: str) -> Analysis:
        threads.append(threading.current_thread() is threading.main_thread())
        return real(command)

    monkeypatch.setattr(_memo, "analyze", recording)
    command = "ls " + "a " * THREAD_BYTES
    assert await _outcome(cwd, command, allow=["Bash(ls *)"]) == ("allow", "rule")
    assert threads == [False]
    threads.clear()
    assert await _outcome(cwd, "ls a", allow=["Bash(ls *)"]) == ("allow", "rule")
    assert threads == [True]  # a short one is cheaper than a thread switch
    threads.clear()
    huge = "ls " + "x" * MAX_COMMAND_BYTES
    assert await _outcome(cwd, huge, allow=["Bash(ls *)"]) == ("deny", "callback")
    assert threads == [True]  # refused at once, without waiting for a thread


# -- writes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "edit_allow", "allowed"),
    [
        ("ls > out.txt", [], False),
        ("ls > out.txt", ["Edit(./out.txt)"], True),
        ("ls > out.txt 2> err.txt", ["Edit(./out.txt)"], False),
        ("ls > src/x.txt", ["Edit(./src/**)"], True),
        ("cd src && ls > x.txt", ["Edit(./src/**)"], True),
        ("cd sub && ls > x.txt", ["Edit(./src/**)"], False),
        ("ls | tee src/log", ["Edit(./src/**)"], True),
        ("ls | tee log", ["Edit(./src/**)"], False),
        ("ls > /dev/null 2> /dev/stderr", [], True),
        ("ls > $OUT", ["Edit"], False),
    ],
)
async def test_redirection_targets_need_an_edit_rule_for_an_allow(
    cwd: str, command: str, edit_allow: list[str], allowed: bool
) -> None:
    """Allow rules cover a command's writes only through ``Edit(...)`` rules (or sinks)."""
    outcome = await _outcome(cwd, command, allow=["Bash(ls *)", "Bash(tee *)", *edit_allow])
    assert outcome == (("allow", "rule") if allowed else ("deny", "callback"))


async def test_an_edit_deny_rule_denies_a_redirection(cwd: str) -> None:
    """``Edit(~/.bashrc)`` denied: ``echo x >> ~/.bashrc`` is denied, also under bypass."""
    outcome = await _outcome(
        cwd, "echo x >> ~/.bashrc", mode="bypassPermissions", deny=["Edit(~/.bashrc)"]
    )
    assert outcome == ("deny", "rule")


async def test_an_edit_ask_rule_asks_for_a_redirection(cwd: str) -> None:
    """An ask rule on the written path sends the Bash call to the callback."""
    outcome = await _outcome(cwd, "ls > src/a.py", mode="bypassPermissions", ask=["Edit(./src/**)"])
    assert outcome == ("deny", "callback")


async def test_a_write_to_an_unknown_path_asks_when_an_edit_deny_rule_exists(cwd: str) -> None:
    """``ls > $F`` might write the denied file: it asks."""
    outcome = await _outcome(cwd, "ls > $F", mode="bypassPermissions", deny=["Edit(~/.ssh/**)"])
    assert outcome == ("deny", "callback")


@pytest.mark.parametrize(
    ("command", "approved"),
    [
        ("touch src/x > src/log", True),
        ("touch src/x 2> /dev/null", True),
        ("touch src/x > ../log", False),
        ("mkdir src/y > /tmp/log", False),
        ("cd src && touch x > log", True),
    ],
)
async def test_accept_edits_approves_redirections_inside_the_working_dirs(
    cwd: str, command: str, approved: bool
) -> None:
    """Under acceptEdits a write by redirection is an edit like any other."""
    outcome = await _outcome(cwd, command, mode="acceptEdits")
    assert outcome == (("allow", "mode") if approved else ("deny", "callback"))


# -- the shell's directory -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "approved"),
    [
        ("cd src && touch x", True),
        ("cd src && cd .. && touch src/x", True),
        ("(cd /tmp) && touch src/x", True),
        ("cd src && rm -rf ../sub", True),
        ("cd /tmp && touch x", False),
        ("cd .. && touch x", False),
        ("cd src; touch x", True),
        ("cd ../outside; touch x", False),
        ("cd $D && touch x", False),
        ("cd - && touch x", False),
        ("pushd ../outside && touch x", False),
        ("cd src && cd ../../outside && rm -rf x", False),
    ],
)
async def test_accept_edits_judges_paths_from_the_shells_directory(
    cwd: str, command: str, approved: bool
) -> None:
    """After ``cd`` relative paths are judged from where the shell went; after a ``cd`` that
    is not static, no relative path is inside anything."""
    outcome = await _outcome(cwd, command, mode="acceptEdits")
    assert outcome == (("allow", "mode") if approved else ("deny", "callback"))


@pytest.mark.parametrize(
    "command",
    [
        "cd src && rm -rf build",
        "rm -rf src/*",
        "rm -rf ./sub*",
        "rm -f src/*.py",
        "cd sub && rm -rf *.o",
        "find build -delete",
    ],
)
async def test_ordinary_removals_stay_approved_by_bypass(cwd: str, command: str) -> None:
    """Globs are expanded: removing what lies below the session's directory is not critical."""
    assert await _outcome(cwd, command, mode="bypassPermissions") == ("allow", "mode")


# -- still useful --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "ls -la src",
        "ls src > /dev/null",
        "git status",
        "ls 'my dir' \"other dir\"",
        "ls src && ls sub",
        "ls -la src 2>&1 | grep a",
        "timeout 30 ls src",
        "ls $(git status)",
        "bash -c 'ls src'",
        "if git status; then ls; fi",
    ],
)
async def test_what_the_rules_plainly_name_stays_allowed(cwd: str, command: str) -> None:
    """``Bash(ls *)``, ``Bash(git status)``, ``Bash(grep *)``: the commands they name pass."""
    allow = ["Bash(ls *)", "Bash(git status)", "Bash(grep *)"]
    assert await _outcome(cwd, command, allow=allow, deny=["Bash(rm *)"]) == ("allow", "rule")


@pytest.mark.parametrize(
    "command",
    [
        "mkdir -p src/new && touch src/new/x",
        "cp src/a.py src/b.py",
        "mv src/a.py sub/a.py",
        "cp -r src sub/",
        "cd src && mkdir -p deep/er && touch deep/er/x",
        "rm -rf sub",
        "sed -i 's/a/b/' src/a.py",
    ],
)
async def test_accept_edits_approves_file_commands_within_the_working_dirs(
    cwd: str, command: str
) -> None:
    """acceptEdits still approves the file-editing commands on paths inside the project."""
    assert await _outcome(cwd, command, mode="acceptEdits") == ("allow", "mode")


@pytest.mark.parametrize("command", ["ls -la", "git rm x", "grep rm notes.txt", "echo rm"])
async def test_bypass_still_approves_what_no_deny_rule_names(cwd: str, command: str) -> None:
    """A deny rule for ``rm`` leaves other commands (and the word ``rm`` as an argument) be."""
    outcome = await _outcome(cwd, command, mode="bypassPermissions", deny=["Bash(rm *)"])
    assert outcome == ("allow", "mode")


async def test_a_deny_rule_for_every_command_denies_what_cannot_be_analysed(cwd: str) -> None:
    """``Bash(*)`` denied: a command too long to analyse is denied, not merely asked about."""
    command = "ls " + "x" * MAX_COMMAND_BYTES
    assert await _outcome(cwd, command, deny=["Bash(*)"]) == ("deny", "rule")
