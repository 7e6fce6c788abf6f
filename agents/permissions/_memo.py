"""Per-decision memo: the work one permission check would otherwise repeat.

A single check consults deny rules, ask rules, the critical-path guard, the mode and allow rules;
each needs the same command split or the same resolved path. The memo lives for one check only,
so nothing is reused across calls: a symlink created between two calls is always seen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._bash import SimpleCommand, split_command
from ._paths import real, tool_path

__all__ = ["CallMemo"]


class CallMemo:
    """Caches ``split_command`` and ``real`` results for the duration of one check."""

    __slots__ = ("_forms", "_paths", "_real", "_split")

    def __init__(self) -> None:
        self._split: dict[str, tuple[SimpleCommand, ...]] = {}
        self._real: dict[str, str] = {}
        self._paths: dict[tuple[str, int], str | None] = {}
        # keyed by identity: the parts are kept alive by ``_split`` for the whole check
        self._forms: dict[int, list[str]] = {}

    def tool_path(
        self, tool_name: str, tool_input: Mapping[str, Any], cwd: str, home: str
    ) -> str | None:
        """``tool_path(...)`` for this check's input (keyed by identity: it is not copied)."""
        key = (tool_name, id(tool_input))
        if key in self._paths:
            return self._paths[key]
        path = self._paths[key] = tool_path(tool_name, tool_input, cwd, home)
        return path

    def split(self, command: str) -> tuple[SimpleCommand, ...]:
        """``split_command(command)``, computed once per check."""
        parts = self._split.get(command)
        if parts is None:
            parts = self._split[command] = split_command(command)
        return parts

    def forms(self, part: SimpleCommand, make: Callable[[SimpleCommand], list[str]]) -> list[str]:
        """``make(part)`` once per check: deny and ask rules try the same spellings."""
        forms = self._forms.get(id(part))
        if forms is None:
            forms = self._forms[id(part)] = make(part)
        return forms

    def real(self, path: str) -> str:
        """``real(path)`` (symlinks resolved), computed once per check."""
        resolved = self._real.get(path)
        if resolved is None:
            resolved = self._real[path] = real(path)
        return resolved
