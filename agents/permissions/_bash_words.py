"""Shell words as bash would pass them to a program, decoded from tree-sitter nodes.

A word is *static* when its value is known before the command runs: only literal text, quoting
(``'…'``, ``"…"``, ``$'…'``) and backslash escapes. Any expansion (``$X``, ``${X}``, ``$(…)``,
arithmetic, brace expansion ``{a,b}``, ``~user``) makes it dynamic: its value is ``None`` and no
rule may assume anything about it. Unquoted ``*``, ``?`` and ``[`` make it a glob: its value is
the pattern, and :attr:`Word.pattern` keeps which characters were quoted.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = [
    "PLAIN_BYTES",
    "Word",
    "decode_ansi_c",
    "literal_word",
    "node_text",
    "plain_word",
    "word_from_node",
]

#: Word-like node types that can never be static.
_DYNAMIC_TYPES = frozenset(
    {
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
        "brace_expression",
        "extglob_pattern",
        "array",
    }
)
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_ANSI_ESCAPE = re.compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})"
    r"|U([0-9A-Fa-f]{1,8})|c(.)|(.))",
    re.DOTALL,
)


class Word(NamedTuple):
    """One shell word: its source text, and its value if static.

    ``glob`` is set when unquoted pattern characters remain; ``pattern`` then holds the value with
    every quoted character backslash-escaped, ready for pathname expansion. ``tilde`` is set when
    an unquoted ``~`` starts the word (``~`` or ``~/…``: the home directory). (A named tuple:
    a command line makes many of them, and it is the cheapest immutable record.)
    """

    raw: str
    value: str | None
    glob: bool = False
    pattern: str | None = None
    tilde: bool = False

    @property
    def static(self) -> bool:
        """Known before the command runs, and not a pattern the shell would expand."""
        return self.value is not None and not self.glob

    def path_text(self) -> str | None:
        """The value as a path for :func:`._paths.absolute`: a quoted leading ``~`` is literal."""
        if self.value is None:
            return None
        if self.value.startswith("~") and not self.tilde:
            return "./" + self.value
        return self.value


def node_text(node: Node, source: bytes) -> str:
    """The node's text in ``source``, the UTF-8 bytes its tree was parsed from (slicing them
    costs a fraction of ``node.text``)."""
    return source[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")


def decode_ansi_c(body: str) -> str:
    """The value of ``$'body'``: C escapes decoded as bash does (``\\x72`` is ``r``)."""

    def one(m: re.Match[str]) -> str:
        simple, octal, hex2, u4, u8, ctrl, other = m.groups()
        if simple is not None:
            return _ANSI_SIMPLE[simple]
        if octal is not None:
            return chr(int(octal, 8) & 0xFF)
        if hex2 is not None:
            return chr(int(hex2, 16))
        if u4 is not None or u8 is not None:
            code = int(u4 or u8, 16)
            return chr(code) if code <= 0x10FFFF else "\ufffd"
        if ctrl is not None:
            return chr(ord(ctrl) & 0x1F)
        return "\\" + other

    return _ANSI_ESCAPE.sub(one, body)


#: Every pattern character backslash-escaped (a quoted one stands for itself).
_ESCAPE_PATTERN = str.maketrans({c: "\\" + c for c in "*?[]\\"})


class _Builder:
    """Accumulates a word's value, remembering which characters were quoted."""

    __slots__ = ("braces", "dot", "dynamic", "glob", "pattern", "tilde", "value")

    def __init__(self) -> None:
        self.value: list[str] = []
        self.pattern: list[str] = []
        self.glob = False
        self.dynamic = False
        self.tilde = False
        # brace expansion, as far as it can go: 0 no unquoted `{` yet, 1 one seen, 2 a `,` or
        # `..` after it too (an unquoted `}` after that makes the word several words)
        self.braces = 0
        self.dot = False  # the last character was an unquoted `.`

    def quoted(self, text: str) -> None:
        self.dot = False
        self.value.append(text)
        self.pattern.append(text.translate(_ESCAPE_PATTERN))

    def unquoted(self, text: str, first: bool) -> None:
        """Literal text outside quotes: backslashes escape, pattern and brace characters count."""
        i = 0
        n = len(text)
        if first and text.startswith("~"):
            end = text.find("/")
            if end == 1 or text == "~":
                self.tilde = True
            else:
                self.dynamic = True  # ~user, ~+, ~-: another directory
        while i < n:
            c = text[i]
            if c == "\\":
                if i + 1 < n and text[i + 1] != "\n":
                    self.quoted(text[i + 1])
                i += 2
                continue
            if c in "*?[":
                self.glob = True
            elif c == "{":
                self.braces = self.braces or 1
            elif self.braces == 1 and (c == "," or (c == "." and self.dot)):
                self.braces = 2
            elif c == "}" and self.braces == 2:
                # brace expansion (nested, `{a,{b}}`, or past a `}`, `{a}b,c}`, as bash reads
                # it): several words, which no rule may take for this one
                self.dynamic = True
            self.dot = c == "."
            self.value.append(c)
            self.pattern.append(c)
            i += 1

    def word(self, raw: str) -> Word:
        if self.dynamic:
            return Word(raw, None)
        value = "".join(self.value)
        if self.glob:
            return Word(raw, value, glob=True, pattern="".join(self.pattern), tilde=self.tilde)
        return Word(raw, value, tilde=self.tilde)


