"""Bash command lines analysed with a real grammar (tree-sitter-bash), for the permission rules.

Permission rules are written per command (``Bash(npm *)``), but the model sends whole command
lines. :func:`analyze` parses the line with tree-sitter-bash and lists what it may do
(:class:`~._bash_tree.Analysis`): every simple command anywhere in it, every file it writes by
redirection, the directory each runs in, and every construct that cannot be decided statically.
The rules, the modes and the critical-path guard judge that list; nothing here decides.

Fail closed: a line longer than :data:`MAX_COMMAND_BYTES`, one the grammar would take too long
to read (:data:`MAX_PIPES`, :data:`MAX_HEREDOC_LINE_EXPANSIONS`, or found reading it for longer
than :data:`MAX_PARSE_SECONDS`), nested deeper than the walk's limit, with a command under more
than :data:`MAX_WRAPPERS` wrappers, or that does not parse, is reported opaque (never
auto-approved) rather than guessed at.
Analysing is linear in the line's size; a line over :data:`THREAD_BYTES` is analysed in a worker
thread by the gate (:func:`analyze` itself is synchronous and thread-safe), and parsed so that
the event loop gets the interpreter while it is (see :func:`_parse`).
"""

from __future__ import annotations

import os
import posixpath
import re
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # tree-sitter loads with the first command analysed
    from tree_sitter import Language, Node, Parser, Point, Tree

from ._bash_commands import MAX_WRAPPERS
from ._bash_model import Analysis, Command, Dirs, Opaque, Place, Write, session_dirs
from ._bash_tree import MAX_DEPTH, Walker
from ._bash_words import Word
from ._bash_wrappers import basename
from ._paths import absolute
from ._stars import stars

__all__ = [
    "MAX_COMMAND_BYTES",
    "MAX_DEPTH",
    "MAX_HEREDOC_LINE_EXPANSIONS",
    "MAX_PARSE_SECONDS",
    "MAX_PARTS",
    "MAX_PIPES",
    "MAX_WRAPPERS",
    "MAX_WRITES",
    "THREAD_BYTES",
    "Analysis",
    "Command",
    "Opaque",
    "Write",
    "allow_forms",
    "analyze",
    "basename",
    "deny_forms",
    "expand_glob",
    "is_sink",
    "resolve_dirs",
    "varying",
    "word_paths",
]

#: Longer command lines are not analysed: they ask (a deny rule could hide anywhere in them).
MAX_COMMAND_BYTES = 64 * 1024
#: Lines at least this long are analysed in a worker thread, off the event loop.
THREAD_BYTES = 4 * 1024
#: A line with more commands or writes than this is not judged part by part (the rules are
#: matched on the event loop: this bounds that work) — it asks.
MAX_PARTS = 256
MAX_WRITES = 64
#: Output "files" that are not files.
_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
#: Glob expansion lists at most this many directory entries; beyond, the word counts as unknown.
_MAX_GLOB_ENTRIES = 4096

_local = threading.local()
_language: Language | None = None


def _parser() -> Parser:
    """One parser per thread (a tree-sitter parser is not thread-safe)."""
    parser: Parser | None = getattr(_local, "parser", None)
    if parser is None:
        global _language
        from tree_sitter import Language, Parser

        if _language is None:
            import tree_sitter_bash

            _language = Language(tree_sitter_bash.language())
        parser = _local.parser = Parser(_language)
    return parser


_UNREADABLE = "a '{' before a 4-byte character, which the Bash grammar cannot read safely"
_FOUR_BYTE_LEAD = re.compile(rb"[\xf0-\xf7]")


def _crashes_the_parser(data: bytes) -> bool:
    """Whether ``data`` has a ``{`` followed, anywhere later, by the lead byte of a 4-byte
    UTF-8 sequence: tree-sitter-bash 0.25's scanner reads out of bounds on such input (a
    5-byte ``{`` + U+31860 kills the process with SIGSEGV, depending on the memory layout;
    upstream issue 337). Such a line is not parsed at all: it asks, never crashes."""
    brace = data.find(b"{")
    return brace >= 0 and _FOUR_BYTE_LEAD.search(data, brace) is not None


