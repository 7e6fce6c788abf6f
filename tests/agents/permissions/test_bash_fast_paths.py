"""The analysis's fast paths decide exactly what the full paths decide.

The walk lists an ordinary command (a static plain name that is no wrapper or special builtin,
no ``=`` in its words) without the full judgement of its words, and the rules try fewer
spellings of a command made only of plain words. These tests generate commands — ordinary ones
and every kind the fast paths must leave alone — and compare the result with the full path's,
field by field.
"""

from __future__ import annotations

import copy
import gc
import itertools
import re
from typing import Any

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tree_sitter import Node, Tree

from agents.permissions import (
    _bash,
    _bash_commands,
    _bash_syntax,
    _bash_tree,
    _bash_words,
    _memo,
    _reading,
)
from agents.permissions._bash import Analysis, Command, _parser, analyze, deny_forms
from agents.permissions._bash_model import Dirs, Place, new_command, spelled
from agents.permissions._bash_tree import Walker
from agents.permissions._bash_words import Word
from agents.permissions._bash_wrappers import Unwrapped, unwrap
from agents.permissions._modes import WorkingDirs, critical_removal
from agents.permissions._reading import READING_COMMANDS, reading_paths
from agents.permissions._rules import KindIndex, RuleSet

from .strategies import OPERATORS

#: Command names: ordinary ones, and those the fast path must hand to the full judgement.
NAMES = [
    "ls", "git", "rm", "npm", "grep", "cat", "", "/bin/rm", "./ls", "/usr/bin/env", "./timeout",
    "r[m]", "timeout", "env",
    "sudo", "xargs", "exec", "nice", "command", "time", "eval", "sh", "bash", "cd", "pushd",
    "popd", "exit", "export", "declare", "read", "printf", "unset", "find", "tee", "trap",
    "source", ".", "alias", "hash", "let", "coproc", "watch", "then", "{", "!", "fi",
]  # fmt: skip
#: Arguments: plain, options with values, assignments, globs, dynamic, quoted, nested scripts.
ARGS = [
    "-la", "x", "src/a.py", "--format=%h", "PATH=/tmp", "A=1", "*.py", "r?", "~/x", "~", "$X",
    "-c", "ls", "'rm -rf x'", "5", "-n", "--", ";", "+", "{}", "-exec", "-delete", "-o",
    "/dev/null", "a\\b", "{a,b}", "x`ls`", '"$(ls)"', "$'\\x72m'", "%s", "a:b@c", "-",
    '"*.py"', '"a  b"', "'x y'", '""', "''", '"a\\"b"', '"~/x"', '"$X"', '"a`ls`b"', "'$X'",
    '"fix: it"', "HEAD~1", "a~", "~x", "a~/b", "x=~/y", 'a"b"', "'a'b", '"-rf"', "'rm'",
    '"a\nb"', "'`ls`'", '"\\$"',
]  # fmt: skip


def _walker() -> tuple[Walker, list[Tree]]:
    """A walker as :func:`analyze` makes one (nested scripts parsed with the same parser)."""
    trees: list[Tree] = []

    def parse(script: str) -> tuple[Node, bytes] | None:
        data = script.encode("utf-8", "surrogateescape")
        tree = _parser().parse(data)
        trees.append(tree)
        return tree.root_node, data

    return Walker(parse), trees


def _command_fields(command: Command) -> tuple[Any, ...]:
    layers = attrs.asdict(command.layers)
    return command.words, command.assignments, layers, spelled(command.dirs), command.transparent


def _spelled_writes(writes: Any) -> list[tuple[Any, ...]]:
    """Writes (or reads) with their directories spelled out, comparable across analyses."""
    return [(w.target, spelled(w.dirs)) for w in writes]


def _walked(walker: Walker) -> tuple[Any, ...]:
    return (
        [_command_fields(c) for c in walker.commands],
        walker.opaque,
        _spelled_writes(walker.writes),
        _spelled_writes(walker.reads),
    )


