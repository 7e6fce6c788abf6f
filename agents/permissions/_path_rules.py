"""Path rules at work: a path judged as written and as its real target, exact rules for files
with several hard links, the fixed part of a pattern, and the files Bash commands read.

Split from :mod:`._rules`, which compiles the rules into indexes; the functions here read those
indexes (``KindIndex`` fields ``read_paths``, ``edit_paths``, ``read_bases``, ``edit_literals``).
"""

from __future__ import annotations

import re
from collections.abc import Container, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ._bash import Analysis, Command, basename, resolve_dirs, word_paths
from ._bash_words import BraceLimit, bash_words
from ._checked import hard_linked
from ._memo import CallMemo
from ._paths import absolute, relative_to, within
from ._reading import READING_COMMANDS, ReadArgument, reading_paths, reads_no_file

if TYPE_CHECKING:
    from ._rules import Alternation, KindIndex, PermissionRule

__all__ = [
    "command_argv",
    "edit_allowed",
    "fixed_part",
    "judge_path",
    "judge_tree",
    "match_bash_reads",
    "match_one_path",
    "match_path",
    "match_reads",
    "naming_rule",
]

_PATH_GLOB = re.compile(r"[*?\[]")
_Kind = Literal["deny", "ask", "allow"]


def fixed_part(spec: str) -> tuple[str, bool, bool]:
    """A path rule's leading components without wildcards (relative to its anchor), whether
    it matches at any depth (a bare name), and whether it has no wildcard at all."""
    rest = spec
    for prefix in ("//", "~/", "/", "./"):
        if rest.startswith(prefix):
            rest = rest[len(prefix) :]
            break
    else:
        if spec == "~":
            rest = ""
    any_depth = not spec.startswith(("/", "~", "./")) and "/" not in spec.rstrip("/")
    fixed: list[str] = []
    components = [c for c in rest.split("/") if c and c != "."]
    for component in components:
        if _PATH_GLOB.search(component):
            break
        fixed.append(component)
    literal = len(fixed) == len(components) and not any_depth
    base = "" if any_depth else posixpath_norm("/".join(fixed))
    return base, any_depth, literal


def posixpath_norm(rel: str) -> str:
    """``rel`` with ``.`` and ``..`` applied lexically (rule text is not a filesystem path)."""
    out: list[str] = []
    for component in rel.split("/"):
        if component == "..":
            if out:
                out.pop()
        elif component and component != ".":
            out.append(component)
    return "/".join(out)


def match_path(
    kind: _Kind,
    by_anchor: Mapping[str, Alternation],
    tool_name: str,
    tool_input: Mapping[str, Any],
    cwd: str,
    home: str,
    memo: CallMemo,
) -> PermissionRule | None:
    if not by_anchor:
        return None
    path = memo.tool_path(tool_name, tool_input, cwd, home)
    if path is None:
        return None
    return judge_path(kind, by_anchor, path, cwd, home, memo)


def judge_path(
    kind: _Kind,
    by_anchor: Mapping[str, Alternation],
    path: str,
    cwd: str,
    home: str,
    memo: CallMemo,
) -> PermissionRule | None:
    """The rule covering the absolute ``path`` as written and as its real target: for deny and
    ask either suffices, for allow both must match (the rule returned matched as written)."""
    anchors = {"root": "/", "home": home, "cwd": cwd}
    found = match_one_path(by_anchor, anchors, path)
    resolved = memo.real(path)
    if resolved == path:
        return found
    if kind != "allow" and found is not None:
        return found
    if kind == "allow" and found is None:
        return None
    # The target of a symlink is judged against the anchors as resolved too.
    real_anchors = {"root": "/", "home": memo.real(home), "cwd": memo.real(cwd)}
    target = match_one_path(by_anchor, anchors, resolved) or match_one_path(
        by_anchor, real_anchors, resolved
    )
    return target if kind != "allow" else (found if target is not None else None)


def naming_rule(
    index: KindIndex, path: str, target: str, cwd: str, home: str, memo: CallMemo
) -> PermissionRule | None:
    """An Edit rule without wildcards that names ``path`` or its real ``target`` exactly."""
    if not index.edit_literals:
        return None
    anchors = {"root": "/", "home": home, "cwd": cwd}
    real_anchors = {"root": "/", "home": memo.real(home), "cwd": memo.real(cwd)}
    for anchor, rel, rule in index.edit_literals:
        for base in {anchors[anchor], real_anchors[anchor]}:
            named = base if not rel else base.rstrip("/") + "/" + rel
            if named in (path, target):
                return rule
    return None


def edit_allowed(
    index: KindIndex, path: str, cwd: str, home: str, memo: CallMemo
) -> PermissionRule | None:
    """The Edit allow rule covering a write to ``path``; for an existing file with several hard
    links, only a rule naming it exactly (a rule for a tree cannot tell where its other names
    lie)."""
    if not index.edit_paths:
        return None
    rule = judge_path("allow", index.edit_paths, path, cwd, home, memo)
    if rule is not None and hard_linked(memo.real(path)):
        return naming_rule(index, path, memo.real(path), cwd, home, memo)
    return rule


