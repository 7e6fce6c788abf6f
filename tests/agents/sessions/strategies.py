"""Hypothesis strategies for messages and transcripts (random conversations for round-trips)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from agents.messages import (
    AssistantMessage,
    ContentBlock,
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
from agents.sessions import TranscriptEntry

# UTF-8 cannot carry lone surrogates, and neither can any JSON transcript.
texts = st.text(st.characters(codec="utf-8"), max_size=40)
ids = st.text("abcdef0123456789-_", min_size=1, max_size=12)
uuids = st.uuids().map(str)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(texts, json_values, max_size=4)

blocks: st.SearchStrategy[ContentBlock] = st.one_of(
    st.builds(TextBlock, text=texts),
    st.builds(ThinkingBlock, thinking=texts, signature=texts),
    st.builds(ToolUseBlock, id=ids, name=ids, input=json_objects),
    st.builds(
        ToolResultBlock,
        tool_use_id=ids,
        content=st.none() | texts | st.lists(json_objects, max_size=3),
        is_error=st.none() | st.booleans(),
    ),
)
optional_ids = st.none() | ids

messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(SystemMessage, subtype=ids, data=json_objects),
    st.builds(
        AssistantMessage,
        content=st.lists(blocks, max_size=3),
        model=ids,
        message_id=ids,
        parent_tool_use_id=optional_ids,
        usage=st.none() | json_objects,
        error=st.none() | texts,
        uuid=uuids,
        session_id=ids,
    ),
    st.builds(
        UserMessage,
        content=texts | st.lists(blocks, max_size=3),
        parent_tool_use_id=optional_ids,
        tool_use_result=st.none() | json_objects,
        uuid=uuids,
        session_id=ids,
        origin=st.none() | json_objects,
    ),
    st.builds(StreamEvent, uuid=uuids, session_id=ids, event=json_objects),
    st.builds(
        ResultMessage,
        subtype=st.sampled_from(["success", "error_max_turns", "error_during_execution"]),
        duration_ms=st.integers(0, 10**9),
        duration_api_ms=st.integers(0, 10**9),
        is_error=st.booleans(),
        num_turns=st.integers(0, 1000),
        session_id=ids,
        total_cost_usd=st.floats(0, 1e6),
        usage=json_objects,
        result=st.none() | texts,
        errors=st.none() | st.lists(texts, max_size=2),
        stop_reason=st.none() | ids,
        structured_output=json_values,
        uuid=uuids,
    ),
)


@st.composite
def conversations(
    draw: st.DrawFn, session_id: str | None = None, max_size: int = 12
) -> list[TranscriptEntry]:
    """A chained transcript: random messages (and some bookkeeping entries) with parent links."""
    sid = session_id or draw(uuids)
    agent = draw(st.sampled_from(["main", "main/researcher-1"]))
    timestamp = draw(st.floats(0, 2e9))
    out: list[TranscriptEntry] = []
    parent: str | None = None
    size = draw(st.integers(1, max_size))
    entry_ids = draw(st.lists(uuids, min_size=size, max_size=size, unique=True))
    for entry_id in entry_ids:
        timestamp += draw(st.floats(0, 100))
        if draw(st.integers(0, 9)) == 0:
            entry = TranscriptEntry(
                uuid=entry_id, parent_uuid=parent, session_id=sid,
                timestamp=timestamp, agent_id=agent,
                kind=draw(ids), data=draw(json_objects),
            )  # fmt: skip
        else:
            message = draw(messages)
            entry = TranscriptEntry(
                uuid=entry_id, parent_uuid=parent, session_id=sid, timestamp=timestamp,
                agent_id=agent, message=message,
            )  # fmt: skip
        out.append(entry)
        parent = entry.uuid
    return out