def _analysed(analysis: Analysis) -> tuple[Any, ...]:
    return (
        [_command_fields(c) for c in analysis.commands],
        analysis.opaque,
        _spelled_writes(analysis.writes),
        _spelled_writes(analysis.reads),
    )


def _word(text: str) -> Word:
    """The word ``text`` stands for when written unquoted (as the analysis decodes it)."""
    if not text:
        return Word("''", "")
    echoes = [c for c in analyze(f"echo {text}").commands if c.words and c.words[0].raw == "echo"]
    words = echoes[-1].words if echoes else ()
    return words[1] if len(words) == 2 else Word(text, None)


_ROOT = Place()
_DIRS: list[Dirs] = [frozenset({_ROOT}), frozenset({Place(_ROOT, "a"), Place(_ROOT, "b")}), None]


@settings(max_examples=400, deadline=None)
@given(
    name=st.sampled_from(NAMES),
    args=st.lists(st.sampled_from(ARGS), max_size=4),
    dirs=st.sampled_from(_DIRS),
    assigned=st.lists(st.sampled_from(["A=1", "PATH=/x"]), max_size=1),
)
def test_the_ordinary_command_fast_path_judges_as_the_full_path(
    name: str, args: list[str], dirs: Dirs, assigned: list[str]
) -> None:
    """``simple`` (fast path first) and ``judge`` (always in full) list the same commands,
    writes and opaque findings, and return the same directories."""
    words = [_word(name), *(_word(a) for a in args)]
    assignments = [Word(a, None) for a in assigned]
    fast, fast_trees = _walker()
    full, full_trees = _walker()
    fast_ok, fast_failed = fast.simple(list(words), list(assignments), dirs, 0)
    full_ok, full_failed = full.judge(list(words), list(assignments), dirs, 0)
    assert (spelled(fast_ok), spelled(fast_failed)) == (spelled(full_ok), spelled(full_failed))
    assert _walked(fast) == _walked(full)
    assert fast_trees is not full_trees


@st.composite
def _lines(draw: st.DrawFn) -> str:
    """Command lines of ordinary and special commands, in lists, pipelines and constructs."""
    pieces = []
    for _ in range(draw(st.integers(1, 4))):
        words = [draw(st.sampled_from(NAMES)), *draw(st.lists(st.sampled_from(ARGS), max_size=3))]
        words = [w if w else "''" for w in words]
        piece = " ".join(words)
        style = draw(st.sampled_from(["plain", "subst", "subshell", "group", "redirect", "env"]))
        if style == "subst":
            piece = f"echo $({piece})"
        elif style == "subshell":
            piece = f"({piece})"
        elif style == "group":
            piece = f"{{ {piece}; }}"
        elif style == "redirect":
            target = draw(st.sampled_from(["out.txt", "1", "-", "$F", "~/x", "*.log", "'a b'"]))
            operator = draw(st.sampled_from([">", ">>", "2>", "&>", ">&", "<", "2>&1 >", ">|"]))
            piece = f"{piece} {operator} {target}"
        elif style == "env":
            piece = f"A=1 {piece}"
        pieces.append(piece)
    line = pieces[0]
    for piece in pieces[1:]:
        line += f" {draw(st.sampled_from(OPERATORS))} {piece}"
    return line


@settings(max_examples=300, deadline=None)
@given(line=_lines())
def test_the_analysis_with_fast_paths_equals_the_full_analysis(line: str) -> None:
    """The whole analysis of a line is the same with the fast paths as with every simple
    command judged in full and every word (redirection targets included) decoded in full."""
    fast = _analysed(analyze(line))
    judge = _bash_commands.SimpleCommands.judge

    def full_only(walker: Walker, *args: Any, plain: bool = False) -> Any:
        return judge(walker, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_bash_commands.SimpleCommands, "simple", full_only)
        patch.setattr(_bash_tree, "plain_word", lambda node, source: None)  # every word in full
        patch.setattr(_bash_tree, "_FAST_WORDS", False)
        full = _analysed(analyze(line))
    assert fast == full