def _string_content(text: str) -> str:
    """Inside double quotes a backslash escapes only ``$ ` " \\`` and newline."""
    if "\\" not in text:
        return text
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _add(builder: _Builder, node: Node, first: bool, source: bytes) -> None:
    kind = node.type
    if kind in _DYNAMIC_TYPES:
        builder.dynamic = True
    elif kind in ("word", "number", "variable_name", "file_descriptor"):
        builder.unquoted(node_text(node, source), first)
    elif kind == "raw_string":
        builder.quoted(node_text(node, source)[1:-1])
    elif kind == "ansi_c_string":
        builder.quoted(decode_ansi_c(node_text(node, source)[2:-1]))
    elif kind in ("string", "translated_string"):
        if any(child.type != "string_content" for child in node.named_children):
            builder.dynamic = True
        else:
            # the text between the quotes, not the content nodes: tree-sitter-bash leaves a
            # line break between two of them out of both
            text = node_text(node, source)
            builder.quoted(_string_content(text[text.index('"') + 1 : -1]))
    elif kind == "concatenation" or kind in ("command_name",):
        for index, child in enumerate(node.children):
            _add(builder, child, first and index == 0, source)
    elif kind == "$":
        # tree-sitter-bash splits `$"…"` (a string translated by the locale) into `$` and the
        # string: `r$"m"` runs `rm`, so the word's value is not known
        builder.dynamic = True
    elif not node.is_named and kind in ("[", "]", "*", "?", "=", "{", "}", ":", "-"):
        # single punctuation tokens tree-sitter splits out of a word (`r[m]`, `a=b`)
        builder.unquoted(kind, first)
    else:
        builder.dynamic = True  # anything not understood is not static


def word_from_node(node: Node, source: bytes) -> Word:
    """The :class:`Word` a command-name or argument node stands for (``source``: the bytes its
    tree was parsed from)."""
    builder = _Builder()
    _add(builder, node, True, source)
    return builder.word(node_text(node, source))


#: Text that means itself: no quoting, escape, expansion, pattern, tilde or brace (matched on
#: the parsed bytes, between a node's offsets: no slice or decoding for words that are not).
PLAIN_BYTES = re.compile(rb"[A-Za-z0-9_./:,=+@%^-]++")  # (possessive: no backtracking)

# The shortcuts: most words of most commands are literal text, and reading them from their
# bytes skips ``word_from_node``'s walk. Each decodes exactly as ``word_from_node`` would (a
# differential test compares them, and sees a planted difference).

_new_tuple = tuple.__new__  # ``Word(text, text)`` without the named tuple's frame


def plain_word(node: Node, source: bytes) -> Word | None:
    """The word of a ``word`` or ``number`` node of plain literal text (it means itself: no
    quoting, escape, expansion, pattern, tilde or brace), else None."""
    kind = node.type
    if (kind == "word" or kind == "number") and not node.child_count:
        start, end = node.start_byte, node.end_byte
        if PLAIN_BYTES.fullmatch(source, start, end):
            text = source[start:end].decode("ascii")
            return _new_tuple(Word, (text, text, False, None, False))  # Word(text, text), faster
    return None


#: A double-quoted string without ``$``, backquote, backslash or line break: its value is its
#: content.
_QUOTED_LITERAL = re.compile(rb'"[^"$`\\\n]*+"')
#: A word of plain characters with a ``~`` after its first one (``HEAD~1``): literal text.
_TILDE_INSIDE = re.compile(rb"[A-Za-z0-9_./,+@%^-][A-Za-z0-9_./,+@%^~-]*+")


def literal_word(node: Node, kind: str, source: bytes) -> Word | None:
    """The word of a quoted literal (``'…'``, or ``"…"`` with nothing that expands or
    escapes in it) or of a word with a ``~`` inside it, as :func:`word_from_node` decodes it
    (a differential test compares them); None for any other node. Such a word holds no
    substitution, so it is not scanned for one."""
    start, end = node.start_byte, node.end_byte
    if kind == "raw_string" or (kind == "string" and _QUOTED_LITERAL.fullmatch(source, start, end)):
        text = source[start:end].decode("utf-8", "surrogateescape")
        return _new_tuple(Word, (text, text[1:-1], False, None, False))
    if kind == "word" and not node.child_count and _TILDE_INSIDE.fullmatch(source, start, end):
        text = source[start:end].decode("ascii")
        return _new_tuple(Word, (text, text, False, None, False))
    return None


