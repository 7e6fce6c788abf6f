"""What the Bash analysis reports: the commands a line may run, the files it writes, where.

Directory states (:data:`Dirs`) are symbolic: a set of sequences of ``cd`` targets, each applied
from the session's directory, so one analysis serves any session; ``None`` means unknown. A
sequence is a :class:`Place`, shared with the sequence it extends and made once per analysis
(``cd a && cd b && …`` costs a step per ``cd``, where copying each sequence cost its length:
quadratic in the line).
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
    "Place",
    "Places",
    "Result",
    "Write",
    "cd_dirs",
    "new_command",
    "session_dirs",
    "spelled",
    "steps",
    "union",
    "union_all",
]


class Place:
    """The ``cd`` targets applied, in order, from the session's directory: ``target`` after
    those of ``parent`` (the session's directory itself has neither).

    Places are made by :func:`cd_dirs` only, which returns the same object for the same parent
    and target within one analysis (the walk's ``places``), so there two places are equal
    exactly when they are the same object: a set of them hashes and compares each in one step,
    however long the sequence. (A place points to its parent only: the table of places made is
    the walk's, so an analysis leaves no cycle to the garbage collector.)
    """

    __slots__ = ("parent", "target", "where")

    def __init__(self, parent: Place | None = None, target: str = "") -> None:
        self.parent = parent
        self.target = target
        #: ``(cwd, home, directory)``: where this place was last resolved to (a cache kept by
        #: :func:`~._bash.resolve_dirs`, so that each place is resolved once, not once for
        #: every command after it)
        self.where: tuple[str, str, str] | None = None

    def __repr__(self) -> str:
        return f"Place{steps(self)!r}"


#: The places one analysis has made, by parent and ``cd`` target.
Places = dict[tuple[Place, str], Place]


def steps(place: Place) -> tuple[str, ...]:
    """The ``cd`` targets ``place`` applies, first to last."""
    out: list[str] = []
    node: Place | None = place
    while node is not None and node.parent is not None:
        out.append(node.target)
        node = node.parent
    out.reverse()
    return tuple(out)


def spelled(dirs: Dirs) -> frozenset[tuple[str, ...]] | None:
    """``dirs`` as sequences of ``cd`` targets (comparable across analyses, for tests)."""
    return None if dirs is None else frozenset(steps(place) for place in dirs)


#: Directory states: the places a shell may be in; None when unknown.
Dirs = frozenset[Place] | None


def session_dirs() -> Dirs:
    """Where a line starts: the session's directory, no ``cd`` applied (a fresh place, the
    root of one analysis's places)."""
    return frozenset({Place()})


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


def cd_dirs(dirs: frozenset[Place], target: str, places: Places) -> Dirs:
    """The places after ``cd target`` from each of ``dirs``, each made once in ``places``."""
    moved = []
    for place in dirs:
        key = (place, target)
        after = places.get(key)
        if after is None:
            after = places[key] = Place(place, target)
        moved.append(after)
    out = frozenset(moved)
    return out if len(out) <= MAX_DIRS else None
