"""Simple commands: wrappers, builtins that change what runs, ``cd``, nested literal scripts.

:class:`SimpleCommands` is the half of the walk that judges one simple command's words once the
tree walk (:mod:`._bash_tree`) has found it: it strips wrappers, recognises the builtins that
run code the analysis cannot see (``source``, ``alias``, ``eval`` of a non-literal...), parses
the literal scripts of ``eval``, ``sh -c``, ``env -S`` and ``trap`` in turn, follows ``cd``, and
lists the commands ``find -exec`` runs and the files ``tee`` writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

from ._bash_model import Command, Dirs, Opaque, Places, Result, Write, cd_dirs, new_command
from ._bash_words import Word
from ._bash_wrappers import NOT_WRAPPED, WRAPPERS, basename, is_assignment, unwrap

__all__ = [
    "MAX_DEPTH",
    "MAX_WRAPPERS",
    "RESERVED",
    "RUN_CONTROL_VARIABLES",
    "SAFE_NAME",
    "SPECIAL_NAMES",
    "SimpleCommands",
]

#: Constructs nested deeper than this are not analysed: the command asks.
MAX_DEPTH = 48
#: A command under more wrappers than this (``nice nice … rm``) asks, its first layers listed
#: only: each layer is a spelling the deny rules are tried on, as long as the rest of the
#: command, so n wrappers made n² of text on the event loop (12 000 in a 60 KB line: 360 MB).
MAX_WRAPPERS = 32

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
        "dbus-run-session", "toybox", "numactl", "xvfb-run", "setpriv", "prlimit",
        "caffeinate", "gosu", "su-exec", "chpst", "setuidgid", "softlimit", "envdir",
        "cpulimit", "trickle", "start-stop-daemon", "daemonize", "tini", "dumb-init", "schroot",
        "run0", "sem", "tsp", "nq", "tmux", "screen", "at", "batch",
        # shells whose scripts are not bash's
        "fish", "csh", "tcsh", "pwsh", "nu", "xonsh", "elvish", "rc", "es",
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
    "compgen": "compgen -C and -F run commands to complete a word",
    "complete": "complete -C and -F name commands the shell runs to complete a word",
    "bind": "bind -x binds a key to a command",
}
#: Variables whose value the shell runs or uses to find commands: setting them asks.
RUN_CONTROL_VARIABLES = frozenset(
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
_FIND_FLAGS = frozenset(
    {
        "-print", "-print0", "-ls", "-delete", "-prune", "-quit", "-depth", "-daystart",
        "-follow", "-mount", "-xdev", "-noleaf", "-true", "-false", "-empty", "-executable",
        "-readable", "-writable", "-nouser", "-nogroup", "-not", "-a", "-o", "-and", "-or",
        "-ignore_readdir_race", "-noignore_readdir_race",
    }
)  # fmt: skip
#: Reserved words: never a command's name when the grammar reads the line right.
RESERVED = frozenset(
    {"{", "}", "(", ")", "!", "[[", "]]", "then", "fi", "do", "done", "esac", "in", "function",
     "select", "if", "case", "while", "until", "for", "elif", "else", "coproc"}
)  # fmt: skip


#: Builtins whose arguments name variables. A name with a subscript (``a[…]``) has it evaluated
#: as arithmetic when the builtin assigns or tests it, and arithmetic expands the ``$(…)`` inside
#: and evaluates the values of the variables it names: ``read 'a[$(rm x)]'`` runs ``rm``.
_NAME_TAKERS = frozenset(
    {"read", "printf", "declare", "typeset", "local", "export", "readonly", "unset", "test", "[",
     "wait"}
)  # fmt: skip
_DECLARERS = frozenset({"declare", "typeset", "local", "export", "readonly"})
#: ``read``'s options that take a value (``-a``'s is an array's name).
_READ_VALUED = frozenset("adinNptu")
#: ``wait``'s option that takes a value: ``-p``'s is the variable given the finished job's id.
_WAIT_VALUED = frozenset("p")
#: A name whose subscript, if any, is evaluated to nothing but itself.
SAFE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[(?:[0-9]+|@|\*)\])?+")

#: Command names the full judgement of :meth:`SimpleCommands.judge` is needed for; any other
#: static name without a directory, with no ``=`` in its words, is an ordinary command.
SPECIAL_NAMES = (
    WRAPPERS
    | frozenset(_OPAQUE_BUILTINS)
    | _RUNNERS
    | _SHELLS
    | _VARIABLE_SETTERS
    | _NAME_TAKERS
    | RESERVED
    | frozenset({"hash", "find", "tee", "trap", "eval", "cd", "pushd", "popd", "exit", "jobs"})
)


def _may_give(args: Sequence[Word], letter: str) -> bool:
    """Whether option ``letter`` may be among ``args``, alone or in a cluster (``-rp``, ``-lx``),
    or hidden in a word known only at run time."""
    return any(w.value is None or (w.value.startswith("-") and letter in w.value) for w in args)


def _option_names(
    texts: Sequence[str], valued: frozenset[str], naming: str, operands: bool
) -> list[str]:
    """The variable names a builtin assigns, read as its option parser reads its words: the
    value of option ``naming`` (attached, ``-pNAME``, or the next word, also at the end of a
    cluster, ``-np NAME``) and, if ``operands``, every operand (``read``'s, not ``wait``'s job
    ids). ``valued`` are the options that take a value."""
    names: list[str] = []
    i = 0
    while i < len(texts):
        text = texts[i]
        i += 1
        if not text.startswith("-") or text == "-":
            if operands:
                names.append(text)
        elif text == "--":
            return names + list(texts[i:]) if operands else names
        else:
            for k, letter in enumerate(text[1:], start=2):
                if letter in valued:
                    given = text[k:]
                    if not given and i < len(texts):
                        given, i = texts[i], i + 1
                    if letter == naming:
                        names.append(given)
                    break
    return names


class SimpleCommands:
    """The simple-command half of one analysis; :class:`._bash_tree.Walker` adds the tree."""

    def __init__(self, parse: Callable[[str], tuple[Node, bytes] | None]) -> None:
        self._parse = parse
        self.source = b""  # the bytes of the tree being walked (nodes index into them)
        self.commands: list[Command] = []
        self.writes: list[Write] = []
        self.reads: list[Write] = []  # files input redirections (`< file`) read
        self.opaque: list[Opaque] = []
        self.places: Places = {}  # every directory a `cd` of this walk moved to

    def fail(self, reason: str) -> None:
        """Record a construct that cannot be decided statically."""
        self.opaque.append(Opaque(reason))

    def statements(self, nodes: Iterable[Node], dirs: Dirs, depth: int) -> Result:
        """Walk a sequence of statements (the tree walker's)."""
        raise NotImplementedError("SimpleCommands.statements is provided by the tree walker")

    def simple(
        self,
        words: list[Word],
        assigned: list[Word],
        dirs: Dirs,
        depth: int,
        *,
        plain: bool = False,
    ) -> Result:
        """Judge one simple command's words (``words`` not empty; ``plain``: each is plain
        literal text, meaning itself).

        The common case first: a static name that is no wrapper or special builtin, spelled
        without a directory, and no word with an ``=`` (that could set a variable) — an
        ordinary command, listed as it is. Everything else goes to :meth:`judge`, which
        decides the same for this case (a property test compares the two).
        """
        head = words[0]
        value = head.value
        if (
            value is None
            or head.glob
            or value in SPECIAL_NAMES
            or head.raw in RESERVED
            or "/" in value
        ):
            return self.judge(words, assigned, dirs, depth)
        for word in words:
            if word.value is not None and "=" in word.value:
                return self.judge(words, assigned, dirs, depth)
        if assigned:
            text = " ".join([w.raw for w in assigned] + [w.raw for w in words])
        else:
            text = " ".join([w.raw for w in words])
        fields = (tuple(words), tuple(assigned), NOT_WRAPPED, dirs, False, plain and not assigned)
        self.commands.append(_new_tuple(Command, (*fields, text)))  # new_command(), no call
        return dirs, dirs

    def judge(self, words: list[Word], assigned: list[Word], dirs: Dirs, depth: int) -> Result:
        """Judge one simple command's words in full: wrappers, special builtins, nested
        scripts."""
        values = [None if w.glob else w.value for w in words]
        layers = unwrap(values)
        too_many = len(layers.starts) > MAX_WRAPPERS + 1  # (the first is the command as written)
        if too_many:
            del layers.starts[MAX_WRAPPERS + 1 :]
            layers.inner = None
        inner = layers.inner
        if layers.replace is not None and inner is not None:
            words = [
                Word(w.raw, None) if i > inner and w.value and layers.replace in w.value else w
                for i, w in enumerate(words)
            ]
        run_dirs = dirs
        if layers.chdir is not None:
            run_dirs = None
            if layers.chdir and dirs is not None:
                run_dirs = cd_dirs(dirs, layers.chdir, self.places)
        for target in layers.writes:
            self.writes.append(Write(Word(target, target), dirs))
        self._check_words(words, inner)
        if inner is None:
            self.fail(
                f"more than {MAX_WRAPPERS} wrappers around one command"
                if too_many
                else "a wrapper's arguments are not static"
            )
            self.commands.append(new_command(tuple(words), tuple(assigned), layers, None))
            return None, None
        if layers.split is not None:
            rest = words[inner:]
            if any(not w.static for w in rest) or re.search(r"[$\\`]", layers.split):
                self.fail("env -S with a string that is not plain")
            else:
                split = " ".join([layers.split, *(_quote(w.value or "") for w in rest)])
                self._nested(split, run_dirs, depth)
            self.commands.append(new_command(tuple(words), tuple(assigned), layers, run_dirs, True))
            return dirs, dirs
        if inner >= len(words):  # a wrapper alone (`exec`, `xargs` runs `echo`)
            self.commands.append(new_command(tuple(words), tuple(assigned), layers, run_dirs))
            return dirs, dirs
        head = words[inner]
        if not head.static or head.value is None:
            self.fail("the command name is not static")
            self.commands.append(new_command(tuple(words), tuple(assigned), layers, run_dirs))
            return None, None
        if head.raw in RESERVED:
            # tree-sitter-bash took a reserved word for a command (`! { rm; }`): its reading
            # of the line cannot be trusted
            self.fail(f"the grammar misread the reserved word {head.raw!r}")
        name = basename(head.value)
        args = words[inner + 1 :]
        command = new_command(tuple(words), tuple(assigned), layers, run_dirs)
        if name in _NAME_TAKERS:
            self._check_names(name, args)
        if name in _OPAQUE_BUILTINS:
            self.fail(_OPAQUE_BUILTINS[name])
            self.commands.append(command)
            return None, None
        if name in _RUNNERS:
            self.fail(f"{name} runs its arguments as a command")
        elif name in ("mapfile", "readarray") and _may_give(args, "C"):
            self.fail(f"{name} -C runs a command string as it reads")
        elif name == "hash" and _may_give(args, "p"):
            self.fail("hash -p changes what a command name runs")
        elif name == "jobs" and _may_give(args, "x"):
            self.fail("jobs -x runs the command it is given")
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
            self.commands.append(command._replace(transparent=True))
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
            if value.startswith("BASH_FUNC_"):
                # `env 'BASH_FUNC_ls%%=() { …; }' bash -c ls`: bash defines the function `ls`
                # from its environment, whatever the name's characters
                self.fail("a BASH_FUNC_ variable defines a function in the shells it starts")
                continue
            name = value.partition("=")[0] if is_assignment(value) else (value if setter else "")
            name = name.rstrip("+").partition("[")[0]
            if name in RUN_CONTROL_VARIABLES or name.startswith("BASH_FUNC_"):
                self.fail(f"setting {name} changes what commands run")

    def _check_names(self, name: str, args: Sequence[Word]) -> None:
        """The variable names ``name``'s arguments give must be plain (a literal subscript at
        most); so must the target of ``declare -n``. ``declare -i`` makes every later
        assignment to the variable arithmetic, and a quoted compound assignment
        (``declare -a 'a=($(x))'``) is expanded again: both ask when they could run code. A
        word known only at run time stands as its source text (``"$n"`` is no plain name)."""
        texts = [w.raw if w.value is None else w.value for w in args]
        names: list[str] = []
        if name == "printf":  # `printf [-v name] format …`: options come first only
            first = texts[0] if texts else ""
            if first == "-v" or (args and args[0].value is None and "[" in "".join(texts[1:2])):
                names += texts[1:2]
            elif first.startswith("-v"):
                names.append(first[2:])
        elif name in ("test", "["):
            names = [texts[i + 1] for i, text in enumerate(texts[:-1]) if text == "-v"]
        elif name == "read":
            names = _option_names(texts, _READ_VALUED, "a", operands=True)
        elif name == "wait":
            names = _option_names(texts, _WAIT_VALUED, "p", operands=False)
        else:  # unset and the declarers
            options = "".join(t[1:] for t in texts if t.startswith("-"))
            if name in _DECLARERS and "i" in options:
                self.fail(f"{name} -i evaluates every later assignment as arithmetic")
            for text in texts:
                if text.startswith(("-", "+")):
                    continue
                if name not in _DECLARERS:
                    names.append(text)
                    continue
                variable, eq, assigned = text.partition("=")
                names.append(variable.removesuffix("+"))
                if eq and "n" in options:
                    names.append(assigned)
                elif eq and assigned.startswith("(") and re.search(r"[$`\[]", assigned):
                    self.fail(f"{name} expands a quoted compound assignment again")
        if any(not SAFE_NAME.fullmatch(variable) for variable in names):
            self.fail(f"{name} evaluates the subscript of the variable name it is given")

    def _cd(self, args: Sequence[Word], dirs: Dirs) -> Result:
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
        return cd_dirs(dirs, target, self.places), dirs

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

    def _nested(self, script: str, dirs: Dirs, depth: int) -> Result:
        if depth + 1 > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH} levels")
            return None, None
        parsed = self._parse(script)
        if parsed is None:
            self.fail("a nested script is too long to analyse or cannot be read safely")
            return None, None
        root, source = parsed
        if root.has_error:
            self.fail("a nested script does not parse")
        outer, self.source = self.source, source
        try:
            return self.statements(root.children, dirs, depth + 1)
        finally:
            self.source = outer

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


_new_tuple = tuple.__new__


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"
