"""What the Bash analysis reports: the commands a line may run, the files it writes, where.

Directory states (:data:`Dirs`) are symbolic: a set of sequences of ``cd`` targets, each applied
from the session's directory, so one analysis serves any session; ``None`` means unknown.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

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
    "union",
    "union_all",
]

#: Directory states: each tuple is the ``cd`` targets applied in order; None when unknown.
Dirs = frozenset[tuple[str, ...]] | None
#: More possible directories than this count as unknown.
MAX_DIRS = 16


@attrs.frozen(slots=True, eq=False)
class Command:
    """One simple command that may run.

    ``words``: the command name and arguments (leading ``NAME=value`` assignments are apart, in
    ``assignments``). ``layers`` tells where the wrapped commands start. ``dirs``: where the
    innermost command may run. ``transparent``: the command only runs a literal script (``eval
    'x'``, ``sh -c 'x'``), whose commands are listed on their own; allow rules need not name it.
    ``plain``: an ordinary command (no wrapper, special builtin, assignment or directory in its
    name) of plain literal words only, each meaning itself: every rule sees it as written.
    """

    words: tuple[Word, ...]
    assignments: tuple[Word, ...]
    layers: Unwrapped
    dirs: Dirs
    transparent: bool = False
    plain: bool = False
    _text: str | None = attrs.field(init=False, default=None, repr=False)

    @property
    def text(self) -> str:
        """The command as written, words joined by single spaces (computed once: every kind
        of rule tries it)."""
        text = self._text
        if text is None:
            text = " ".join([w.raw for w in self.assignments] + [w.raw for w in self.words])
            object.__setattr__(self, "_text", text)  # a cache, not a change of value
        return text

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
