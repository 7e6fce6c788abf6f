"""ripgrep's search (``rg -e PATTERN``) in-process, for small trees and a checked regex subset.

Grep on a small tree cost a process start (3–10 ms on this machine) for a search that takes
Python well under a millisecond. :func:`search` prints what the ripgrep command line Grep builds
would print — the same files, lines, counts and separators, byte for byte up to the order of the
files (ripgrep's own order varies from run to run) — or returns None when it cannot promise
that, and the caller runs ripgrep:

* the pattern is outside the subset where Python's ``re`` and Rust's ``regex`` agree: literal
  text, ``.``, ``\\w \\d \\s \\b`` and their negations, simple character classes, groups
  (``(...)``, ``(?:...)``), alternation, the anchors ``^ $`` and greedy or lazy quantifiers;
  a flag group, a look-around, a back-reference, a Unicode class or anything non-ASCII is not;
* a file has non-ASCII bytes and the pattern is not a case-sensitive literal (Rust's classes
  and case folding are Unicode-aware, Python's ``bytes`` ones are ASCII: on ASCII text they
  agree), starts with a byte-order mark (ripgrep transcodes it), or has a NUL byte (ripgrep
  takes it for binary and searches it only up to the line before the NUL, or, named on its own,
  whole with a warning);
* a line to print is longer than ripgrep's column cap, a count would include an empty match, or
  the search uses ``glob``, ``type`` or ``multiline``;
* the tree is bigger than the walk's limit (:mod:`agents.tools._walk` lists the files with
  ripgrep's ignore rules) or the files add up to more than ``BYTE_LIMIT``;
* the search could take long: Python's ``re`` backtracks where ripgrep's engine is linear, so a
  quantified group (``(a+)+b``, ``(a|a)+b``: exponential in a line's length) is never searched
  here, nor a pattern with more than two unbounded quantifiers or more than ``MAX_WIDTH`` ways
  through its bounded choices (``?``, ``{n,m}``, alternatives); and a pattern with one or two
  unbounded quantifiers (``*``, ``+``, ``{n,}``; one that ends the pattern does not count: the
  match ends where it stops) is searched here only while the worst case over the files' lines,
  ``C(L + k + 1, k + 1)`` steps for a line of ``L`` bytes and ``k`` such quantifiers, stays
  under ``WORK_LIMIT`` (a few tens of milliseconds here). A model's pattern over a hostile file
  must not hold the event loop or a worker thread that nothing can stop.

No atom of a translated pattern matches a newline (as in ripgrep without ``-U``), so each file is
searched whole and a match always lies within one line. ``tests/agents/tools/
test_grep_conformance.py`` checks all of this against ripgrep over generated trees and patterns.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from typing import NamedTuple

from .._regular import NotRegularFile, open_regular
from ._walk import list_files

__all__ = [
    "BYTE_LIMIT",
    "MAX_WIDTH",
    "WORK_LIMIT",
    "backtracking_steps",
    "bounded_search",
    "files_searched",
    "search",
    "translate",
]

#: Bytes read in all at most; past them ripgrep searches.
BYTE_LIMIT = 4 << 20
#: The most ways through a pattern's bounded choices (each tried at every position).
MAX_WIDTH = 64
#: The most backtracking steps a search may take in the worst case (2–6 ns each here).
WORK_LIMIT = 10_000_000
#: Longest line printed (ripgrep's ``--max-columns`` is 500; shorter here, to stay clear of it).
_MAX_LINE = 400
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")

# Escapes whose meaning is the same in both engines on ASCII text; none matches a newline.
_CLASS_ESCAPES = {
    "w": r"\w",
    "d": r"\d",
    "s": r"[\t\x0b\x0c\r ]",
    "W": r"[^\w\n]",
    "D": r"[^\d\n]",
    "S": r"[^\t\n\x0b\x0c\r ]",
}
_IN_CLASS = {"w": r"\w", "d": r"\d", "s": r"\t\x0b\x0c\r "}
_PUNCT = frozenset(".+*?()|[]{}^$-/\\")
_PLAIN = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _,:;!@#%'\"/<>=&~`-"
)
# inside a class the quantifiers, ``.``, ``|``, ``$`` and parentheses are literal in both; ``&``,
# ``~`` and ``-`` (doubled, Rust's set operations) are not taken
_CLASS_PLAIN = (_PLAIN - frozenset("&~-")) | frozenset(".*+?(){}$|")
_REPEAT = re.compile(r"\{(\d{1,3})(,(\d{0,3}))?\}")


class _Outside(Exception):
    """The search is outside what this module promises: ripgrep must run it."""


class Translation(NamedTuple):
    """A pattern as a Python ``bytes`` regex, whether it is literal text, and what bounds the
    backtracking of a search with it: ``degree`` unbounded quantifiers that may give back
    what they took, and ``width`` ways through its bounded choices."""

    regex: str
    literal: bool
    degree: int
    width: int


def translate(pattern: str) -> Translation | None:
    """``pattern`` (ripgrep's syntax) as a Python ``bytes`` regex; None when it is outside the
    subset both engines read the same way, or when ``re`` could backtrack without bound."""
    try:
        return _translate(pattern)
    except _Outside:
        return None


def _translate(p: str) -> Translation:
    out: list[str] = []
    literal = True
    atom = False  # a quantifier may follow
    group = False  # ... and that atom is a group: a quantifier on it is refused
    depth = 0
    branches = [1]  # alternatives of each open group, the pattern's own first
    width = 1
    unbounded: list[tuple[int, int, int]] = []  # where each ends in ``out``, its depth, minimum
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\":
            if i + 1 >= n:
                raise _Outside
            d = p[i + 1]
            i += 2
            if d in _PUNCT:
                out.append(re.escape(d))
                atom = True
            elif d == "t":
                out.append(r"\t")
                atom = True
            elif d in _CLASS_ESCAPES:
                out.append(_CLASS_ESCAPES[d])
                literal, atom = False, True
            elif d in "bB":
                out.append("\\" + d)
                literal, atom = False, False
            else:
                raise _Outside
            continue
        if c in "*+?{":
            if not atom or group:
                raise _Outside  # nothing to repeat, or a group: exponential backtracking
            least: int | None = None  # the minimum of an unbounded quantifier
            if c == "{":
                m = _REPEAT.match(p, i)
                if m is None or (m.group(3) and int(m.group(3)) < int(m.group(1))):
                    raise _Outside
                out.append(m.group(0))
                i = m.end()
                if m.group(2) and not m.group(3):
                    least = int(m.group(1))
                elif m.group(3):
                    width *= int(m.group(3)) - int(m.group(1)) + 1
            else:
                out.append(c)
                i += 1
                if c == "?":
                    width *= 2
                else:
                    least = 0 if c == "*" else 1
            if p.startswith("?", i):
                out.append("?")
                i += 1
            if least is not None:
                unbounded.append((len(out), depth, least))
            literal, atom = False, False
            continue
        i += 1
        group = False
        if c == ".":
            out.append(".")
            literal, atom = False, True
        elif c == "(":
            if p.startswith("?", i):
                if not p.startswith("?:", i):
                    raise _Outside
                i += 2
                out.append("(?:")
            else:
                out.append("(")
            depth += 1
            branches.append(1)
            literal, atom = False, False
        elif c == ")":
            if not depth:
                raise _Outside
            depth -= 1
            width *= branches.pop()
            out.append(")")
            atom = group = True
        elif c in "|^$":
            out.append(c)
            if c == "|":
                branches[-1] += 1
            literal, atom = False, False
        elif c == "[":
            body, i = _class(p, i)
            out.append(body)
            literal, atom = False, True
        elif c in _PLAIN:
            out.append(re.escape(c))
            atom = True
        else:
            raise _Outside
    if depth:
        raise _Outside
    width *= branches[0]
    degree = len(unbounded)
    last = unbounded[-1] if unbounded else None
    if last is not None and last[0] == len(out) and last[1] == 0 and last[2] <= 1 and (
        branches[0] == 1
    ):
        # it ends the pattern, at least once: the match ends wherever it stops taking, so it
        # never gives back what it took (``NEEDLE_\w+``)
        degree -= 1
    if degree > 2 or width > MAX_WIDTH:
        raise _Outside
    return Translation("".join(out), literal, degree, width)


def _class(p: str, i: int) -> tuple[str, int]:
    """The class opening before ``p[i]``, translated; and the index after its ``]``."""
    negated = p.startswith("^", i)
    if negated:
        i += 1
    items: list[str] = []
    prev: str | None = None  # the last single character, a range's possible start
    n = len(p)
    while True:
        if i >= n:
            raise _Outside
        c = p[i]
        if c == "]":
            if not items:
                raise _Outside
            i += 1
            break
        if c == "\\":
            d = p[i + 1 : i + 2]
            i += 2
            if d in _IN_CLASS:
                items.append(_IN_CLASS[d])
                prev = None
            elif d and d in _PUNCT:
                items.append(re.escape(d))
                prev = None
            else:
                raise _Outside
            continue
        if c == "-":
            # a range between two plain characters, or a ``-`` first or last
            end = p[i + 1 : i + 2]
            if prev is not None and end.isalnum() and end.isascii() and end >= prev:
                if not (prev.isalnum() and prev.isascii()):
                    raise _Outside
                items.append("-" + end)
                prev = None
                i += 2
                continue
            if items and end != "]":
                raise _Outside
            items.append(r"\-")
            prev = None
            i += 1
            continue
        if c not in _CLASS_PLAIN:
            raise _Outside
        items.append(re.escape(c))
        prev = c
        i += 1
    body = "".join(items)
    return (f"[^{body}\\n]" if negated else f"[{body}]"), i


class _Request:
    """One Grep call's search, as the ripgrep command line would run it."""

    def __init__(
        self, regex: re.Pattern[bytes], literal: bool, mode: str, numbers: bool,
        before: int, after: int,
    ) -> None:  # fmt: skip
        self.regex = regex
        self.literal = literal
        self.mode = mode
        self.numbers = numbers
        self.before = before
        self.after = after
        self.budget = BYTE_LIMIT
        self.groups = 0  # context groups printed so far (for the ``--`` between them)
        #: the pattern's unbounded quantifiers and bounded ways (see :class:`Translation`), and
        #: the backtracking steps the worst case of the files searched so far leaves
        self.degree = 0
        self.width = 1
        self.work = WORK_LIMIT