def test_the_differential_test_sees_a_planted_difference() -> None:
    """The comparison is not vacuous: a fast path that forgot ``cd`` differs from the full
    path (the directories after it)."""
    words = [Word("cd", "cd"), Word("src", "src")]
    fast, _ = _walker()
    fast.commands.append(new_command(tuple(words), (), Unwrapped(starts=[0]), None))
    full, _ = _walker()
    ok, failed = full.judge(words, [], frozenset({Place()}), 0)
    assert (spelled(ok), spelled(failed)) == (frozenset({("src",)}), frozenset({()}))
    assert _walked(fast) != _walked(full)


def _reference_deny_forms(command: Command) -> list[str]:
    """Every spelling a deny/ask rule is tried on, computed in full for every command (the
    implementation before its shortcut for plain words)."""
    forms = [command.text]
    words = command.words
    for start in command.layers.starts:
        if start >= len(words):
            continue
        raw = " ".join(w.raw for w in words[start:])
        if raw not in forms:
            forms.append(raw)
        head = words[start]
        if head.value is None:
            continue
        plain = [head.value.rpartition("/")[2] if "/" in head.value else head.value] + [
            w.value if w.value is not None else w.raw for w in words[start + 1 :]
        ]
        text = " ".join(" ".join(v.split()) for v in plain if v)
        if text not in forms:
            forms.append(text)
    return forms


@settings(max_examples=300, deadline=None)
@given(line=_lines())
def test_the_spellings_tried_by_deny_rules_are_those_of_the_full_computation(line: str) -> None:
    """``deny_forms`` gives every command the spellings the full computation gives, in order."""
    for command in analyze(line).commands:
        assert deny_forms(command) == _reference_deny_forms(command)


#: Tokens of the plain alphabet, reserved words among them: the whole-command fast path takes
#: a command made only of such tokens, split at its spaces, for its words.
_PLAIN_TOKENS = st.one_of(
    st.text(alphabet="abz09_./:,+@%^-", min_size=1, max_size=5),
    st.sampled_from(["if", "then", "do", "done", "in", "esac", "fi", "-", "--", "5", "0x1", "-n"]),
    # `cd` and its targets: options, directory-stack entries, names
    st.sampled_from(["cd", "cd", "pushd", "+1", "-2", "12", "a1", "1", "..", "/", "a"]),
    # a `~` after the first character (literal text), and near misses the fast paths refuse
    st.text(alphabet="ab~:/.=-", min_size=1, max_size=5),
    st.sampled_from(["HEAD~1", "a~", "a~/b", "~", "~/x", "~a", "x=~/y", "a:~/b"]),
    # quoted literals, and quoted text that is not literal (or not alone in its word)
    st.text(alphabet="ab $`\\\n='\"é~*{}", max_size=5).map(lambda t: f"'{t}'"),
    st.text(alphabet="ab $`\\\n='é~*{};|&", max_size=5).map(lambda t: f'"{t}"'),
    st.sampled_from(['"fix: it"', "'def main'", '""', "''", "'rm'", '"rm"', 'a"b"', "'a'b"]),
    st.sampled_from(['"$(rm x)"', '"`rm x`"', "'a'\\m", '"a"\\ b', '"x"=1', "'{'", '"!"']),
)


@st.composite
def _plain_lines(draw: st.DrawFn) -> str:
    pieces = []
    for _ in range(draw(st.integers(1, 3))):
        words = draw(st.lists(_PLAIN_TOKENS, min_size=1, max_size=4))
        piece = " ".join(words)
        style = draw(st.sampled_from(["plain", "subst", "redirect", "spaces", "for"]))
        if style == "subst":
            piece = f"echo $({piece})"
        elif style == "redirect":
            redirect = [">", "2>&1", ">&2", "2>", "2>&1 >", ">&-", "<&-", "1>&2 2>"]
            piece = f"{piece} {draw(st.sampled_from(redirect))} out.txt"
        elif style == "spaces":
            piece = piece.replace(" ", "  ", 1) + " "
        elif style == "for":
            piece = f"for x in {piece}; do {piece}; done"
        pieces.append(piece)
    return f" {draw(st.sampled_from(OPERATORS))} ".join(pieces)


