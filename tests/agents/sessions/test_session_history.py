"""history_from_entries: the API messages list rebuilt from a transcript, and its repair."""

from __future__ import annotations

import uuid
from typing import Any

from agents.messages import (
    AssistantMessage,
    Message,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from agents.sessions import (
    HISTORY_SNAPSHOT,
    INTERRUPTED_TOOL_RESULT,
    TranscriptEntry,
    history_from_entries,
    repair_history,
)


def entries(*messages: Message, agent_id: str = "main") -> list[TranscriptEntry]:
    out = []
    parent = None
    for i, message in enumerate(messages):
        entry = TranscriptEntry(
            uuid=str(uuid.uuid4()), parent_uuid=parent, session_id="s",
            timestamp=float(i), agent_id=agent_id, message=message,
        )  # fmt: skip
        out.append(entry)
        parent = entry.uuid
    return out


def assistant(mid: str, *blocks: Any, **kw: Any) -> AssistantMessage:
    return AssistantMessage(content=list(blocks), model="m", message_id=mid, **kw)


def result(tool_id: str, text: str = "ok") -> UserMessage:
    return UserMessage(content=[ToolResultBlock(tool_id, text)])


def interrupted(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": INTERRUPTED_TOOL_RESULT,
            "is_error": True}  # fmt: skip


def test_blocks_of_one_response_merge_and_results_follow_call_order() -> None:
    """Blocks sharing message_id form one message; a turn's results merge in call order."""
    history = history_from_entries(entries(
        SystemMessage("init"),
        UserMessage(content="list and read"),
        StreamEvent(uuid="e", session_id="s", event={"type": "message_start"}),
        assistant("m1", ThinkingBlock("hmm", "sig")),
        assistant("m1", TextBlock("calling")),
        assistant("m1", ToolUseBlock("t1", "Glob", {"pattern": "*"})),
        assistant("m1", ToolUseBlock("t2", "Read", {"path": "a"})),
        result("t2", "contents"),
        result("t1", "a.txt"),
        assistant("m2", TextBlock("done")),
        ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1, is_error=False,
                      num_turns=2, session_id="s"),
        UserMessage(content="thanks"),
    ))  # fmt: skip
    assert history == [
        {"role": "user", "content": "list and read"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "text", "text": "calling"},
            {"type": "tool_use", "id": "t1", "name": "Glob", "input": {"pattern": "*"}},
            {"type": "tool_use", "id": "t2", "name": "Read", "input": {"path": "a"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "contents"},
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        {"role": "user", "content": "thanks"},
    ]  # fmt: skip


def test_dangling_tool_calls_at_the_end_are_answered_as_interrupted() -> None:
    """A response whose calls never got results (the process died) gets error results."""
    history = history_from_entries(entries(
        UserMessage(content="go"),
        assistant("m1", ToolUseBlock("t1", "Bash", {"command": "sleep 99"}),
                  ToolUseBlock("t2", "Read", {"path": "a"})),
        result("t2"),
    ))  # fmt: skip
    assert history[-1] == {"role": "user", "content": [
        interrupted("t1"), {"type": "tool_result", "tool_use_id": "t2", "content": "ok"},
    ]}  # fmt: skip


def test_dangling_calls_in_the_middle_are_repaired_before_the_next_prompt() -> None:
    """Unanswered calls followed by a new prompt: the results come first in that user message."""
    history = history_from_entries(entries(
        UserMessage(content="go"),
        assistant("m1", ToolUseBlock("t1", "Bash", {})),
        UserMessage(content="resumed prompt"),
        assistant("m2", TextBlock("ok")),
    ))  # fmt: skip
    assert history[2] == {"role": "user", "content": [
        interrupted("t1"), {"type": "text", "text": "resumed prompt"},
    ]}  # fmt: skip
    assert len(history) == 4


def test_orphan_results_are_dropped_and_repair_is_idempotent() -> None:
    """A tool_result answering no preceding call is dropped; repairing twice changes nothing."""
    history = history_from_entries(entries(
        UserMessage(content="go"), result("ghost"), assistant("m1", TextBlock("hi")),
    ))  # fmt: skip
    assert history == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
    ]
    assert repair_history(history) == history


def test_only_the_main_agents_own_messages_count() -> None:
    """Subagent entries, parent_tool_use_id messages and synthetic error messages are skipped."""
    main = entries(
        UserMessage(content="go"),
        assistant("m1", TextBlock("sub says"), parent_tool_use_id="agent-call"),
        assistant("m2", TextBlock("rate limited"), error="rate_limit"),
        assistant("m3", TextBlock("main says")),
    )
    sub = entries(UserMessage(content="sub prompt"), agent_id="main/researcher-1")
    assert history_from_entries(sub + main) == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "main says"}]},
    ]


def test_history_snapshot_replaces_what_came_before() -> None:
    """A compaction snapshot entry resets the history to its messages; later entries append."""
    before = entries(UserMessage(content="old"), assistant("m1", TextBlock("old answer")))
    snapshot = TranscriptEntry(
        uuid="snap", parent_uuid=before[-1].uuid, session_id="s", timestamp=9.0,
        kind=HISTORY_SNAPSHOT, data={"messages": [{"role": "user", "content": "Summary: old"}]},
    )  # fmt: skip
    after = entries(assistant("m2", TextBlock("new")))
    assert history_from_entries([*before, snapshot, *after]) == [
        {"role": "user", "content": "Summary: old"},
        {"role": "assistant", "content": [{"type": "text", "text": "new"}]},
    ]
    assert snapshot.data["messages"] == [{"role": "user", "content": "Summary: old"}]
