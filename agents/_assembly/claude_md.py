"""CLAUDE.md memory files, loaded per ``setting_sources`` into the system prompt.

* ``"user"``: ``~/.claude/CLAUDE.md``;
* ``"project"``: ``CLAUDE.md`` and ``.claude/CLAUDE.md`` in ``cwd`` and each of its parents;
* ``"local"``: ``CLAUDE.local.md`` in ``cwd`` and each of its parents.

``setting_sources=None`` (the default, as in the Agent SDK) loads none. Files come in the order
user, project, local, and from the outermost directory inward, so the most specific instructions
come last. Each becomes a system block after the system prompt: part of the stable prefix that
prompt caching covers and that compaction never touches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

__all__ = ["claude_md_blocks", "find_claude_md"]

_MAX_BYTES = 256 * 1024


def find_claude_md(
    cwd: str, setting_sources: list[str] | None, home: Path | None = None
) -> list[Path]:
    """The memory files that exist, in load order."""
    if not setting_sources:
        return []
    here = Path(cwd).resolve()
    dirs = [*reversed(here.parents), here]
    found: list[Path] = []
    if "user" in setting_sources:
        found.append((home or Path.home()) / ".claude" / "CLAUDE.md")
    if "project" in setting_sources:
        for d in dirs:
            found += [d / "CLAUDE.md", d / ".claude" / "CLAUDE.md"]
    if "local" in setting_sources:
        found += [d / "CLAUDE.local.md" for d in dirs]
    seen: set[Path] = set()
    out = []
    for path in found:
        if path not in seen and path.is_file():
            seen.add(path)
            out.append(path)
    return out


def _read(cwd: str, setting_sources: list[str] | None) -> list[tuple[Path, str]]:
    texts = []
    for path in find_claude_md(cwd, setting_sources):
        try:
            data = path.read_bytes()[:_MAX_BYTES]
        except OSError:
            continue
        text = data.decode("utf-8", errors="replace").strip()
        if text:
            texts.append((path, text))
    return texts


async def claude_md_blocks(cwd: str, setting_sources: list[str] | None) -> list[dict[str, Any]]:
    """System blocks with the contents of each memory file (``[]`` without setting sources)."""
    if not setting_sources:
        return []
    texts = await trio.to_thread.run_sync(_read, cwd, setting_sources)
    return [
        {
            "type": "text",
            "text": f"Contents of {path} (instructions for this project and user):\n\n{text}",
        }
        for path, text in texts
    ]