def _full_analysis(line: str) -> tuple[Any, ...]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_bash_tree, "_FAST_WORDS", False)
        return _analysed(analyze(line))


@settings(max_examples=400, deadline=None)
@given(line=_plain_lines())
@example(line="cd src && ls")  # a plain `cd`: where the next command runs
@example(line="cd 12 && ls")  # digits after the first character: read as a stack entry
@example(line="cd a1; ls")
@example(line="cd - && ls")
def test_the_plain_command_fast_path_equals_the_word_by_word_walk(line: str) -> None:
    """A command of plain words only is analysed as when each word is decoded from its node."""
    assert _analysed(analyze(line)) == _full_analysis(line)


def test_the_plain_command_comparison_sees_a_planted_difference() -> None:
    """The comparison is not vacuous: a fast path that also took ``=`` for plain text would
    read an assignment as the command's name."""
    line = "A=1 ls -la src"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_bash_tree, "_PLAIN_COMMAND", re.compile(rb"[A-Za-z0-9_.=/-]+(?: [^ ]+)*"))
        planted = _analysed(analyze(line))
    assert planted != _full_analysis(line)
    assert _analysed(analyze(line)) == _full_analysis(line)


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ('git commit -m "fix: handle empty input"', "fix: handle empty input"),
        ("grep -rn 'def main'", "def main"),
        ("git diff HEAD~1", "HEAD~1"),
        ("echo ''", ""),
    ],
)
def test_a_quoted_literal_is_decoded_without_its_quotes(line: str, value: str) -> None:
    """The literal words decoded on the spot (quoted, or with a ``~`` inside) mean their
    text, as when decoded from their nodes."""
    assert analyze(line).commands[-1].words[-1].value == value
    assert _analysed(analyze(line)) == _full_analysis(line)


@pytest.mark.parametrize("line", ['echo "$(rm x)"', 'echo "`rm x`"', 'echo "$X"'])
def test_the_quoted_literal_comparison_sees_a_planted_difference(line: str) -> None:
    """The comparison is not vacuous: a fast path that also took ``$`` and backquotes inside
    double quotes for literal text would miss the substitution or the variable."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_bash_words, "_QUOTED_LITERAL", re.compile(rb'"[^"\\]*+"'))
        planted = _analysed(analyze(line))
    assert planted != _full_analysis(line)
    assert _analysed(analyze(line)) == _full_analysis(line)


def test_the_descriptor_copy_comparison_sees_a_planted_difference() -> None:
    """The comparison is not vacuous for the redirections left out as descriptor copies: one
    that wrote a file, taken for a copy, would lose the write."""
    line = "ls 2>out.txt | cat"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_bash_tree, "_DESCRIPTOR_COPIES", frozenset({b"2>&1", b"2>out.txt"}))
        planted = _analysed(analyze(line))
    assert planted != _full_analysis(line)
    assert _analysed(analyze(line)) == _full_analysis(line)


@pytest.mark.parametrize(
    ("pattern", "line"),
    [
        # a quoted word with a substitution taken for a literal: `rm` is never listed
        ("_LITERAL_COMMAND", 'echo "$(rm x)"'),
        # a leading `~` taken for literal text: the home directory read as a file `~/x`
        ("_PLAIN_COMMAND", "rm -rf ~/x"),
    ],
)
def test_the_literal_command_comparison_sees_a_planted_difference(pattern: str, line: str) -> None:
    """The comparison is not vacuous for the commands of quoted literals and of words with a
    ``~`` inside: a fast path that let an expanding word through differs from the full walk."""
    loose = rb"""(?:[^ "']++|"[^"]*+"|'[^']*+')(?: (?:[^ "']++|"[^"]*+"|'[^']*+'))*+"""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_bash_tree, pattern, re.compile(loose))
        planted = _analysed(analyze(line))
    assert planted != _full_analysis(line)
    assert _analysed(analyze(line)) == _full_analysis(line)


