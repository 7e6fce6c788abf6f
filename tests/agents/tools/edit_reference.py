"""Edit as it was made on whole strings, before it worked by pieces: the reference that the
properties over :class:`agents.tools._pieces.PiecedText` compare with (its code, unchanged but
for the names)."""

from __future__ import annotations

from agents.tools._text_lines import numbered
from agents.tools.files import SNIPPET_CONTEXT


def count_occurrences(text: str, needle: str) -> int:
    """Occurrences of ``needle`` in ``text``, overlapping ones included (``"aa"`` is twice in
    ``"aaa"``): an edit is unambiguous only if the string can be found at exactly one place."""
    count = 0
    at = text.find(needle)
    while at != -1:
        count += 1
        at = text.find(needle, at + 1)
    return count


def snippet_at_once(content: str, start: int, length: int) -> str:
    """Numbered lines around ``content[start:start+length]``, with a few lines of context."""
    first = content.count("\n", 0, start)
    last = first + content.count("\n", start, start + length)
    lines = content.split("\n")
    lo = max(first - SNIPPET_CONTEXT, 0)
    hi = min(last + SNIPPET_CONTEXT + 1, len(lines))
    return numbered(lines[lo:hi], lo + 1)


def edit_at_once(content: str, old: str, new: str, replace_all: bool) -> tuple[str, str] | str:
    """``(the edited text, its snippet)`` (no snippet for ``replace_all``), or why the edit
    cannot be made."""
    if old == "":
        if content.strip():
            return (
                "Cannot create new file - file already exists. "
                "Provide the old_string to replace instead."
            )
        return new, "" if replace_all else snippet_at_once(new, 0, len(new))
    at = content.find(old)
    if at == -1:
        return f"String to replace not found in file.\nString: {old}"
    if replace_all:
        return content.replace(old, new), ""
    if content.find(old, at + 1) != -1:
        n = count_occurrences(content, old)
        return (
            f"Found {n} matches of the string to replace, but replace_all is false. To "
            "replace all occurrences, set replace_all to true. To replace only one "
            "occurrence, please provide more context to uniquely identify the instance.\n"
            f"String: {old}"
        )
    updated = content.replace(old, new, 1)
    return updated, snippet_at_once(updated, at, len(new))
