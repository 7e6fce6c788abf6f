"""Recording, resuming and forking transcripts, and the public session helpers.

A :class:`Transcript` is what the agent loop holds: bound to a store, a key and an agent id, it
turns each streamed message into a :class:`TranscriptEntry` whose ``parent_uuid`` is the previous
entry's ``uuid`` and appends it at once (one line, flushed). Resuming loads the entries, follows
the active branch, optionally truncates at a message (``resume_session_at``) and continues the
chain from there; forking copies the entries under a new session id and never writes to the
original.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Sequence
from typing import Any

import attrs
import msgspec
import trio
from trio.lowlevel import checkpoint_if_cancelled

from agents._ids import new_id
from agents.messages import AssistantMessage, Message, SystemMessage, ToolResultBlock, UserMessage
from agents.sessions.entry import (
    HISTORY_SNAPSHOT,
    LoadReport,
    TranscriptEntry,
    is_large,
    is_large_entry,
    summary,
)
from agents.sessions.file_store import FileSessionStore
from agents.sessions.history import (
    INLINE_REBUILD_ENTRIES,
    clear_in_slices,
    fits_the_loop,
    snapshot_problem,
)
from agents.sessions.store import (
    SessionInfo,
    SessionKey,
    SessionNotFoundError,
    SessionStore,
    SupportsListSessions,
    load_with_report,
    project_key_for,
)

__all__ = [
    "Transcript",
    "active_branch",
    "fork_session",
    "get_session_messages",
    "list_sessions",
    "newest_session_id",
    "resumable",
    "truncate_at",
]

_replace = msgspec.structs.replace


@attrs.define(eq=False)
class Transcript:
    """The recorder of one agent's transcript; keeps the chain of ``parent_uuid`` links.

    ::

        transcript = Transcript(store, SessionKey(project_key_for(cwd), session_id))
        entry = await transcript.record(UserMessage(content="hi"))   # uuid assigned if empty
        resumed, report = await Transcript.resume(store, key)        # report.entries: the history
    """

    store: SessionStore
    key: SessionKey
    agent_id: str = "main"
    last_uuid: str | None = None

    async def record(self, message: Message) -> TranscriptEntry:
        """Append ``message`` as the next entry; returns it (``entry.message`` has its uuid).

        A message whose ``uuid`` is empty gets a fresh uuid4, which is also the entry's uuid, so
        ``resume_session_at`` can name any message the caller saw. ``SystemMessage`` has no uuid
        field; its entry still gets one.
        """
        # ``_entry`` and ``_append`` inlined: this runs for every message of every agent, and a
        # Python call costs about as much as the rest of an entry's bookkeeping
        message_uuid = getattr(message, "uuid", "")
        if not message_uuid:
            message_uuid = new_id()
            if not isinstance(message, SystemMessage):
                message = _replace(message, uuid=message_uuid)
        entry = TranscriptEntry(
            uuid=message_uuid,
            parent_uuid=self.last_uuid,
            session_id=self.key.session_id,
            timestamp=time.time(),
            agent_id=self.agent_id,
            message=message,
        )
        append_nowait = getattr(self.store, "append_nowait", None)
        if append_nowait is not None and (
            # a response's blocks, never large (see ``is_large_entry``): without its call
            type(message) is AssistantMessage or not is_large_entry(entry)
        ):
            append_nowait(self.key, (entry,))
            # stored: the chain goes on from it even if the checkpoint raises (a caller that
            # is cancelled here sees ``last_uuid`` say that its entry was stored)
            self.last_uuid = message_uuid
            await checkpoint_if_cancelled()
        else:
            await self.store.append(self.key, [entry])
            self.last_uuid = message_uuid
        return entry

    async def record_all(self, messages: Sequence[Message]) -> list[TranscriptEntry]:
        """Append ``messages`` as the next entries, chained in order, in one store append (one
        write for the file store): e.g. the blocks of one model response. Each is stored before
        this returns, as with :meth:`record`."""
        entries = []
        parent = self.last_uuid
        session_id = self.key.session_id
        agent_id = self.agent_id
        for message in messages:  # ``_entry`` inlined (one call less per block)
            message_uuid = getattr(message, "uuid", "")
            if not message_uuid:
                message_uuid = new_id()
                if not isinstance(message, SystemMessage):
                    message = _replace(message, uuid=message_uuid)
            entries.append(
                TranscriptEntry(
                    uuid=message_uuid,
                    parent_uuid=parent,
                    session_id=session_id,
                    timestamp=time.time(),
                    agent_id=agent_id,
                    message=message,
                )
            )
            parent = message_uuid
        if entries:
            # ``_append`` inlined (a coroutine less per model response)
            append_nowait = getattr(self.store, "append_nowait", None)
            if append_nowait is not None and not is_large(entries):
                append_nowait(self.key, entries)
                self.last_uuid = parent  # stored, whatever the checkpoint raises
                await checkpoint_if_cancelled()
            else:
                await self.store.append(self.key, entries)
                self.last_uuid = parent
        return entries

    async def record_kind(self, kind: str, data: dict[str, Any]) -> TranscriptEntry:
        """Append a non-message entry.

        E.g. ``record_kind(HISTORY_SNAPSHOT, {"messages": [...]})`` after compaction.
        """
        entry = TranscriptEntry(
            uuid=new_id(),
            parent_uuid=self.last_uuid,
            session_id=self.key.session_id,
            timestamp=time.time(),
            agent_id=self.agent_id,
            kind=kind,
            data=data,
        )
        await self._append([entry])
        return entry

    async def _append(self, entries: list[TranscriptEntry]) -> None:
        append_nowait = getattr(self.store, "append_nowait", None)
        if append_nowait is not None and not is_large(entries):
            # the built-in stores: no scheduling round trip per entry
            append_nowait(self.key, entries)
            self.last_uuid = entries[-1].uuid  # stored, whatever the checkpoint raises
            await trio.lowlevel.checkpoint_if_cancelled()
        else:
            await self.store.append(self.key, entries)
            self.last_uuid = entries[-1].uuid

    def close(self) -> None:
        """Say that this transcript's agent has ended: a store that keeps a descriptor per key
        (``FileSessionStore.release``) closes it now instead of when it ages out of its cache.
        Recording again later still works."""
        release = getattr(self.store, "release", None)
        if release is not None:
            release(self.key)

    @classmethod
    async def resume(
        cls,
        store: SessionStore,
        key: SessionKey,
        *,
        agent_id: str = "main",
        at: str | None = None,
    ) -> tuple[Transcript, LoadReport]:
        """Load ``key`` (active branch, truncated at message ``at`` if given) and continue it.

        The report's ``entries`` are what ``history_from_entries`` turns into the API history;
        its ``errors`` are the problems to surface, each naming file and line, then a summary of
        what was kept and dropped (see :func:`resumable`). New entries chain from the last entry.
        Raises ``SessionNotFoundError`` if the session does not exist and ``ValueError`` if
        ``at`` names no entry.
        """
        report = await load_with_report(store, key)
        if report is None:
            raise SessionNotFoundError(
                f"no session {key.session_id!r} in project {key.project_key!r}"
            )
        if fits_the_loop(report.entries):
            resumed = resumable(report, at=at)
        else:  # walking a long transcript's branches, and freeing what it drops, would hold it
            resumed = await trio.to_thread.run_sync(functools.partial(_resumable_freed, report, at))
        entries = resumed.entries
        transcript = cls(store, key, agent_id, entries[-1].uuid if entries else None)
        return transcript, resumed

    async def fork(self, new_session_id: str, *, at: str | None = None) -> Transcript:
        """Copy this session (and its subagent transcripts) under ``new_session_id``; see
        :func:`fork_session`. Returns a transcript recording into the copy."""
        entries = await fork_session(self.store, self.key.main(), new_session_id, at=at)
        new_key = SessionKey(self.key.project_key, new_session_id, self.key.subpath)
        if self.key.subpath is None:
            last = entries[-1].uuid if entries else None
        else:
            copied = await self.store.load(new_key)
            last = copied[-1].uuid if copied else None
        return Transcript(self.store, new_key, self.agent_id, last)


_BEFORE_PROMPT = "before the first prompt of the resumed branch"


def _resumable_freed(report: LoadReport, at: str | None) -> LoadReport:
    """:func:`resumable`, then the loaded list emptied here (in a worker thread): the entries
    resume leaves aside are freed in this thread, not on the event loop's."""
    resumed = resumable(report, at=at)
    clear_in_slices(report.entries)  # resumable always returns a new list
    return resumed