@pytest.mark.parametrize(
    "values",
    [[], [None], ["cd", "src"], ["/bin/rm", "x"], ["find", ".", "-delete"], [None, "timeout"]],
)
def test_words_without_a_wrapper_unwrap_to_no_layers(values: list[str | None]) -> None:
    """A command whose first word names no wrapper has one layer, starting at its name."""
    assert attrs.asdict(unwrap(values)) == attrs.asdict(Unwrapped(starts=[0]))


@pytest.mark.parametrize("values", [["timeout", "5", "rm"], ["/usr/bin/env", "rm"], ["exec"]])
def test_a_wrapper_is_still_unwrapped(values: list[str | None]) -> None:
    """The shortcut for commands without a wrapper leaves wrappers to the full grammar."""
    assert unwrap(values).starts != [0]


# -- shortcuts of the rule passes and of the line checks -----------------------------------------

#: Rules naming the generated commands' first words (and a wildcard), in every kind.
_RULE_SETS = [
    RuleSet.from_strings(
        allow=["Bash(ls *)", "Bash(git status)", "Bash(npm:*)", "Edit(./out.txt)"],
        deny=["Bash(rm *)", "Bash(grep:*)", "Read(*.secret)", "Edit(//etc/**)"],
        ask=["Bash(cat *)", "Bash(git push *)"],
    ),
    RuleSet.from_strings(allow=["Bash(*)"], deny=["Bash(*rm*)"], ask=["Bash(ls -la *)"]),
    RuleSet.from_strings(
        deny=["Bash(timeout 5 rm x)", "Read(./src/**)", "Bash(cd ..)"],
        ask=["Bash(* -c *)", "Bash(cd x)"],
    ),
]


def _not_plain(command: str) -> Analysis:
    """The analysis with no part marked plain: every rule pass takes its full path."""
    analysis = analyze(command)
    return analysis._replace(commands=tuple(c._replace(plain=False) for c in analysis.commands))


def _decisions(rules: RuleSet, line: str, tmp: str) -> list[Any]:
    """What each kind of rule finds, and the critical path the line would remove."""
    dirs = WorkingDirs(tmp, (), tmp + "/home")
    return [
        *(
            rules.match(kind, "Bash", {"command": line}, cwd=tmp, home=tmp + "/home")
            for kind in ("deny", "ask", "allow")
        ),
        critical_removal("Bash", {"command": line}, dirs, _memo.CallMemo(dirs)),
    ]


_RULED_NAMES = [
    "ls", "rm", "grep", "cat", "git", "npm", "timeout", "/bin/rm", "echo", "cd", "mv", "rmdir",
]  # fmt: skip
_RULED_ARGS = [
    "-la", "x", "status", "push", "a.secret", "src/a", "-rf", "5", "-c", "'q'", "$X", "*", "rm",
    "HEAD~1", "a~/b.secret", '"a.secret"', "'rm -rf x'", '"-rf"', "~/x", "/", "..", "~",
]  # fmt: skip


@st.composite
def _ruled_lines(draw: st.DrawFn) -> str:
    """Lines of the commands the rule sets name, plain ones mostly, with redirections."""
    pieces = []
    for _ in range(draw(st.integers(1, 3))):
        words = [draw(st.sampled_from(_RULED_NAMES))]
        words += draw(st.lists(st.sampled_from(_RULED_ARGS), max_size=3))
        redirect = draw(st.sampled_from(["", " > out.txt", " > /etc/x", " < a.secret"]))
        pieces.append(" ".join(words) + redirect)
    return f" {draw(st.sampled_from(OPERATORS))} ".join(pieces)


