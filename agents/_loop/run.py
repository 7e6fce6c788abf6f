"""One prompt's run through the loop: its bookkeeping, how it ends early, and message ids.

Shared by the loop (``agents._loop``), its model call (``agents._model_call``) and its tool calls
(``agents._tool_calls``); kept apart so that those modules depend on it and not on each other.
"""

from __future__ import annotations

from typing import Any

import attrs

from .._ids import new_id

__all__ = [
    "BUDGET_LIMIT_TEXT",
    "INTERRUPTED_TEXT",
    "USAGE_KEYS",
    "_EndRun",
    "_Run",
    "budget_end",
    "new_id",
]

BUDGET_LIMIT_TEXT = "Budget limit reached"
INTERRUPTED_TEXT = "Interrupted by user"
#: the token counts a run adds up from its responses (``ResultMessage.usage``)
USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


@attrs.define(eq=False)
class _Run:
    """Bookkeeping of one prompt's loop, reported in its ResultMessage."""

    started: float
    turns: int = 0
    api_seconds: float = 0.0
    usage: dict[str, int] = attrs.Factory(lambda: dict.fromkeys(USAGE_KEYS, 0))
    stop_reason: str | None = None
    denials: list[dict[str, Any]] = attrs.Factory(list)
    last_text: str = ""
    #: set when a hook said ``continue_: False``: the run ends after the current step
    stop: str | None = None
    #: Stop hooks' blocks so far (H4: at most 8 in a row), and a PreToolUse deferral
    stop_blocks: int = 0
    deferred: dict[str, Any] | None = None
    #: the call whose denial asked to end the turn (P4 ``interrupt=True``)
    interrupt_call: str | None = None
    #: the validated final answer, and how many answers failed validation so far (C5)
    structured_output: Any = None
    structured_failures: int = 0


class _EndRun(Exception):
    """Ends the current prompt's loop with an error result (internal control flow)."""

    def __init__(self, subtype: str, errors: list[str], terminal_reason: str) -> None:
        super().__init__(errors[0])
        self.subtype = subtype
        self.errors = errors
        self.terminal_reason = terminal_reason


def budget_end(cap: float | None) -> _EndRun:
    """The end of a run that found the tree's budget spent (S6)."""
    return _EndRun("error_max_budget_usd", [f"Reached maximum budget (${cap:g})"], "budget")
