"""The Bash analysis itself: which commands a line runs, what it cannot decide, the wrappers."""

from __future__ import annotations

import pytest

from agents.permissions._bash import (
    MAX_COMMAND_BYTES,
    MAX_DEPTH,
    MAX_PARTS,
    MAX_WRAPPERS,
    MAX_WRITES,
    analyze,
    deny_forms,
)
from agents.permissions._bash_model import spelled

from ..tools.toolkit import printed_within_a_deadline


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("f() { rm -rf x; }; ls", ["rm -rf x", "ls"]),
        ("function f { rm x; }", ["rm x"]),
        ("case $(id) in a) rm x;; *) ls;; esac", ["id", "rm x", "ls"]),
        ("while read l; do rm x; done", ["read l", "rm x"]),
        ("until false; do rm x; done", ["false", "rm x"]),
        ("for ((i = 0; i < 3; i++)); do rm x; done", ["rm x"]),
        ("select x in a; do rm x; done", ["rm x"]),
        ("{ ls; rm x; } > /dev/null", ["ls", "rm x"]),
        ("! rm x", ["rm x"]),
        ("cat <<< $(rm x)", ["rm x", "cat"]),
        ("cat <<EOF\n${x:-$(rm x)}\nEOF", ["rm x", "cat"]),
        ("echo $(( $(rm x) + 1 ))", ["rm x", "echo $(( $(rm x) + 1 ))"]),
        ("[[ -n $(rm x) ]]", ["rm x"]),
        ("x=$(rm y)", ["rm y", "x=$(rm y)"]),
        ("export A=$(rm y)", ["rm y", "export A=$(rm y)"]),
        ("eval 'rm x; ls'", ["eval 'rm x; ls'", "rm x", "ls"]),
        ("bash -c 'rm x'", ["bash -c 'rm x'", "rm x"]),
        ("sh -ec 'ls | rm x'", ["sh -ec 'ls | rm x'", "ls", "rm x"]),
        ("env -S 'rm x'", ["rm x", "env -S 'rm x'"]),
        ("trap 'rm x' EXIT", ["rm x", "trap 'rm x' EXIT"]),
        ("find . -exec rm {} \\;", ["rm {}", "find . -exec rm {} \\;"]),
        ("find build -delete", ["rm -r -- build", "find build -delete"]),
    ],
)
def test_every_command_anywhere_in_the_line_is_a_part(command: str, parts: list[str]) -> None:
    """Function and control-flow bodies, substitutions, here-documents, arithmetic and the
    literal scripts of eval, sh -c, env -S, trap and find -exec all yield parts."""
    assert [c.text for c in analyze(command).commands] == parts


OPAQUE = [
    "$X",
    "${X} a",
    "$(echo rm) x",
    "`echo rm` x",
    "/bin/r[m] x",
    "r* x",
    "rm${IFS}x",
    "f() { :; }",
    "alias a=b",
    'eval "$X"',
    'sh -c "$X"',
    "bash x.sh",
    "echo ls | sh",
    "source x",
    ". x",
    "coproc x",
    "ls (",
    "ls 'x",
    "ls $(",
    "echo " + "$(" * (MAX_DEPTH + 2) + "ls" + ")" * (MAX_DEPTH + 2),
    "ls " + "x" * MAX_COMMAND_BYTES,
    "ls; " * (MAX_PARTS + 1),
    "ls > a; " * (MAX_WRITES + 1),
    "hash -p /bin/rm ls",
    "enable -n echo",
    "PATH=/tmp ls",
    "export PATH=x",
    "IFS=x",
    "env LD_PRELOAD=/x.so ls",
    "read -r PS4",
    "for PATH in x; do :; done",
    "(( x + 1 ))",
    "echo $((x))",
    "let x=1",
    "[[ $x -eq 1 ]]",
    'trap "$X" EXIT',
    "cat <<EOF\n`id`\nEOF",
    "echo ${x:-`id`}",
    "! { ls; }",
    "ls\n\\rm x",
    "setsid rm x",
    "env $X rm",
    "find . $X",
    'env -S "$X"',
    "sudo -e /etc/hosts",
    "timeout $T ls",
    "echo `echo \\`rm x\\``",
]