# -- the words bash makes of a word before the command runs (brace and tilde expansion)


class BraceLimit(ValueError):
    """A brace expansion makes more words than the check lists (``{1..100000000}``)."""


#: Words one brace expansion may make before it counts as too many to list.
MAX_BRACE_WORDS = 1_000

# One piece of a word's text: its characters, how they were written (unquoted: only an unquoted
# `{`, `,`, `}` or `..` is brace syntax; inside quotes; escaped by a backslash), and whether its
# source holds a comma bash's first look counts (it skips what a backslash escapes, not quotes)
_Piece = tuple[str, int, bool]
_ACTIVE, _QUOTED, _ESCAPED = 1, 0, 2

#: A sequence expression's inside: integers (``1..10``, ``01..10..3``) or letters (``a..e``)
_SEQUENCE = re.compile(
    r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?|([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?"
)


def bash_words(raw: str, limit: int = MAX_BRACE_WORDS) -> list[str] | None:
    """The words bash makes of the word ``raw`` (its source text) before the command runs:
    quotes removed, brace expansion applied (``a{b,c}`` is ``ab ac``, ``{1..3}`` is ``1 2 3``)
    and ``~+`` made ``.``; None when the word needs a value only known at run time (``$X``,
    ``$(…)``, a backquote, ``~-``). A plain ``~``, ``~/…`` or ``~user`` is left for
    :func:`._paths.expand_home`. Raises :class:`BraceLimit` past ``limit`` words.

    Only the files a command reads or changes are found from it (Read and Edit deny rules
    against ``cat .env{,}`` and ``rm .env{,}``): for every other purpose a brace expansion is a
    dynamic word, which no allow rule approves.
    """
    pieces = _pieces(raw)
    if pieces is None:
        return None
    if pieces and pieces[0][:2] == ("~", _ACTIVE):
        following = pieces[1][0] if len(pieces) > 1 and pieces[1][1] == _ACTIVE else ""
        if following == "-":
            return None
        if following == "+" and (len(pieces) == 2 or pieces[2][:2] == ("/", _ACTIVE)):
            pieces = [(".", _QUOTED, False), *pieces[2:]]
    words: list[str] = []
    for expanded in _braces(pieces, limit):
        text = "".join(c for c, _, _ in expanded)
        if text or any(kind != _ACTIVE for _, kind, _ in expanded):  # (an unquoted empty word goes)
            words.append(text)
    return words


def _pieces(raw: str) -> list[_Piece] | None:
    """``raw`` decoded as bash quotes it, one piece per unquoted character; None when it holds
    an expansion whose value is known only at run time."""
    out: list[_Piece] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            if i + 1 < n and raw[i + 1] != "\n":
                out.append((raw[i + 1], _ESCAPED, False))
            i += 2
        elif c == "'":
            end = raw.find("'", i + 1)
            if end < 0:
                return None
            out.append((raw[i + 1 : end], _QUOTED, _separates(raw[i + 1 : end])))
            i = end + 1
        elif c == '"':
            end = i + 1
            while end < n and raw[end] != '"':
                end += 2 if raw[end] == "\\" else 1
            body = raw[i + 1 : end]
            if end >= n or "$" in body or "`" in body:
                return None
            out.append((_string_content(body), _QUOTED, _separates(body)))
            i = end + 1
        elif c == "$":
            if raw.startswith("$'", i):
                end = i + 2
                while end < n and raw[end] != "'":
                    end += 2 if raw[end] == "\\" else 1
                if end >= n:
                    return None
                # (bash decodes it as it reads the line, before any expansion: it is then
                # a single-quoted string, and its commas count)
                text = decode_ansi_c(raw[i + 2 : end])
                out.append((text, _QUOTED, _separates(text)))
                i = end + 1
            else:
                return None  # a parameter, a substitution, arithmetic, a translated string
        elif c in "`()":
            return None  # a substitution or an extended pattern
        else:
            out.append((c, _ACTIVE, c == ","))
            i += 1
    return out


def _separates(source: str) -> bool:
    """Whether quoted text holds a comma bash's first look at a brace counts: one that no
    backslash escapes (that look does not know quotes; ``{..'x,y'}`` is the word ``..x,y``)."""
    i = source.find(",")
    while i >= 0:
        k = i
        while k > 0 and source[k - 1] == "\\":
            k -= 1
        if (i - k) % 2 == 0:
            return True
        i = source.find(",", i + 1)
    return False


def _braces(pieces: list[_Piece], limit: int) -> list[list[_Piece]]:
    """``pieces`` brace-expanded as bash does (``brace_expand``): the first brace that opens
    an expression, its words each expanded, then the text after it, in that order (``{a,b}{1,2}``
    is ``a1 a2 b1 b2``); :class:`BraceLimit` past ``limit`` words."""
    i = 0
    while True:
        i = _opening(pieces, i)
        if i < 0:
            return [pieces]
        close = _closing(pieces, i + 1)
        if close < 0:
            i += 1  # never closed: a literal `{`, and the search goes on after it
            continue
        inside = pieces[i + 1 : close]
        head, tail = pieces[:i], pieces[close + 1 :]
        if any(comma for _, _, comma in inside):
            choices: list[list[_Piece]] = []
            for element in _elements(inside):
                choices.extend(_braces(element, limit))
                if len(choices) > limit:
                    raise BraceLimit(f"a brace expansion makes more than {limit} words")
        else:
            sequence = _sequence(inside, limit)
            if sequence is None:  # `{a}`: the text itself, and the rest expanded
                return [[*pieces[: close + 1], *rest] for rest in _braces(tail, limit)]
            choices = [[(item, _QUOTED, False)] for item in sequence]
        rests = _braces(tail, limit)
        if len(choices) * len(rests) > limit:
            raise BraceLimit(f"a brace expansion makes more than {limit} words")
        return [[*head, *choice, *rest] for choice in choices for rest in rests]


def _opening(pieces: list[_Piece], start: int) -> int:
    """The first unquoted `{` from ``start`` (bash passes over one that opens the text and is
    closed at once: ``{}``), or -1."""
    for i in range(start, len(pieces)):
        if pieces[i][:2] == ("{", _ACTIVE) and not (
            i == 0 and len(pieces) > 1 and pieces[1][:2] == ("}", _ACTIVE)
        ):
            return i
    return -1


def _closing(pieces: list[_Piece], start: int) -> int:
    """The `}` closing a brace opened before ``start``, or -1: bash's, which passes over one
    met before anything makes the braces an expression (a comma, or a ``..`` not right before
    the `}`), so ``{a}b,c}`` is ``a}b c``."""
    depth = 0
    counted = False
    n = len(pieces)
    for j in range(start, n):
        c, kind, _ = pieces[j]
        if kind != _ACTIVE:
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            if depth:
                depth -= 1
            elif counted:
                return j
        elif depth == 0 and (
            c == ","
            or (
                c == "."
                and j + 1 < n
                and pieces[j + 1][:2] == (".", _ACTIVE)
                and (j + 2 >= n or pieces[j + 2][:2] != ("}", _ACTIVE))
            )
        ):
            counted = True
    return -1


def _elements(inside: list[_Piece]) -> list[list[_Piece]]:
    """A brace's text split at its unquoted commas outside nested braces."""
    out: list[list[_Piece]] = []
    depth = 0
    first = 0
    for j, (c, kind, _) in enumerate(inside):
        if kind != _ACTIVE:
            continue
        if c == "{":
            depth += 1
        elif c == "}" and depth:
            depth -= 1
        elif c == "," and depth == 0:
            out.append(inside[first:j])
            first = j + 1
    out.append(inside[first:])
    return out


def _sequence(inside: list[_Piece], limit: int) -> list[str] | None:
    """The words of a sequence expression's inside (``1..3``, ``a..e..2``, ``01..10``), or
    None when it is not one."""
    if not all(kind == _ACTIVE for _, kind, _ in inside):
        return None
    m = _SEQUENCE.fullmatch("".join(c for c, _, _ in inside))
    if m is None:
        return None
    first, last, step, letter_a, letter_b, letter_step = m.groups()
    by = abs(int(step or letter_step or 1)) or 1
    if letter_a is not None:
        a, b = ord(letter_a), ord(letter_b)
        if abs(b - a) // by + 1 > limit:
            raise BraceLimit(f"a brace expansion makes more than {limit} words")
        return [chr(x) for x in range(a, b + (1 if b >= a else -1), by if b >= a else -by)]
    x, y = int(first), int(last)
    if abs(y - x) // by + 1 > limit:
        raise BraceLimit(f"a brace expansion makes more than {limit} words")
    width = 0
    if any(len(t.lstrip("-")) > 1 and t.lstrip("-").startswith("0") for t in (first, last)):
        width = max(len(first), len(last))
    values = range(x, y + (1 if y >= x else -1), by if y >= x else -by)
    return [f"{v:0{width}d}" if width else str(v) for v in values]
