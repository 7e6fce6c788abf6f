"""Which files a well-known reading command reads: a second line of defence for Read deny rules.

A Read deny rule keeps a file from the Read, Glob and Grep tools; ``cat .env`` through Bash would
walk around it. :func:`reading_paths` names the file arguments of the common reading commands
(``cat``, ``head``, ``tail``, ``less``, ``more``, ``grep``, ``rg``, ``sed``, ``awk``, ``cut``,
``sort``, ``base64``, ``xxd``, ``od``, ``strings``, ``diff``, ``cp``'s sources and a few more), so
that the rules can judge them like a Read of each file. It is best effort, not a sandbox: a
program it does not know (``python -c``, ``dd``, a script) reads what it likes, and a word whose
value is only known at run time (``$FILE``) is not followed. Deny rules only ever gain from it.

Directory arguments of recursive readers (``grep -r``, ``rg``, ``cp -r``, ``diff -r``) come back
with ``recursive=True``: the rules then deny them when a Read deny rule could cover something
beneath. A reader that follows the symbolic links it meets (``grep -R``, ``rg -L``, ``cp -rL``,
``diff -r``) reads what they point to as well, wherever that is: a link in the tree to a denied
file or directory (a repository may ship ``docs/keys -> ~/.ssh``) is followed the same way and its
target judged as read. A tree too big to walk within the check's bound counts as reading
everything, so a Read deny rule then denies it.

>>> [r.path for r in reading_paths(["head", "-n", "5", "notes.txt"], "/repo")]
['/repo/notes.txt']
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from typing import NamedTuple

import attrs

from ._getopt import gnu_options
from ._paths import absolute, home_dir

__all__ = [
    "MAX_GLOB_WORDS",
    "READING_COMMANDS",
    "Globs",
    "ReadArgument",
    "reading_paths",
    "reads_no_file",
]

_GLOB = re.compile(r"[*?\[]")
#: Directory entries a link-following read may cost the check before it counts as reading
#: everything (a few milliseconds of ``scandir``).
WALK_LIMIT = 20_000


class ReadArgument(NamedTuple):
    """One path a command reads: absolute, ``..`` applied; ``recursive`` if a directory's whole
    contents are read. (A named tuple, like the analysis' records: made for every path a
    check judges, and hashed for the check's memo.)"""

    path: str
    recursive: bool = False


@attrs.frozen
class _Syntax:
    """How a command's arguments are laid out: options taking a value, the value options that
    name a file read (``grep -f``), a leading non-file operand (the pattern or program), the
    options making it recursive, and whether no file operand means "the current directory"."""

    valued: frozenset[str] = frozenset()
    file_options: frozenset[str] = frozenset()
    operand_first: bool = False
    operand_options: frozenset[str] = frozenset()  # options that supply the leading operand
    recursive_options: frozenset[str] = frozenset()
    follow_options: frozenset[str] = frozenset()  # options that make it follow links it meets
    no_follow_options: frozenset[str] = frozenset()
    follows_by_default: bool = False
    default_dir: bool = False
    last_is_destination: bool = False
    #: whether a file is read without an operand naming it: by an option's value, or the
    #: directory read when there is no operand
    option_or_default_files: bool = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(
            self, "option_or_default_files", bool(self.file_options) or self.default_dir
        )


#: Whether a command of options only is known to read no file without reading its options
#: (the differential test turns it off to compare with the full reading).
_FAST_OPTIONS = True


def _s(*words: str) -> frozenset[str]:
    return frozenset(words)


_PLAIN = _Syntax()
#: Command name → argument layout. Every non-option operand is a file read unless said otherwise.
READING_COMMANDS: dict[str, _Syntax] = {
    **{name: _PLAIN for name in ("cat", "tac", "nl", "less", "more", "strings", "wc", "zcat")},
    **{
        name: _PLAIN
        for name in ("md5sum", "sha1sum", "sha256sum", "sha512sum", "cmp", "comm", "paste")
    },
    "head": _Syntax(valued=_s("-n", "-c", "--lines", "--bytes")),
    "tail": _Syntax(valued=_s("-n", "-c", "--lines", "--bytes", "-s", "--pid")),
    "cut": _Syntax(
        valued=_s("-d", "-f", "-c", "-b", "--delimiter", "--fields", "--output-delimiter")
    ),
    "sort": _Syntax(
        valued=_s("-k", "-t", "-o", "-S", "-T", "--key", "--output", "--field-separator")
    ),
    "uniq": _Syntax(valued=_s("-f", "-s", "-w")),
    "base64": _Syntax(valued=_s("-w", "--wrap")),
    "xxd": _Syntax(valued=_s("-s", "-l", "-c", "-g", "-o", "-n")),
    "od": _Syntax(valued=_s("-A", "-j", "-N", "-t", "-w", "-S")),
    "hexdump": _Syntax(valued=_s("-n", "-s", "-e", "-f")),
    "diff": _Syntax(
        valued=_s("-x", "-X", "--exclude", "-I", "-L", "--label"),
        file_options=_s("-X", "--exclude-from"),
        recursive_options=_s("-r", "--recursive"),
        no_follow_options=_s("--no-dereference"),
        follows_by_default=True,
    ),
    "grep": _Syntax(
        valued=_s("-e", "-f", "-m", "-A", "-B", "-C", "--regexp", "--file", "--max-count"),
        file_options=_s("-f", "--file"),
        operand_first=True,
        operand_options=_s("-e", "-f", "--regexp", "--file"),
        recursive_options=_s("-r", "-R", "--recursive", "--dereference-recursive"),
        follow_options=_s("-R", "--dereference-recursive"),
    ),
    "rg": _Syntax(
        valued=_s(
            "-e",
            "-f",
            "-g",
            "-t",
            "-T",
            "-m",
            "-A",
            "-B",
            "-C",
            "-j",
            "-M",
            "-E",
            "--regexp",
            "--file",
            "--glob",
            "--type",
            "--type-not",
            "--max-count",
            "--threads",
            "--max-columns",
            "--encoding",
            "--iglob",
            "--ignore-file",
        ),
        file_options=_s("-f", "--file", "--ignore-file"),
        operand_first=True,
        operand_options=_s("-e", "-f", "--regexp", "--file"),
        follow_options=_s("-L", "--follow"),
        no_follow_options=_s("--no-follow"),
        default_dir=True,
    ),
    "awk": _Syntax(
        valued=_s("-F", "-v", "-f"),
        file_options=_s("-f"),
        operand_first=True,
        operand_options=_s("-f"),
    ),
    "sed": _Syntax(
        valued=_s("-e", "-f", "-l", "--expression", "--file", "--line-length"),
        file_options=_s("-f", "--file"),
        operand_first=True,
        operand_options=_s("-e", "-f", "--expression", "--file"),
    ),
    "cp": _Syntax(
        valued=_s("-t", "-S", "--target-directory", "--suffix"),
        recursive_options=_s("-r", "-R", "-a", "--recursive", "--archive"),
        follow_options=_s("-L", "--dereference"),
        no_follow_options=_s("-P", "--no-dereference"),
        last_is_destination=True,
    ),
}
# Moving a file or linking it hard gives its contents another name, which the rules (judging
# reads by name) would not know: the files moved or linked are judged as read. (A symbolic
# link's reads are judged by its target anyway.)
READING_COMMANDS["mv"] = READING_COMMANDS["ln"] = _Syntax(
    valued=_s("-t", "-S", "--target-directory", "--suffix"), last_is_destination=True
)
READING_COMMANDS["gawk"] = READING_COMMANDS["mawk"] = READING_COMMANDS["awk"]
READING_COMMANDS["egrep"] = READING_COMMANDS["fgrep"] = READING_COMMANDS["grep"]


#: Distinct glob words one check expands (each lists a directory); past them, a glob word
#: reads as the directory its pattern starts in, with everything beneath it.
MAX_GLOB_WORDS = 64


class Globs:
    """The glob words of one check, each expanded once, and at most :data:`MAX_GLOB_WORDS`
    of them: a line of 250 ``cat *.txt f*`` beside 2 000 files listed the directory 500 times
    and held the event loop for over 3 s. Past the limit a word reads as the directory its
    pattern starts in, recursively: too many to tell, and the answer must not be "nothing
    denied" (a deny rule beneath that directory covers it)."""

    __slots__ = ("_found", "_left", "commands", "read")

    def __init__(self, limit: int = MAX_GLOB_WORDS) -> None:
        self._found: dict[str, list[str] | None] = {}
        self._left = limit
        #: what a word reads, by its absolute pattern and whether it reads recursively
        self.read: dict[tuple[str, bool], list[ReadArgument]] = {}
        #: what a command reads (``reading_paths``), by its words and directories
        self.commands: dict[tuple[tuple[str, ...], str, str], tuple[ReadArgument, ...]] = {}

    def expand(self, path: str) -> list[str] | None:
        """The paths the pattern ``path`` matches now, sorted, at most 1 000; None once the
        check has expanded its limit of patterns."""
        if path in self._found:
            return self._found[path]
        if self._left <= 0:
            return None
        self._left -= 1
        try:
            matches: list[str] | None = sorted(glob.glob(path))[:1000]
        except (OSError, ValueError):
            matches = []
        self._found[path] = matches
        return matches


def reading_paths(
    argv: Sequence[str], cwd: str, home: str | None = None, globs: Globs | None = None
) -> tuple[ReadArgument, ...]:
    """The files ``argv`` (a simple command's words, quotes removed, wrappers already skipped,
    ``argv[0]`` the command) reads, made absolute against ``cwd``; () for other commands.

    A word with glob characters stands for the files it matches in the tree now (and for the
    pattern itself), expanded through ``globs`` (one check's: see :class:`Globs`; a fresh one
    by default). ``-`` (standard input) is not a file.
    """
    if not argv:
        return ()
    name = argv[0].rpartition("/")[2]  # (`posixpath.basename`)
    syntax = READING_COMMANDS.get(name)
    if syntax is None:
        return ()
    if _options_only(syntax, argv):
        return ()
    home = home if home is not None else home_dir()
    if globs is None:
        globs = Globs()
    key = (tuple(argv), cwd, home)
    known = globs.commands.get(key)
    if known is None:
        known = globs.commands[key] = _reading_paths(argv, syntax, name, cwd, home, globs)
    return known


def _reading_paths(
    argv: Sequence[str], syntax: _Syntax, name: str, cwd: str, home: str, globs: Globs
) -> tuple[ReadArgument, ...]:
    """:func:`reading_paths` for a reading command, computed (once per check)."""
    operands: list[str] = []
    option_files: list[str] = []
    recursive = False
    follows = syntax.follows_by_default
    operand_given = False
    target_dir = False
    for option, value in gnu_options(argv[1:], syntax.valued):
        if option is None:
            operands.append(value or "")
            continue
        if option in syntax.recursive_options:
            recursive = True
        follows = _follows(option, syntax, follows)
        if option in syntax.valued:
            if option in syntax.operand_options:
                operand_given = True
            if option in syntax.file_options:
                option_files.append(value or "")
            if name in ("cp", "mv", "ln") and option in ("-t", "--target-directory"):
                target_dir = True
    if syntax.operand_first and not operand_given and operands:
        operands = operands[1:]
    if name == "awk" or name in ("gawk", "mawk"):
        operands = [w for w in operands if "=" not in w]
    if syntax.last_is_destination and not target_dir and operands:
        operands = operands[:-1]
    if not operands and syntax.default_dir:
        operands, recursive = ["."], True
    elif syntax.default_dir:
        recursive = True
    found: list[ReadArgument] = []
    for word in option_files:
        found.extend(_expand(word, cwd, home, globs, recursive=False))
    for word in operands:
        if word != "-":
            found.extend(_expand(word, cwd, home, globs, recursive=recursive))
    if recursive and follows:
        found.extend(_linked(found))
    return tuple(dict.fromkeys(found))


def reads_no_file(argv: Sequence[str]) -> bool:
    """Whether ``argv`` (as :func:`reading_paths` takes it) is known to read no file without
    reading its options: no reading command, or :func:`_options_only`."""
    syntax = READING_COMMANDS.get(argv[0].rpartition("/")[2]) if argv else None
    return syntax is None or _options_only(syntax, argv)


def _options_only(syntax: _Syntax, argv: Sequence[str]) -> bool:
    """Options only (``tail -20``) for a command none of whose options names a file and that
    reads no directory by default: no operand, so no file is read (a test compares it with
    the full reading)."""
    if not _FAST_OPTIONS or syntax.option_or_default_files:
        return False
    for word in argv[1:]:  # noqa: SIM110 (a loop: no generator to make)
        if word[:1] != "-" or word == "-" or word == "--":
            return False
    return True


def _follows(option: str, syntax: _Syntax, follows: bool) -> bool:
    """Whether links are followed after ``option`` (the last of ``-L``/``-P`` wins)."""
    if option in syntax.follow_options:
        return True
    if option in syntax.no_follow_options:
        return False
    return follows


def _linked(reads: list[ReadArgument]) -> list[ReadArgument]:
    """What the symbolic links beneath the recursive ``reads`` point to, each a recursive read
    (a reader following links reads a linked directory whole), found by walking each tree once
    and the trees the links lead to in turn, up to :data:`WALK_LIMIT` entries; past it, a read
    of ``/``: the tree is too big to tell, and the answer must not be "nothing denied"."""
    # every path pending is real: the roots resolved here, a link's target resolved where it is
    # met, and a plain directory found inside a real one is real itself
    pending = [os.path.realpath(r.path) for r in reads if r.recursive]
    seen: set[str] = set()
    found: list[ReadArgument] = []
    budget = WALK_LIMIT
    while pending:
        directory = pending.pop()
        if directory in seen:
            continue
        seen.add(directory)
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    budget -= 1
                    if budget < 0:
                        return [ReadArgument("/", recursive=True)]
                    if entry.is_symlink():
                        target = os.path.realpath(entry.path)
                        found.append(ReadArgument(target, recursive=True))
                        pending.append(target)
                    elif entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except OSError:
            continue  # not a directory, gone or unreadable: the reader cannot follow it either
    return found


def _expand(
    word: str, cwd: str, home: str, globs: Globs, *, recursive: bool
) -> list[ReadArgument]:
    if not word:
        return []
    path = absolute(word, cwd, home)
    out = [ReadArgument(path, recursive)]
    if _GLOB.search(word):
        known = globs.read.get((path, recursive))
        if known is not None:
            return known
        matches = globs.expand(path)
        if matches is None:  # past the check's limit: the directory the pattern starts in
            magic = _GLOB.search(path)
            start = magic.start() if magic is not None else len(path)
            root = path[:start].rpartition("/")[0] or "/"
            return [*out, ReadArgument(root, recursive=True)]
        out += [ReadArgument(absolute(m, cwd, home), recursive) for m in matches]
        globs.read[path, recursive] = out
    return out
