"""Glob patterns as Glob reads them: the literal directories to descend first, and the rest as
one anchored regex over the relative paths listed below them (matched here rather than by
``rg --glob``, which would whitelist a matching directory past ``.gitignore``)."""

from __future__ import annotations

import re
from typing import Protocol

__all__ = [
    "MAX_ALTERNATIVES",
    "GlobMatch",
    "glob_regex",
    "literal_prefix",
    "split_absolute_pattern",
]

_GLOB_CHARS = frozenset("*?[]{}")


def split_absolute_pattern(pattern: str) -> tuple[str, str]:
    """``/a/b/**/*.py`` → (``/a/b``, ``**/*.py``): the literal directory prefix becomes the root."""
    parts = pattern.split("/")
    i = 1
    while i < len(parts) - 1 and not (_GLOB_CHARS & set(parts[i])):
        i += 1
    root = "/".join(parts[:i]) or "/"
    return root, "/".join(parts[i:])


def literal_prefix(pattern: str) -> tuple[str, str]:
    """``src/app/**/*.ts`` → (``src/app``, ``**/*.ts``): literal leading directories to descend."""
    parts = pattern.split("/")
    i = 0
    while i < len(parts) - 1 and not (_GLOB_CHARS & set(parts[i])) and "\\" not in parts[i]:
        i += 1
    return "/".join(parts[:i]), "/".join(parts[i:])


class GlobMatch(Protocol):
    """What :func:`glob_regex` gives: ``fullmatch(path)`` is truthy when the glob matches the
    whole relative path."""

    def fullmatch(self, path: str) -> object: ...


def glob_regex(pattern: str) -> GlobMatch:
    """A glob as an anchored matcher over ``/``-separated relative paths.

    ``**/`` matches any number of directories (none included), ``**`` anything, ``*`` and ``?``
    stay within one path component, ``[...]`` is a character class and ``{a,b}`` alternation.

    Matching takes at most quadratic time in the path, however the model writes the glob:
    ``re`` backtracks, and ``**/*a*a*a*a*a*a*a*a*a*b*`` over a long name took minutes on the
    event loop. So ``{a,b}`` is expanded into patterns of their own, and one with more than two
    wildcards that can choose where they end (a ``*`` that only a ``/`` or the end can follow,
    after fixed-width text, cannot) is matched by an automaton, in time linear in the path;
    the others as one regex.
    """
    regexes: list[str] = []
    automata: list[_Automaton] = []
    for spelling in _expand(pattern):
        tokens = _joined(spelling)
        if _choosing(tokens) <= 2:
            regexes.append("".join(text for _, text in tokens))
        else:
            automata.append(_Automaton(tokens))
    regex = re.compile("|".join(regexes), re.DOTALL) if regexes else None
    if not automata:
        assert regex is not None
        return regex
    return _Any(regex, automata)


def _choosing(tokens: list[tuple[int, str]]) -> int:
    """How many wildcards of a brace-free glob choose where they end: every ``**``, ``**/``
    and ``*`` but a ``*`` whose fixed-width text reaches a ``/`` or the end."""
    count = 0
    for i, (kind, _) in enumerate(tokens):
        if kind == _STAR:
            j = i + 1
            while j < len(tokens) and tokens[j][0] == _FIXED and tokens[j][1] != "/":
                j += 1
            count += not (j == len(tokens) or tokens[j][1] == "/")
        elif kind in (_ANY, _ANY_DIRS):
            count += 1
    return count


class _Automaton:
    """A brace-free glob matched by following every way through it at once, a character at a
    time (a Thompson automaton): linear in the path, whatever the wildcards."""

    __slots__ = ("_kinds", "_tests")

    def __init__(self, tokens: list[tuple[int, str]]) -> None:
        self._kinds = [kind for kind, _ in tokens]
        self._tests = [
            None if kind in (_STAR, _ANY, _ANY_DIRS) else re.compile(text, re.DOTALL).fullmatch
            for kind, text in tokens
        ]

    def fullmatch(self, path: str) -> bool:
        kinds, tests, end = self._kinds, self._tests, len(self._kinds)
        # a state is a token's index; ``-(i + 1)``: inside ``**/`` number i, past its start
        states = self._closure({0})
        for c in path:
            following: set[int] = set()
            for state in states:
                if state < 0:
                    i = -state - 1
                    following.add(state)
                    if c == "/":
                        following.add(i + 1)
                    continue
                if state == end:
                    continue
                kind = kinds[state]
                if kind == _STAR:
                    if c != "/":
                        following.add(state)
                elif kind == _ANY:
                    following.add(state)
                elif kind == _ANY_DIRS:
                    following.add(-state - 1)
                    if c == "/":
                        following.add(state + 1)
                else:
                    test = tests[state]
                    assert test is not None
                    if test(c):
                        following.add(state + 1)
            if not following:
                return False
            states = self._closure(following)
        return end in states

    def _closure(self, states: set[int]) -> set[int]:
        """``states`` with every state a wildcard reaches matching nothing."""
        kinds, end = self._kinds, len(self._kinds)
        pending = list(states)
        while pending:
            state = pending.pop()
            if (
                0 <= state < end
                and kinds[state] in (_STAR, _ANY, _ANY_DIRS)
                and state + 1 not in states
            ):
                states.add(state + 1)
                pending.append(state + 1)
        return states


