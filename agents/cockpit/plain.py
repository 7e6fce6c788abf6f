"""Plain progress lines, for a stderr that is not a terminal (or ``--no-live``).

``agents run`` in text mode prints only the result on stdout, as ``claude -p`` does; what a
person (or a CI log) waiting for it needs goes to stderr as it happens, one line each: a retry
and how long it waits, a permission denial, a subagent starting and ending, a compaction::

    API 529, retrying in 2.1 s (3/10): Overloaded
    permission denied: Bash (no rule allows it)
    subagent researcher started: explain the store
"""

from __future__ import annotations

from typing import Any, TextIO

import attrs

from ..messages import AssistantMessage, Message, SystemMessage, ToolUseBlock
from .lines import denial_line, printable, retry_line

__all__ = ["ProgressLines"]


@attrs.define(eq=False)
class ProgressLines:
    """Writes one line to ``out`` per event a waiting person should see."""

    out: TextIO

    def observe(self, message: Message) -> None:
        line = self.line(message)
        if line is not None:  # (it quotes the model's and the API's words: shown, not obeyed)
            print(printable(line), file=self.out, flush=True)

    def line(self, message: Message) -> str | None:
        match message:
            case SystemMessage(subtype=subtype, data=data):
                return _system_line(subtype, data)
            case AssistantMessage(content=[ToolUseBlock(name="Agent", input=args)]):
                mode = "background " if args.get("run_in_background") else ""
                return (
                    f"{mode}subagent {args.get('subagent_type')} spawned: {args.get('description')}"
                )
        return None


def _system_line(subtype: str, data: dict[str, Any]) -> str | None:
    if subtype == "api_retry":
        return retry_line(data)
    if subtype == "permission_denied":
        return denial_line(data)
    if subtype == "task_notification":
        return (
            f"subagent {data.get('task_id')} {data.get('status')} "
            f"(${float(data.get('cost_usd') or 0):.4f})"
        )
    if subtype == "compact_boundary":
        return f"context compacted ({data.get('trigger')}, {data.get('pre_tokens')} tokens before)"
    if subtype in ("informational", "budget_overrun"):
        return f"{subtype}: {data.get('message', data)}"
    return None
