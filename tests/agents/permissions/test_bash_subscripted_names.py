"""A variable name with a subscript, given to a builtin that assigns or tests it, runs code.

Bash evaluates the subscript of ``a[…]`` as arithmetic when ``read``, ``printf -v``, the
``declare`` family, ``unset``, ``test -v``, ``[[ -v ]]`` or ``wait -p`` uses the name, and
arithmetic expands the ``$(…)`` inside: ``read 'a[$(rm x)]'`` runs ``rm`` although every word
is quoted. So do a quoted string inside ``$(( ))``, the target of ``declare -n``, a quoted
compound assignment given to ``declare -a`` (expanded a second time), any assignment after
``declare -i``, and an assignment to an array element whose subscript is no number
(``a['$(cmd)']=1``, ``a[i]=1``, ``a=([i]=1)``: arithmetic again). Each such spelling asks;
each row of ``RUNS`` is checked against bash itself.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .helpers import Recorder, decide_bash, refused

RUNS = [
    "read 'arr[$(CMD)]' <<< 1",
    "read -r 'arr[$(CMD)]' <<< 1",
    'read "arr[\\$(CMD)]" <<< 1',
    "printf -v 'arr[$(CMD)]' 1",
    "declare 'arr[$(CMD)]=1'",
    "typeset 'arr[$(CMD)]=1'",
    "local 'arr[$(CMD)]'=1",
    "declare -a 'a=($(CMD))'",
    "declare -a 'a=([$(CMD)]=1)'",
    "declare -n r='arr[$(CMD)]'; echo $r",
    "declare -i n; n='arr[$(CMD)]'",
    "arr=(); unset 'arr[$(CMD)]'",
    "test -v 'arr[$(CMD)]'",
    "[ -v 'arr[$(CMD)]' ]",
    "[[ -v 'arr[$(CMD)]' ]]",
    "echo $(( 'arr[$(CMD)]' ))",
    "sleep 0 & wait -n -p 'arr[$(CMD)]'",
    "sleep 0 & wait -np 'arr[$(CMD)]'",
    "sleep 0 & wait -n -p'arr[$(CMD)]' %1",
    "sleep 0 & wait -fn -p 'arr[$(CMD)]'",
    "arr['$(CMD)']=1",
    "arr=(); arr+=(['$(CMD)']=1)",
    "x='arr[$(CMD)]'; arr=(1); arr[x]=2",
    "x='arr[$(CMD)]'; arr=(1); arr[x]+=2",
    "x='arr[$(CMD)]'; arr=([x]=1)",
    "x='arr[$(CMD)]'; arr=([x]+=1)",
]

PLAIN = [
    "read -r line <<< 1",
    "read -p '[y/n] ' answer <<< y",
    "read -a words <<< 'a b'",
    "printf '[%s]' x",
    'printf "%s\\n" "$HOME"',
    "printf -v out '%s' x",
    "declare -a arr=(a b)",
    'export FOO="$HOME"',
    "local x=1",
    "unset 'arr[1]'",
    "test -v HOME",
    "echo $(( 1 + 2 ))",
    "wait -n -p pid",
    "arr=([2]=3 [10]+=4)",
    "arr=(a 'b c')",
    "wait -n -- -p 'arr[$(x)]'",
]

ALLOW = [
    f"Bash({name} *)"
    for name in ("read", "printf", "declare", "typeset", "local", "export", "unset", "echo", "[")
] + ["Bash(test *)", "Bash(arr=*)", "Bash(wait *)", "Bash(sleep *)"]


@pytest.mark.parametrize("command", RUNS)
async def test_a_subscripted_name_that_runs_code_asks_under_allow_rules(
    command: str, tmp_path: Path
) -> None:
    outcome = await decide_bash(str(tmp_path), command.replace("CMD", "rm x"), allow=ALLOW)
    assert outcome.decided_by == "callback", outcome


@pytest.mark.parametrize("command", RUNS)
async def test_a_subscripted_name_that_runs_code_is_not_allowed_past_a_deny_rule(
    command: str, tmp_path: Path
) -> None:
    outcome = await decide_bash(
        str(tmp_path), command.replace("CMD", "rm x"), mode="bypassPermissions", deny=["Bash(rm *)"]
    )
    assert refused(outcome), outcome


@pytest.mark.parametrize("command", PLAIN)
async def test_plain_names_stay_allowed(command: str, tmp_path: Path) -> None:
    outcome = await decide_bash(str(tmp_path), command, allow=ALLOW, callback=Recorder())
    assert (outcome.behavior, outcome.decided_by) == ("allow", "rule"), outcome


@pytest.mark.parametrize("command", RUNS)
def test_each_row_runs_its_command_in_bash(command: str, tmp_path: Path) -> None:
    """The rows are real: bash, inside a function (for ``local``), creates the marker."""
    marker = tmp_path / "ran"
    script = "f() { " + command.replace("CMD", f"touch {marker}") + "; }; f"
    # (in the test's own directory: the rows write files where they run)
    subprocess.run(
        ["bash", "-c", script], capture_output=True, timeout=10, check=False, cwd=tmp_path
    )
    assert marker.exists(), command


@pytest.mark.parametrize(
    "command", ["[[ -v HOME ]]", "[[ -v arr[@] ]]", "[[ -v arr[0] ]]", "arr[1]=2", "arr=([0]=a)"]
)
async def test_a_plain_or_numbered_name_is_allowed_by_the_mode(
    command: str, tmp_path: Path
) -> None:
    outcome = await decide_bash(
        str(tmp_path), command, mode="bypassPermissions", deny=["Bash(rm *)"]
    )
    assert (outcome.behavior, outcome.decided_by) == ("allow", "mode"), outcome