#: A command with a here-document is not parsed if one of its lines holds more ``$`` than this:
#: tree-sitter-bash reads the expansions of a here-document's line in time quadratic in their
#: number, holding the interpreter (one line of 21 000 ``$x``, 64 KB: 4.4 s, every agent of the
#: tree stopped; 64 KB of lines of 128: a 46 ms parse, the event loop at most 87 ms late). It asks.
MAX_HEREDOC_LINE_EXPANSIONS = 128
#: A command with more ``|`` than this is not parsed: tree-sitter-bash reads a long pipeline in
#: more than linear time, holding the interpreter (12 800 stages, 64 KB: the event loop 104 ms
#: late; 4096 and a list to 64 KB: 28 ms), and a line of more than :data:`MAX_PARTS` commands
#: asks anyway. It asks.
MAX_PIPES = 4096


#: Seconds of its thread's CPU the grammar may take to read a long line (:data:`THREAD_BYTES` or
#: more); past that, the parse is stopped and the line asks. tree-sitter-bash's error recovery
#: reads some lines that are not bash in quadratic time: a first word of 21 000 ``[a]`` (64 KB)
#: took 6.2 s, ``x(a)(a)…`` longer still; the slowest bash found at 64 KB parses in about 60 ms.
MAX_PARSE_SECONDS = 0.5
_TOO_SLOW = (
    f"the grammar took more than {MAX_PARSE_SECONDS:g} s of CPU to read it (too slow to parse)"
)


def _parse(data: bytes) -> Tree | None:
    """``data`` parsed, or None if the grammar took more than :data:`MAX_PARSE_SECONDS` of
    this thread's CPU (the line then asks, as :data:`_TOO_SLOW` says).

    The grammar holds the interpreter for the whole of one parse, a worker thread or not (a
    64 KB ``echo [a][a]…`` made the event loop 53 ms late). A long line is parsed through the
    grammar's callbacks instead: its progress callback, called every hundred steps or so (a few
    dozen bytes read), is Python, where the interpreter changes hands as between any two lines
    of Python; and it stops the parse past the limit. A short one (parsed on the event loop: at
    most about 40 ms for a line the grammar reads in quadratic time) is parsed in one call,
    without the callbacks' cost.
    """
    parser = _parser()
    if len(data) < THREAD_BYTES:
        return parser.parse(data)
    view = memoryview(data)
    stop = time.thread_time() + MAX_PARSE_SECONDS

    def read(byte: int, point: Point) -> memoryview:
        return view[byte:]

    def too_long(byte: int, has_error: bool) -> bool:
        return time.thread_time() > stop

    try:
        return parser.parse(read, progress_callback=too_long)
    except ValueError:  # stopped: reset, or the parser's next parse would go on with this one
        parser.reset()
        return None


def _slow_to_parse(data: bytes) -> str | None:
    """Why ``data`` would hold the interpreter too long in the parser, None if it would not."""
    if data.count(b"|") > MAX_PIPES:
        return f"more than {MAX_PIPES} '|' in one command (too slow to parse)"
    limit = MAX_HEREDOC_LINE_EXPANSIONS
    if (
        data.count(b"$") > limit
        and b"<<" in data
        and max(line.count(b"$") for line in data.split(b"\n")) > limit
    ):
        return (
            f"a line with more than {limit} '$' in a command with a here-document "
            "(too slow to parse)"
        )
    return None


#: A line continuation inside a word (``r\<newline>m``): bash joins the word before it reads
#: the line, tree-sitter-bash reads two words, so the command the rules would see is not the
#: one that runs (``rm``). Inside single quotes the pair is literal: such a line asks needlessly.
_JOINED_WORD = re.compile(rb"[^\s\\](?:\\\\)*\\\n\S")
_JOINED = "a line continuation inside a word (bash joins what the grammar splits)"

#: (Its match holds a backslash and a newline side by side: a line without that pair, most,
#: is not searched — the regex has no literal prefix, so a search costs a step per byte.)
_CONTINUATION = b"\\\n"
_CONTINUATION_TEXT = "\\\n"  # (the same pair in a line's text: ASCII, encoded as itself)


