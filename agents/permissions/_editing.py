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
everything beneath it (``rm -rf src`` removes ``src/.env``); so does the destination of a tree
copied (``cp -r``, ``cp -a``) or moved, whose contents are not known before they land. The
missing directories ``mkdir -p``, ``install -D`` and ``cp --parents`` make on the way count, and
so do the backups ``-b``/``-S``/``--backup`` and ``sed -i.bak`` keep (a numbered backup's name
is known only at run time). ``tests/agents/permissions/test_edits_against_coreutils.py`` runs
random commands in a scratch tree and checks every entry GNU coreutils changes was named.

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
#: Commands that may keep a backup of a destination they replace.
_REPLACING = _COPYING | _s("mv")
#: rm's options that make it remove a directory with what it holds
_RECURSIVE = _s("-r", "-R", "--recursive")
#: cp's options that copy a directory with what it holds
_COPIES_TREES = _s("-r", "-R", "--recursive", "-a", "--archive")
#: sed's in-place option, which takes a backup suffix glued on only (``-i.bak``)
_IN_PLACE = _s("-i", "--in-place")
#: The backup option of the commands that replace a destination: its control glued on only
_BACKUP = _s("--backup")
#: ``--backup`` controls that make ``name~`` (the others number the backups: ``name.~1~``)
_SIMPLE_BACKUPS = _s("", "simple", "never")
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
    # what lands in the destination is a tree (a directory moved or copied with `-r`): judged
    # whole, as the destination does not exist yet to tell
    tree = name == "mv"
    parents = False  # `cp --parents a/b dst` makes dst/a/b
    # the missing directories on the way are made too (`mkdir -p`, `install -D`, `cp --parents`)
    ancestors = False
    directories = False  # `install -d a b` makes each operand a directory
    backup: str | None = None  # the suffix a replaced destination's backup gets
    numbered = False  # a backup named by a number only known at run time
    optional = _IN_PLACE if name == "sed" else _BACKUP if name in _REPLACING else _NONE
    for option, value in gnu_options(argv[1:], valued, optional):
        if option is None:
            operands.append(value)
        elif option in _IN_PLACE and name == "sed":
            in_place = True
            backup = value or None  # `-i.bak` keeps the old file as f.bak
        elif option == "--backup" and name in _REPLACING:
            if value in ("none", "off"):
                backup, numbered = None, False
            elif value in _SIMPLE_BACKUPS:
                backup = backup or "~"
            else:
                numbered = True
        elif option == "-b" and name in _REPLACING:
            backup = backup or "~"  # (`VERSION_CONTROL` may number them: not read here)
        elif option in ("-S", "--suffix") and name in _REPLACING:
            backup = value or "~"  # (a suffix makes backups, as `-b` does)
        elif name == "rm" and option in _RECURSIVE:
            recursive = True
        elif option in ("-t", "--target-directory") and option in valued:
            target, has_target = value, True
        elif name == "sed" and option in ("-e", "--expression", "-f", "--file"):
            scripted = True
        elif name == "cp" and option in _COPIES_TREES:
            tree = True
        elif name == "cp" and option == "--parents":
            parents = ancestors = True
        elif name == "install" and option in ("-d", "--directory"):
            directories = True
        elif (name == "mkdir" and option in ("-p", "--parents")) or (
            name == "install" and option == "-D"
        ):
            ancestors = True
        elif name == "rmdir" and option in ("-p", "--parents"):
            parents = True  # `rmdir -p a/b` removes a/ too, once empty
    if directories:
        created = [*operands, target] if has_target else operands
        return _changed(created, bases, home, False, globs, ancestors=True)  # (as `mkdir -p`)
    if numbered:
        return None  # its backups' names are numbered at run time
    if name == "rmdir" and parents:  # each directory its operand names on the way
        for operand in list(operands):
            while operand is not None and "/" in operand.strip("/"):
                operand = operand.rstrip("/").rpartition("/")[0]
                operands.append(operand)
    if name == "sed":
        if not in_place:
            return []  # it writes only to its output
        if not scripted and operands:
            operands = operands[1:]  # the script
        if backup is not None:
            operands += [_sed_backup(f, backup) for f in operands if f is not None]
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
                    name_there = source.lstrip("/") if parents else source.rpartition("/")[2]
                    landed.append(target.rstrip("/") + "/" + name_there)
        if backup is not None:  # the destination it replaces is kept as name~
            landed += [p + backup for p in landed if p is not None]
        found = _changed(operands, bases, home, recursive, globs)
        written = _changed(landed, bases, home, False, globs, tree=tree, ancestors=ancestors)
        return None if found is None or written is None else found + written
    return _changed(operands, bases, home, recursive, globs, ancestors=ancestors)


def _sed_backup(file: str, suffix: str) -> str:
    """Where ``sed -i<suffix>`` keeps ``file``'s old text: ``file<suffix>``, or with each ``*``
    of the suffix replaced by the file's name (beside it, or where a ``/`` in it says)."""
    folder, slash, name = file.rpartition("/")
    if "*" not in suffix:
        return file + suffix
    backup = suffix.replace("*", name)
    return backup if "/" in backup else folder + slash + backup


def _changed(
    operands: Sequence[str | None],
    bases: Sequence[str],
    home: str,
    recursive: bool,
    globs: Globs,
    *,
    tree: bool = False,
    ancestors: bool = False,
) -> list[Changed] | None:
    paths: list[str] = []
    for operand in operands:
        if operand is None:
            return None
        if not operand or operand == "-":
            continue
        for base in bases:
            path = absolute(operand, base, home)
            if ancestors:  # the directories on the way that are not there yet
                parent = path.rpartition("/")[0]
                while parent and not os.path.lexists(parent):
                    paths.append(parent)
                    parent = parent.rpartition("/")[0]
            paths.append(path)
            if _GLOB.search(operand):
                matches = globs.expand(path)
                if matches is None:  # past the check's limit of patterns
                    return None
                paths.extend(matches)
    if tree:  # (a destination: what lands there is not known before it lands)
        return [Changed(path, True) for path in paths]
    # (a directory only: a file removed or moved is that file, whatever rule covers its folder)
    return [Changed(path, recursive and os.path.isdir(path)) for path in paths]
