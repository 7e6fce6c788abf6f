"""The analysis against bash itself: whatever spelling of ``rm`` bash runs is never allowed past a
deny ``Bash(rm *)``.

Each example is a line built from pieces bash joins into words (quotes of every kind, ANSI-C and
octal escapes, backslashes, line continuations, empty strings, locale strings), wrappers,
redirections anywhere in the command, and compound forms. Bash runs it with no ``PATH`` and a
``command_not_found_handle`` that reports each command it would have started, so nothing runs;
where bash reports ``rm``, the gate under ``bypassPermissions`` must deny or ask.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.permissions import PermissionResultDeny

from .helpers import Recorder, decide, make_gate

BASH = shutil.which("bash") or "/bin/bash"

#: How bash's result is read: the handler appends each command it would start, words and all,
#: to a file (the line's own redirections cannot hide it).
_HANDLER = 'command_not_found_handle() { printf "%s\\n" "$*" >>"$RAN_LOG"; return 127; }\n'


def _quoted(text: str, kind: int) -> str:
    match kind:
        case 0:
            return text
        case 1:
            return f"'{text}'"
        case 2:
            return f'"{text}"'
        case 3:
            return "$'" + "".join(f"\\x{ord(c):02x}" for c in text) + "'"
        case 4:
            return "$'" + "".join(f"\\{ord(c):03o}" for c in text) + "'"
        case 5:
            return '$"' + text + '"'
        case 6:
            return "".join("\\" + c for c in text)
        case _:
            return text + "''"


@st.composite
def spellings(draw: st.DrawFn, word: str) -> str:
    """``word`` cut into pieces, each quoted its own way, glued directly or by a continuation."""
    cuts = sorted(draw(st.sets(st.integers(1, len(word) - 1)))) if len(word) > 1 else []
    pieces = [word[a:b] for a, b in zip([0, *cuts], [*cuts, len(word)], strict=True)]
    out = ""
    for index, piece in enumerate(pieces):
        out += _quoted(piece, draw(st.integers(0, 7)))
        if index < len(pieces) - 1:
            out += draw(st.sampled_from(["", "", "\\\n", '""']))
    return out


WRAPPERS = ["", "command ", "exec ", "env ", "nice ", "timeout 5 ", "builtin command ", "time "]
REDIRECTIONS = [">/dev/null", "2>/dev/null", "2>&1", "</dev/null", "&>/dev/null", ">&2"]


@st.composite
def lines(draw: st.DrawFn, words: list[str]) -> str:
    """``words`` spelt as :func:`spellings` does, redirections anywhere after the first, in a
    wrapper, after another command, in a compound form or where a builtin evaluates it."""
    spelt = [draw(spellings(word)) for word in words]
    for _ in range(draw(st.integers(0, 2))):
        spelt.insert(draw(st.integers(1, len(spelt))), draw(st.sampled_from(REDIRECTIONS)))
    command = draw(st.sampled_from(WRAPPERS)) + " ".join(spelt)
    # (`echo +''\\ #; `: the grammar took the rest of such a line for a comment)
    before = draw(st.sampled_from(["", "ls; ", "ls && ", "ls | ", "\\\n", "echo +''\\ #; "]))
    shape = draw(st.one_of(st.sampled_from(SHAPES), st.sampled_from(EVALUATED)))
    return shape.format(before + command)


SHAPES = ["{}", "{{ {}; }}", "( {} )", "echo $({})", "{} &", "! {}"]
#: Where bash runs a command from inside a quoted word: a subscript it evaluates, a callback.
EVALUATED = [
    "read 'a[$({})]' <<< 1",
    "printf -v 'a[$({})]' 1",
    "declare 'a[$({})]=1'",
    "[[ -v 'a[$({})]' ]]",
    "echo $(( 'a[$({})]' ))",
    "mapfile -C '{}' -c 1 a <<< x",
    "compgen -C '{}' x",
    "jobs -x {}",
    "true & wait -n -p 'a[$({})]'",
    "a['$({})']=1",
    "x='a[$({})]'; a[x]=1",
]


def bash_runs(line: str) -> set[str]:
    """The commands bash would start for ``line``, each as its words joined by blanks (none
    is found, so none runs)."""
    # (the ``wait`` after the line: a job it put in the background, whose output may go
    # elsewhere, still writes the log after the line; ignoring a failed cleanup covers a line
    # that exits before the ``wait``)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as scratch:
        log = os.path.join(scratch, "ran")
        subprocess.run(
            [BASH, "-c", _HANDLER + line + "\nwait"],
            capture_output=True, timeout=10, stdin=subprocess.DEVNULL, cwd=scratch,
            env={"PATH": "/nonexistent", "HOME": scratch, "LC_ALL": "C", "RAN_LOG": log},
        )  # fmt: skip
        if not os.path.exists(log):
            return set()
        with open(log, encoding="utf-8", errors="replace") as ran:
            return set(ran.read().splitlines())


def _started(ran: set[str], command: str) -> bool:
    """Whether ``command`` was started, maybe with more arguments (a callback gets some)."""
    return any(r == command or r.startswith(command + " ") for r in ran)


def decide_in_bypass_mode(line: str, deny: list[str]) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as cwd:

        async def decided() -> tuple[str, str]:
            callback = Recorder(PermissionResultDeny(message="no"))
            gate = make_gate(cwd, mode="bypassPermissions", deny=deny, callback=callback, home=cwd)
            outcome = await decide(gate, "Bash", {"command": line})
            return outcome.behavior, outcome.decided_by

        return trio.run(decided)


EXAMPLES = settings(
    max_examples=int(os.environ.get("BASH_DIFFERENTIAL_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@EXAMPLES
@given(data=st.data())
def test_a_spelling_of_rm_that_bash_runs_is_never_allowed_past_a_deny_rule(
    data: st.DataObject,
) -> None:
    args = data.draw(st.lists(st.sampled_from(["x", "-f", "y z"]), max_size=2))
    line = data.draw(lines(["rm", *args]))
    if any(ran.split(" ")[0] == "rm" for ran in bash_runs(line)):
        behavior, decided_by = decide_in_bypass_mode(line, ["Bash(rm *)"])
        assert behavior == "deny" or decided_by == "callback", (line, behavior, decided_by)


@EXAMPLES
@given(line=lines(["rm", "-rf", "/"]))
def test_a_spelling_of_a_removal_of_the_root_that_bash_runs_asks_in_bypass_mode(
    line: str,
) -> None:
    if _started(bash_runs(line), "rm -rf /"):
        behavior, decided_by = decide_in_bypass_mode(line, [])
        assert decided_by == "callback", (line, behavior, decided_by)


@EXAMPLES
@given(line=lines(["git", "push", "--force"]))
def test_a_spelling_of_a_denied_subcommand_that_bash_runs_is_never_allowed(line: str) -> None:
    if _started(bash_runs(line), "git push --force"):
        behavior, decided_by = decide_in_bypass_mode(line, ["Bash(git push --force *)"])
        assert behavior == "deny" or decided_by == "callback", (line, behavior, decided_by)


def test_the_comparison_reads_what_bash_runs() -> None:
    """The harness itself: bash reports the spelling it joins, and nothing else."""
    assert bash_runs("r\\\nm x") == {"rm x"}
    assert bash_runs("'r'\\m >/dev/null -rf /; ls") == {"rm -rf /", "ls"}
    assert bash_runs("echo rm") == set()
    assert bash_runs("read 'a[$(rm x)]' <<< 1") == {"rm x"}