@pytest.mark.parametrize("command", OPAQUE, ids=lambda c: repr(c[:40]))
def test_what_cannot_be_decided_statically_is_opaque(command: str) -> None:
    """Dynamic command names, functions, aliases, eval/sh -c of non-literals, source, parse
    errors, depth and size limits, variables that change what runs: opaque."""
    assert analyze(command).opaque


NOT_OPAQUE = [
    "ls -la",
    "echo $HOME",
    "rm -rf $X",
    "cat <<'EOF'\n$(rm x)\n`id`\nEOF",
    "echo $((1 + 2))",
    "timeout 5 ls $X",
    "[[ -f x ]] && ls",
    "echo '$(rm x)' \"\\$(rm x)\"",
    "x=1",
    "cd $X",
    "ls \\\n -la",
    'git commit -m "fix PATH handling"',
]


@pytest.mark.parametrize("command", NOT_OPAQUE)
def test_ordinary_commands_are_not_opaque(command: str) -> None:
    """Dynamic arguments, quoted substitutions, literal here-documents and plain arithmetic
    are understood: they are not reasons to ask on their own."""
    assert not analyze(command).opaque


@pytest.mark.parametrize(
    ("command", "name", "allow_from"),
    [
        ("timeout -k5 -sKILL 1e3 rm x", "rm", 4),
        ("timeout --kill-after=1 --signal KILL 10 rm", "rm", 5),
        ("timeout --sig=KILL 1 rm", "rm", 3),
        ("timeout -- 5 rm", "rm", 3),
        ("env -i -u A -C /tmp -- A=1 rm", "rm", 0),
        ("env -uA rm", "rm", 0),
        ("nice -n 5 rm", "rm", 3),
        ("nice -5 rm", "rm", 2),
        ("nohup -- rm", "rm", 2),
        ("stdbuf -i0 -oL --error=0 rm", "rm", 4),
        ("time -p rm", "rm", 2),
        ("command -p rm", "rm", 2),
        ("command -v rm", "command", 0),
        ("builtin cd x", "cd", 1),
        ("exec -a x -cl rm", "rm", 0),
        ("sudo -u root -g wheel -E -- rm", "rm", 0),
        ("sudo A=1 rm", "rm", 0),
        ("doas -u root rm", "rm", 0),
        ("xargs -0 -n1 -I{} rm {}", "rm", 0),
        ("xargs -a list -d , rm", "rm", 0),
        ("/usr/bin/timeout 5 rm", "rm", 0),
        ("./nohup rm", "rm", 0),
        ("timeout 5 nice -n 1 env A=1 rm", "rm", 5),
    ],
)
def test_wrappers_are_skipped_with_their_own_option_grammar(
    command: str, name: str, allow_from: int
) -> None:
    """Deny rules see the innermost command; allow rules only through benign wrappers spelled
    by their plain names (``./nohup`` is a program of its own)."""
    (part,) = analyze(command).commands
    assert part.name == name
    assert part.layers.allow_start == allow_from


def test_xargs_adds_arguments_at_run_time() -> None:
    """The command ``xargs`` runs gets arguments nobody knows yet; with ``-I`` the words that
    hold the replacement string are unknown."""
    (plain,) = analyze("xargs rm -f").commands
    assert plain.layers.tail
    (replaced,) = analyze("xargs -I% rm %.bak").commands
    assert not replaced.layers.tail
    assert replaced.words[-1].value is None


@pytest.mark.parametrize(
    ("command", "dirs"),
    [
        ("cd a && x", {("a",)}),
        ("cd a; x", {("a",), ()}),
        ("cd a || exit; x", {("a",)}),
        ("cd a && cd b && x", {("a", "b")}),
        ("(cd a) && x", {()}),
        ("cd a | cat; x", {()}),
        ("x=$(cd a); x", {()}),
        ("cd; x", {("~",), ()}),
        ("cd -- '~' && x", {("./~",)}),
        ("pushd a && x", {("a",)}),
        ("if true; then cd a; fi; x", {("a",), ()}),
        ("cd $D && x", None),
        ("cd - && x", None),
        ("popd && x", None),
        ("for d in a; do cd $d; done; x", None),
        ("$X; x", None),
        ("eval 'cd a' && x", {("a",)}),
        ("bash -c 'cd a' && x", {()}),
        ("env -C a x", {("a",)}),
    ],
)
def test_the_shells_directory_is_followed(command: str, dirs: set[tuple[str, ...]] | None) -> None:
    """Each part knows the ``cd`` targets it may run after; a move that is not static, a loop
    that may move, or an opaque construct makes the directory unknown."""
    part = analyze(command).commands[-1]
    assert part.words[-1].raw == "x"
    assert spelled(part.dirs) == (None if dirs is None else frozenset(dirs))


