"""Bash rules at work: the parts of an analysed command line judged against compiled rules.

Split from :mod:`._rules`, which parses the rules and compiles them into indexes
(``KindIndex``: ``bash_by_word``, ``bash_wild``, ``bash_any``, ``edit_paths``); the functions
here read those indexes and the :class:`~._bash.Analysis` of one command line:

* a deny or ask rule covers the line if it matches *any* part (each spelling of
  :func:`~._bash.deny_forms`), or an ``Edit`` rule covers a file it writes; what cannot be seen
  (an opaque construct, an argument not known statically, a write whose path is unknown) asks
  when a deny or ask rule could match it;
* an allow rule result means *every* part matched an allow rule and every write an ``Edit``
  allow rule; what is opaque only ``Bash(*)`` allows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from ._bash import (
    Analysis,
    Command,
    allow_forms,
    deny_forms,
    is_sink,
    resolve_dirs,
    varying,
    word_paths,
)
from ._bash_words import BraceLimit
from ._editing import EDITING_COMMANDS, Changed, edited_paths
from ._memo import CallMemo
from ._path_rules import command_argv, edit_allowed, judge_path, judge_tree
from ._stars import stars

if TYPE_CHECKING:
    from ._rules import KindIndex, PermissionRule

__all__ = ["bash_first_word", "bash_pattern_regex", "bash_relevant", "match_bash"]

_Kind = Literal["deny", "ask", "allow"]


def bash_pattern_regex(pattern: str) -> str:
    """The regex source (for ``fullmatch``) of a Bash command pattern.

    ``*`` matches anything; a trailing `` *`` (or ``:*``) matches the prefix alone or followed by
    a space and anything, so ``ls *`` matches ``ls`` and ``ls -la`` but not ``lsof``. Without a
    ``*`` the pattern matches only the exact command. Whitespace runs count as one space.
    """
    pattern = " ".join(pattern.split())
    if pattern.endswith(":*"):
        pattern = pattern[:-2] + " *"
    suffix = ""
    if pattern.endswith(" *"):
        pattern, suffix = pattern[:-2], "(?: .*)?"
    return stars([re.escape(piece) for piece in pattern.split("*")]) + suffix


def bash_first_word(pattern: str) -> str | None:
    """The literal first word of a Bash pattern (its index key), None if it has a wildcard."""
    words = " ".join(pattern.split()).removesuffix(":*").split(" ")
    first = words[0]
    return None if "*" in first or not first else first


def bash_relevant(kind: _Kind, indexes: Mapping[str, KindIndex]) -> bool:
    """Whether any rule could decide a Bash call for ``kind`` (else the analysis is skipped):
    Bash rules, and for deny/ask also ``Edit`` rules (redirections write files)."""
    index = indexes[kind]
    if kind == "allow":
        return bool(index.bash_by_word) or index.bash_wild is not None
    kinds = (index,) if kind == "deny" else (indexes["deny"], index)
    return any(bool(i.bash_by_word or i.edit_paths) or i.bash_wild is not None for i in kinds)


def match_bash(
    kind: _Kind,
    indexes: Mapping[str, KindIndex],
    analysis: Analysis,
    cwd: str,
    home: str,
    memo: CallMemo,
) -> PermissionRule | None:
    """The rule of ``kind`` that covers the Bash command line of ``analysis`` (see the
    module's doc)."""
    index = indexes[kind]
    if kind == "allow":
        return _allow_bash(index, analysis, cwd, home, memo)
    if analysis.opaque and index.bash_any is not None:
        return index.bash_any  # `Bash(*)` names whatever the command may be
    match_text = index.match_text
    by_word = index.bash_by_word.get
    for part in analysis.commands:
        if part.plain:  # its one spelling is its text (see `deny_forms`)
            text = part.text
            space = text.find(" ")
            if by_word(text if space < 0 else text[:space]) is None and index.bash_wild is None:
                continue  # (what `match_text` finds: no rule names its first word)
            found = match_text(text)
            if found is not None:
                return found
            continue
        for text in memo.forms(part, deny_forms):
            found = match_text(text)
            if found is not None:
                return found
    found = _bash_writes(kind, index, analysis, cwd, home, memo) if index.edit_paths else None
    if found is None and kind == "ask":
        # what the analysis cannot see might match a deny or ask rule: ask, never allow
        found = _could_match(indexes, analysis, cwd, home, memo)
    return found


def _could_match(
    indexes: Mapping[str, KindIndex], analysis: Analysis, cwd: str, home: str, memo: CallMemo
) -> PermissionRule | None:
    """A deny or ask rule the command might match at run time (an opaque construct, an
    argument not known statically, a write whose path is not known)."""
    varied: list[Command] | None = None  # the parts whose arguments vary (worked out once)
    unknown: bool | None = None  # whether a file a part changes is known only at run time
    for kind in ("deny", "ask"):
        index = indexes[kind]
        if index.bash_by_word or index.bash_wild is not None:
            if analysis.opaque:
                return _any_bash_rule(index)
            if varied is None:  # (a plain part's words are all known)
                varied = []
                for part in analysis.commands:
                    if not part.plain and varying(part):
                        varied.append(part)
            for part in varied:
                name = part.name
                alternation = index.bash_by_word.get(name) if name else None
                alternation = alternation or index.bash_wild
                if alternation is not None:
                    return alternation.rules[0]
        if index.edit_paths:
            for write in analysis.writes:
                if not is_sink(write.target) and (
                    word_paths(write.target, resolve_dirs(write.dirs, cwd, home), home) is None
                ):
                    return next(iter(index.edit_paths.values())).rules[0]
            if unknown is None:
                unknown = _changes(analysis, cwd, home, memo)[1]
            if unknown:
                return next(iter(index.edit_paths.values())).rules[0]
    return None


def _any_bash_rule(index: KindIndex) -> PermissionRule:
    if index.bash_wild is not None:
        return index.bash_wild.rules[0]
    return next(iter(index.bash_by_word.values())).rules[0]


def _allow_bash(
    index: KindIndex, analysis: Analysis, cwd: str, home: str, memo: CallMemo
) -> PermissionRule | None:
    """Allowed only if every part matches an allow rule and every write an ``Edit`` allow rule
    (or goes to ``/dev/null``); what is opaque only ``Bash(*)`` allows."""
    if analysis.opaque:
        return index.bash_any
    first: PermissionRule | None = None
    for part in analysis.commands:
        words = part.words
        if part.transparent or (words and not part.assignments and words[0].raw in _MOVES):
            continue  # `sh -c 'x'`: the script's parts are judged; `cd x` changes nothing
        if part.plain:  # its one spelling is its text (see `allow_forms`)
            found = index.match_text(part.text)
        else:
            found = None
            for text in allow_forms(part):
                found = index.match_text(text)
                if found is not None:
                    break
        if found is None:
            return None
        first = first or found
    if first is None or not _writes_allowed(index, analysis, cwd, home, memo):
        return None
    return first


#: ``cd``/``pushd``/``popd`` by their plain names: they change no file and run nothing (the
#: paths written after them are judged from where they lead).
_MOVES = frozenset({"cd", "pushd", "popd"})


def _writes_allowed(
    index: KindIndex, analysis: Analysis, cwd: str, home: str, memo: CallMemo
) -> bool:
    """Every redirection target is a sink or covered by an ``Edit`` allow rule."""
    for write in analysis.writes:
        if is_sink(write.target):
            continue
        paths = word_paths(write.target, resolve_dirs(write.dirs, cwd, home), home)
        if paths is None:
            return False
        for path in paths:
            if edit_allowed(index, path, cwd, home, memo) is None:
                return False
    return True


def _bash_writes(
    kind: _Kind, index: KindIndex, analysis: Analysis, cwd: str, home: str, memo: CallMemo
) -> PermissionRule | None:
    """The deny or ask ``Edit`` rule covering a file the command writes: by redirection, or
    as a file-changing command's operand (``rm .env``, ``sed -i … .env``, ``cp x .env``)."""
    if not index.edit_paths:
        return None
    for write in analysis.writes:
        if is_sink(write.target):
            continue
        paths = word_paths(write.target, resolve_dirs(write.dirs, cwd, home), home)
        for path in paths or ():
            rule = judge_path(kind, index.edit_paths, path, cwd, home, memo)
            if rule is not None:
                return rule
    for changed in _changes(analysis, cwd, home, memo)[0]:
        rule = judge_path(kind, index.edit_paths, changed.path, cwd, home, memo)
        if rule is None and changed.whole:
            rule = judge_tree(index.edit_bases, changed.path, cwd, home, memo)
        if rule is not None:
            return rule
    return None


def _changes(analysis: Analysis, cwd: str, home: str, memo: CallMemo) -> tuple[list[Changed], bool]:
    """The files the line's file-changing parts change (:func:`._editing.edited_paths`), each
    once, and whether a part changes one known only at run time (a word or its directory).
    Once per check: deny, ask and what might match at run time all look."""
    key = id(analysis)  # (kept alive by the memo's analyses for the whole check)
    found = memo.changed.get(key)
    if found is None:
        files: list[Changed] = []
        unknown = False
        for part in analysis.commands:
            if part.plain and part.words[0].raw not in EDITING_COMMANDS:
                continue  # (what `command_argv` says first, without a call)
            changed = _find_changed(part, cwd, home, memo)
            if changed is None:
                unknown = True
            else:
                files += changed
        # (`mkdir -p build && cp -r src build/`: `build` is judged once)
        found = memo.changed[key] = (list(dict.fromkeys(files)) if files else files, unknown)
    return found


def _find_changed(part: Command, cwd: str, home: str, memo: CallMemo) -> list[Changed] | None:
    try:
        argv = command_argv(part, EDITING_COMMANDS)
    except BraceLimit:
        return None  # too many words to list: not known
    if argv is None:
        return []
    bases = resolve_dirs(part.dirs, cwd, home)
    return None if bases is None else edited_paths(argv, bases, home, memo.globs)