@settings(max_examples=500, deadline=None)
@given(
    line=st.one_of(_ruled_lines(), _ruled_lines(), _ruled_lines(), _lines(), _plain_lines()),
    which=st.integers(0, len(_RULE_SETS) - 1),
)
@example(line="ls && rm -rf x", which=0)  # a deny rule on a plain part
@example(line="cat a.secret", which=0)  # a Read rule on a plain part's file
@example(line="ls x; rm x", which=2)  # no rule names a plain part's first word
def test_the_rule_passes_decide_plain_parts_as_the_full_passes(line: str, which: int) -> None:
    """Deny, ask and allow rules, and the critical-path guard, find what they find when no
    part is taken for plain (each part's spellings all tried, its words all looked at, its
    reads all listed, its name judged as a remover's)."""
    rules = _RULE_SETS[which]
    fast = _decisions(rules, line, "/nonexistent/project")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_memo, "analyze", _not_plain)
        full = _decisions(rules, line, "/nonexistent/project")
    assert fast == full


def test_the_rule_pass_comparison_sees_a_planted_difference() -> None:
    """The comparison is not vacuous: a shortcut that looked the whole text up instead of its
    first word would miss `Bash(rm *)` on `rm -rf x`."""
    line = "ls && rm -rf x"
    rules = _RULE_SETS[0]
    real_match_text = KindIndex.match_text

    def whole_text(index: KindIndex, text: str) -> Any:
        return real_match_text(index, text) if index.bash_by_word.get(text) else None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(KindIndex, "match_text", whole_text)
        planted = _decisions(rules, line, "/nonexistent/project")
    assert planted != _decisions(rules, line, "/nonexistent/project")


@settings(max_examples=500, deadline=None)
@given(data=st.binary(max_size=40) | st.text(alphabet="ab \\\n\t'", max_size=30).map(str.encode))
def test_a_line_without_a_backslash_newline_pair_holds_no_joined_word(data: bytes) -> None:
    """The joined-word search is skipped on lines without a backslash next to a newline:
    the search never finds one there."""
    assert _bash._CONTINUATION_TEXT.encode() == _bash._CONTINUATION
    if _bash._CONTINUATION not in data:
        assert _bash._JOINED_WORD.search(data) is None


def test_the_joined_word_shortcut_still_finds_one() -> None:
    """A word joined across a line continuation is still found (and a pair planted as the
    wrong one would miss it)."""
    assert analyze("r\\\nm -rf x").opaque
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_bash, "_CONTINUATION", b"\\\r")
        patch.setattr(_bash, "_CONTINUATION_TEXT", "\\\r")
        assert not analyze("r\\\nm -rf x").opaque


def _reference_split_word(children: Any, source: bytes, redirects: Any) -> bool:
    """``split_word`` as it was before its shortcut for blank gaps."""
    runs = [children]
    runs.extend(redirect.children[1:] for redirect in redirects)
    for run in runs:
        for previous, current in itertools.pairwise(run):
            if previous.type.endswith("redirect") or current.type.endswith("redirect"):
                continue
            if not previous.is_named and previous.type != "$":
                continue
            gap = source[previous.end_byte : current.start_byte].replace(b"\\\n", b"")
            if not gap or gap.strip(b" \t"):
                return True
    return False


_SPLIT_PIECES = st.sampled_from(
    ["'r'", "\\m", '"a"', "\\ ", "b", " ", "  ", "\t", "\\\n", ">", "x", "$", '"m"', "2>&1", "'"]
)


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(_SPLIT_PIECES, min_size=1, max_size=8), head=st.sampled_from(NAMES[:6]))
def test_the_split_word_check_decides_as_before_its_shortcut(pieces: list[str], head: str) -> None:
    """Every command node of random lines of quotes, escapes and blanks: the split-word check
    with its shortcut for blank gaps answers as the full check."""
    source = f"{head} {''.join(pieces)}".encode()
    tree = _parser().parse(source)
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type == "command":
            children = node.children
            assert _bash_syntax.split_word(children, source, ()) == _reference_split_word(
                children, source, ()
            )


