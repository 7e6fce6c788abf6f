"""The message stream: content blocks and the five message types.

Everything here crosses a boundary — to the caller, to the transcript, to stream-json output — so
it is a msgspec ``Struct``: frozen, tagged, and encoded/decoded losslessly as one JSON object per
line. The ``type`` tags are those of the Agent SDK's ``stream-json`` output (``system``,
``assistant``, ``user``, ``stream_event``, ``result``); content blocks use the Messages API tags.

They are declared ``gc=False``: the cycle collector never scans them. A session makes several
per turn and a tree of agents millions, and none can be part of a reference cycle unless someone
puts a message inside its own data (don't).

Field names follow the Python Claude Agent SDK, so code written for ``claude_agent_sdk`` ports by
changing its imports::

    async for message in query(prompt="Summarize this project"):
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextBlock):
                    print(block.text)
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "AssistantMessage",
    "ContentBlock",
    "Message",
    "ResultError",
    "ResultMessage",
    "ResultSubtype",
    "StreamEvent",
    "SystemMessage",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "UserMessage",
    "decode_message",
    "encode_message",
]


class _Block(msgspec.Struct, frozen=True, tag_field="type", omit_defaults=True, gc=False):
    """Base of the content blocks; the ``type`` tag is the Messages API's."""


class TextBlock(_Block, tag="text", frozen=True):
    """Plain text written by the model."""

    text: str


class ThinkingBlock(_Block, tag="thinking", frozen=True):
    """Extended-thinking text; ``signature`` must go back to the API unchanged."""

    thinking: str
    signature: str = ""


class ToolUseBlock(_Block, tag="tool_use", frozen=True):
    """A tool call requested by the model."""

    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(_Block, tag="tool_result", frozen=True):
    """The outcome of one tool call, sent back to the model in call order."""

    tool_use_id: str
    content: str | list[dict[str, Any]] | None = None
    is_error: bool | None = None


ContentBlock = TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock

ResultSubtype = Literal[
    "success",
    "error_max_turns",
    "error_max_budget_usd",
    "error_during_execution",
    "error_max_structured_output_retries",
]


class _Message(msgspec.Struct, frozen=True, tag_field="type", omit_defaults=True, gc=False):
    """Base of the stream's messages."""


class SystemMessage(_Message, tag="system", frozen=True):
    """A lifecycle event: ``init`` first, then ``api_retry``, ``compact_boundary``,
    ``permission_denied``, ``informational``, ``task_started``, ``task_progress``,
    ``task_notification``."""

    subtype: str
    data: dict[str, Any] = {}


class AssistantMessage(_Message, tag="assistant", frozen=True):
    """One content block of a model response; all blocks of a response share ``message_id``."""

    content: list[ContentBlock]
    model: str
    message_id: str = ""
    parent_tool_use_id: str | None = None
    usage: dict[str, Any] | None = None
    error: str | None = None
    uuid: str = ""
    session_id: str = ""


class UserMessage(_Message, tag="user", frozen=True):
    """A user prompt, or one tool result fed back to the model."""

    content: str | list[ContentBlock]
    parent_tool_use_id: str | None = None
    tool_use_result: dict[str, Any] | None = None
    uuid: str = ""
    session_id: str = ""
    origin: dict[str, Any] | None = None


class StreamEvent(_Message, tag="stream_event", frozen=True):
    """A raw Messages API stream event (``include_partial_messages=True``)."""

    uuid: str
    session_id: str
    event: dict[str, Any]
    parent_tool_use_id: str | None = None


class ResultMessage(_Message, tag="result", frozen=True):
    """The end of one prompt's loop: outcome, final text, usage and cost.

    ``result`` is set only on ``success``; ``errors`` only on the ``error_*`` subtypes.
    """

    subtype: ResultSubtype
    duration_ms: int
    duration_api_ms: int
    is_error: bool
    num_turns: int
    session_id: str
    total_cost_usd: float = 0.0
    usage: dict[str, Any] = {}
    model_usage: dict[str, Any] = {}
    result: str | None = None
    errors: list[str] | None = None
    stop_reason: str | None = None
    terminal_reason: str | None = None
    permission_denials: list[dict[str, Any]] = []
    structured_output: Any = None
    deferred_tool_use: dict[str, Any] | None = None
    uuid: str = ""


Message = SystemMessage | AssistantMessage | UserMessage | StreamEvent | ResultMessage

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Message)


def encode_message(message: Message) -> bytes:
    """Encode a message as one JSON object (no trailing newline)."""
    return _encoder.encode(message)


def decode_message(data: bytes | str) -> Message:
    """Decode one JSON object into its message type; ``msgspec.ValidationError`` names the path."""
    return _decoder.decode(data)


class ResultError(Exception):
    """Raised by a single-shot ``query()`` after it yielded an error ``ResultMessage``.

    Its text is the first error, e.g. ``Reached maximum number of turns (2)``.
    """

    def __init__(
        self,
        subtype: str,
        errors: list[str],
        session_id: str,
        result: ResultMessage | None = None,
    ) -> None:
        super().__init__(errors[0] if errors else subtype)
        self.subtype = subtype
        self.errors = errors
        self.session_id = session_id
        self.result = result
