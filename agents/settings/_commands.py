"""Custom slash commands: ``.claude/commands/<name>.md`` files, sent as ``/name args``.

Project commands come from ``<cwd>/.claude/commands`` (``"project"`` source), personal ones from
``~/.claude/commands`` (``"user"``); a project command wins over a personal one of the same name.
Files in subdirectories are commands too, named by their file (the directory only groups them).
The file's body, with ``$ARGUMENTS`` replaced by everything after the name and ``$1``, ``$2``, ...
by the single words, becomes the prompt; optional front matter gives ``description`` and
``argument-hint``. Built-in commands (``/clear``, ``/compact``) are never shadowed.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from ._files import read_settings_text
from ._frontmatter import split_front_matter

__all__ = ["SlashCommand", "expand_command", "load_commands"]

_BUILT_IN = frozenset({"clear", "compact"})
#: ``$ARGUMENTS`` or ``$<digits>``, replaced in one pass: what an argument brings is never read
#: as a placeholder in turn (``/fix cost $1``: its text stays ``cost $1``)
_PLACEHOLDER = re.compile(r"\$(?:ARGUMENTS|(\d+))")


@attrs.frozen
class SlashCommand:
    name: str
    description: str
    body: str
    path: str
    argument_hint: str | None = None

    def expand(self, arguments: str) -> str:
        words = arguments.split()
        text, placeholders = _PLACEHOLDER.subn(
            lambda m: arguments if m.group(1) is None else _word(words, m.group(1)), self.body
        )
        if not placeholders and arguments:
            text = f"{text}\n\nARGUMENTS: {arguments}"
        return text


def _word(words: list[str], digits: str) -> str:
    """The word ``$<digits>`` names, "" past the last (a number of thousands of digits, which
    ``int`` refuses, is past it too)."""
    significant = digits.lstrip("0")
    if len(significant) > len(str(len(words))):
        return ""
    index = int(significant or "0")
    return words[index - 1] if 0 < index <= len(words) else ""


def load_commands(
    cwd: str, setting_sources: list[str] | None, home: Path | None = None
) -> dict[str, SlashCommand]:
    """The commands of the enabled sources, by name (blocking: run it in a thread)."""
    sources = setting_sources or []
    dirs = []
    if "user" in sources:
        dirs.append((home or Path.home()) / ".claude" / "commands")
    if "project" in sources:
        dirs.append(Path(cwd) / ".claude" / "commands")
    commands: dict[str, SlashCommand] = {}
    for root in dirs:  # later directories (the project's) win
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.md")):
            name = path.stem
            if name in _BUILT_IN or not path.is_file():
                continue
            fields, body = split_front_matter(read_settings_text(path), path)
            description = fields.get("description")
            hint = fields.get("argument-hint")
            commands[name] = SlashCommand(
                name=name,
                description=description if isinstance(description, str) else _first_line(body),
                body=body,
                path=str(path),
                argument_hint=hint if isinstance(hint, str) else None,
            )
    return commands


def _first_line(body: str) -> str:
    return next((line.strip() for line in body.splitlines() if line.strip()), "")[:100]


def expand_command(prompt: str, commands: dict[str, SlashCommand]) -> str | None:
    """The prompt ``/name args`` stands for, or None when it is not a custom command."""
    if not prompt.startswith("/") or not commands:
        return None
    name, _, arguments = prompt[1:].strip().partition(" ")
    command = commands.get(name)
    return None if command is None else command.expand(arguments.strip())