def test_the_bare_rule_lookup_is_the_same_when_remembered() -> None:
    """A tool's bare rule, remembered per rule set, is the one looked up each time (for more
    tool names than are remembered, too)."""
    rules = RuleSet.from_strings(allow=["Read", "mcp__srv"], deny=["Edit", "WebSearch"])
    names = ["Read", "Glob", "Edit", "Write", "mcp__srv__t", "WebSearch", "Bash", "Task"]
    names += [f"tool{i}" for i in range(300)]
    for _ in range(2):
        for name in names:
            for kind in ("allow", "deny", "ask"):
                index = rules._index[kind]
                expected = RuleSet._bare_rule(index, name, families=True)
                if expected is not None:
                    assert rules.match(kind, name, {}, cwd="/p", home="/h") == expected
                    assert rules._bare_found[kind].get(name, expected) == expected


#: Words of reading commands: options of every kind (valued, naming a file, recursive,
#: following links, clustered, attached values), ``-``, ``--`` and operands.
_READ_WORDS = [
    "-n", "-20", "-c", "5", "-f", "-fpats", "--file=pats", "-e", "x", "-r", "-R", "-rn", "-L",
    "--", "-", "src", "a.txt", "*.txt", "-t", "--lines=3", "-i", "-v", "-k2", "-x",
]  # fmt: skip


def _read_arguments(argv: list[str], tmp: str) -> tuple[Any, ...]:
    return reading_paths(argv, tmp, tmp + "/home")


@settings(max_examples=500, deadline=None)
@given(
    name=st.sampled_from(sorted(READING_COMMANDS)),
    words=st.lists(st.sampled_from(_READ_WORDS), max_size=4),
)
def test_a_reading_command_of_options_only_reads_what_the_full_reading_finds(
    name: str, words: list[str]
) -> None:
    """A reading command given options only is known to read nothing without reading its
    options, unless one of its options names a file or it reads a directory by default: the
    files it reads are those the full reading of its options lists, and a Read deny rule
    covering every file denies it as when its options are read."""
    tmp = "/nonexistent/project"
    fast = _read_arguments([name, *words], tmp)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_reading, "_FAST_OPTIONS", False)
        full = _read_arguments([name, *words], tmp)
    assert fast == full
    line = " ".join([name, *words])
    denied = _READ_DENIED.match("deny", "Bash", {"command": line}, cwd=tmp, home=tmp + "/h")
    assert (denied is not None) == bool(full)


#: A Read deny rule for every file of the project: any file a command reads is denied.
_READ_DENIED = RuleSet.from_strings(deny=["Read(./**)"])


@pytest.mark.parametrize("argv", [["grep", "-fpats"], ["rg", "-i"], ["sed", "--file=x"]])
def test_the_options_only_comparison_sees_a_planted_difference(argv: list[str]) -> None:
    """The comparison is not vacuous: a shortcut that forgot the options naming a file, or
    the directory read by default, would find nothing where the full reading finds a file."""
    tmp = "/nonexistent/project"
    loose = copy.copy(READING_COMMANDS[argv[0]])
    object.__setattr__(loose, "option_or_default_files", False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(READING_COMMANDS, argv[0], loose)
        planted = _read_arguments(argv, tmp)
    assert planted == ()
    assert _read_arguments(argv, tmp) != ()


def test_an_analysis_leaves_nothing_to_the_garbage_collector() -> None:
    """The walk and the parser of its nested scripts hold no reference cycle: everything an
    analysis makes is freed when it is dropped, so checks never pile work up for the cycle
    collector (a full collection walks every object of the process)."""
    lines = ["git status", "cd src && grep -rn 'x' . | head", "sh -c 'ls; eval \"rm x\"' > o"]
    gc.collect()
    gc.disable()
    try:
        for line in [*lines, "a\\\nb", "$(("]:
            analyze(line)
        assert gc.collect() == 0
    finally:
        gc.enable()