class _Scripts:
    """Parses the literal scripts nested in one line (``sh -c '…'``, ``eval '…'``), within
    what is left of the line's byte budget, keeping each tree alive (its nodes are only valid
    while it lives). A joined word found in one is an opaque finding of the walk, appended to
    its list as it is found. (An object holding the walk's list, not a closure over the walk:
    the walk holds this parser, and a cycle between them would leave every analysis to the
    garbage collector.)"""

    __slots__ = ("budget", "opaque", "trees")

    def __init__(self, budget: int, tree: Tree) -> None:
        self.budget = budget
        self.trees = [tree]
        self.opaque: list[Opaque] = []

    def __call__(self, script: str | bytes) -> tuple[Node, bytes] | None:
        data = script if isinstance(script, bytes) else script.encode("utf-8", "surrogateescape")
        if len(data) > self.budget or _crashes_the_parser(data):
            return None
        slow = _slow_to_parse(data)
        if slow is not None:
            self.opaque.append(Opaque(slow))  # (`walker.fail`)
            return None
        self.budget -= len(data)
        if data.find(_CONTINUATION) >= 0 and _JOINED_WORD.search(data):
            self.opaque.append(Opaque(_JOINED))  # (`walker.fail`)
        tree = _parse(data)
        if tree is None:
            self.opaque.append(Opaque(_TOO_SLOW))  # (`walker.fail`)
            return None
        if data.find(b"#") >= 0 and misread_comment(tree.root_node, data):
            self.opaque.append(Opaque(_MISREAD_COMMENT))  # (`walker.fail`)
        self.trees.append(tree)
        return tree.root_node, data


_MISREAD_COMMENT = "the grammar read a comment where bash reads on (a `#` inside a word)"
#: What may stand before a `#` that starts a comment: a blank, a line break or an operator
_BEFORE_COMMENT = frozenset(b" \t\n;&|()<>")


