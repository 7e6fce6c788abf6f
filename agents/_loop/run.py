"""One prompt's run through the loop: its bookkeeping, how it ends early, token usage.

Shared by the loop (``agent``), its model call (``model_call``) and its tool calls
(``tool_calls``); kept apart so that those modules depend on it and not on each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from .._ids import new_id

__all__ = [
    "BUDGET_LIMIT_TEXT",
    "INTERRUPTED_TEXT",
    "Run",
    "RunEnd",
    "Usage",
    "budget_end",
    "new_id",
]

BUDGET_LIMIT_TEXT = "Budget limit reached"
INTERRUPTED_TEXT = "Interrupted by user"


class Usage(msgspec.Struct, frozen=True, gc=False):
    """Token counts of one response, or the sum of several (``ResultMessage.usage``).

    (A frozen msgspec Struct: made in C, once per response, and never tracked by the cycle
    collector, since it holds numbers only.)"""

    #: the names of the counts, as the Messages API spells them
    KEYS = (
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    )

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @classmethod
    def of(cls, usage: Mapping[str, Any]) -> Usage:
        """The counts of an API usage mapping (absent or null counts are 0)."""
        get = usage.get
        return cls(
            get("input_tokens") or 0,
            get("output_tokens") or 0,
            get("cache_creation_input_tokens") or 0,
            get("cache_read_input_tokens") or 0,
        )

    def plus(self, usage: Mapping[str, Any]) -> Usage:
        """These counts plus an API usage mapping's (``self + Usage.of(usage)`` in one object:
        this runs once per turn)."""
        get = usage.get
        return Usage(
            self.input_tokens + (get("input_tokens") or 0),
            self.output_tokens + (get("output_tokens") or 0),
            self.cache_creation_input_tokens + (get("cache_creation_input_tokens") or 0),
            self.cache_read_input_tokens + (get("cache_read_input_tokens") or 0),
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    @property
    def context_tokens(self) -> int:
        """Everything the request sent: input, cache reads and cache writes."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }


NO_USAGE = Usage()


class Run(msgspec.Struct, eq=False, gc=False):
    """Bookkeeping of one prompt's loop, reported in its ResultMessage.

    (A msgspec Struct that the cycle collector never tracks: it lives as long as its prompt,
    one per agent at least, and refers to no agent, only to what the run found.)"""

    started: float
    turns: int = 0
    api_seconds: float = 0.0
    usage: Usage = NO_USAGE
    stop_reason: str | None = None
    #: the calls denied so far (None until the first: a list per run is one more object for
    #: the cycle collector while every agent of a tree runs, and most runs deny nothing)
    denials: list[dict[str, Any]] | None = None
    #: set when a hook said ``continue_: False``: the run ends after the current step
    stop: str | None = None
    #: Stop hooks' blocks so far (at most 8 in a row), and a PreToolUse deferral
    stop_blocks: int = 0
    deferred: dict[str, Any] | None = None
    #: the call whose denial asked to end the turn (a denial with ``interrupt=True``)
    interrupt_call: str | None = None
    #: the validated final answer, and how many answers failed validation so far
    structured_output: Any = None
    structured_failures: int = 0


class RunEnd(Exception):
    """Ends the current prompt's loop with an error result (internal control flow)."""

    def __init__(self, subtype: str, errors: list[str], terminal_reason: str) -> None:
        super().__init__(errors[0])
        self.subtype = subtype
        self.errors = errors
        self.terminal_reason = terminal_reason


def budget_end(cap: float | None) -> RunEnd:
    """The end of a run that found the tree's budget spent."""
    return RunEnd("error_max_budget_usd", [f"Reached maximum budget (${cap:g})"], "budget")