class _Any:
    """A glob whose spellings are matched by a regex and automata: any may match."""

    __slots__ = ("_automata", "_regex")

    def __init__(self, regex: re.Pattern[str] | None, automata: list[_Automaton]) -> None:
        self._regex = regex
        self._automata = automata

    def fullmatch(self, path: str) -> bool:
        if self._regex is not None and self._regex.fullmatch(path):
            return True
        return any(automaton.fullmatch(path) for automaton in self._automata)


#: the most patterns a glob's ``{a,b}`` alternatives may spell (``{a,b}{c,d}`` spells four)
MAX_ALTERNATIVES = 256


#: a brace-free pattern as the pieces it was spelled from: tokenized piece by piece, so that
#: the ``*`` ending one and the ``*`` starting the next stay two stars, not a ``**``
_Spelling = tuple[str, ...]


def _expand(pattern: str) -> list[_Spelling]:
    """The patterns ``pattern``'s braces spell (``*.{ts,tsx}`` → ``*.ts``, ``*.tsx``), each
    matched without alternation. A ``{`` left open is closed at the end; classes and escapes
    are copied as they are."""
    alternatives, _ = _alternatives(pattern, 0, top=True)
    return alternatives


def _alternatives(pattern: str, i: int, top: bool = False) -> tuple[list[_Spelling], int]:
    """The spellings of the braces opened before ``pattern[i]`` (of the whole pattern when
    ``top``), and the index after the closing ``}``."""
    found: list[_Spelling] = []
    current: list[_Spelling] = [()]
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "}" and not top:
            return [*found, *current], i + 1
        if c == "," and not top:
            found += current
            current = [()]
            i += 1
            continue
        if c == "{":
            inner, i = _alternatives(pattern, i + 1)
        else:  # text up to the next brace or comma of these braces: one piece
            j = i
            while j < n and pattern[j] != "{" and (top or pattern[j] not in ",}"):
                j = _verbatim(pattern, j)
            inner, i = [(pattern[i:j],)], j
        current = [r + a for r in current for a in inner]
        if len(current) + len(found) > MAX_ALTERNATIVES:
            raise ValueError(
                f"glob pattern {pattern!r} spells more than {MAX_ALTERNATIVES} patterns "
                "with its {a,b} alternatives"
            )
    return [*found, *current], n


def _verbatim(pattern: str, i: int) -> int:
    """The end of the piece at ``pattern[i]`` copied as it is: an escape, a class, a character."""
    c = pattern[i]
    if c == "\\" and i + 1 < len(pattern):
        return i + 2
    if c == "[":
        end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
        if end != -1:
            return end + 1
    return i + 1


def _joined(spelling: _Spelling) -> list[tuple[int, str]]:
    """The tokens of a spelling's pieces, one after another; ``**/**/`` is ``**/``."""
    tokens: list[tuple[int, str]] = []
    for piece in spelling:
        for token in _tokens(piece):
            if token[0] != _ANY_DIRS or not tokens or tokens[-1][0] != _ANY_DIRS:
                tokens.append(token)
    return tokens


#: the kinds of a glob's tokens: ``*``, ``**/``, ``**``, fixed-width text (a character, ``?``,
#: a class) and a class that may match a ``/``
_STAR, _ANY_DIRS, _ANY, _FIXED, _OTHER = range(5)


def _tokens(pattern: str) -> list[tuple[int, str]]:
    """A brace-free glob's tokens, each with its regex (a fixed ``/`` is ``(_FIXED, "/")``)."""
    tokens: list[tuple[int, str]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            tokens.append((_ANY_DIRS, "(?:.*/)?"))
            i += 3
            continue
        if pattern.startswith("**", i):
            tokens.append((_ANY, ".*"))
            i += 2
            continue
        if c == "*":
            tokens.append((_STAR, "[^/]*"))
        elif c == "?":
            tokens.append((_FIXED, "[^/]"))
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                tokens.append((_FIXED, re.escape(c)))
            else:
                body = pattern[i + 1 : end]
                negated = body[:1] in ("!", "^")
                if negated:
                    body = "^" + body[1:]
                # fixed only if it cannot match a ``/`` (it would carry a ``*`` past its component)
                fixed = not negated and "/" not in body
                text = f"[{body.replace(chr(92), chr(92) * 2)}]"
                tokens.append((_FIXED if fixed else _OTHER, text))
                i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            tokens.append((_FIXED, re.escape(pattern[i])))
        else:
            tokens.append((_FIXED, "/" if c == "/" else re.escape(c)))
        i += 1
    return tokens
