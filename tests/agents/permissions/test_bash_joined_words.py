"""Words bash joins that tree-sitter-bash splits are never read as the split words.

Bash removes a line continuation (``\\`` + newline) before it reads a line, so ``r\\<newline>m``
is the word ``rm``; tree-sitter-bash reads it as two words, ``r`` and ``m``. It also splits a
locale-translated string ``$"…"`` into ``$`` and the string, so ``r$"m"`` is read as ``r$m``
although bash runs ``rm``. Either way the command the rules would judge is not the one that
runs: such a line asks, and the translated word is not static. Checked against bash:
``printf 'r\\\\\\nm --version' | bash`` runs ``rm``.
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


async def test_a_removal_of_the_root_spelt_across_a_continuation_asks_in_bypass_mode(
    tmp_path: Path,
) -> None:
    callback = Recorder(PermissionResultDeny(message="no"))
    gate = make_gate(str(tmp_path), mode="bypassPermissions", callback=callback, home=str(tmp_path))
    outcome = await decide(gate, "Bash", {"command": "r\\\nm -rf /"})
    assert outcome.decided_by == "callback", outcome


@pytest.mark.parametrize("command", ["ls \\\n -la", "ls -la \\\n src", 'echo "a\nb"'])
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