def resumable(report: LoadReport, *, at: str | None = None) -> LoadReport:
    """What resume uses of a loaded transcript, with a report that adds up.

    The active branch (truncated at message ``at`` if given), from its first prompt on: entries
    of the conversation (assistant turns, tool results) before any user prompt are dropped, since
    a history must start with the user's turn. When anything was dropped — here or by the load —
    the report's last error is a summary with the final counts; entries off the branch or after
    ``at`` are counted as ``unused`` (left aside on purpose). Raises ``ValueError`` if ``at``
    names no entry.
    """
    entries = active_branch(report.entries)
    if at is not None:
        entries = truncate_at(entries, at)
    unused = len(report.entries) - len(entries)
    start = _first_prompt(entries)
    errors = list(report.errors)
    reasons = dict(report.reasons)
    if start:
        entries = entries[start:]
        reasons[_BEFORE_PROMPT] = start
        errors.insert(
            len(errors) - 1 if report.dropped else len(errors),
            f"{report.label}: the resumed branch starts with {start} entries of the "
            "conversation before any user prompt; dropped them",
        )
    dropped = sum(reasons.values())
    if dropped:
        if report.dropped and errors:
            errors.pop()  # the load's own summary, replaced by the final one
        read = report.read if report.read is not None else len(report.entries) + report.dropped
        errors.append(f"{report.label}: " + summary(len(entries), read, reasons, unused))
    ignored = _ignored_snapshots(report.label, entries)
    if ignored:  # kept (the chain goes through them), so before the summary of what was dropped
        place = len(errors) - 1 if dropped else len(errors)
        errors[place:place] = ignored
    return attrs.evolve(
        report, entries=entries, errors=errors, dropped=dropped, reasons=reasons, unused=unused
    )


