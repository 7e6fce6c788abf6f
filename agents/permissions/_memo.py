"""Per-decision memo: the work one permission check would otherwise repeat.

A single check consults deny rules, ask rules, the critical-path guard, the mode and allow rules;
each needs the same command split or the same resolved path. The memo lives for one check only,
so nothing is reused across calls: a symlink created between two calls is always seen — except
the real paths of the session's own directory and home, the rules' anchors, which are resolved
once per session like the working directories.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import trio

from ._bash import MAX_COMMAND_BYTES, THREAD_BYTES, Analysis, Command, analyze
from ._editing import Changed
from ._paths import real, tool_path
from ._reading import Globs

__all__ = ["CallMemo", "SessionDirs"]


class SessionDirs(Protocol):
    """The session's own directories, resolved once per session (``WorkingDirs``)."""

    @property
    def resolved(self) -> Mapping[str, str]:
        """What :meth:`session_real` has resolved so far, by path."""

    def session_real(self, path: str) -> str | None:
        """``real(path)`` if ``path`` is the session's directory or home, else None."""


class CallMemo:
    """Caches Bash analyses and ``real`` results for the duration of one check.

    ``session``: where the real paths of the session's directory and home come from (they are
    resolved once per session, as the working directories are, not at every check)."""

    __slots__ = ("_bash", "_forms", "_globs", "_paths", "_real", "_session", "changed", "cleared")

    def __init__(self, session: SessionDirs | None = None) -> None:
        self._bash: dict[str, Analysis] = {}
        # (the session's directories it has resolved: where a new file's parent often is)
        self._real: dict[str, str] = {} if session is None else dict(session.resolved)
        self._session = session
        self._paths: dict[tuple[str, int], str | None] = {}
        # keyed by identity: the parts are kept alive by ``_bash`` for the whole check
        self._forms: dict[int, list[str]] = {}
        self._globs: Globs | None = None
        #: the files a line's file-changing parts change, and whether one is known only at
        #: run time (``_bash_rules``), by the analysis' identity: deny, ask and what might
        #: match at run time all look at them
        self.changed: dict[int, tuple[list[Changed], bool]] = {}
        #: what was found covered by none of an index's rules this check: (its identity, a
        #: path read, whether whole) and (its identity, a command's list of reads)
        self.cleared: set[tuple[object, ...]] = set()

    def tool_path(
        self, tool_name: str, tool_input: Mapping[str, Any], cwd: str, home: str
    ) -> str | None:
        """``tool_path(...)`` for this check's input (keyed by identity: it is not copied)."""
        key = (tool_name, id(tool_input))
        if key in self._paths:
            return self._paths[key]
        path = self._paths[key] = tool_path(tool_name, tool_input, cwd, home)
        return path

    @property
    def globs(self) -> Globs:
        """The check's glob words, each expanded once (and a limit to how many); made when a
        check first needs it (most name no file)."""
        globs = self._globs
        if globs is None:
            globs = self._globs = Globs()
        return globs

    def bash(self, command: str) -> Analysis:
        """``analyze(command)``, computed once per check."""
        analysis = self._bash.get(command)
        if analysis is None:
            analysis = self._bash[command] = analyze(command)
        return analysis

    def long_bash(self, tool_name: str, tool_input: Mapping[str, Any]) -> str | None:
        """The Bash command :meth:`prepare` would analyse in a worker thread, if any."""
        if tool_name != "Bash":
            return None
        command = tool_input.get("command")
        if (
            isinstance(command, str)
            and THREAD_BYTES <= len(command) <= MAX_COMMAND_BYTES  # longer ones are refused at once
            and command not in self._bash
        ):
            return command
        return None

    async def prepare(self, tool_name: str, tool_input: Mapping[str, Any]) -> None:
        """Analyse a long Bash command in a worker thread, so the event loop never waits on it
        (the analysis is linear in the command's size, but a 64 KB line takes milliseconds)."""
        command = self.long_bash(tool_name, tool_input)
        if command is not None:
            self._bash[command] = await trio.to_thread.run_sync(analyze, command)

    def forms(self, part: Command, make: Callable[[Command], list[str]]) -> list[str]:
        """``make(part)`` once per check: deny and ask rules try the same spellings."""
        forms = self._forms.get(id(part))
        if forms is None:
            forms = self._forms[id(part)] = make(part)
        return forms

    def real(self, path: str) -> str:
        """``real(path)`` (symlinks resolved), computed once per check; a path that does not
        exist yet starts from its parent's, when this check knows it."""
        resolved = self._real.get(path)
        if resolved is None:
            session = self._session
            known = session.session_real(path) if session is not None else None
            resolved = self._real[path] = (
                known if known is not None else real(path, self._real.get)
            )
        return resolved
