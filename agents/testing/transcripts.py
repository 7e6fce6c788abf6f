"""Made-up transcripts for tests and benchmarks of session stores and history rebuilding.

A long conversation shaped as the loop records one (prompts, text, tool calls, their results),
so a test of a store's hold on the event loop and the benchmark measuring it load the same thing.
"""

from __future__ import annotations

from agents.messages import (
    AssistantMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from agents.sessions import TranscriptEntry

__all__ = ["tool_turns"]


def tool_turns(entries: int, session_id: str = "s") -> list[TranscriptEntry]:
    """``entries`` chained entries: a prompt, a text reply, a Read call and its result, repeated."""
    out: list[TranscriptEntry] = []
    parent = None
    for i in range(entries):
        message: UserMessage | AssistantMessage
        match i % 4:
            case 0:
                message = UserMessage(content=f"prompt {i}")
            case 1:
                message = AssistantMessage([TextBlock(f"text {i}")], "m", message_id=f"m{i}")
            case 2:
                block = ToolUseBlock(f"t{i}", "Read", {"file_path": "a"})
                message = AssistantMessage([block], "m", message_id=f"m{i - 1}")
            case _:
                message = UserMessage(content=[ToolResultBlock(f"t{i - 1}", "contents")])
        entry = TranscriptEntry(
            uuid=f"u{i}",
            parent_uuid=parent,
            session_id=session_id,
            timestamp=float(i),
            message=message,
        )
        out.append(entry)
        parent = entry.uuid
    return out