def _ignored_snapshots(label: str, entries: Sequence[TranscriptEntry]) -> list[str]:
    """One message per history snapshot of the main agent that the history rebuild ignores."""
    return [
        f"{label}: the history snapshot {entry.uuid} is not a history ({problem}); ignored it: "
        "the history is rebuilt from the entries before it"
        for entry in entries
        if entry.kind == HISTORY_SNAPSHOT
        and entry.agent_id == "main"
        and (problem := snapshot_problem(entry.data)) is not None
    ]


def _first_prompt(entries: Sequence[TranscriptEntry]) -> int:
    """How many entries to drop so the main agent's conversation starts with a user prompt: 0
    unless a turn of the conversation (an assistant turn, a tool result) comes before it."""
    for i, entry in enumerate(entries):
        if entry.agent_id == "main" and (entry.kind == HISTORY_SNAPSHOT or _is_prompt(entry)):
            return i if any(_is_turn(e) for e in entries[:i]) else 0
    return len(entries) if any(_is_turn(e) for e in entries) else 0


def _is_prompt(entry: TranscriptEntry) -> bool:
    message = entry.message
    if not isinstance(message, UserMessage) or message.parent_tool_use_id is not None:
        return False
    content = message.content
    return isinstance(content, str) or not all(isinstance(b, ToolResultBlock) for b in content)


def _is_turn(entry: TranscriptEntry) -> bool:
    """An entry that becomes part of the API history other than a prompt."""
    message = entry.message
    if entry.agent_id != "main" or getattr(message, "parent_tool_use_id", None) is not None:
        return False
    if isinstance(message, AssistantMessage):
        return message.error is None
    return isinstance(message, UserMessage) and not _is_prompt(entry)


def active_branch(entries: Sequence[TranscriptEntry]) -> list[TranscriptEntry]:
    """The entries on the path from the root to the last entry, in order.

    After ``resume_session_at`` the new entries chain from an earlier message; the abandoned tail
    is still in the file but not on this path. A linear transcript comes back unchanged. An entry
    whose ``parent_uuid`` is unknown ends the walk (it is treated as a root).
    """
    if not entries:
        return []
    by_uuid = {e.uuid: i for i, e in enumerate(entries)}
    path: list[int] = []
    index: int | None = len(entries) - 1
    seen: set[int] = set()
    while index is not None and index not in seen:
        seen.add(index)
        path.append(index)
        parent = entries[index].parent_uuid
        index = by_uuid.get(parent) if parent is not None else None
    if len(path) == len(entries):
        return list(entries)
    return [entries[i] for i in sorted(path)]


