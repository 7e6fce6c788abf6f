"""Session transcripts: storage, resume, fork and history rebuild.

::

    from agents.sessions import FileSessionStore, SessionKey, Transcript, project_key_for

    async with FileSessionStore() as store:
        key = SessionKey(project_key_for(cwd), session_id)
        transcript, report = await Transcript.resume(store, key)
        messages = history_from_entries(report.entries)
"""

from __future__ import annotations

from agents.sessions.entry import HISTORY_SNAPSHOT as HISTORY_SNAPSHOT
from agents.sessions.entry import LoadReport as LoadReport
from agents.sessions.entry import TranscriptEntry as TranscriptEntry
from agents.sessions.entry import decode_entry as decode_entry
from agents.sessions.entry import decode_transcript as decode_transcript
from agents.sessions.entry import encode_entry as encode_entry
from agents.sessions.file_store import FileSessionStore as FileSessionStore
from agents.sessions.history import INTERRUPTED_TOOL_RESULT as INTERRUPTED_TOOL_RESULT
from agents.sessions.history import history_from_entries as history_from_entries
from agents.sessions.history import rebuild_history as rebuild_history
from agents.sessions.history import repair_history as repair_history
from agents.sessions.memory_store import InMemorySessionStore as InMemorySessionStore
from agents.sessions.store import DATA_DIR_ENV as DATA_DIR_ENV
from agents.sessions.store import SessionInfo as SessionInfo
from agents.sessions.store import SessionKey as SessionKey
from agents.sessions.store import SessionNotFoundError as SessionNotFoundError
from agents.sessions.store import SessionStore as SessionStore
from agents.sessions.store import SupportsListSessions as SupportsListSessions
from agents.sessions.store import default_projects_dir as default_projects_dir
from agents.sessions.store import load_with_report as load_with_report
from agents.sessions.store import project_key_for as project_key_for
from agents.sessions.store import subagent_subpath as subagent_subpath
from agents.sessions.transcript import Transcript as Transcript
from agents.sessions.transcript import active_branch as active_branch
from agents.sessions.transcript import fork_session as fork_session
from agents.sessions.transcript import get_session_messages as get_session_messages
from agents.sessions.transcript import list_sessions as list_sessions
from agents.sessions.transcript import newest_session_id as newest_session_id
from agents.sessions.transcript import truncate_at as truncate_at

__all__ = [
    "DATA_DIR_ENV",
    "HISTORY_SNAPSHOT",
    "INTERRUPTED_TOOL_RESULT",
    "FileSessionStore",
    "InMemorySessionStore",
    "LoadReport",
    "SessionInfo",
    "SessionKey",
    "SessionNotFoundError",
    "SessionStore",
    "SupportsListSessions",
    "Transcript",
    "TranscriptEntry",
    "active_branch",
    "decode_entry",
    "decode_transcript",
    "default_projects_dir",
    "encode_entry",
    "fork_session",
    "get_session_messages",
    "history_from_entries",
    "list_sessions",
    "load_with_report",
    "newest_session_id",
    "project_key_for",
    "rebuild_history",
    "repair_history",
    "subagent_subpath",
    "truncate_at",
]
