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

    __slots__ = ("brace", "dynamic", "glob", "pattern", "tilde", "value")

    def __init__(self) -> None:
        self.value: list[str] = []
        self.pattern: list[str] = []
        self.glob = False
        self.dynamic = False
        self.tilde = False
        self.brace: int | None = None  # where the last unquoted `{` is in ``value``

    def quoted(self, text: str) -> None:
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
                self.brace = len(self.value)
            elif c == "}" and self.brace is not None:
                inside = "".join(self.value[self.brace :])
                if "," in inside or ".." in inside:
                    self.dynamic = True  # brace expansion: several words we do not list
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
