"""Slash commands a prompt can be: ``/clear`` and ``/compact [instructions]``.

They run in the main agent's actor, between prompts, like any queued prompt, and end with a
``ResultMessage`` of their own:

* ``/clear``: a new session id and transcript, an empty history, and fresh cost totals and budget
  (a new ledger with the same cap); ``SessionStart`` hooks fire with ``source="clear"``. The
  result (``result=""``) carries the new ``session_id``. Background subagents still running are
  left alone.
* ``/compact [instructions]``: compaction now (``trigger="manual"``); the result text is
  ``Not enough messages to compact.`` when there is too little history, the reason when a
  PreCompact hook blocked it, and ``Conversation compacted.`` otherwise. A failed summary request
  is an ``error_during_execution`` result; one the budget has no room for (``reserve`` mode) an
  ``error_max_budget_usd`` result.

Any other text starting with ``/`` is an ordinary prompt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from .._loop.compaction import compact, context_tokens
from .._loop.run import Run, RunEnd, new_id
from ..messages import ResultMessage
from . import hookpoints

if TYPE_CHECKING:
    from .._loop.agent import AgentLoop

__all__ = ["COMPACTED_TEXT", "run_command"]

COMPACTED_TEXT = "Conversation compacted."


async def run_command(loop: AgentLoop, content: str) -> ResultMessage | None:
    """Run ``content`` if it is a slash command; None if it is an ordinary prompt."""
    if not content.startswith("/"):
        return None
    name, _, arg = content.strip().partition(" ")
    if name == "/clear":
        return await _clear(loop)
    if name == "/compact":
        return await _compact(loop, arg.strip() or None)
    return None


async def _clear(loop: AgentLoop) -> ResultMessage:
    run = Run(started=trio.current_time())
    session = loop.session
    loop.start_over(session.restart(new_id()))
    session.model_usage.clear()
    session.supervisor.replace_ledger(session.options.new_ledger())
    await hookpoints.session_start(loop, "clear")
    return loop.result(run, "success", result="")


async def _compact(loop: AgentLoop, instructions: str | None) -> ResultMessage:
    run = Run(started=trio.current_time())
    try:
        outcome = await compact(
            loop, trigger="manual", instructions=instructions, pre_tokens=context_tokens(loop)
        )
    except RunEnd as end:  # the budget left no room for the summary request
        return loop.result(run, end.subtype, errors=end.errors, terminal=end.terminal_reason)
    if outcome is not None and outcome.startswith("compaction failed"):
        return loop.result(run, "error_during_execution", errors=[outcome], terminal="api_error")
    return loop.result(run, "success", result=outcome or COMPACTED_TEXT)
