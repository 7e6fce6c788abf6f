"""Messages: lossless JSON round-trips of every message type (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

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
    decode_message,
    encode_message,
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
ids = st.text(min_size=1, max_size=12)
opt_ids = st.none() | ids

blocks = st.one_of(
    st.builds(TextBlock, text=st.text()),
    st.builds(ThinkingBlock, thinking=st.text(), signature=st.text()),
    st.builds(ToolUseBlock, id=ids, name=ids, input=json_objects),
    st.builds(
        ToolResultBlock,
        tool_use_id=ids,
        content=st.none() | st.text() | st.lists(json_objects, max_size=2),
        is_error=st.none() | st.booleans(),
    ),
)

messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(SystemMessage, subtype=ids, data=json_objects),
    st.builds(
        AssistantMessage,
        content=st.lists(blocks, min_size=1, max_size=2),
        model=ids,
        message_id=st.text(max_size=8),
        parent_tool_use_id=opt_ids,
        usage=st.none() | json_objects,
        uuid=st.text(max_size=8),
    ),
    st.builds(
        UserMessage,
        content=st.text() | st.lists(blocks, max_size=2),
        parent_tool_use_id=opt_ids,
        tool_use_result=st.none() | json_objects,
        origin=st.none() | json_objects,
    ),
    st.builds(
        StreamEvent, uuid=ids, session_id=ids, event=json_objects, parent_tool_use_id=opt_ids
    ),
    st.builds(
        ResultMessage,
        subtype=st.sampled_from(
            [
                "success",
                "error_max_turns",
                "error_max_budget_usd",
                "error_during_execution",
                "error_max_structured_output_retries",
            ]
        ),
        duration_ms=st.integers(0, 10**9),
        duration_api_ms=st.integers(0, 10**9),
        is_error=st.booleans(),
        num_turns=st.integers(0, 1000),
        session_id=ids,
        total_cost_usd=st.floats(0, 1e6, allow_nan=False),
        usage=json_objects,
        result=st.none() | st.text(),
        errors=st.none() | st.lists(st.text(), min_size=1, max_size=2),
        stop_reason=st.none() | st.sampled_from(["end_turn", "tool_use", "max_tokens"]),
        permission_denials=st.lists(json_objects, max_size=2),
        structured_output=json_values,
    ),
)


@given(messages)
def test_every_message_round_trips_through_json(message: Message) -> None:
    """decode(encode(m)) == m for every message type and content block."""
    assert decode_message(encode_message(message)) == message


@given(messages)
def test_the_type_tag_is_the_stream_json_name(message: Message) -> None:
    """Each line carries type system|assistant|user|stream_event|result."""
    import json

    tag = json.loads(encode_message(message))["type"]
    assert (
        tag
        == {
            SystemMessage: "system",
            AssistantMessage: "assistant",
            UserMessage: "user",
            StreamEvent: "stream_event",
            ResultMessage: "result",
        }[type(message)]
    )
