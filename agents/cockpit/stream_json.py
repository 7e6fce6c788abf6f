"""Messages as ``claude -p --output-format stream-json`` writes them, one JSON object per line.

The SDK's own encoding (:func:`agents.messages.encode_message`) mirrors the Python SDK's
dataclasses;
Claude Code's stream-json lines, which scripts around ``claude -p`` already parse, differ:

* assistant and user messages wrap their content in a Messages API ``message`` object
  (``{"type": "assistant", "message": {"id", "type": "message", "role", "model", "content",
  "stop_reason", "stop_sequence", "usage"}, "parent_tool_use_id", "session_id", "uuid"}``);
* a system message's fields sit at the top level beside ``subtype`` (``init`` names the mode
  ``permissionMode``), with ``session_id`` and ``uuid``;
* the result names the per-model usage ``modelUsage``.

So ``agents run --output-format stream-json | jq 'select(.type=="assistant") | .message.content'``
works as it does on ``claude -p``.
"""

from __future__ import annotations

import uuid as _uuid
from typing import Any

import attrs
import msgspec

from ..messages import (
    AssistantMessage,
    Message,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    UserMessage,
)

__all__ = ["StreamJsonWriter", "to_stream_json"]

_to_builtins = msgspec.to_builtins
_encode = msgspec.json.Encoder().encode


def _content(blocks: Any) -> Any:
    return blocks if isinstance(blocks, str) else _to_builtins(blocks)


def to_stream_json(message: Message, session_id: str = "") -> dict[str, Any]:
    """``message`` as the dict ``claude -p --output-format stream-json`` prints for it.

    ``session_id`` fills in the system messages, which do not carry one themselves.
    """
    match message:
        case SystemMessage(subtype=subtype, data=data):
            out: dict[str, Any] = {"type": "system", "subtype": subtype}
            for key, value in data.items():
                out["permissionMode" if key == "permission_mode" else key] = value
            if subtype == "api_retry" and "delay_s" in data:
                out["retry_delay_ms"] = round(float(data["delay_s"]) * 1000)
            out.setdefault("session_id", session_id)
            out["uuid"] = str(_uuid.uuid4())
            return out
        case AssistantMessage():
            body: dict[str, Any] = {
                "id": message.message_id,
                "type": "message",
                "role": "assistant",
                "model": message.model,
                "content": _content(message.content),
                "stop_reason": None,
                "stop_sequence": None,
                "usage": message.usage or {},
            }
            out = {
                "type": "assistant",
                "message": body,
                "parent_tool_use_id": message.parent_tool_use_id,
                "session_id": message.session_id or session_id,
                "uuid": message.uuid,
            }
            if message.error is not None:
                out["error"] = message.error
            return out
        case UserMessage():
            out = {
                "type": "user",
                "message": {"role": "user", "content": _content(message.content)},
                "parent_tool_use_id": message.parent_tool_use_id,
                "session_id": message.session_id or session_id,
                "uuid": message.uuid,
            }
            if message.tool_use_result is not None:
                out["tool_use_result"] = message.tool_use_result
            return out
        case StreamEvent():
            return {
                "type": "stream_event",
                "event": message.event,
                "parent_tool_use_id": message.parent_tool_use_id,
                "session_id": message.session_id,
                "uuid": message.uuid,
            }
        case ResultMessage():
            return _result(message)
    raise TypeError(f"not a message: {message!r}")  # pragma: no cover


def _result(r: ResultMessage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "result",
        "subtype": r.subtype,
        "is_error": r.is_error,
        "duration_ms": r.duration_ms,
        "duration_api_ms": r.duration_api_ms,
        "num_turns": r.num_turns,
        "result": r.result if r.result is not None else "",
        "stop_reason": r.stop_reason,
        "session_id": r.session_id,
        "total_cost_usd": r.total_cost_usd,
        "usage": r.usage,
        "modelUsage": r.model_usage,
        "permission_denials": r.permission_denials,
        "uuid": r.uuid,
    }
    if r.errors is not None:
        out["errors"] = r.errors
    if r.terminal_reason is not None:
        out["terminal_reason"] = r.terminal_reason
    if r.structured_output is not None:
        out["structured_output"] = r.structured_output
    return out


@attrs.define(eq=False)
class StreamJsonWriter:
    """Turns messages into stream-json lines, remembering the session id from ``init``."""

    session_id: str = ""

    def line(self, message: Message) -> bytes:
        """One line (with its newline) for ``message``."""
        if isinstance(message, SystemMessage) and message.subtype == "init":
            self.session_id = str(message.data.get("session_id", self.session_id))
        return _encode(to_stream_json(message, self.session_id)) + b"\n"