def files_searched(target: str, is_dir: bool) -> list[str] | None:
    """The files ripgrep searches for ``target`` (a real, absolute path) without ``glob`` or
    ``type``; None when ripgrep must list them (a big tree, an ignore rule not translated)."""
    if not is_dir:
        return [target]
    return list_files(target) if target.rstrip("/") else None


def search(
    files: list[str],
    *,
    pattern: str,
    is_dir: bool,
    mode: str,
    case_insensitive: bool = False,
    numbers: bool = True,
    before: int | None = None,
    after: int | None = None,
    context: int | None = None,
    multiline: bool = False,
    glob: str | None = None,
    type: str | None = None,
) -> bytes | None:
    """What ripgrep prints for Grep's command line over ``files`` (from :func:`files_searched`);
    None when ripgrep must run (see the module's docstring). In a directory, names end in NUL."""
    if multiline or glob or type or "\n" in pattern or not pattern.isascii():
        return None
    translated = translate(pattern)
    if translated is None:
        return None
    regex, literal, degree, width = translated
    flags = re.MULTILINE | (re.IGNORECASE if case_insensitive else 0)
    try:
        compiled = re.compile(regex.encode(), flags)
    except re.error:
        return None
    if context is not None:
        before = after = context
    request = _Request(
        compiled, literal and not case_insensitive, mode, numbers or is_dir, before or 0, after or 0
    )
    request.degree, request.width = degree, width
    out: list[bytes] = []
    try:
        for path in sorted(files):
            _search_file(request, path, is_dir, out)
    except (_Outside, OSError):
        return None
    return b"".join(out)