@pytest.mark.parametrize(
    ("command", "targets"),
    [
        ("ls > a", ["a"]),
        ("ls >> a 2> b &> c &>> d >| e", ["a", "b", "c", "d", "e"]),
        ("ls >& f 2>&1 >&-", ["f"]),
        ("ls > /dev/null < in", ["/dev/null"]),
        ("cat <<EOF > out\nx\nEOF", ["out"]),
        ("ls && echo > f", ["f"]),
        ("{ ls; } > g", ["g"]),
        ("echo | tee -a x y", ["x", "y"]),
        ("find . -fprint list", ["list"]),
        ("echo > >(cat)", []),
        ("exec > log", ["log"]),
    ],
)
def test_output_redirections_are_writes(command: str, targets: list[str]) -> None:
    """``>``, ``>>``, ``&>``, ``&>>``, ``>|``, ``>& file``, ``tee`` and ``find -fprint``
    targets are writes; descriptor duplications and process substitutions are not."""
    assert [w.target.raw for w in analyze(command).writes] == targets


def test_a_write_after_cd_is_judged_from_there() -> None:
    """``cd a && echo > f`` writes ``a/f``: the redirection carries the directory."""
    (write,) = analyze("cd a && echo x > f").writes
    assert spelled(write.dirs) == frozenset({("a",)})


@pytest.mark.parametrize(
    ("command", "value"),
    [
        ("$'\\x72m'", "rm"),
        ("$'\\162m'", "rm"),
        ("$'\\u0072m'", "rm"),
        ("\"r\"'m'", "rm"),
        ("r\\m", "rm"),
        ('"a\\$b"', "a$b"),
        ("'a b'", "a b"),
    ],
)
def test_quoting_and_escapes_are_decoded(command: str, value: str) -> None:
    """Words are what the program receives: ANSI-C quoting, quotes and escapes decoded."""
    (part,) = analyze(command).commands
    assert part.words[0].value == value


def test_a_command_under_too_many_wrappers_is_opaque_and_keeps_a_bounded_list_of_layers() -> None:
    """Each wrapper adds a spelling the deny rules are tried on, as long as the rest of the
    command: past the bound the command is opaque (it asks) and only the first layers are
    listed; at the bound it is judged in full."""
    over = analyze("nice " * (MAX_WRAPPERS + 1) + "rm x")
    reason = f"more than {MAX_WRAPPERS} wrappers around one command"
    assert [o.reason for o in over.opaque] == [reason]
    assert len(over.commands[0].layers.starts) == MAX_WRAPPERS + 1
    at = analyze("nice " * MAX_WRAPPERS + "rm x")
    assert not at.opaque
    assert deny_forms(at.commands[0])[-1] == "rm x"


def test_lines_of_many_wrappers_are_judged_at_once() -> None:
    """12 000 wrappers (60 KB, inside the line limit) made 12 000 spellings of 30 KB on
    average, 360 MB joined on the event loop (13 s); the line now asks at once, and a deny
    rule on what the wrappers run still stops it from being allowed."""
    script = (
        "import tempfile, trio\n"
        "from agents.permissions import PermissionCheck, PermissionGate, RuleSet\n"
        "async def main():\n"
        "    rules = RuleSet.from_strings(deny=['Bash(rm *)'])\n"
        "    gate = PermissionGate(mode='acceptEdits', rules=rules, can_use_tool=None,\n"
        "                          cwd=tempfile.mkdtemp(), home='/h')\n"
        "    for wrapper in ('nice ', 'nice ', 'nice ', 'timeout 1 '):\n"
        "        command = wrapper * (60_000 // len(wrapper)) + 'rm x'\n"
        "        check = PermissionCheck('Bash', {'command': command}, 't1', read_only=False)\n"
        "        hook_input = {'session_id': 's1', 'cwd': '/', 'transcript_path': '/t'}\n"
        "        print((await gate.check(check, hook_input)).behavior)\n"
        "trio.run(main)\n"
    )  # fmt: skip
    assert printed_within_a_deadline(script, seconds=30).split() == ["deny"] * 4
