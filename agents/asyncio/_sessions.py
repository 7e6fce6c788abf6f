"""The session-listing functions for asyncio: the Trio functions, run in the loop's guest run."""

from __future__ import annotations

import os
from typing import Any

import trio

from .. import sessions
from ..messages import Message
from . import _guest

__all__ = ["get_session_messages", "list_sessions"]


async def list_sessions(
    cwd: str | os.PathLike[str] | None = None, store: Any = None
) -> list[sessions.SessionInfo]:
    """:func:`agents.list_sessions` from asyncio: the sessions of ``cwd``'s project, newest
    first (``store``: a trio-agents session store; default, the files under the data dir)."""
    if trio.lowlevel.in_trio_task():
        return await sessions.list_sessions(cwd, store)
    return await _guest.call_in_trio(lambda: sessions.list_sessions(cwd, store))


async def get_session_messages(
    session_id: str, cwd: str | os.PathLike[str] | None = None, store: Any = None
) -> list[Message]:
    """:func:`agents.get_session_messages` from asyncio: a session's recorded messages."""
    if trio.lowlevel.in_trio_task():
        return await sessions.get_session_messages(session_id, cwd, store)
    return await _guest.call_in_trio(lambda: sessions.get_session_messages(session_id, cwd, store))