def _search_file(request: _Request, path: str, is_dir: bool, out: list[bytes]) -> None:
    data = _read(path, request.budget)
    request.budget -= len(data)
    if data.startswith(_BOMS):
        raise _Outside
    if b"\0" in data:
        raise _Outside  # ripgrep searches a binary file up to the line before its first NUL
    if not data:
        return
    if not request.literal and not data.isascii():
        raise _Outside
    if request.degree:
        request.work -= request.width * _worst_case(data, request.degree)
        if request.work < 0:
            raise _Outside  # backtracking could take too long: ripgrep is linear
    # the last line's newline is not a line of its own: ``$`` and ``^`` must not match past it
    end = len(data) - 1 if data.endswith(b"\n") else len(data)
    name = path.encode("utf-8", "surrogateescape") + b"\0" if is_dir else b""
    regex = request.regex
    if request.mode == "count":
        count = 0
        for m in regex.finditer(data, 0, end):
            if m.start() == m.end():
                raise _Outside  # the engines count empty matches differently
            count += 1
        if count:
            out.append(b"%s%d\n" % (name, count))
        return
    if request.mode == "files_with_matches":
        if regex.search(data, 0, end) is not None:
            out.append(name if is_dir else path.encode("utf-8", "surrogateescape") + b"\n")
        return
    _content(request, data, end, name, out)


