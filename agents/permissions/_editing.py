"""Which files a well-known file-changing command changes: Edit deny and ask rules against Bash.

An ``Edit`` deny rule keeps a file from the Write and Edit tools, and from Bash's redirections
and ``tee``; ``rm .env``, ``sed -i … .env`` or ``cp x .env`` would walk around it, and
``acceptEdits`` approves those commands inside the working directories. :func:`edited_paths`
names the files they change — every operand of ``rm rmdir unlink shred touch mkdir truncate``
and ``mv`` (a file moved away is changed where it was), the files ``sed -i`` edits in place,
the destination of ``cp``, ``ln`` and ``install`` (and what lands in it, when it is a
directory) — so that the rules judge each like an Edit of it. Like the reading commands'
(:mod:`._reading`), it is a second line of defence, not a sandbox: a program it does not know
(``python``, ``dd``, a script) writes what it likes.

A directory removed with ``-r`` or moved comes back with ``whole=True``: the rules then judge
everything beneath it (``rm -rf src`` removes ``src/.env``).

>>> [(c.path, c.whole) for c in edited_paths(["rm", "-f", "a", "b"], ["/repo"], "/home/u")]
[('/repo/a', False), ('/repo/b', False)]
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import NamedTuple

from ._getopt import gnu_options
from ._paths import absolute
from ._reading import Globs

__all__ = ["EDITING_COMMANDS", "Changed", "edited_paths"]


class Changed(NamedTuple):
    """A file a command changes, absolute; ``whole``: a directory changed with everything in it."""

    path: str
    whole: bool = False


def _s(*words: str) -> frozenset[str]:
    return frozenset(words)


_TARGET = _s("-t", "--target-directory", "-S", "--suffix")
#: Command name → its options that take a value (the value is not a file it changes).
EDITING_COMMANDS: dict[str, frozenset[str]] = {
    "rm": _s(),
    "rmdir": _s(),
    "unlink": _s(),
    "shred": _s("-n", "--iterations", "-s", "--size", "--random-source"),
    "touch": _s("-d", "--date", "-r", "--reference", "-t"),
    "mkdir": _s("-m", "--mode"),
    "truncate": _s("-s", "--size", "-r", "--reference"),
    "mv": _TARGET,
    "cp": _TARGET,
    "ln": _TARGET,
    "install": _TARGET | _s("-m", "--mode", "-o", "--owner", "-g", "--group"),
    "sed": _s("-e", "-f", "-l", "--expression", "--file", "--line-length"),
}
#: Commands that change only their destination (their sources are read).
_COPYING = _s("cp", "ln", "install")
#: rm's options that make it remove a directory with what it holds
_RECURSIVE = _s("-r", "-R", "--recursive")
#: sed's in-place option, which takes a backup suffix glued on only (``-i.bak``)
_IN_PLACE = _s("-i", "--in-place")
_NONE: frozenset[str] = frozenset()
_GLOB = re.compile(r"[*?\[]")


def edited_paths(
    argv: Sequence[str | None], bases: Sequence[str], home: str, globs: Globs | None = None
) -> list[Changed] | None:
    """The files the command ``argv`` changes (``argv[0]`` its name, wrappers already skipped;
    a word known only at run time is None) when run in each of ``bases``; [] for a command
    that changes no file it names; None when one it changes is known only at run time. A glob
    stands for the files it matches now and for itself, expanded through ``globs`` (one
    check's, with its limit: past it, the files are not known)."""
    if globs is None:
        globs = Globs()
    name = (argv[0] or "").rpartition("/")[2] if argv else ""
    valued = EDITING_COMMANDS.get(name)
    if valued is None:
        return []
    operands: list[str | None] = []
    target: str | None = None
    has_target = False
    in_place = False
    scripted = False
    recursive = name == "mv"  # (a directory moved takes what it holds along)
    optional = _IN_PLACE if name == "sed" else _NONE
    for option, value in gnu_options(argv[1:], valued, optional):
        if option is None:
            operands.append(value)
        elif option in optional:
            in_place = True
        elif name == "rm" and option in _RECURSIVE:
            recursive = True
        elif option in ("-t", "--target-directory") and option in valued:
            target, has_target = value, True
        elif name == "sed" and option in ("-e", "--expression", "-f", "--file"):
            scripted = True
    if name == "sed":
        if not in_place:
            return []  # it writes only to its output
        if not scripted and operands:
            operands = operands[1:]  # the script
    elif name in _COPYING or name == "mv":
        if not has_target and len(operands) >= 2:
            target, has_target, operands = operands[-1], True, operands[:-1]
        elif not has_target and name == "ln" and operands:
            target, has_target = ".", True  # `ln x`: a link named as x, here
        sources = operands
        operands = [] if name in _COPYING else list(sources)
        landed: list[str | None] = []
        if has_target:
            landed.append(target)
            for source in sources:  # what lands in the destination when it is a directory
                if source is not None and target is not None:
                    landed.append(target.rstrip("/") + "/" + source.rpartition("/")[2])
        found = _changed(operands, bases, home, recursive, globs)
        written = _changed(landed, bases, home, False, globs)
        return None if found is None or written is None else found + written
    return _changed(operands, bases, home, recursive, globs)


def _changed(
    operands: Sequence[str | None], bases: Sequence[str], home: str, recursive: bool, globs: Globs
) -> list[Changed] | None:
    paths: list[str] = []
    for operand in operands:
        if operand is None:
            return None
        if not operand or operand == "-":
            continue
        for base in bases:
            path = absolute(operand, base, home)
            paths.append(path)
            if _GLOB.search(operand):
                matches = globs.expand(path)
                if matches is None:  # past the check's limit of patterns
                    return None
                paths.extend(matches)
    # (a directory only: a file removed or moved is that file, whatever rule covers its folder)
    return [Changed(path, recursive and os.path.isdir(path)) for path in paths]