def truncate_at(entries: Sequence[TranscriptEntry], message_uuid: str) -> list[TranscriptEntry]:
    """The entries up to and including the one with uuid ``message_uuid`` (``resume_session_at``).

    Raises ``ValueError`` naming the uuid when no entry has it.
    """
    for i, entry in enumerate(entries):
        if entry.uuid == message_uuid or getattr(entry.message, "uuid", None) == message_uuid:
            return list(entries[: i + 1])
    raise ValueError(
        f"resume_session_at: no message with uuid {message_uuid!r} in the transcript "
        f"({len(entries)} entries)"
    )


def _rebrand(entry: TranscriptEntry, session_id: str) -> TranscriptEntry:
    message = entry.message
    if message is not None and getattr(message, "session_id", "") == entry.session_id:
        message = msgspec.structs.replace(message, session_id=session_id)
    return msgspec.structs.replace(entry, session_id=session_id, message=message)


def _copy(entries: list[TranscriptEntry], at: str | None, session_id: str) -> list[TranscriptEntry]:
    """The active branch of ``entries`` (cut at ``at``) under ``session_id``; empties
    ``entries`` (the originals are freed where this runs: a worker thread for a long one)."""
    branch = active_branch(entries)
    if at is not None:
        branch = truncate_at(branch, at)
    copied = [_rebrand(e, session_id) for e in branch]
    del branch
    clear_in_slices(entries)
    return copied


async def fork_session(
    store: SessionStore, key: SessionKey, new_session_id: str, *, at: str | None = None
) -> list[TranscriptEntry]:
    """Copy session ``key`` under ``new_session_id`` (``fork_session=True``); returns the copy.

    Only reads the original, so its bytes stay identical. Entries keep their uuids and links;
    ``session_id`` (the entry's, and the message's where it named the old session) becomes the new
    id. With ``at``, the main transcript is cut after that message. Subagent transcripts are copied
    too. Raises ``SessionNotFoundError`` if the original does not exist.
    """
    if new_session_id == key.session_id:
        raise ValueError(
            f"new_session_id must differ from the forked session, got {new_session_id!r}"
        )
    main = key.main()
    report = await load_with_report(store, main)
    if report is None:
        raise SessionNotFoundError(
            f"no session {main.session_id!r} in project {main.project_key!r}"
        )
    if len(report.entries) <= INLINE_REBUILD_ENTRIES:
        copied = _copy(report.entries, at, new_session_id)
    else:  # a long transcript: walking and copying it would hold the event loop
        copied = await trio.to_thread.run_sync(_copy, report.entries, at, new_session_id)
    await store.append(SessionKey(main.project_key, new_session_id), copied)
    for subpath in await store.list_subkeys(main):
        sub = await store.load(SessionKey(main.project_key, main.session_id, subpath))
        if sub:
            await store.append(
                SessionKey(main.project_key, new_session_id, subpath),
                [_rebrand(e, new_session_id) for e in sub],
            )
    return copied


async def list_sessions(
    cwd: str | os.PathLike[str] | None = None, store: SessionStore | None = None
) -> list[SessionInfo]:
    """The sessions of ``cwd``'s project (default: the current directory), newest first.

    ``store`` defaults to a ``FileSessionStore`` at the default data directory; a store without
    ``list_sessions`` raises ``TypeError``.
    """
    project_key = project_key_for(cwd)
    if store is None:
        async with FileSessionStore() as default:
            return await default.list_sessions(project_key)
    if not isinstance(store, SupportsListSessions):
        raise TypeError(f"store {type(store).__name__} does not implement list_sessions")
    return await store.list_sessions(project_key)


async def get_session_messages(
    session_id: str,
    cwd: str | os.PathLike[str] | None = None,
    store: SessionStore | None = None,
) -> list[Message]:
    """The messages recorded in a session's main transcript, in order (``[]`` if none)."""
    key = SessionKey(project_key_for(cwd), session_id)
    if store is None:
        async with FileSessionStore() as default:
            entries = await default.load(key)
    else:
        entries = await store.load(key)
    return [e.message for e in entries or () if e.message is not None]


async def newest_session_id(store: SessionStore, project_key: str) -> str | None:
    """The id of the project's most recently active session (``continue_conversation``)."""
    if not isinstance(store, SupportsListSessions):
        raise TypeError(f"store {type(store).__name__} does not implement list_sessions")
    sessions = await store.list_sessions(project_key)
    return sessions[0].session_id if sessions else None
