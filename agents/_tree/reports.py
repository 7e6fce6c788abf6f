"""What a background subagent reports as it runs and when it ends: ``task_progress`` after each
response that goes on to its tools and ``task_notification`` at its end, on the stream; and its
end to its spawner, as a notification queued for the spawner's next turn (a ``WAKE`` in its
mailbox marks the moment).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

import trio

from .._loop.agent import AgentLoop
from .._loop.contracts import DONE, Prompt
from .._loop.response import Response
from ..messages import SystemMessage
from .serve import WAKE

__all__ = ["EndedChild", "notify", "notify_nowait", "report_progress", "tell_spawner"]


class EndedChild(Protocol):
    """A subagent that has ended, as its spawner's record of it tells (``subagents._Child``)."""

    loop: AgentLoop
    description: str

    @property
    def status(self) -> str: ...

    def summary(self) -> str: ...


def report_progress(child: AgentLoop, response: Response) -> Awaitable[None]:
    """``task_progress`` after a background agent's response with tool calls (the response that
    ends its run is followed by its ``task_notification``, which says more): a notice, which never
    waits, keyed by the agent (a progress report still in line behind a full buffer is
    replaced by the newer one). Awaitable without a coroutine: awaited after each such response."""
    calls = response.tool_uses
    session = child.session
    message = SystemMessage(
        subtype="task_progress",
        data={
            "task_id": child.agent_id,
            "tool_use_id": child.parent_tool_use_id,
            "num_turns": session.turns_by_agent.get(child.agent_id, 0),
            "cost_usd": session.supervisor.ledger.spent(child.agent_id),  # the tree's ledger
            "last_tool_name": calls[-1].name if calls else None,
        },
    )
    notice = session.emit_notice
    if notice is None:
        return session.emit(message)
    notice(message, child.agent_id, None)
    return DONE


def notify_nowait(parent: AgentLoop, record: EndedChild) -> tuple[SystemMessage, Prompt] | None:
    """A background child ended: tell the stream, then the spawner.

    The spawner hears of it through ``parent.links.notifications``, not by a prompt in its bounded
    mailbox: a child must not wait (alive, holding its memory) for room in a busy parent's
    mailbox, and a notification must never be dropped. The list is bounded all the same: by
    the spawner's background children, which the concurrency limit bounds. A ``WAKE``
    marks the moment among the mailbox's prompts; if the mailbox is full the spawner is busy
    with it and finds the notification when it has drained it.

    The same holds for the stream: its ``task_notification`` is a notice
    (``Session.emit_notice``), queued at once even behind a full buffer, so this is done here,
    without a coroutine, and returns None. Only a session without notices (every message
    through ``emit``) may find no room: then the message and the spawner's prompt are
    returned for :func:`notify` to finish (the spawner hears of it once the stream has the
    message, as always).
    """
    child = record.loop
    status, summary = record.status, record.summary()
    text = (
        f"<task-notification>\n<task-id>{child.agent_id}</task-id>\n"
        f"<status>{status}</status>\n<summary>{record.description}</summary>\n"
        f"<result>{summary}</result>\n</task-notification>"
    )
    # positional (content, origin): once per background child
    prompt = Prompt(text, {"kind": "task-notification", "task_id": child.agent_id})
    try:
        data = {
            "task_id": child.agent_id,
            "tool_use_id": child.parent_tool_use_id,
            "status": status,
            "summary": summary[:2000],
            "cost_usd": child.session.supervisor.ledger.spent(child.agent_id),
            "num_turns": child.turns_total,
        }
        message = SystemMessage(subtype="task_notification", data=data)
        session = parent.session
        notice = session.emit_notice
        if notice is not None:
            # queued at once, behind what waits, with a key of its own; the child's progress
            # report still waiting in line is dropped: this says more
            notice(message, object(), child.agent_id)
        else:
            nowait = session.emit_nowait
            if nowait is None or not nowait(message):
                return message, prompt
    except BaseException:  # even so: the spawner must hear of it
        tell_spawner(parent, prompt)
        raise
    tell_spawner(parent, prompt)
    return None


async def notify(parent: AgentLoop, message: SystemMessage, prompt: Prompt) -> None:
    """The end of :func:`notify_nowait` when the stream had no room for ``message``."""
    try:
        # Shielded, with a deadline: a stopped or cancelled child still reports its end, and a
        # stream nobody reads holds it 5 s at most. (Only here: queuing without a wait has no
        # checkpoint, so a cancel cannot cut it, and a scope per child costs.)
        with trio.CancelScope(shield=True, relative_deadline=5):
            await parent.session.emit(message)
    finally:  # even if the stream's reader is gone or too slow: the spawner must hear of it
        tell_spawner(parent, prompt)


def tell_spawner(parent: AgentLoop, prompt: Prompt) -> None:
    """Queue a background child's notification for its spawner, and wake the spawner."""
    links = parent.links
    waiting = links.notifications
    if waiting is None:
        links.notifications = [prompt]
    else:
        waiting.append(prompt)
    links.background_running -= 1
    if links.actor is not None:
        # not ``contextlib.suppress``: this runs for every background child
        try:  # noqa: SIM105 - a suppress context costs more than the rest of this
            links.actor.mailbox.send_nowait(WAKE)
        except (trio.WouldBlock, trio.ClosedResourceError):
            pass