def _worst_case(data: bytes, degree: int) -> int:
    """The most steps ``degree`` unbounded quantifiers can take over ``data``'s lines (no atom
    matches a newline, so no match crosses one)."""
    return backtracking_steps(map(len, data.split(b"\n")), degree) + len(data)


def backtracking_steps(line_lengths: Iterable[int], degree: int) -> int:
    """The most steps ``degree`` unbounded quantifiers can take over lines of these lengths: at
    each of a line's positions, every way to share what follows among them, summed over a
    line's positions: ``C(L + k + 1, k + 1)`` (BashOutput's filter decides by it too)."""
    comb, ways = math.comb, degree + 1
    return sum(comb(length + ways, ways) for length in line_lengths)


def bounded_search(pattern: str, line_lengths: Iterable[int]) -> bool:
    """Whether Python's ``re`` searches lines of these lengths with ``pattern`` in a bounded
    number of steps, by Grep's rule: a pattern whose backtracking degree and width are known,
    and its worst case under :data:`WORK_LIMIT` (BashOutput's filter and a tool schema's regexes
    ask this before searching on the event loop)."""
    translated = translate(pattern) if pattern.isascii() else None
    if translated is None:
        return False
    return translated.width * backtracking_steps(line_lengths, translated.degree) <= WORK_LIMIT


def _read(path: str, budget: int) -> bytes:
    """The file's bytes, read in one call of its size (a buffer of ``budget`` bytes for every
    small file would cost more than the search)."""
    try:
        fd, st = open_regular(path)
    except NotRegularFile:
        return b""  # a named pipe or a device named as the path: nothing a search reads
    try:
        size = st.st_size
        if size > budget:
            raise _Outside
        data = os.read(fd, size + 1)
    finally:
        os.close(fd)
    if len(data) > size:
        raise _Outside  # it grew while read: ripgrep's to search
    return data


def _content(request: _Request, data: bytes, end: int, name: bytes, out: list[bytes]) -> None:
    """Matching lines as ``N:line`` and context lines as ``N-line``, groups apart by ``--``."""
    matched: list[tuple[int, int]] = []  # each matching line's start and end offsets
    pos = 0
    regex = request.regex
    while pos <= end:
        m = regex.search(data, pos, end)
        if m is None:
            break
        start = data.rfind(b"\n", 0, m.start()) + 1
        stop = data.find(b"\n", m.start(), end)
        stop = end if stop == -1 else stop
        matched.append((start, stop))
        pos = stop + 1
    if not matched:
        return
    lines = data[:end].split(b"\n")
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    index = {start: k for k, start in enumerate(offsets)}
    hits = [index[start] for start, _ in matched]
    hit_set = set(hits)
    printed = -1  # the last line index printed in this file
    for k in hits:
        first = max(k - request.before, printed + 1)
        last = min(k + request.after, len(lines) - 1)
        if first > printed + 1 or printed < 0:
            if request.groups and (request.before or request.after):
                out.append(b"--\n")
            request.groups += 1
        for j in range(first, last + 1):
            if j <= printed:
                continue
            line = lines[j]
            if len(line) > _MAX_LINE:
                raise _Outside
            sep = b":" if j in hit_set else b"-"
            number = b"%d%s" % (j + 1, sep) if request.numbers else b""
            out.append(name + number + line + b"\n")
        printed = max(printed, last)
