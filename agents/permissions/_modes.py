"""What each permission mode approves on its own, and the removals no mode may approve.

The mode is step 4 of the pipeline: it can only *approve* (or, under ``dontAsk``, refuse to ask);
deny and ask rules have already been applied. Approval is deliberately narrow: anything this
module cannot prove harmless for the mode — an unknown variable in a path, a redirection, a ``sed``
script that could write or execute — is left to the allow rules and the callback.

Paths are judged by their real target (symlinks followed, ``..`` applied as the kernel does): a
path is inside the working directories if the file it reaches is. A write to an existing file
with several hard links is never approved by a mode (its other names may lie outside), and
network egress (``WebFetch``, ``WebSearch``) is approved only by ``bypassPermissions``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._bash import Command, Write, is_sink, resolve_dirs, word_paths
from ._bash_words import Word
from ._checked import hard_linked
from ._memo import CallMemo
from ._paths import EDIT_PATH_TOOLS, READ_PATH_TOOLS, absolute, real, within
from ._types import PermissionCheck

__all__ = [
    "NETWORK_TOOLS",
    "WorkingDirs",
    "critical_removal",
    "is_write_tool",
    "mode_approves",
]

#: Tools that send data out of the machine: no mode but ``bypassPermissions`` approves them.
NETWORK_TOOLS = frozenset({"WebFetch", "WebSearch"})

#: Commands ``acceptEdits`` approves when all their paths are inside the working directories
#: (``cd``/``pushd`` only move: the paths after them are judged from where they lead).
_ACCEPT_EDITS_COMMANDS = frozenset(
    {"mkdir", "touch", "rm", "rmdir", "mv", "cp", "sed", "cd", "pushd"}
)
_GLOB = re.compile(r"[*?\[]")
#: sed's short flags with at most one ``i`` among them, or ``-i`` with a backup suffix, or a
#: long option. (The flags before the ``i`` are read possessively: written ``[…]*i?[…]*``, a
#: run of flags that fails was tried at every split between the two stars, quadratic in the
#: model's word — 60 000 flags took 10 s on the event loop.)
_SED_OPTION = re.compile(
    r"-[nrEsuz]*+(?:i[nrEsuz]*+)?|-i[\w.~-]*+|--(?:in-place(?:=[\w.~-]*+)?|quiet|silent|"
    r"regexp-extended|separate|null-data|posix|debug|sandbox)"
)
_SED_ADDRESS = r"(?:\d+|\$|/(?:[^/\\\n]|\\.)*/)"
_SED_PREFIX = re.compile(rf"\s*(?:{_SED_ADDRESS}(?:\s*,\s*{_SED_ADDRESS})?)?\s*!?\s*")


class WorkingDirs:
    """``cwd`` plus ``add_dirs``, absolute, with their resolved forms computed once.

    The resolved forms cost system calls and only path checks need them, so they are computed
    at the first such check: a session whose calls never name a path never pays for them.
    """

    __slots__ = ("_real_dirs", "dirs", "home", "resolved")

    def __init__(self, cwd: str, add_dirs: Sequence[str], home: str) -> None:
        self.home = home
        self.dirs = tuple(
            dict.fromkeys([absolute(cwd, "/", home)] + [absolute(d, cwd, home) for d in add_dirs])
        )
        self._real_dirs: tuple[str, ...] | None = None
        #: what :meth:`session_real` has resolved so far, by path (the directory, the home)
        self.resolved: dict[str, str] = {}

    @property
    def cwd(self) -> str:
        return self.dirs[0]

    @property
    def real_dirs(self) -> tuple[str, ...]:
        """The directories with symlinks resolved (at the first call)."""
        if self._real_dirs is None:
            self._real_dirs = tuple(dict.fromkeys(real(d) for d in self.dirs))
        return self._real_dirs

    def session_real(self, path: str) -> str | None:
        """The real path of the session's directory or home (resolved at the first call, like
        :attr:`real_dirs`; a rule check needs them as anchors), None for any other path."""
        resolved = self.resolved.get(path)
        if resolved is None:
            if path == self.dirs[0]:
                resolved = self.real_dirs[0]
            elif path == self.home:
                resolved = real(self.home)
            else:
                return None
            self.resolved[path] = resolved
        return resolved

    def contain(self, path: str, memo: CallMemo) -> bool:
        """Whether the file the absolute ``path`` reaches (its real target) lies inside a
        working directory."""
        target = memo.real(path)
        return any(within(target, d) for d in self.real_dirs)

    def writable(self, path: str, memo: CallMemo) -> bool:
        """Whether a mode may approve writing ``path``: inside, and not a file with several
        hard links (whose other names may lie anywhere on the device)."""
        return self.contain(path, memo) and not hard_linked(memo.real(path))


def is_write_tool(tool_name: str) -> bool:
    """File-editing tools and the shell: what ``plan`` mode never auto-approves."""
    return tool_name in EDIT_PATH_TOOLS or tool_name == "Bash"


#: Tools that need no permission in any mode, as in Claude Code: they act only on the
#: session's own state (spawning an agent, whose own tool calls are checked; the task list;
#: background shells the agent already started). Deny rules and hooks still apply to them.
NO_PERMISSION_TOOLS = frozenset(
    {
        "Agent",
        "TaskCreate",
        "TaskGet",
        "TaskUpdate",
        "TaskList",
        "BashOutput",
        "KillShell",
        "ToolSearch",
    }
)


def mode_approves(
    mode: str,
    check: PermissionCheck,
    tool_input: Mapping[str, Any],
    dirs: WorkingDirs,
    memo: CallMemo,
) -> bool:
    """Whether ``mode`` alone approves this call (step 4 of the evaluation order).

    No mode approves a Bash command the analysis cannot see into (an opaque one: ``$X``,
    ``eval "$y"``, a function definition...), ``bypassPermissions`` included: it is never
    auto-approved, only a ``Bash(*)``/``Bash`` allow rule, a hook or the callback can."""
    name = check.tool_name
    if name == "Bash" and (
        # (no other mode approves a Bash command: the analysis is not needed to say no)
        (mode != "bypassPermissions" and mode != "acceptEdits") or _opaque_bash(tool_input, memo)
    ):
        return False
    if mode == "bypassPermissions" or name in NO_PERMISSION_TOOLS:
        return True
    if mode == "dontAsk":
        return False  # only explicit allow rules (and hooks) pre-approve under dontAsk
    if name in NETWORK_TOOLS:
        return False  # egress can carry data out: it asks unless an allow rule covers it
    if name in EDIT_PATH_TOOLS:
        if mode != "acceptEdits":
            return False
        path = memo.tool_path(name, tool_input, dirs.cwd, dirs.home)
        return path is not None and dirs.writable(path, memo)
    if name == "Bash":
        command = tool_input.get("command")
        return (
            mode == "acceptEdits"
            and isinstance(command, str)
            and _accept_edits_bash(command, dirs, memo)
        )
    if name in READ_PATH_TOOLS:
        path = memo.tool_path(name, tool_input, dirs.cwd, dirs.home)
        return check.read_only and path is not None and dirs.contain(path, memo)
    return check.read_only


def _opaque_bash(tool_input: Mapping[str, Any], memo: CallMemo) -> bool:
    command = tool_input.get("command")
    return isinstance(command, str) and bool(memo.bash(command).opaque)


def _accept_edits_bash(command: str, dirs: WorkingDirs, memo: CallMemo) -> bool:
    """Every part is a file-editing command on paths inside the working directories, from
    wherever the shell may be when it runs, and every redirection writes inside them too."""
    analysis = memo.bash(command)
    if analysis.opaque or not analysis.commands:
        return False
    for part in analysis.commands:
        if part.transparent:
            continue
        words = part.words[part.layers.allow_start :]
        if part.assignments or not words or not words[0].static:
            return False
        name = words[0].value
        bases = resolve_dirs(part.dirs, dirs.cwd, dirs.home)
        if name not in _ACCEPT_EDITS_COMMANDS or bases is None:
            return False
        if name in ("cd", "pushd"):
            continue
        if name == "sed":
            if not _sed_ok(words[1:], bases, dirs, memo):
                return False
        elif not _paths_ok(words[1:], bases, dirs, memo):
            return False
    return all(_write_inside(write, dirs, memo) for write in analysis.writes)


def _write_inside(write: Write, dirs: WorkingDirs, memo: CallMemo) -> bool:
    if is_sink(write.target):
        return True
    paths = word_paths(write.target, resolve_dirs(write.dirs, dirs.cwd, dirs.home), dirs.home)
    return paths is not None and all(dirs.writable(p, memo) for p in paths)


def _path_ok(word: Word, bases: list[str], dirs: WorkingDirs, memo: CallMemo) -> bool:
    """The path (every match, for a glob) lies inside the working directories from each base."""
    paths = word_paths(word, bases, dirs.home)
    return paths is not None and all(dirs.writable(p, memo) for p in paths)


def _paths_ok(args: Sequence[Word], bases: list[str], dirs: WorkingDirs, memo: CallMemo) -> bool:
    options_done = False
    for word in args:
        value = word.value
        if value is None:
            return False
        if not options_done and value == "--":
            options_done = True
        elif not options_done and value.startswith("-") and value != "-":
            if word.glob:
                return False
            if "=" in value:
                option_value = Word(word.raw, value.partition("=")[2] or ".")
                if not _path_ok(option_value, bases, dirs, memo):
                    return False
            elif any(ch in value for ch in "/~."):
                return False  # an attached option value such as `-t/etc`
        elif not _path_ok(word, bases, dirs, memo):
            return False
    return True


def _sed_ok(args: Sequence[Word], bases: list[str], dirs: WorkingDirs, memo: CallMemo) -> bool:
    """``sed`` running only ``s``/``y``/``d``/``p`` (never ``w``, ``e``, ``r``) on inside paths."""
    if any(not w.static for w in args[:1]) or any(w.value is None for w in args):
        return False
    values = [w.value or "" for w in args]
    scripts: list[str] = []
    files: list[Word] = []
    has_e = any(a in ("-e", "--expression") or a.startswith("--expression=") for a in values)
    i = 0
    options_done = False
    while i < len(args):
        value = values[i]
        if not options_done and value == "--":
            options_done = True
        elif not options_done and value in ("-e", "--expression"):
            if i + 1 >= len(args) or not args[i + 1].static:
                return False
            scripts.append(values[i + 1])
            i += 1
        elif not options_done and value.startswith("--expression="):
            if args[i].glob:
                return False
            scripts.append(value.partition("=")[2])
        elif not options_done and value.startswith("-") and value != "-":
            if not _SED_OPTION.fullmatch(value) or args[i].glob:
                return False
        elif not has_e and not scripts:
            if args[i].glob:
                return False
            scripts.append(value)
        else:
            files.append(args[i])
        i += 1
    if not scripts or not all(_sed_script_ok(s) for s in scripts):
        return False
    return all(_path_ok(word, bases, dirs, memo) for word in files)


def _static_script(raw: str) -> bool:
    """A script is static if fully single-quoted or free of expansions."""
    return (len(raw) >= 2 and raw[0] == raw[-1] == "'" and raw.count("'") == 2) or not (
        "$" in raw or "`" in raw
    )


def _sed_script_ok(script: str) -> bool:
    i = 0
    n = len(script)
    while i < n:
        if script[i] in "; \t\n":
            i += 1
            continue
        m = _SED_PREFIX.match(script, i)
        i = m.end() if m else i
        if i >= n:
            return False
        op = script[i]
        if op in "dp":
            i += 1
        elif op in "sy":
            i += 1
            if i >= n or script[i] in "\\\n":
                return False
            delimiter = script[i]
            for _ in range(2):
                i += 1
                while i < n and script[i] != delimiter:
                    i += 2 if script[i] == "\\" else 1
                if i >= n:
                    return False
            i += 1
            if op == "s":
                while i < n and (script[i] in "gpiIm" or script[i].isdigit()):
                    i += 1
        else:
            return False
        while i < n and script[i] in " \t":
            i += 1
        if i < n and script[i] not in ";\n}":
            return False
    return True


def critical_removal(
    tool_name: str, tool_input: Mapping[str, Any], dirs: WorkingDirs, memo: CallMemo
) -> str | None:
    """The argument of an ``rm``/``rmdir`` that would remove a critical path, else None.

    Critical: ``/``, its direct children, the home directory, ``cwd`` and its parents, and a
    glob that empties one of them (``rm -rf ~/*``). Globs are expanded against the file system
    from the directory the shell is in after any ``cd``; an argument whose value is not known
    statically (``$DIR``, ``$(...)``, ``{a,b}``, ``~user``, arguments ``xargs`` adds, any
    relative path after a ``cd`` to an unknown place) counts as critical: ``rm -rf "$X/"`` with
    ``X`` unset removes ``/``. A command whose name is not static is judged as if it were ``rm``.
    """
    if tool_name != "Bash":
        return None
    command = tool_input.get("command")
    if not isinstance(command, str):
        return None
    for part in memo.bash(command).commands:
        if part.plain and part.words[0].raw not in _REMOVERS:
            continue  # (a plain part: its name is its first word, spelled without a directory)
        found = _critical_in(part, dirs, memo)
        if found is not None:
            return found
    return None


def _critical_in(part: Command, dirs: WorkingDirs, memo: CallMemo) -> str | None:
    inner = part.layers.inner
    if inner is None or inner >= len(part.words):
        return None
    name = part.name
    if name not in _REMOVERS and (name is not None or not part.words[inner].raw):
        return None
    if part.layers.tail:
        return f"{part.words[inner].raw} with arguments from its input"
    bases = resolve_dirs(part.dirs, dirs.cwd, dirs.home)
    for word in _removed(part.words[inner + 1 :], name == "mv"):
        if word.value is None:
            return word.raw
        paths = word_paths(word, bases, dirs.home)
        if paths is None:
            return word.raw
        for path in paths:
            if _is_critical(path, dirs) or _is_critical(memo.real(path), dirs):
                return word.raw
        if word.glob and _empties_critical(word, bases, dirs):
            return word.raw
    return None


#: Commands whose operands leave their place: ``mv ~ /tmp/x`` takes the home directory away as
#: surely as ``rm -rf ~`` does.
_REMOVERS = frozenset({"rm", "rmdir", "mv"})


def _removed(args: Sequence[Word], moving: bool) -> list[Word]:
    """The operands a command removes from their place: all of ``rm``'s; ``mv``'s sources, all
    operands but the last, or all of them with a target directory option (``-t``). A word whose
    value is not static counts as an operand. Where ``mv``'s options are read wrong, the error
    is on the safe side: a word too many is judged, never one too few."""
    operands: list[Word] = []
    target = False
    options_done = False
    index = 0
    while index < len(args):
        word, value = args[index], args[index].value
        index += 1
        if value is None or options_done or value == "-" or word.glob or value[:1] != "-":
            operands.append(word)
        elif value == "--":
            options_done = True
        elif moving and value.startswith("--"):
            option, given, _ = value.partition("=")
            if len(option) > 3 and "--target-directory".startswith(option):
                target = True
                index += not given  # the directory is the next word
        elif moving and "t" in value:
            target = True  # -t DIR, -tDIR, -ft DIR: the directory follows the t
            index += value.endswith("t")
    return operands if target or not moving else operands[:-1]


def _empties_critical(word: Word, bases: list[str] | None, dirs: WorkingDirs) -> bool:
    """``rm -rf ~/*``: a component made only of ``*?.`` in a critical directory."""
    pattern = word.pattern or ""
    if word.tilde:
        pattern = dirs.home + pattern[1:]
    for base in bases or ["/"]:
        components = absolute(pattern, base, dirs.home).split("/")
        for index, component in enumerate(components):
            if _GLOB.search(component):
                parent = "/".join(components[:index]) or "/"
                if re.fullmatch(r"[*?.]+", component) and (
                    parent == "/" or _is_critical(parent, dirs)
                ):
                    return True
                break
    return False


def _is_critical(path: str, dirs: WorkingDirs) -> bool:
    return path == "/" or path.count("/") == 1 or path == dirs.home or within(dirs.cwd, path)
