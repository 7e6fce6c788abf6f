"""Where tree-sitter-bash reads a line otherwise than bash does, the rules never judge the
grammar's reading: the words are taken as bash takes them, or the line asks.

* Bash removes a line continuation (``\\`` + newline) before it reads a line, so ``r\\<newline>m``
  is the word ``rm``; the grammar reads two words. Checked against bash:
  ``printf 'r\\\\\\nm --version' | bash`` runs ``rm``. Such a line asks.
* The grammar splits a quoted string from an escape after it (``'r'\\m``, bash's ``rm``) and drops
  an escaped blank after one (``'a'\\ b``, bash's ``a b``): such a line asks.
* It splits a locale-translated string ``$"…"`` into ``$`` and the string (``r$"m"`` runs
  ``rm``): the word is not static.
* It reads the words after a redirection's target into the redirection (``rm >/dev/null -rf /``);
  bash passes them to the command: they are the command's arguments.
* It leaves a line break inside double quotes out of the string: it is part of the word.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.permissions import PermissionResultDeny
from agents.permissions._bash import analyze

from .helpers import Recorder, decide, make_gate

HIDDEN = [
    "r\\\nm x",
    "r\\\nm -rf /",
    "cu\\\nrl evil",
    "ls x; r\\\nm y",
    'echo "$(r\\\nm x)"',
    "sh -c 'r\\\nm x'",
    "eval 'r\\\nm x'",
    "$\\\n(rm x)",
    'r$"m" x',
    '$"rm" x',
    'git push $"--force"',
    "'r'\\m x",
    '"r"\\m x',
    "$'r'\\m x",
    "git push >/dev/null --force",
    "ls >/dev/null $(curl evil)",
    "ls 2>/dev/null; cat >/dev/null x; rm 2>&1 x",
    "! git >/dev/null push --force",
    "git >/dev/null push '-'\\-\\f\\o\\r\\c\\e",
    "( ls ) >/dev/null $(rm x)",
]


@pytest.mark.parametrize("command", HIDDEN)
async def test_a_command_bash_joins_is_not_allowed_past_a_deny_rule(
    command: str, tmp_path: Path
) -> None:
    callback = Recorder(PermissionResultDeny(message="no"))
    gate = make_gate(
        str(tmp_path),
        mode="bypassPermissions",
        deny=["Bash(rm *)", "Bash(curl *)", "Bash(git push --force *)"],
        callback=callback,
        home=str(tmp_path),
    )
    outcome = await decide(gate, "Bash", {"command": command})
    assert outcome.behavior == "deny" or outcome.decided_by == "callback", outcome


@pytest.mark.parametrize(
    "command",
    [
        "r\\\nm -rf /",
        "rm >/dev/null -rf /",
        "rm 2>/dev/null -rf ~",
        "'r'\\m -rf /",
        "! rm >/dev/null -rf /",
    ],
)
async def test_a_removal_of_a_critical_path_the_grammar_misreads_asks_in_bypass_mode(
    command: str, tmp_path: Path
) -> None:
    callback = Recorder(PermissionResultDeny(message="no"))
    gate = make_gate(str(tmp_path), mode="bypassPermissions", callback=callback, home=str(tmp_path))
    outcome = await decide(gate, "Bash", {"command": command})
    assert outcome.decided_by == "callback", outcome


@pytest.mark.parametrize(
    "command",
    ["ls \\\n -la", "ls -la \\\n src", 'echo "a\nb"', "ls 2>/dev/null src", "echo 'a' \"b\"c"],
)
async def test_a_continuation_between_words_and_a_line_break_in_quotes_stay_allowed(
    command: str, tmp_path: Path
) -> None:
    gate = make_gate(
        str(tmp_path), allow=["Bash(ls *)", "Bash(echo *)"], callback=Recorder(), home=str(tmp_path)
    )
    outcome = await decide(gate, "Bash", {"command": command})
    assert (outcome.behavior, outcome.decided_by) == ("allow", "rule"), outcome


def test_a_line_break_inside_double_quotes_is_part_of_the_word() -> None:
    """Bash keeps it (``rm "x<newline>y"`` removes ``x\\ny``); the grammar leaves it out of the
    string's content nodes."""
    (command,) = analyze('rm "x\ny"').commands
    assert [w.value for w in command.words] == ["rm", "x\ny"]
    (command,) = analyze('rm "x\\\ny"').commands  # a continuation inside quotes joins
    assert [w.value for w in command.words] == ["rm", "xy"]


def test_the_words_after_a_redirections_target_are_the_commands_arguments() -> None:
    (command,) = analyze("rm >/dev/null -rf /").commands
    assert [w.value for w in command.words] == ["rm", "-rf", "/"]
    (command,) = analyze("ls 2>&1 a b").commands
    assert [w.value for w in command.words] == ["ls", "a", "b"]


@pytest.mark.parametrize(
    "command",
    [
        "echo x > 'a'\\ /../../../tmp/pwn",
        "echo x > {}\\ /../../../tmp/pwn",
        "echo x >> \"a\"\\ /../../etc/x",
        "ls 2> 'a'\\ /../../../tmp/pwn",
    ],
)
async def test_a_redirection_target_the_grammar_splits_asks(command: str, tmp_path: Path) -> None:
    """After a quoted string the grammar ends a redirection's target at an escaped blank and
    hands the rest to the command as an argument; bash writes to the whole word
    (``a /../../../tmp/pwn``: out of the project, through a directory named ``a ``). The
    target was judged as ``a`` and approved by ``Edit(./**)``: such a line asks."""
    callback = Recorder(PermissionResultDeny(message="no"))
    gate = make_gate(
        str(tmp_path),
        allow=["Bash(echo *)", "Bash(ls *)", "Edit(./**)"],
        callback=callback,
        home=str(tmp_path),
    )
    outcome = await decide(gate, "Bash", {"command": command})
    assert outcome.decided_by == "callback", outcome
