"""Builtins that run a command string they are given: ``mapfile``/``readarray -C`` runs its
callback as it reads, ``jobs -x`` runs its arguments as a command (job specs replaced by process
group ids), ``hash -p`` (in a cluster too: ``hash -rp``) makes a name run another program,
``compgen -C``/``-F`` runs a command or function to complete a word (also outside an interactive
shell), ``complete`` and ``bind -x`` name commands the shell runs later. None is auto-approved;
each ``RUNS`` row is checked against bash itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .helpers import Recorder, decide_bash, refused

RUNS = [
    "mapfile -C 'CMD' -c 1 arr <<< a",
    "mapfile -tC 'CMD' -c1 arr <<< a",
    "mapfile -C'CMD' -c 1 arr <<< a",
    "readarray -C 'CMD' -c 1 arr <<< a",
    "compgen -C 'CMD' x",
    "sleep 0 & jobs -x CMD",
    "jobs -x CMD",
    "hash -p /bin/sh ls; ls -c 'CMD'",
    "hash -rp /bin/sh ls; ls -c 'CMD'",
    "hash -lp /bin/sh ls; ls -c 'CMD'",
]
LATER = ["complete -C 'rm x' ls", "compgen -F rm x", "bind -x '\"\\C-a\":rm x'"]
ALLOW = [
    "Bash(mapfile *)", "Bash(readarray *)", "Bash(compgen *)", "Bash(complete *)", "Bash(jobs *)",
    "Bash(hash *)", "Bash(ls *)", "Bash(sleep *)",
]  # fmt: skip


@pytest.mark.parametrize("command", [r.replace("CMD", "rm x") for r in RUNS] + LATER)
async def test_a_builtin_running_a_command_string_asks_under_an_allow_rule(
    command: str, tmp_path: Path
) -> None:
    outcome = await decide_bash(str(tmp_path), command, allow=[*ALLOW, "Bash(bind *)"])
    assert outcome.decided_by == "callback", outcome


@pytest.mark.parametrize("command", [r.replace("CMD", "rm x") for r in RUNS] + LATER)
async def test_a_builtin_running_a_command_string_is_not_allowed_past_a_deny_rule(
    command: str, tmp_path: Path
) -> None:
    outcome = await decide_bash(
        str(tmp_path), command, mode="bypassPermissions", deny=["Bash(rm *)"]
    )
    assert refused(outcome), outcome


@pytest.mark.parametrize(
    "command", ["mapfile -t arr < f", "readarray -n 2 arr < f", "jobs -l", "hash -r", "hash -l"]
)
async def test_their_plain_uses_stay_allowed(command: str, tmp_path: Path) -> None:
    outcome = await decide_bash(str(tmp_path), command, allow=ALLOW, callback=Recorder())
    assert (outcome.behavior, outcome.decided_by) == ("allow", "rule"), outcome


@pytest.mark.parametrize("command", RUNS)
def test_each_row_runs_its_command_in_bash(command: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = command.replace("CMD", f"touch {marker}")
    # (in the test's own directory: the rows write files where they run)
    subprocess.run(
        ["bash", "-c", script], capture_output=True, timeout=10, check=False, cwd=tmp_path
    )
    assert marker.exists(), command
