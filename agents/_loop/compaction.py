"""The context window: token accounting and compaction.

Each agent keeps a :class:`ContextTracker`. After a response, the size of the context is that
response's input tokens (``input_tokens + cache_read_input_tokens +
cache_creation_input_tokens``) plus its output, plus an estimate (characters / 4) of what was
appended since (tool results, a new prompt). Before the first response, and right after a
compaction, it is an estimate of the whole request. When it exceeds
``options.compact_threshold`` of the model's context window (``ModelInfo.context_window`` in the
price data), :func:`compact` runs before the request::

    PreCompact hooks (``Seams.pre_compact``; trigger "auto"; decision "block" skips)
      → a summary request (ModelRequest(purpose="compact")), charged to the ledger
      → history = [summary + latest exchange]
      → SystemMessage(subtype="compact_boundary", data={"trigger", "pre_tokens"})
      → a ``history_snapshot`` transcript entry, so resume rebuilds the compacted history
      → ``Seams.after_compact`` (SessionStart hooks with source "compact" for the main agent)

What is kept: CLAUDE.md lives in the system prompt (the stable prefix), which compaction never
touches; of the history, the latest exchange is kept — the last prompt with its answer, or, in the
middle of a tool loop, the last assistant message with its tool results (and the prompt just
before it, if any). The cut is always before a prompt or an assistant message, so a ``tool_use``
is never separated from its ``tool_result``. The summary goes into the first kept user message
(or a user message of its own), so roles still alternate.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from ..backends.base import BackendError
from ..messages import SystemMessage
from ..sessions import HISTORY_SNAPSHOT
from ..sessions.history import is_tool_results

if TYPE_CHECKING:
    from .agent import AgentLoop
    from .session import Session

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "NOT_ENOUGH_MESSAGES",
    "ContextTracker",
    "auto_compact",
    "compact",
    "context_tokens",
    "context_window",
    "estimate_tokens",
    "over_threshold",
]

log = logging.getLogger("agents.context")

DEFAULT_CONTEXT_WINDOW = 200_000
NOT_ENOUGH_MESSAGES = "Not enough messages to compact."
SUMMARY_MAX_TOKENS = 8_192
SUMMARY_PROMPT = (
    "Your task is to write a detailed summary of the conversation so far. It will replace the "
    "conversation history, so it must keep everything needed to continue the work: the user's "
    "requests and intent, decisions made, files and code touched, tool results that matter, "
    "errors and how they were fixed, and what remains to be done. Reply with the summary only."
)
SUMMARY_HEADER = (
    "This session is being continued from an earlier conversation that was compacted. "
    "Summary of the earlier conversation:\n\n"
)

_encode = msgspec.json.encode


class ContextTracker(msgspec.Struct, eq=False, gc=False):
    """An agent's view of its context size; fed by every response's usage.

    (A msgspec Struct that the cycle collector never tracks: it holds numbers only, and every
    agent has one for its whole life.)"""

    #: input + cache tokens of the last response; None before the first or after a compaction
    last_input: int | None = None
    last_output: int = 0
    #: ``len(history)`` when that response was appended: what came after is estimated
    mark: int = 0

    def observe(self, usage: dict[str, Any], history_len: int) -> None:
        # ``Usage.of(usage).context_tokens`` without the object: this runs for every response
        get = usage.get
        self.last_input = (
            (get("input_tokens") or 0)
            + (get("cache_read_input_tokens") or 0)
            + (get("cache_creation_input_tokens") or 0)
        )
        self.last_output = get("output_tokens") or 0
        self.mark = history_len

    def reset(self) -> None:
        self.last_input = None
        self.last_output = 0
        self.mark = 0


def estimate_tokens(*parts: object) -> int:
    """Characters of the JSON encoding / 4: the estimate used where no usage is known yet."""
    total = 0
    for part in parts:
        total += len(_encode(part))
    return total // 4


def context_tokens(loop: AgentLoop) -> int:
    """The size of the agent's next request, in tokens (see the module docstring)."""
    tracker = loop.context
    history = loop.history
    if tracker.last_input is None:
        return estimate_tokens(loop.system, loop.tools.definitions(), history.messages())
    tail = history[tracker.mark :]
    return tracker.last_input + tracker.last_output + (estimate_tokens(tail) if tail else 0)


def context_window(session: Session, model: str) -> int:
    """The model's context window from the price/model data (200 000 for an unknown model)."""
    info = session.prices.get(model)
    return info.context_window if info is not None else DEFAULT_CONTEXT_WINDOW