def misread_comment(root: Node, source: bytes) -> bool:
    """Whether tree-sitter-bash read a comment that bash does not: bash starts one only at a
    ``#`` that begins a word, after an unescaped blank, a line break or an operator. After a
    quoted string the grammar drops an escaped blank (``''\\ #``) and takes the ``#`` and the
    rest of the line for a comment; bash reads the word on and runs what follows
    (``echo +''\\ #; rm -rf x`` runs ``rm``: the rules saw ``echo +`` alone)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            start = node.start_byte
            if start == 0:
                continue
            before = source[start - 1]
            if before not in _BEFORE_COMMENT:
                return True
            escapes = 0
            while start - 2 - escapes >= 0 and source[start - 2 - escapes] == 0x5C:  # `\`
                escapes += 1
            if escapes % 2:
                return True  # an escaped blank: part of the word
        elif node.child_count:
            stack.extend(node.children)
    return False


def analyze(command: str) -> Analysis:
    """What ``command`` may do: its commands, writes, and the constructs that are opaque.

    >>> [c.text for c in analyze("npm test && echo $(rm -rf x)").commands]
    ['npm test', 'rm -rf x', 'echo $(rm -rf x)']
    """
    source = b"" if len(command) > MAX_COMMAND_BYTES else command.encode("utf-8", "surrogateescape")
    if len(command) > MAX_COMMAND_BYTES or len(source) > MAX_COMMAND_BYTES:
        reason = f"the command is longer than {MAX_COMMAND_BYTES} bytes"
        return Analysis((), (), (Opaque(reason),))
    # (the ASCII tests are made on the text: `in` on bytes costs a TypeError raised and
    # cleared inside, trying the operand as a byte value first)
    if "{" in command and _crashes_the_parser(source):
        return Analysis((), (), (Opaque(_UNREADABLE),))
    slow = _slow_to_parse(source)
    if slow is not None:
        return Analysis((), (), (Opaque(slow),))
    tree = _parse(source)
    if tree is None:
        return Analysis((), (), (Opaque(_TOO_SLOW),))
    # (the line's own bytes count against the budget of the scripts nested in it)
    scripts = _Scripts(MAX_COMMAND_BYTES - len(source), tree)
    root, walker = tree.root_node, Walker(scripts)
    scripts.opaque = walker.opaque
    walker.source = source
    if root.has_error:
        walker.fail("the command does not parse")
    if "#" in command and misread_comment(root, source):
        walker.fail(_MISREAD_COMMENT)
    if _CONTINUATION_TEXT in command and _JOINED_WORD.search(source):
        walker.fail(_JOINED)
    walker.statements(root.children, session_dirs(), 0)
    if len(walker.commands) > MAX_PARTS or len(walker.writes) > MAX_WRITES:
        reason = f"more than {MAX_PARTS} commands or {MAX_WRITES} writes in one line"
        return Analysis((), (), (Opaque(reason),))
    return walker.analysis()


# -- spellings the rules are matched against ---------------------------------------------------


def _raw(words: Iterable[Word]) -> str:
    return " ".join([w.raw for w in words])


def allow_forms(command: Command) -> list[str]:
    """Spellings an allow rule is tried on: as written, and without leading benign wrappers.

    Assignments are never stripped for allow rules (``LD_PRELOAD=…`` changes what runs).
    """
    forms = [command.text]
    start = command.layers.allow_start
    if start and not command.assignments and start < len(command.words):
        forms.append(_raw(command.words[start:]))
    return forms


def deny_forms(command: Command) -> list[str]:
    """Every spelling a deny/ask rule is tried on: as written, each wrapper stripped, and the
    innermost command with assignments, quoting, escapes and its directory removed."""
    forms = [command.text]
    if command.plain:
        return forms  # every spelling below is the text as written
    words = command.words
    for start in command.layers.starts:
        if start >= len(words):
            continue
        # (the command's text is its words' source text joined, after any assignments)
        raw = command.text if start == 0 and not command.assignments else _raw(words[start:])
        if raw not in forms:
            forms.append(raw)
        head = words[start]
        if head.value is None:
            continue
        plain = [basename(head.value)] + [
            w.value if w.value is not None else w.raw for w in words[start + 1 :]
        ]
        text = " ".join(plain)
        if " ".join(text.split()) != text:
            # a run of blanks, a blank other than a space, or an empty value: each value's
            # blanks squeezed, and the empty ones left out (when the values joined hold single
            # spaces only, between words, that is the text itself)
            text = " ".join([" ".join(v.split()) for v in plain if v])
        if text not in forms:
            forms.append(text)
    return forms


def varying(command: Command) -> bool:
    """Whether the innermost command's arguments are not all known (a deny rule might match
    what they become at run time)."""
    if command.plain:
        return False
    inner = command.layers.inner
    if inner is None or command.layers.tail:
        return True
    for word in command.words[inner:]:  # noqa: SIM110 (a loop: no generator to make)
        if word.value is None or word.glob:  # (not ``word.static``, without the property)
            return True
    return False


# -- paths -----------------------------------------------------------------------------------


def resolve_dirs(dirs: Dirs, cwd: str, home: str) -> list[str] | None:
    """The absolute directories a command may run in, None if unknown (or unreachable)."""
    if not dirs:
        return None
    return [_resolve(place, cwd, home) for place in dirs]


def _resolve(place: Place, cwd: str, home: str) -> str:
    """The directory ``place`` is from ``cwd``: its ``cd`` targets applied in order, each
    place on the way resolved once (its ``where``), so a line's commands resolve their places
    in a step per ``cd``, not a step per ``cd`` before each (``cd a && … && cd a && touch f``
    in acceptEdits mode held the event loop for 1.3 s)."""
    chain: list[Place] = []
    node = place
    while node.parent is not None:
        where = node.where
        if where is not None and where[0] == cwd and where[1] == home:
            break
        chain.append(node)
        node = node.parent
    directory = cwd if node.parent is None else node.where[2]  # type: ignore[index]
    for step in reversed(chain):
        directory = absolute(step.target, directory, home)
        step.where = (cwd, home, directory)
    return directory


def is_sink(word: Word) -> bool:
    """``/dev/null``, ``/dev/stdout``, ``/dev/stderr``: writing there touches no file."""
    return word.static and word.value in _SINKS


def word_paths(word: Word, bases: list[str] | None, home: str) -> list[str] | None:
    """The absolute paths a path argument names from each possible directory; None if unknown.

    A glob is expanded against the file system as the shell would (a superset: hidden files and
    any letter case match too); with no match the shell passes the pattern itself, which is
    listed as well. A pattern that could match ``.`` or ``..`` (one starting with a dot) is
    unknown.
    """
    text = word.path_text()
    if text is None:
        return None
    if bases is None:
        if not text.startswith("/") and not word.tilde:
            return None
        bases = ["/"]
    out: list[str] = []
    for base in bases:
        path = absolute(text, base, home)
        if word.glob:
            assert word.pattern is not None
            pattern = word.pattern
            if word.tilde:
                pattern = home + pattern[1:]
            matches = expand_glob(pattern, base)
            if matches is None:
                return None
            out.extend(matches)
        out.append(path)
    return out


_GLOB_CHARS = re.compile(r"(?<!\\)[*?\[]")


def expand_glob(pattern: str, base: str) -> list[str] | None:
    """Pathname expansion of ``pattern`` (quoted characters backslash-escaped) from ``base``.

    Matches case-insensitively and includes hidden files, so that whatever shell options are
    set (``nocaseglob``, ``dotglob``) the real expansion is a subset. None when the pattern uses
    what is not modelled (``[^…]``, ``[[:class:]]``, extended globs), could match ``.`` or ``..``,
    or the directories are too large to list.
    """
    if "[^" in pattern or "[[:" in pattern or re.search(r"[@!+*?]\(", pattern):
        return None
    current = ["/"] if pattern.startswith("/") else [base]
    budget = [_MAX_GLOB_ENTRIES]
    for component in pattern.split("/"):
        if not component:
            continue
        if _GLOB_CHARS.search(component) is None:
            literal = re.sub(r"\\(.)", r"\1", component)
            current = [posixpath.normpath(posixpath.join(d, literal)) for d in current]
            continue
        regex = _component_regex(component)
        if regex is None:
            return None
        if component[0] not in "*?" and (regex.fullmatch(".") or regex.fullmatch("..")):
            return None  # only a pattern starting with a dot can match `.` or `..`
        found: list[str] = []
        for directory in current:
            entries = _list(directory, budget)
            if entries is None:
                return None
            found.extend(posixpath.join(directory, e) for e in entries if regex.fullmatch(e))
        current = found
        if not current:
            return []
    return current


def _list(directory: str, budget: list[int]) -> list[str] | None:
    try:
        with os.scandir(directory) as it:
            names = []
            for entry in it:
                budget[0] -= 1
                if budget[0] < 0:
                    return None
                names.append(entry.name)
            return names
    except OSError:
        return []


def _component_regex(component: str) -> re.Pattern[str] | None:
    """The regex of one component of a glob: the pieces between its ``*``, each of fixed
    length (a character, ``?``, a bracket class), joined by :func:`~._stars.stars`. The pattern
    is the model's and the names are the directory's: joined by plain ``.*``, ``rm *a*a*a*a*b``
    beside a file of 200 a's held the event loop 16 s, eight stars years."""
    pieces: list[list[str]] = [[]]
    out = pieces[0]
    i = 0
    n = len(component)
    while i < n:
        c = component[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(component[i + 1]))
            i += 2
        elif c == "*":
            out = []
            pieces.append(out)
            i += 1
        elif c == "?":
            out.append(".")
            i += 1
        elif c == "[":
            j = i + 1
            if j < n and component[j] in "!^":
                j += 1
            if j < n and component[j] == "]":
                j += 1
            while j < n and component[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape("["))
                i += 1
                continue
            body = component[i + 1 : j]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            escaped = "".join("\\" + ch if ch in "\\^]" else ch for ch in body)
            out.append(f"[{'^' if negate else ''}{escaped}]")
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    try:
        return re.compile(stars(["".join(piece) for piece in pieces]), re.IGNORECASE | re.DOTALL)
    except re.error:
        return None
