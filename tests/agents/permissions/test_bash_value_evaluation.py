"""Expansions that evaluate a variable's value as code are never auto-approved.

Bash evaluates an indexed array's subscript, a substring's offset and length, and the name an
indirect expansion (``${!name}``) leads to as arithmetic, and arithmetic on a value such as
``a[$(cmd)]`` runs ``cmd``; the ``@P`` transformation expands a value as a prompt string, which
runs its command substitutions. A value the persistent shell holds from an earlier call can
therefore run a command that no rule names, so these spellings ask, as arithmetic on a variable
already does. Each row was checked against bash itself: with the variable set to such a value,
the command runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.permissions import PermissionResultDeny

from .helpers import Recorder, decide, make_gate

ALLOW = ["Bash(echo *)", "Bash(ls *)"]

EVALUATING = [
    "echo ${a[x]}",
    'echo "${a[$x]}"',
    "echo ${#a[i]}",
    "echo ${a[i+1]}",
    "echo ${!w}",
    "echo ${!w:-default}",
    "echo ${!a[0]}",
    "echo ${q@P}",
    'echo "${q@P}"',
    "echo ${x:i}",
    "echo ${x:0:n}",
    "echo ${x:$i:2}",
    "ls ${a[x]}",
    "ls $(echo ${!w})",
    "echo <<EOF\n${a[x]}\nEOF",
    "echo <<< ${!w}",
    "echo x > ${a[i]}",
    "for f in ${a[i]}; do ls; done",
    "case ${q@P} in a) ls;; esac",
    "echo ${y:-${a[x]}}",
]

STATIC_ENOUGH = [
    "echo ${a[1]}",
    "echo ${a[@]}",
    'echo "${a[*]}"',
    "echo ${!a[@]}",
    "echo ${!prefix*}",
    "echo ${!prefix@}",
    "echo ${x:-y}",
    "echo ${x:2}",
    "echo ${x:1:3}",
    "echo ${x: -1}",
    "echo ${#x}",
    "echo ${x@Q}",
    "echo ${x^^}",
    "echo ${x/a/b}",
]


@pytest.mark.parametrize("command", EVALUATING)
async def test_an_expansion_evaluating_a_variables_value_asks(command: str, tmp_path: Path) -> None:
    callback = Recorder(PermissionResultDeny(message="no"))
    gate = make_gate(str(tmp_path), allow=ALLOW, callback=callback, home=str(tmp_path))
    outcome = await decide(gate, "Bash", {"command": command})
    assert outcome.decided_by == "callback", outcome
    assert callback.calls


@pytest.mark.parametrize("command", STATIC_ENOUGH)
async def test_an_expansion_that_evaluates_no_value_stays_allowed(
    command: str, tmp_path: Path
) -> None:
    gate = make_gate(str(tmp_path), allow=ALLOW, callback=Recorder(), home=str(tmp_path))
    outcome = await decide(gate, "Bash", {"command": command})
    assert (outcome.behavior, outcome.decided_by) == ("allow", "rule"), outcome


RUNNERS = [
    "toybox rm x",
    "numactl -C 0 rm x",
    "xvfb-run rm x",
    "setpriv --reuid=1 rm x",
    "prlimit --nofile=10 rm x",
    "caffeinate rm x",
    "gosu nobody rm x",
    "su-exec nobody rm x",
    "chpst -u nobody rm x",
    "cpulimit -l 10 rm x",
    "trickle -d 10 rm x",
    "start-stop-daemon --start --exec /bin/rm -- x",
    "fish -c 'rm x'",
    "tcsh -c 'rm x'",
    "pwsh -c 'rm x'",
]


@pytest.mark.parametrize("command", RUNNERS)
async def test_a_program_running_its_arguments_is_not_allowed_past_a_deny_rule(
    command: str, tmp_path: Path
) -> None:
    """Under bypassPermissions with deny ``Bash(rm *)``: a program that runs its arguments
    (or a shell whose script is not bash's) is denied or asked, never allowed by the mode."""
    callback = Recorder(PermissionResultDeny(message="no"))
    gate = make_gate(
        str(tmp_path),
        mode="bypassPermissions",
        deny=["Bash(rm *)"],
        callback=callback,
        home=str(tmp_path),
    )
    outcome = await decide(gate, "Bash", {"command": command})
    assert outcome.behavior == "deny" or outcome.decided_by == "callback", outcome
