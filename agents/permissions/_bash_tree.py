"""From a tree-sitter-bash syntax tree to what a command line would do.

The walk lists every simple command that may run, wherever it sits (lists, pipelines, subshells,
groups, ``if``/``for``/``while``/``case`` bodies, function bodies, command and process
substitutions, here-strings, expanding here-documents, arithmetic, and the literal scripts of
``eval``, ``sh -c`` and ``env -S``), every file an output redirection writes, and every construct
it cannot decide statically (an *opaque* one).

It also follows the shell's directory: each command carries the set of directory changes
(``cd``/``pushd`` targets, relative to the session's directory) it may run after. ``cd a && x``
runs ``x`` in ``a``; ``cd a; x`` in ``a`` or, if ``cd`` failed, where it was. A ``cd`` whose
target is not static, or a loop or opaque construct that may move, makes the directory unknown
(``None``), which every path check treats as failing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

import attrs
from tree_sitter import Node

from ._bash_words import Word, node_text, plain_word, word_from_node
from ._bash_wrappers import Unwrapped, basename, is_assignment, unwrap

__all__ = ["MAX_DEPTH", "Analysis", "Command", "Dirs", "Opaque", "Walker", "Write"]

#: Directory states: each tuple is the ``cd`` targets applied in order; None when unknown.
Dirs = frozenset[tuple[str, ...]] | None
#: Constructs nested deeper than this are not analysed: the command asks.
MAX_DEPTH = 48
#: More possible directories than this count as unknown.
_MAX_DIRS = 16

#: Shells whose ``-c`` script is parsed in turn; without ``-c`` they run a file or stdin.
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash", "yash"})
#: Programs that run their arguments as a command with a grammar not modelled here.
_RUNNERS = frozenset(
    {
        "setsid", "ionice", "chrt", "taskset", "flock", "watch", "script", "su", "runuser",
        "chroot", "unshare", "nsenter", "strace", "ltrace", "valgrind", "gdb", "fakeroot",
        "faketime", "firejail", "busybox", "systemd-run", "pkexec", "parallel", "unbuffer",
        "rlwrap", "proxychains", "proxychains4", "torsocks", "nocache", "catchsegv", "expect",
        "cgexec", "sg", "newgrp", "machinectl", "bwrap", "ssh-agent", "dbus-launch",
        "dbus-run-session",
    }
)  # fmt: skip
#: Builtins that run code the analysis cannot see, or change what a command name means.
_OPAQUE_BUILTINS = {
    "source": "source runs the commands of a file",
    ".": "'.' runs the commands of a file",
    "alias": "alias changes what a command name runs",
    "enable": "enable changes what a builtin runs",
    "coproc": "coproc is not analysed",
    "fc": "fc re-runs commands from the history",
    "let": "let evaluates arithmetic on variables' values",
}
#: Variables whose value the shell runs or uses to find commands: setting them asks.
_SPECIAL_VARIABLES = frozenset(
    {
        "PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "PS0", "PS1",
        "PS2", "PS3", "PS4", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "IFS", "CDPATH", "HOME",
        "GLOBIGNORE", "BASH_LOADABLES_PATH", "EXECIGNORE", "PAGER", "GIT_PAGER", "GIT_EDITOR",
        "EDITOR", "VISUAL", "OLDPWD", "PWD", "BASH_XTRACEFD", "FUNCNEST", "TMOUT",
    }
)  # fmt: skip
#: Commands that assign to the variables their arguments name.
_VARIABLE_SETTERS = frozenset(
    {"export", "declare", "typeset", "local", "readonly", "read", "printf", "mapfile",
     "readarray", "getopts", "unset"}
)  # fmt: skip
_OUTPUT_OPERATORS = frozenset({">", ">>", "&>", "&>>", ">|", ">&", "<>"})
_ARITHMETIC_VARIABLES = frozenset(
    {"word", "variable_name", "simple_expansion", "expansion", "subscript"}
)
_ARITHMETIC_TEST = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_FIND_FLAGS = frozenset(
    {
        "-print", "-print0", "-ls", "-delete", "-prune", "-quit", "-depth", "-daystart",
        "-follow", "-mount", "-xdev", "-noleaf", "-true", "-false", "-empty", "-executable",
        "-readable", "-writable", "-nouser", "-nogroup", "-not", "-a", "-o", "-and", "-or",
        "-ignore_readdir_race", "-noignore_readdir_race",
    }
)  # fmt: skip
#: Reserved words: never a command's name when the grammar reads the line right.
_RESERVED = frozenset(
    {"{", "}", "(", ")", "!", "[[", "]]", "then", "fi", "do", "done", "esac", "in", "function",
     "select", "if", "case", "while", "until", "for", "elif", "else", "coproc"}
)  # fmt: skip
_MAY_CHANGE_DIR = re.compile(r"cd|pushd|popd|eval")


@attrs.frozen(slots=True, eq=False)
class Command:
    """One simple command that may run.

    ``words``: the command name and arguments (leading ``NAME=value`` assignments are apart, in
    ``assignments``). ``layers`` tells where the wrapped commands start. ``dirs``: where the
    innermost command may run. ``transparent``: the command only runs a literal script (``eval
    'x'``, ``sh -c 'x'``), whose commands are listed on their own; allow rules need not name it.
    """

    words: tuple[Word, ...]
    assignments: tuple[Word, ...]
    layers: Unwrapped
    dirs: Dirs
    transparent: bool = False

    @property
    def text(self) -> str:
        """The command as written, words joined by single spaces."""
        return " ".join([w.raw for w in self.assignments] + [w.raw for w in self.words])

    @property
    def name(self) -> str | None:
        """The innermost command's name without its directory, None if not static."""
        inner = self.layers.inner
        if inner is None or inner >= len(self.words):
            return None
        head = self.words[inner]
        return basename(head.value) if head.static and head.value is not None else None


