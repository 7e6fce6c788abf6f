"""The ``SessionStore`` protocol, its keys, and where the default store keeps its files.

A store maps a :class:`SessionKey` to an append-only list of transcript entries. The shape follows
the Claude Agent SDK's ``SessionStore``: a key is ``(project_key, session_id, subpath)`` where
``project_key`` is derived from the working directory and ``subpath`` names a subagent's transcript
under the session (``subagents/agent-<id>``). ``append`` and ``load`` carry the transcript;
``delete`` and ``list_subkeys`` manage it; ``list_sessions`` is optional (``SupportsListSessions``)
because a remote store may not be able to list cheaply.

Any implementation can be checked with :func:`agents.testing.store_conformance.check_session_store`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import attrs
import msgspec

from agents.messages import TextBlock, UserMessage
from agents.sessions.entry import LoadReport, TranscriptEntry, check_entries

__all__ = [
    "DATA_DIR_ENV",
    "SessionInfo",
    "SessionKey",
    "SessionNotFoundError",
    "SessionStore",
    "SupportsListSessions",
    "default_projects_dir",
    "load_with_report",
    "project_key_for",
    "prompt_text",
    "session_info",
    "subagent_subpath",
    "summarize_prompt",
]

#: Environment variable naming the data directory; transcripts live in its ``projects/``.
DATA_DIR_ENV = "TRIO_AGENTS_DATA_DIR"

_MAX_PROJECT_KEY = 200
_UNSAFE = re.compile(r"[^A-Za-z0-9]")


class SessionKey(msgspec.Struct, frozen=True):
    """Where one transcript lives: a project, a session and, for a subagent, a subpath.

    Frozen and hashable, so stores can key dicts by it::

        SessionKey(project_key_for("/repo"), session_id)
        SessionKey(project_key_for("/repo"), session_id, subagent_subpath("main/researcher-1"))
    """

    project_key: str
    session_id: str
    subpath: str | None = None

    def main(self) -> SessionKey:
        """The key of the session's main transcript (``subpath`` dropped)."""
        return SessionKey(self.project_key, self.session_id) if self.subpath else self


@attrs.frozen
class SessionInfo:
    """One row of ``list_sessions``: newest first by ``mtime``.

    ``mtime`` is the time of the session's last activity in seconds since the epoch (the timestamp
    of its last entry for the built-in stores, which makes the order exact even where file-system
    mtimes are coarse); ``summary`` is the first prompt cut to one short line.
    """

    session_id: str
    mtime: float
    first_prompt: str | None = None
    summary: str = ""
    created: float | None = None


class SessionNotFoundError(LookupError):
    """Raised when a session to resume or fork does not exist in the store."""


@runtime_checkable
class SessionStore(Protocol):
    """Persistence of session transcripts; see the module docstring for the key layout.

    Semantics every implementation honours (the conformance suite checks them):

    * ``append`` adds entries after the existing ones, in order; an empty sequence is a no-op.
    * ``load`` returns every entry appended so far in append order, or ``None`` if nothing was ever
      appended under the key (or it was deleted).
    * ``delete`` of a main key removes it and all its subkeys; of a subkey, only that one. Deleting
      a missing key is not an error.
    * ``list_subkeys`` returns the sorted subpaths that exist under the key's session.
    """

    async def append(self, key: SessionKey, entries: Sequence[TranscriptEntry]) -> None: ...

    async def load(self, key: SessionKey) -> list[TranscriptEntry] | None: ...

    async def delete(self, key: SessionKey) -> None: ...

    async def list_subkeys(self, key: SessionKey) -> list[str]: ...


@runtime_checkable
class SupportsListSessions(Protocol):
    """The optional listing half of a store (``list_sessions()``, ``continue_conversation``)."""

    async def list_sessions(self, project_key: str) -> list[SessionInfo]: ...


@runtime_checkable
class _SupportsLoadReport(Protocol):
    async def load_report(self, key: SessionKey) -> LoadReport | None: ...


async def load_with_report(store: SessionStore, key: SessionKey) -> LoadReport | None:
    """``load`` plus the report of what could not be used: the store's own when it gives one
    (the built-in stores do), else the chain check of the entries it returned."""
    if isinstance(store, _SupportsLoadReport):
        return await store.load_report(key)
    entries = await store.load(key)
    if entries is None:
        return None
    label = "/".join(p for p in (key.project_key, key.session_id, key.subpath) if p)
    return check_entries(f"{type(store).__name__}:{label}", list(entries))


def default_projects_dir() -> Path:
    """``$TRIO_AGENTS_DATA_DIR/projects``, else ``~/.trio-agents/projects``."""
    # every session asks; the answer depends only on these two variables
    return _projects_dir(os.environ.get(DATA_DIR_ENV), os.environ.get("HOME"))


@functools.lru_cache(maxsize=8)
def _projects_dir(data_dir: str | None, home: str | None) -> Path:
    base = Path(data_dir).expanduser() if data_dir else Path.home() / ".trio-agents"
    return base / "projects"


def project_key_for(cwd: str | os.PathLike[str] | None = None) -> str:
    """The project key of a working directory, as Claude Code names its project folders.

    The absolute path with every character other than ``[A-Za-z0-9]`` replaced by ``-``
    (``/home/me/my.repo`` → ``-home-me-my-repo``); keys over 200 characters are cut and suffixed
    with a hash so distinct long paths stay distinct.
    """
    return _project_key(os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd()))


@functools.lru_cache(maxsize=256)
def _project_key(path: str) -> str:
    key = _UNSAFE.sub("-", path)
    if len(key) > _MAX_PROJECT_KEY:
        digest = hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        key = f"{key[: _MAX_PROJECT_KEY - 17]}-{digest}"
    return key


def subagent_subpath(agent_id: str) -> str:
    """The subpath of a subagent's transcript.

    ``main/researcher-1`` → ``subagents/agent-main-researcher-1``.
    """
    if not agent_id:
        raise ValueError("agent_id must be non-empty")
    return f"subagents/agent-{agent_id.replace('/', '-')}"


_SUMMARY_CHARS = 80


def prompt_text(entry: TranscriptEntry) -> str | None:
    """The text of a main-agent user prompt entry (not a tool result), else ``None``."""
    message = entry.message
    if entry.agent_id != "main" or not isinstance(message, UserMessage):
        return None
    if message.parent_tool_use_id is not None:
        return None
    if isinstance(message.content, str):
        return message.content
    texts = [block.text for block in message.content if isinstance(block, TextBlock)]
    return "\n".join(texts) if texts else None


def session_info(
    session_id: str, entries: Sequence[TranscriptEntry], mtime: float | None = None
) -> SessionInfo:
    """Summarize a transcript for ``list_sessions``: last activity, creation and first prompt."""
    first = next((text for e in entries if (text := prompt_text(e)) is not None), None)
    last = entries[-1].timestamp if entries else None
    return SessionInfo(
        session_id=session_id,
        mtime=last if last is not None else (mtime or 0.0),
        first_prompt=first,
        summary=summarize_prompt(first),
        created=entries[0].timestamp if entries else None,
    )


def summarize_prompt(text: str | None) -> str:
    """The first line of a prompt cut to 80 characters, with an ellipsis when cut."""
    if not text:
        return ""
    line = " ".join(text.split())
    return line if len(line) <= _SUMMARY_CHARS else line[: _SUMMARY_CHARS - 1] + "…"
