"""The front matter of skill and command files: a small YAML subset between ``---`` lines.

Supported, as these files use it: ``key: value`` (plain, single- or double-quoted), ``key: [a, b]``
lists, ``key:`` followed by ``- item`` lines, and comments. A line that fits none of these is an
error naming the file and the line, rather than a silently dropped setting.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FrontMatterError", "split_front_matter"]

FrontValue = str | list[str]


class FrontMatterError(ValueError):
    """A skill or command file's front matter cannot be read; the text names file and line."""


def split_front_matter(text: str, path: Path) -> tuple[dict[str, FrontValue], str]:
    """``(fields, body)``; a file without front matter has no fields and is all body."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text.strip()
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise FrontMatterError(f"{path}: front matter opened on line 1 is never closed") from None
    fields: dict[str, FrontValue] = {}
    key: str | None = None
    for number, line in enumerate(lines[1:end], start=2):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("- ") and key is not None:
            current = fields.setdefault(key, [])
            if isinstance(current, str):
                raise FrontMatterError(f"{path}:{number}: list item under scalar key {key!r}")
            current.append(_scalar(stripped[2:].strip()))
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip() or line[0].isspace():
            raise FrontMatterError(f"{path}:{number}: expected 'key: value', got {line!r}")
        key = name.strip()
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            fields[key] = [_scalar(v.strip()) for v in value[1:-1].split(",") if v.strip()]
        elif value:
            fields[key] = _scalar(value)
        else:
            fields[key] = []
    return fields, "\n".join(lines[end + 1 :]).strip()


def _scalar(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