@attrs.frozen(slots=True)
class Write:
    """A file an output redirection (or ``tee``) writes, with where the shell may be."""

    target: Word
    dirs: Dirs


@attrs.frozen(slots=True)
class Opaque:
    """A construct the analysis cannot decide statically: it may run anything."""

    reason: str


@attrs.frozen
class Analysis:
    """Everything one command line may do, as far as the permission rules are concerned."""

    commands: tuple[Command, ...]
    writes: tuple[Write, ...]
    opaque: tuple[Opaque, ...]


def _union(a: Dirs, b: Dirs) -> Dirs:
    if a is None or b is None:
        return None
    both = a | b
    return both if len(both) <= _MAX_DIRS else None


def _union_all(states: Iterable[Dirs]) -> Dirs:
    out: Dirs = frozenset()
    for state in states:
        out = _union(out, state)
    return out


_Result = tuple[Dirs, Dirs]  # the directories after success, after failure


class Walker:
    """One analysis: walks a tree (and the literal scripts nested in it) into an Analysis."""

    def __init__(self, parse: Callable[[str], Node | None]) -> None:
        self._parse = parse
        self.commands: list[Command] = []
        self.writes: list[Write] = []
        self.opaque: list[Opaque] = []

    def analysis(self) -> Analysis:
        return Analysis(tuple(self.commands), tuple(self.writes), tuple(self.opaque))

    def fail(self, reason: str) -> None:
        self.opaque.append(Opaque(reason))

    # -- statements ---------------------------------------------------------------------------

    def statements(self, nodes: Iterable[Node], dirs: Dirs, depth: int) -> _Result:
        """A sequence (``;``, newline, ``&``): each statement starts where the last one ended."""
        result: _Result = (dirs, dirs)
        current = dirs
        for node in nodes:
            if not node.is_named or node.type == "comment":
                continue
            result = self.walk(node, current, depth)
            following = node.next_sibling
            if following is not None and following.type == "&":
                result = (current, current)  # runs in the background, in a subshell
            current = _union(*result)
        return result

    def walk(self, node: Node, dirs: Dirs, depth: int, redirects: Sequence[Node] = ()) -> _Result:
        """One statement; ``redirects`` are those tree-sitter hung on an enclosing statement."""
        if depth > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH} levels")
            return None, None
        kind = node.type
        if kind == "command":
            return self._command(node, dirs, depth, redirects)
        if kind == "redirected_statement":
            own = [c for c in node.named_children if c.type.endswith("redirect")]
            body = node.child_by_field_name("body")
            if body is None:
                self.redirects([*redirects, *own], dirs, depth)
                return dirs, dirs
            return self.walk(body, dirs, depth, [*own, *redirects])
        if kind == "list":
            return self._list(node, dirs, depth, redirects)
        if kind == "pipeline":
            parts = [c for c in node.named_children if c.type != "comment"]
            for index, part in enumerate(parts):
                self.walk(part, dirs, depth + 1, redirects if index == len(parts) - 1 else ())
            return dirs, dirs
        self.redirects(redirects, dirs, depth)
        if kind == "negated_command":
            ok, failed = self.statements(node.children, dirs, depth)
            return failed, ok
        if kind == "subshell":
            self.statements(node.children, dirs, depth + 1)
            return dirs, dirs
        if kind in ("compound_statement", "do_group"):
            if node.child_count and node.children[0].type == "((":
                self._arithmetic(node, dirs, depth)
                return dirs, dirs
            return self.statements(node.children, dirs, depth + 1)
        handler = _STATEMENTS.get(kind)
        if handler is not None:
            return handler(self, node, dirs, depth)
        if kind == "ERROR":
            self.fail("the command does not parse")
        else:
            self.fail(f"{kind} is not analysed")
        self.scan(node, dirs, depth)
        return None, None

    def _list(self, node: Node, dirs: Dirs, depth: int, redirects: Sequence[Node]) -> _Result:
        """``a && b || c``, left-nested in the tree: flattened, so long chains cost no stack."""
        chain: list[tuple[str, Node]] = []
        while node.type == "list" and node.child_count >= 3:
            chain.append((node.children[1].type, node.children[-1]))
            node = node.children[0]
        chain.reverse()
        ok, failed = self.walk(node, dirs, depth, redirects if not chain else ())
        for index, (operator, right) in enumerate(chain):
            last = redirects if index == len(chain) - 1 else ()
            if operator == "&&":
                r_ok, r_failed = self.walk(right, ok, depth, last)
                ok, failed = r_ok, _union(failed, r_failed)
            else:
                r_ok, r_failed = self.walk(right, failed, depth, last)
                ok, failed = _union(ok, r_ok), r_failed
        return ok, failed

    def _if(self, node: Node, dirs: Dirs, depth: int) -> _Result:
        ends: list[Dirs] = []
        failed = self._branch(node, dirs, depth, ends)
        else_seen = False
        for clause in node.named_children:
            if clause.type == "elif_clause":
                failed = self._branch(clause, failed, depth, ends)
            elif clause.type == "else_clause":
                else_seen = True
                ends.extend(self.statements(clause.children, failed, depth + 1))
        if not else_seen:
            ends.append(failed)
        after = _union_all(ends)
        return after, after

    def _branch(self, node: Node, dirs: Dirs, depth: int, ends: list[Dirs]) -> Dirs:
        """``if|elif cond; then body``: the body's ends go to ``ends``; returns cond's failure."""
        condition: list[Node] = []
        body: list[Node] = []
        target = condition
        for child in node.children:
            if child.type == "then":
                target = body
            elif child.is_named and child.type not in ("elif_clause", "else_clause"):
                target.append(child)
        ok, failed = self.statements(condition, dirs, depth + 1)
        ends.extend(self.statements(body, ok, depth + 1))
        return failed

    def _loop(self, node: Node, dirs: Dirs, depth: int) -> _Result:
        """A body may run several times: if it may move, where it runs is unknown."""
        start = None if _MAY_CHANGE_DIR.search(node_text(node)) else dirs
        if node.type == "for_statement":
            variable = node.child_by_field_name("variable")
            if variable is not None and node_text(variable) in _SPECIAL_VARIABLES:
                self.fail(f"the loop sets {node_text(variable)}")
            for value in node.children_by_field_name("value"):
                self.scan(value, dirs, depth)
        elif node.type == "c_style_for_statement":
            for child in node.named_children:
                if child.type != "do_group" and child.type != "compound_statement":
                    self._arithmetic(child, dirs, depth)
        condition = [c for c in node.children_by_field_name("condition") if c.is_named]
        ok, failed = self.statements(condition, start, depth + 1)
        body = node.child_by_field_name("body")
        if body is not None:
            self.walk(body, failed if node.children[0].type == "until" else ok, depth + 1)
        return start, start

    def _case(self, node: Node, dirs: Dirs, depth: int) -> _Result:
        value = node.child_by_field_name("value")
        if value is not None:
            self.scan(value, dirs, depth)
        ends: list[Dirs] = [dirs]
        for item in node.named_children:
            if item.type != "case_item":
                continue
            body = []
            for index, child in enumerate(item.children):
                field = item.field_name_for_child(index)
                if field == "value":
                    self.scan(child, dirs, depth)
                elif child.is_named and field is None:
                    body.append(child)
            ends.extend(self.statements(body, dirs, depth + 1))
        after = _union_all(ends)
        return after, after

    def _function(self, node: Node, dirs: Dirs, depth: int) -> _Result:
        self.fail("a function definition changes what a command name runs")
        body = node.child_by_field_name("body")
        if body is not None:
            own = [c for c in node.named_children if c.type.endswith("redirect")]
            self.walk(body, None, depth + 1, own)
        return dirs, dirs

    def _assignment(self, node: Node, dirs: Dirs, depth: int) -> _Result:
        assignments = [node] if node.type == "variable_assignment" else node.named_children
        words = []
        for assignment in assignments:
            self.scan(assignment, dirs, depth)
            self._check_assignment(assignment)
            words.append(Word(node_text(assignment), None))
        self.commands.append(Command((), tuple(words), Unwrapped(starts=[0]), dirs))
        return dirs, dirs

    def _declaration(self, node: Node, dirs: Dirs, depth: int) -> _Result:
        """``export``/``declare``/``local``/``readonly``/``typeset``/``unset``: a command."""
        words = [Word(node.children[0].type, node.children[0].type)]
        for child in node.named_children:
            self.scan(child, dirs, depth)
            if child.type == "variable_assignment":
                self._check_assignment(child)
                words.append(Word(node_text(child), None))
            else:
                words.append(word_from_node(child))
        return self.simple(words, [], dirs, depth)

    def _test(self, node: Node, dirs: Dirs, depth: int) -> _Result:
        """``[[ … ]]`` runs nothing itself, but arithmetic comparisons evaluate variables."""
        for child in _descendants(node):
            if child.type == "binary_expression":
                operator = child.child_by_field_name("operator")
                if operator is not None and node_text(operator) in _ARITHMETIC_TEST:
                    for side in (
                        child.child_by_field_name("left"),
                        child.child_by_field_name("right"),
                    ):
                        if side is not None and side.type != "number":
                            self.fail("[[ -eq ]] evaluates a variable's value as arithmetic")
        self.scan(node, dirs, depth)
        return dirs, dirs

    # -- words, substitutions and redirections ------------------------------------------------

    def scan(self, node: Node, dirs: Dirs, depth: int) -> None:
        """Every substitution inside ``node`` runs (in a subshell, before the command)."""
        stack = [node]
        while stack:
            current = stack.pop()
            kind = current.type
            if kind in ("command_substitution", "process_substitution"):
                if depth + 1 > MAX_DEPTH:
                    self.fail(f"nesting deeper than {MAX_DEPTH} levels")
                else:
                    self.statements(current.children, dirs, depth + 1)
            elif kind == "arithmetic_expansion":
                self._arithmetic(current, dirs, depth)
            elif current.child_count:
                stack.extend(current.children)
            elif kind in _TEXT_LEAVES and _hidden_substitution(node_text(current)):
                # tree-sitter-bash leaves some substitutions as text (backquotes in a
                # here-document or in `${x:-…}`): they run all the same
                self.fail("a substitution the grammar leaves unparsed")

    def _arithmetic(self, node: Node, dirs: Dirs, depth: int) -> None:
        """Arithmetic runs substitutions, and evaluates variables' values as expressions."""
        stack = list(node.children)
        while stack:
            current = stack.pop()
            if current.type in ("command_substitution", "process_substitution"):
                self.scan(current, dirs, depth)
            elif current.type in _ARITHMETIC_VARIABLES:
                self.fail("arithmetic on a variable's value may run commands")
                self.scan(current, dirs, depth)
            else:
                stack.extend(current.children)

    def redirects(self, nodes: Iterable[Node], dirs: Dirs, depth: int) -> None:
        """Output redirections are writes; here-documents and here-strings may substitute."""
        for node in nodes:
            if node.type == "file_redirect":
                operator = next((c.type for c in node.children if not c.is_named), "")
                destination = node.child_by_field_name("destination")
                if destination is None:
                    self.scan(node, dirs, depth)
                    continue
                self.scan(destination, dirs, depth)
                if operator not in _OUTPUT_OPERATORS or destination.type == "process_substitution":
                    continue
                word = word_from_node(destination)
                if (
                    operator == ">&"
                    and word.value is not None
                    and (word.value.isdigit() or word.value == "-")
                ):
                    continue  # `>&2`: a descriptor, not a file
                self.writes.append(Write(word, dirs))
            elif node.type == "heredoc_redirect":
                children = node.named_children
                self.redirects([c for c in children if c.type == "file_redirect"], dirs, depth)
                start = next((c for c in children if c.type == "heredoc_start"), None)
                if start is not None and _QUOTED_DELIMITER.search(node_text(start)):
                    continue  # a quoted delimiter: the body is literal text
                for child in children:
                    if child.type == "heredoc_body":
                        self.scan(child, dirs, depth)
            else:
                self.scan(node, dirs, depth)

    def _check_assignment(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        text = node_text(name) if name is not None else node_text(node).partition("=")[0]
        if text.partition("[")[0] in _SPECIAL_VARIABLES or text.startswith("BASH_FUNC_"):
            self.fail(f"setting {text} changes what commands run")

    # -- simple commands -----------------------------------------------------------------------

    def _command(self, node: Node, dirs: Dirs, depth: int, redirects: Sequence[Node]) -> _Result:
        assignments: list[Node] = []
        words: list[Node] = []
        own = list(redirects)
        for index, child in enumerate(node.children):
            kind = child.type
            if kind == "variable_assignment":
                assignments.append(child)
            elif kind.endswith("redirect"):
                own.append(child)
            elif kind == "command_name" or (
                child.is_named or node.field_name_for_child(index) == "argument"
            ):
                words.append(child)
        if b"\n" in (node.text or b"") and _newline_between(node, words):
            self.fail("the grammar read one command across a line break")
        decoded: list[Word] = []
        for child in words:
            word = plain_word(child)
            if word is None:  # not plain text: it may hold substitutions
                self.scan(child, dirs, depth)
                word = word_from_node(child)
            decoded.append(word)
        for child in assignments:
            self.scan(child, dirs, depth)
            self._check_assignment(child)
        self.redirects(own, dirs, depth)
        assigned = [Word(node_text(a), None) for a in assignments]
        if not words:
            self.commands.append(Command((), tuple(assigned), Unwrapped(starts=[0]), dirs))
            return dirs, dirs
        return self.simple(decoded, assigned, dirs, depth)

    def simple(self, words: list[Word], assigned: list[Word], dirs: Dirs, depth: int) -> _Result:
        """Judge one simple command's words: wrappers, special builtins, nested scripts."""
        values = [w.value if w.static else None for w in words]
        layers = unwrap(values)
        inner = layers.inner
        if layers.replace is not None and inner is not None:
            words = [
                Word(w.raw, None) if i > inner and w.value and layers.replace in w.value else w
                for i, w in enumerate(words)
            ]
        run_dirs = dirs
        if layers.chdir is not None:
            run_dirs = None if not layers.chdir or dirs is None else _cd(dirs, layers.chdir)
        for target in layers.writes:
            self.writes.append(Write(Word(target, target), dirs))
        self._check_words(words, inner)
        if inner is None:
            self.fail("a wrapper's arguments are not static")
            self.commands.append(Command(tuple(words), tuple(assigned), layers, None))
            return None, None
        if layers.split is not None:
            rest = words[inner:]
            if any(not w.static for w in rest) or re.search(r"[$\\`]", layers.split):
                self.fail("env -S with a string that is not plain")
            else:
                split = " ".join([layers.split, *(_quote(w.value or "") for w in rest)])
                self._nested(split, run_dirs, depth)
            self.commands.append(Command(tuple(words), tuple(assigned), layers, run_dirs, True))
            return dirs, dirs
        if inner >= len(words):  # a wrapper alone (`exec`, `xargs` runs `echo`)
            self.commands.append(Command(tuple(words), tuple(assigned), layers, run_dirs))
            return dirs, dirs
        head = words[inner]
        if not head.static or head.value is None:
            self.fail("the command name is not static")
            self.commands.append(Command(tuple(words), tuple(assigned), layers, run_dirs))
            return None, None
        if head.raw in _RESERVED:
            # tree-sitter-bash took a reserved word for a command (`! { rm; }`): its reading
            # of the line cannot be trusted
            self.fail(f"the grammar misread the reserved word {head.raw!r}")
        name = basename(head.value)
        args = words[inner + 1 :]
        command = Command(tuple(words), tuple(assigned), layers, run_dirs)
        if name in _OPAQUE_BUILTINS:
            self.fail(_OPAQUE_BUILTINS[name])
            self.commands.append(command)
            return None, None
        if name in _RUNNERS:
            self.fail(f"{name} runs its arguments as a command")
        elif name == "hash" and any(w.value is None or w.value.startswith("-p") for w in args):
            self.fail("hash -p changes what a command name runs")
        elif name == "find":
            self._find(args, run_dirs, depth)
        elif name == "tee":
            self._tee(args, run_dirs)
        elif name == "trap":
            self._trap(args, depth)
        elif name == "eval" or name in _SHELLS:
            script: str | None = self._script(name, args)
            if script is None:
                self.commands.append(command)
                return (None, None) if name == "eval" else (dirs, dirs)
            self.commands.append(attrs.evolve(command, transparent=True))
            result = self._nested(script, run_dirs, depth)
            return result if name == "eval" else (dirs, dirs)
        self.commands.append(command)
        if name in ("cd", "pushd"):
            return self._cd(args, dirs)
        if name == "popd":
            return None, dirs
        if name == "exit" and inner == 0:
            return frozenset(), frozenset()
        return dirs, dirs

    def _check_words(self, words: Sequence[Word], inner: int | None) -> None:
        setter = (
            inner is not None and inner < len(words) and words[inner].value in _VARIABLE_SETTERS
        )
        for word in words:
            value = word.value
            if value is None or (not setter and "=" not in value):
                continue
            name = value.partition("=")[0] if is_assignment(value) else (value if setter else "")
            name = name.rstrip("+").partition("[")[0]
            if name in _SPECIAL_VARIABLES or name.startswith("BASH_FUNC_"):
                self.fail(f"setting {name} changes what commands run")

    def _cd(self, args: Sequence[Word], dirs: Dirs) -> _Result:
        i = 0
        while i < len(args) and args[i].static and (args[i].value or "").startswith(("-", "+")):
            if args[i].value in ("-", "--") or (args[i].value or "")[1:].isdigit():
                break
            i += 1
        if i < len(args) and args[i].value == "--":
            i += 1
        if i >= len(args):
            target = "~"
        elif not args[i].static or args[i].value in ("-",) or (args[i].value or "")[1:].isdigit():
            return None, dirs
        else:
            target = args[i].path_text() or ""
        if dirs is None:
            return None, None
        return _cd(dirs, target), dirs

    def _script(self, name: str, args: Sequence[Word]) -> str | None:
        """The literal script ``eval`` or ``sh -c`` runs; None (after failing) if not literal."""
        if name == "eval":
            if all(w.static for w in args):
                return " ".join(w.value or "" for w in args)
            self.fail("eval of a string that is not literal")
            return None
        has_c = False
        for word in args:
            value = word.value
            if value is None or not word.static:
                break
            if value.startswith("--"):
                if value in ("--rcfile", "--init-file"):
                    break
                continue
            if value.startswith(("-", "+")) and len(value) > 1:
                if value[1:] in ("o", "O"):
                    break
                has_c = has_c or "c" in value
                continue
            if has_c:
                return value
            break
        self.fail(f"{name} runs commands the analysis cannot see")
        return None

    def _nested(self, script: str, dirs: Dirs, depth: int) -> _Result:
        if depth + 1 > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH} levels")
            return None, None
        root = self._parse(script)
        if root is None:
            self.fail("a nested script is too long to analyse")
            return None, None
        if root.has_error:
            self.fail("a nested script does not parse")
        return self.statements(root.children, dirs, depth + 1)

    def _trap(self, args: Sequence[Word], depth: int) -> None:
        if not args or (args[0].value or "").startswith("-"):
            return
        action = args[0]
        if not action.static:
            self.fail("trap with an action that is not literal")
        elif action.value:
            self._nested(action.value, None, depth)

    def _tee(self, args: Sequence[Word], dirs: Dirs) -> None:
        options_done = False
        for word in args:
            if not options_done and word.value == "--":
                options_done = True
            elif not options_done and word.static and (word.value or "").startswith("-"):
                continue
            else:
                self.writes.append(Write(word, dirs))

    def _find(self, args: Sequence[Word], dirs: Dirs, depth: int) -> None:
        """``find``: ``-exec`` and the like run commands, ``-delete`` removes, ``-fprint``
        writes."""
        i = 0
        starts: list[Word] = []
        while (
            i < len(args)
            and args[i].static
            and not (args[i].value or "").startswith(("-", "(", "!"))
        ):
            starts.append(args[i])
            i += 1
        previous = ""
        while i < len(args):
            word = args[i]
            value = word.value if word.static else None
            if value is None and (not previous.startswith("-") or previous in _FIND_FLAGS):
                self.fail("find with an expression that is not static")
            if value in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(args) and args[j].value not in (";", "+"):
                    j += 1
                inner = [
                    Word(w.raw, None) if w.value and "{}" in w.value else w for w in args[i + 1 : j]
                ]
                if inner:
                    self.simple(inner, [], dirs if value in ("-exec", "-ok") else None, depth + 1)
                i = j + 1
                previous = ";"
                continue
            if value == "-delete":
                removal = [Word("rm", "rm"), Word("-r", "-r"), Word("--", "--"), *starts]
                if not starts:
                    removal.append(Word(".", "."))
                self.simple(removal, [], dirs, depth + 1)
            elif value in ("-fprint", "-fprint0", "-fls", "-fprintf") and i + 1 < len(args):
                self.writes.append(Write(args[i + 1], dirs))
            previous = value or ""
            i += 1


