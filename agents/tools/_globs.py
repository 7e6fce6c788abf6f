"""Glob patterns as Glob reads them: the literal directories to descend first, and the rest as
one anchored regex over the relative paths listed below them (matched here rather than by
``rg --glob``, which would whitelist a matching directory past ``.gitignore``)."""

from __future__ import annotations

import re

__all__ = ["glob_regex", "literal_prefix", "split_absolute_pattern"]

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


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as an anchored regex over ``/``-separated relative paths.

    ``**/`` matches any number of directories (none included), ``**`` anything, ``*`` and ``?``
    stay within one path component, ``[...]`` is a character class and ``{a,b}`` alternation.
    """
    out: list[str] = []
    i, n, depth = 0, len(pattern), 0
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                i = end
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    out.extend(")" * depth)
    return re.compile("".join(out), re.DOTALL)
