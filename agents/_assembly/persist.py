"""Transcripts in a session: the store, resume/continue/fork.

``agents._assembly.query`` opens the store with :func:`open_session_store`, calls
:func:`start_session` before building the main agent (which gets the transcript and the restored
history) and :func:`attach_main` after; the agent loop records through ``AgentLoop.transcript``.
A subagent's loop gets its own transcript from ``Session.agent_transcript``
(``<session>/subagents/agent-<id>``).

Decisions where the Agent SDK's documentation is silent:

* problems found on resume — corrupt or truncated lines and dangling tool calls answered as
  interrupted — are reported as ``SystemMessage(subtype="informational", data={"message": ...})``
  right after the ``init`` message (and logged as warnings by the store);
* repaired tool results at the end of the transcript are recorded, so the next resume finds the
  calls answered and does not report them again;
* ``continue_conversation=True`` with no earlier session in ``cwd`` starts a new session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import attrs
import trio

from .._loop.session import Transcripts
from ..messages import ToolResultBlock, UserMessage
from ..sessions import (
    INTERRUPTED_TOOL_RESULT,
    FileSessionStore,
    SessionKey,
    SessionStore,
    Transcript,
    TranscriptEntry,
    fork_session,
    newest_session_id,
    project_key_for,
    rebuild_history,
)
from ..sessions.history import INLINE_REBUILD_ENTRIES, fits_the_loop, release

if TYPE_CHECKING:
    from .._loop.agent import AgentLoop
    from .._loop.session import Session
    from ..options import AgentOptions

__all__ = [
    "SessionSetup",
    "attach_main",
    "open_session_store",
    "start_session",
]


@asynccontextmanager
async def open_session_store(options: AgentOptions) -> AsyncIterator[SessionStore]:
    """``options.session_store`` (left open: the caller owns it), else a ``FileSessionStore``
    under the data directory, closed when the session ends.

    Closed with the synchronous ``close()``: the session is over by then, and a checkpoint here
    would put one more scheduling round trip between the last message and the end of ``query()``.
    """
    if options.session_store is not None:
        yield options.session_store
        return
    store = FileSessionStore()
    try:
        yield store
    finally:
        store.close()


@attrs.frozen
class SessionSetup:
    """What :func:`start_session` decided: the id, the transcript and the restored history."""

    session_id: str
    transcripts: Transcripts
    transcript: Transcript
    history: list[dict[str, Any]]
    #: unreadable lines and repairs found on resume, each surfaced as an informational message
    notices: list[str]


async def _refuse_in_use(store: SessionStore, key: SessionKey) -> None:
    """A new session (or a fork) under an id the project holds already is refused, as Claude
    Code's ``--session-id``: its messages would follow the other conversation's in one
    transcript, and resuming that one would no longer find it."""
    if await store.load(key) is not None:
        raise ValueError(
            f"session_id {key.session_id!r} is already in use in this project: resume it with "
            f"resume={key.session_id!r}, or give a new id"
        )


async def start_session(
    options: AgentOptions, store: SessionStore, cwd: str, new_id: str
) -> SessionSetup:
    """Create, resume, continue or fork the session's transcript per ``options``.

    ``new_id`` is the id for a new session (or a fork) when ``options.session_id`` is not set.
    Raises ``SessionNotFoundError`` for an unknown ``resume`` id and ``ValueError`` for a
    ``resume_session_at`` naming no message.
    """
    transcripts = Transcripts(store, project_key_for(cwd))
    resume = options.resume
    if resume is None and options.continue_conversation:
        resume = await newest_session_id(store, transcripts.project_key)
    if resume is None:
        if options.resume_session_at is not None:
            raise ValueError(
                "resume_session_at needs resume=<session id> or continue_conversation=True "
                f"(got resume_session_at={options.resume_session_at!r})"
            )
        session_id = options.session_id or new_id
        key = transcripts.key(session_id)
        if options.session_id is not None:
            await _refuse_in_use(store, key)
        return SessionSetup(session_id, transcripts, Transcript(store, key), [], [])
    at = options.resume_session_at
    if options.fork_session and options.session_id is not None:
        await _refuse_in_use(store, transcripts.key(options.session_id))
    transcript, report = await Transcript.resume(store, transcripts.key(resume), at=at)
    notices = list(report.errors)
    if options.fork_session:
        session_id = options.session_id or new_id
        copied = await fork_session(store, transcripts.key(resume), session_id, at=at)
        transcript = Transcript(
            store, transcripts.key(session_id), last_uuid=copied[-1].uuid if copied else None
        )
        await release(copied)  # freeing a long copy on the event loop would hold it
    else:
        session_id = resume
    history = await rebuild_history(report.entries)
    inline = fits_the_loop(report.entries)
    if inline:
        repaired = _repaired_ids(report.entries, history)
    else:  # a long transcript (or history): walking it would hold the event loop
        repaired = await trio.to_thread.run_sync(_repaired_ids, report.entries, history)
    # the history is built: free the entries (a huge snapshot's too) off the loop
    await release(report.entries, inline_up_to=INLINE_REBUILD_ENTRIES if inline else -1)
    if repaired:
        notices.append(
            f"resumed session {resume}: {len(repaired)} tool call(s) left unanswered when the "
            f"session ended were answered as interrupted ({', '.join(repaired)})"
        )
        await _record_tail_repair(transcript, history, set(repaired), session_id)
    return SessionSetup(session_id, transcripts, transcript, history, notices)


def _repaired_ids(entries: list[TranscriptEntry], history: list[dict[str, Any]]) -> list[str]:
    """The tool calls that ``history_from_entries`` answered as interrupted (not in the file)."""
    answered: set[str] = set()
    for entry in entries:
        message = entry.message
        if isinstance(message, UserMessage) and not isinstance(message.content, str):
            answered.update(
                b.tool_use_id for b in message.content if isinstance(b, ToolResultBlock)
            )
    return [
        block["tool_use_id"]
        for message in history
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
        and block.get("content") == INTERRUPTED_TOOL_RESULT
        and block["tool_use_id"] not in answered
    ]


async def _record_tail_repair(
    transcript: Transcript, history: list[dict[str, Any]], repaired: set[str], session_id: str
) -> None:
    """Record the repair results that close the history, so the file itself is resumable."""
    if not history or history[-1]["role"] != "user" or not isinstance(history[-1]["content"], list):
        return
    blocks = [
        ToolResultBlock(tool_use_id=b["tool_use_id"], content=b["content"], is_error=True)
        for b in history[-1]["content"]
        if b.get("type") == "tool_result" and b.get("tool_use_id") in repaired
    ]
    if blocks:
        await transcript.record(UserMessage(content=list(blocks), session_id=session_id))


async def attach_main(session: Session, main: AgentLoop, setup: SessionSetup) -> None:
    """Point the session at its transcripts (the main agent was built with its transcript and
    restored history); report resume problems."""
    session.transcripts = setup.transcripts
    session.transcript_key = setup.transcript.key
    for notice in setup.notices:
        await main.inform(notice)