_QUOTED_DELIMITER = re.compile(r"[\\'\"]")
_TEXT_LEAVES = frozenset({"word", "string_content", "heredoc_body", "heredoc_content"})


def _hidden_substitution(text: str) -> bool:
    """An unescaped backquote or ``$(`` in text the grammar took for plain characters."""
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "`" or (c == "$" and i + 1 < n and text[i + 1] == "("):
            return True
        i += 1
    return False


def _newline_between(node: Node, words: Sequence[Node]) -> bool:
    """An unescaped newline between or inside the unquoted words of one command: bash would
    end the command there (tree-sitter-bash reads ``ls\\n\\rm`` as one command)."""
    text = node.text or b""
    base = node.start_byte
    pieces = [
        text[previous.end_byte - base : current.start_byte - base]
        for previous, current in zip(words, words[1:], strict=False)
    ]
    for word in words:
        pieces.extend(
            node_text(leaf).encode() for leaf in _descendants(word) if leaf.type == "word"
        )
    for piece in pieces:
        index = piece.find(b"\n")
        while index >= 0:
            if index == 0 or piece[index - 1 : index] != b"\\":
                return True
            index = piece.find(b"\n", index + 1)
    return False


def _cd(dirs: frozenset[tuple[str, ...]], target: str) -> Dirs:
    moved = frozenset((*d, target) for d in dirs)
    return moved if len(moved) <= _MAX_DIRS else None


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def _descendants(node: Node) -> Iterable[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current.type not in ("command_substitution", "process_substitution"):
            stack.extend(current.children)


_STATEMENTS: dict[str, Callable[[Walker, Node, Dirs, int], _Result]] = {
    "if_statement": Walker._if,
    "while_statement": Walker._loop,
    "for_statement": Walker._loop,
    "c_style_for_statement": Walker._loop,
    "case_statement": Walker._case,
    "function_definition": Walker._function,
    "variable_assignment": Walker._assignment,
    "variable_assignments": Walker._assignment,
    "declaration_command": Walker._declaration,
    "unset_command": Walker._declaration,
    "test_command": Walker._test,
}