def over_threshold(loop: AgentLoop) -> int | None:
    """The context's size in tokens when it exceeds the compaction threshold, else None:
    checked before each request (synchronous: most requests have nothing to compact).

    (:func:`context_tokens` and :func:`context_window` inlined, and the tail measured only
    when there is one: this runs before every request of every agent.)"""
    tracker = loop.context
    history = loop.history
    last_input = tracker.last_input
    if last_input is None:
        tokens = (
            len(_encode(loop.system))
            + len(_encode(loop.tools.definitions()))
            + len(_encode(history.messages()))
        ) // 4
    else:
        tokens = last_input + tracker.last_output
        if tracker.mark < len(history):
            tokens += len(_encode(history[tracker.mark :])) // 4
    session = loop.session
    prices = session.prices
    info = prices.models.get(loop.model)
    if info is None:
        info = prices.get(loop.model)  # a dated id, or a model without a price
    window = info.context_window if info is not None else DEFAULT_CONTEXT_WINDOW
    return tokens if tokens > session.options.compact_threshold * window else None


async def auto_compact(loop: AgentLoop, tokens: int) -> None:
    """Compact a context of ``tokens`` found :func:`over_threshold` (trigger ``auto``)."""
    outcome = await compact(loop, trigger="auto", pre_tokens=tokens)
    if outcome is not None:
        log.info("agent %s: automatic compaction skipped: %s", loop.agent_id, outcome)


def _is_prompt(message: dict[str, Any]) -> bool:
    return message["role"] == "user" and not is_tool_results(message)


def cut_index(history: Sequence[dict[str, Any]]) -> int:
    """Where the kept latest exchange starts; ``history[:cut]`` is what gets summarized."""
    n = len(history)
    if n == 0:
        return 0
    last = history[-1]
    if last["role"] == "assistant":
        return n - 2 if n >= 2 and _is_prompt(history[-2]) else n - 1
    if is_tool_results(last):
        cut = n - 2  # the assistant message with the calls, and their results
        return cut - 1 if cut >= 1 and _is_prompt(history[cut - 1]) else cut
    return n - 1


def _as_blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _with_instruction(older: list[dict[str, Any]], instruction: str) -> list[dict[str, Any]]:
    """``older`` plus the summary instruction as (the end of) a final user message."""
    text = {"type": "text", "text": instruction}
    if older and older[-1]["role"] == "user":
        last = older[-1]
        return [*older[:-1], {"role": "user", "content": [*_as_blocks(last["content"]), text]}]
    return [*older, {"role": "user", "content": [text]}]


def compacted_history(summary: str, kept: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The new history: the summary, then the kept exchange (roles still alternate)."""
    block = {"type": "text", "text": SUMMARY_HEADER + summary}
    if kept and kept[0]["role"] == "user":
        return [{"role": "user", "content": [block, *_as_blocks(kept[0]["content"])]}, *kept[1:]]
    return [{"role": "user", "content": [block]}, *kept]


async def compact(
    loop: AgentLoop,
    *,
    trigger: str,
    instructions: str | None = None,
    pre_tokens: int | None = None,
) -> str | None:
    """Replace the older history with a model-written summary; None when done.

    Otherwise returns why nothing changed: :data:`NOT_ENOUGH_MESSAGES` (fewer than two messages
    before the latest exchange), a PreCompact hook's block, or the backend error of the summary
    request. Backend errors are not retried: the agent carries on uncompacted. The summary
    request is charged like any (what a failed attempt used included); in ``reserve`` budget mode
    it starts only once its worst case is booked, else ``RunEnd`` (the budget) is raised.
    """
    from ..backends.base import ModelRequest

    history = loop.history
    cut = cut_index(history)
    if cut < 2:
        return NOT_ENOUGH_MESSAGES
    if pre_tokens is None:
        pre_tokens = context_tokens(loop)
    verdict = await loop.seams.pre_compact(loop, trigger, instructions)
    if verdict.block:
        return f"compaction blocked by a PreCompact hook: {verdict.block_reason or 'no reason'}"
    instruction = SUMMARY_PROMPT
    if instructions:
        instruction += f"\n\nAdditional instructions: {instructions}"
    request = ModelRequest(
        model=loop.model,
        messages=_with_instruction(history[:cut], instruction),
        max_tokens=min(loop.max_tokens, SUMMARY_MAX_TOKENS),
        system=loop.system,
        agent_id=loop.agent_id,
        agent_type=loop.agent_type,
        purpose="compact",
    )
    try:  # charged like any request: booked first in reserve mode, cut attempts included
        response, _ = await loop.model_call.charged(loop, request)
    except (BackendError, msgspec.ValidationError, KeyError, TypeError) as exc:
        log.warning("agent %s: compaction request failed: %s", loop.agent_id, exc)
        return f"compaction failed: {exc}"
    new_history = compacted_history(response.text, history[cut:])
    history.replace(new_history, "compact")
    loop.context.reset()
    await loop.publish(
        SystemMessage(
            subtype="compact_boundary", data={"trigger": trigger, "pre_tokens": pre_tokens}
        )
    )
    if loop.transcript is not None:
        await loop.transcript.record_kind(HISTORY_SNAPSHOT, {"messages": list(new_history)})
    await loop.seams.after_compact(loop)
    return None