def match_bash_reads(
    index: KindIndex, analysis: Analysis, cwd: str, home: str, memo: CallMemo
) -> PermissionRule | None:
    """A Read rule covering a file the command reads: the file arguments of its reading commands
    (every command of the line, wrappers stripped, from each directory it may run in) and the
    files its input redirections name. Best effort: words known only at run time name no file,
    but keep their place (``grep $X .env`` reads ``.env``); brace expansions are listed."""
    for part in analysis.commands:
        if part.plain and part.words[0].raw not in READING_COMMANDS:
            continue  # (what `command_argv` says first, without a call)
        try:
            words = command_argv(part, READING_COMMANDS)
        except BraceLimit:
            return _match_read_argument(index, _EVERYTHING, cwd, home, memo)
        if words is None:
            continue  # not a reading command: it names no file read
        # (a word known only at run time, as an empty one: it names no file, but an option's
        # value or a pattern it may be is not taken from the next word)
        argv = tuple("" if w is None else w for w in words)
        if reads_no_file(argv):
            continue  # (what `match_reads` finds from every directory: no file read)
        for base in resolve_dirs(part.dirs, cwd, home) or [cwd]:
            rule = match_reads(index, (basename(argv[0]), *argv[1:]), base, cwd, home, memo)
            if rule is not None:
                return rule
    for read in analysis.reads:
        bases = resolve_dirs(read.dirs, cwd, home)
        paths = word_paths(read.target, bases, home)
        if paths is None and read.target.value is None:  # `< .env{,}`: the words it names
            try:
                named = bash_words(read.target.raw) or ()
            except BraceLimit:
                return _match_read_argument(index, _EVERYTHING, cwd, home, memo)
            paths = [absolute(w, base, home) for w in named for base in bases or [cwd] if w]
        for path in paths or ():
            rule = judge_path("deny", index.read_paths, path, cwd, home, memo)
            if rule is not None:
                return rule
    return None


#: What a read too big to list stands for: everything (so any Read deny rule covers it).
_EVERYTHING = ReadArgument("/", recursive=True)


def command_argv(part: Command, commands: Container[str]) -> Sequence[str | None] | None:
    """The words the innermost command of ``part`` gets, when its name (without its directory)
    is one of ``commands``, else None: its name first, each brace expansion's words in its
    place, and a word known only at run time as None (wrappers and a leading run-time word
    skipped). Raises :class:`BraceLimit` for an expansion too big to list. The reading and
    the file-changing commands' files are both found from it."""
    words = part.words
    if part.plain:
        # its name is its first word, spelled without a directory, and every word means
        # itself (no wrapper, expansion or run-time word): its words are its text's
        return part.text.split(" ") if words[0].raw in commands else None
    start = part.layers.inner
    if start is None:
        return None
    while start < len(words) and words[start].value is None:
        start += 1
    name = words[start].value if start < len(words) else None
    if name is None or basename(name) not in commands:
        return None
    argv: list[str | None] = [name]
    for word in words[start + 1 :]:
        value = word.value
        if value is not None:
            argv.append(value)
            continue
        expanded = bash_words(word.raw)
        if expanded is None:
            argv.append(None)
        else:
            argv.extend(expanded)
    return argv


def match_reads(
    index: KindIndex,
    argv: tuple[str, ...],
    directory: str,
    cwd: str,
    home: str,
    memo: CallMemo,
    inputs: Sequence[str] = (),
) -> PermissionRule | None:
    """The Read rule of ``index`` covering a file the simple command ``argv`` (wrappers and
    redirections removed, ``argv[0]`` the command) reads when run in ``directory`` — its file
    arguments and the ``inputs`` its input redirections name — or None; rules are anchored at
    the session's ``cwd``."""
    if not index.read_paths:
        return None
    # A path judged once this check is not judged again (by path and whether it is read
    # whole): a line repeating `cat *.txt` beside 2 000 files judged the same 1 000 matches for
    # every command of it. A command's reads are found once too (``Globs.commands``), and once
    # all of them are cleared, that list is skipped whole.
    cleared = memo.cleared
    of = id(index)
    reads = reading_paths(argv, directory, home, memo.globs)
    whole = (of, id(reads))
    lists: list[Sequence[ReadArgument]] = [
        [ReadArgument(absolute(p, directory, home)) for p in inputs if p]
    ]
    if reads and whole not in cleared:
        lists.append(reads)
    for arguments in lists:
        for argument in arguments:
            key = (of, argument.path, argument.recursive)
            if key in cleared:
                continue
            rule = _match_read_argument(index, argument, cwd, home, memo)
            if rule is not None:
                return rule
            cleared.add(key)
    if reads:
        cleared.add(whole)
    return None


def _match_read_argument(
    index: KindIndex, argument: ReadArgument, cwd: str, home: str, memo: CallMemo
) -> PermissionRule | None:
    rule = judge_path("deny", index.read_paths, argument.path, cwd, home, memo)
    if rule is not None or not argument.recursive:
        return rule
    return judge_tree(index.read_bases, argument.path, cwd, home, memo)


def judge_tree(
    bases: Sequence[tuple[str, str, bool, PermissionRule]],
    directory: str,
    cwd: str,
    home: str,
    memo: CallMemo,
) -> PermissionRule | None:
    """The first rule of ``bases`` (by the fixed part of its pattern: ``KindIndex.read_bases``
    or ``edit_bases``) that may cover something in ``directory`` taken with everything beneath
    it (a recursive read, a removal or move of the whole tree): its fixed part lies inside the
    directory, or contains it."""
    target = memo.real(directory)
    anchors = {"root": "/", "home": home, "cwd": cwd}
    real_anchors = {"root": "/", "home": memo.real(home), "cwd": memo.real(cwd)}
    for anchor, base, _any_depth, rule in bases:
        for root in {anchors[anchor], real_anchors[anchor]}:
            fixed = root if not base else root.rstrip("/") + "/" + base
            for path in (directory, target):
                if within(fixed, path) or within(path, fixed):
                    return rule
    return None


def match_one_path(
    by_anchor: Mapping[str, Alternation], anchors: Mapping[str, str], path: str
) -> PermissionRule | None:
    for anchor, alternation in by_anchor.items():
        rel = relative_to(path, anchors[anchor])
        if rel is not None:
            rule = alternation.match(rel)
            if rule is not None:
                return rule
    return None
