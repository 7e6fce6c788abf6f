"""Where tree-sitter-bash reads a line otherwise than bash does, and the walk must notice.

The grammar is a good reader of bash, not a perfect one: it splits some words bash reads as one
(``'r'\\m`` is bash's ``rm``), takes words after a redirection's target into the redirection,
reads an unescaped newline inside a command as part of it, and leaves a backquote inside plain
characters unparsed. Each function here finds one such place in a command's nodes, so that the
walk can treat the command as opaque instead of trusting what the grammar read.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["after_target", "descendants", "hidden_substitution", "newline_between", "split_word"]


def hidden_substitution(text: str) -> bool:
    """An unescaped backquote or ``$(`` in text the grammar took for plain characters."""
    if "`" not in text and "$(" not in text:
        return False
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "`" or (c == "$" and i + 1 < n and text[i + 1] == "("):
            return True
        i += 1
    return False


def after_target(redirect: Node) -> list[Node]:
    """The words tree-sitter-bash reads into a redirection after its target: in
    ``rm >/dev/null -rf /`` it reads ``-rf`` and ``/`` as part of ``>/dev/null``; bash passes
    them to the command as arguments."""
    if redirect.type != "file_redirect":
        return []
    children = redirect.children
    for index, child in enumerate(children):
        if not child.is_named:  # the operator; its target follows
            return list(children[index + 2 :])
    return []


def split_word(children: Sequence[Node], source: bytes, redirects: Sequence[Node]) -> bool:
    """Two of a command's words, or assignments, or a redirection's target and the words read
    after it, with no blank between them: bash reads one word there. tree-sitter-bash splits a
    quoted string from an escape after it (``'r'\\m``, bash's ``rm``) and drops an escaped
    blank after a string (``'a'\\ b``, bash's ``a b``)."""
    runs = [children]
    runs.extend(redirect.children[1:] for redirect in redirects)
    for run in runs:
        for previous, current in itertools.pairwise(run):
            gap = source[previous.end_byte : current.start_byte]
            if gap and not gap.strip(b" \t"):
                continue  # blanks between them (most pairs): two words, whatever they are
            if previous.type.endswith("redirect") or current.type.endswith("redirect"):
                continue  # an operator ends a word: `a>b` is two
            if not previous.is_named and previous.type != "$":
                continue  # a redirection's operator and its target: `>x`, `2>&1`
            gap = source[previous.end_byte : current.start_byte].replace(b"\\\n", b"")
            if not gap or gap.strip(b" \t"):
                return True
    return False


def newline_between(node: Node, words: Sequence[Node], source: bytes) -> bool:
    """An unescaped newline between or inside the unquoted words of one command: bash would
    end the command there (tree-sitter-bash reads ``ls\\n\\rm`` as one command)."""
    text = source[node.start_byte : node.end_byte]
    base = node.start_byte
    pieces = [
        text[previous.end_byte - base : current.start_byte - base]
        for previous, current in itertools.pairwise(words)
    ]
    for word in words:
        pieces.extend(
            source[leaf.start_byte : leaf.end_byte]
            for leaf in descendants(word)
            if leaf.type == "word"
        )
    for piece in pieces:
        index = piece.find(b"\n")
        while index >= 0:
            if index == 0 or piece[index - 1 : index] != b"\\":
                return True
            index = piece.find(b"\n", index + 1)
    return False


def descendants(node: Node) -> Iterable[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current.type not in ("command_substitution", "process_substitution"):
            stack.extend(current.children)
