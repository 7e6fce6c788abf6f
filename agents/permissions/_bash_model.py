"""What the Bash analysis reports: the commands a line may run, the files it writes, where.

Directory states (:data:`Dirs`) are symbolic: a set of sequences of ``cd`` targets, each applied
from the session's directory, so one analysis serves any session; ``None`` means unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ._bash_words import Word
from ._bash_wrappers import Unwrapped, basename

__all__ = [
    "MAX_DIRS",
    "Analysis",
    "Command",
    "Dirs",
    "Opaque",
    "Result",
    "Write",
    "cd_dirs",
    "new_command",
    "union",
    "union_all",
]

#: Directory states: each tuple is the ``cd`` targets applied in order; None when unknown.
Dirs = frozenset[tuple[str, ...]] | None
#: More possible directories than this count as unknown.
MAX_DIRS = 16


class Command(NamedTuple):
    """One simple command that may run (made by :func:`command`, which spells its text).

    ``words``: the command name and arguments (leading ``NAME=value`` assignments are apart, in
    ``assignments``). ``layers`` tells where the wrapped commands start. ``dirs``: where the
    innermost command may run. ``transparent``: the command only runs a literal script (``eval
    'x'``, ``sh -c 'x'``), whose commands are listed on their own; allow rules need not name it.
    ``plain``: an ordinary command (no wrapper, special builtin, assignment or directory in its
    name), or a ``cd`` to one directory, of plain literal words only, each meaning itself:
    every rule sees it as written.
    ``text``: the command as written, words joined by single spaces (every kind of rule tries
    it). (A named tuple, like :class:`Word`: the cheapest immutable record to make, and a
    command line makes one per simple command.)
    """

    words: tuple[Word, ...]
    assignments: tuple[Word, ...]
    layers: Unwrapped
    dirs: Dirs
    transparent: bool
    plain: bool
    text: str

    @property
    def name(self) -> str | None:
        """The innermost command's name without its directory, None if not static."""
        inner = self.layers.inner
        if inner is None or inner >= len(self.words):
            return None
        head = self.words[inner]
        return basename(head.value) if head.value is not None and not head.glob else None


def new_command(
    words: tuple[Word, ...],
    assignments: tuple[Word, ...],
    layers: Unwrapped,
    dirs: Dirs,
    transparent: bool = False,
    plain: bool = False,
) -> Command:
    """A :class:`Command`, its text joined from its assignments' and words' source text."""
    if assignments:
        text = " ".join([w.raw for w in assignments] + [w.raw for w in words])
    else:
        text = " ".join([w.raw for w in words])
    return _new_tuple(Command, (words, assignments, layers, dirs, transparent, plain, text))


_new_tuple = tuple.__new__


class Write(NamedTuple):
    """A file an output redirection (or ``tee``) writes, with where the shell may be."""

    target: Word
    dirs: Dirs


class Opaque(NamedTuple):
    """A construct the analysis cannot decide statically: it may run anything."""

    reason: str


class Analysis(NamedTuple):
    """Everything one command line may do, as far as the permission rules are concerned."""

    commands: tuple[Command, ...]
    writes: tuple[Write, ...]
    opaque: tuple[Opaque, ...]
    #: files read by input redirection (``< file``), for the Read deny rules
    reads: tuple[Write, ...] = ()


def union(a: Dirs, b: Dirs) -> Dirs:
    if a is b:
        return a  # (the common case: a command that moves nothing)
    if a is None or b is None:
        return None
    both = a | b
    return both if len(both) <= MAX_DIRS else None


def union_all(states: Iterable[Dirs]) -> Dirs:
    out: Dirs = frozenset()
    for state in states:
        out = union(out, state)
    return out


Result = tuple[Dirs, Dirs]  # the directories after success, after failure


def cd_dirs(dirs: frozenset[tuple[str, ...]], target: str) -> Dirs:
    moved = frozenset((*d, target) for d in dirs)
    return moved if len(moved) <= MAX_DIRS else None
