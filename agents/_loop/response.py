"""Assembling one model response from its stream events.

Kept apart from the loop because it is the hot path of every turn and has one job: fold
``message_start … message_stop`` into content blocks, usage and ``stop_reason``. A stream that ends
before ``message_stop`` is an :class:`APIConnectionError` (the loop retries the whole response,
so a failed attempt leaves nothing behind); malformed tool input JSON is kept as an error marker
for the tool call.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec

from ..backends.base import (
    APIConnectionError,
    BackendEvent,
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    MessageDelta,
    MessageStart,
    MessageStop,
)
from ..messages import ContentBlock, TextBlock, ThinkingBlock, ToolUseBlock

log = logging.getLogger("agents.loop")

_json_decode = msgspec.json.Decoder(dict[str, Any]).decode


class Response(msgspec.Struct, eq=False, gc=False):
    """A complete model response.

    (A msgspec Struct that the cycle collector never tracks: one per response, alive while the
    stream is read, holding what the model sent and never an agent.)"""

    message_id: str = ""
    model: str = ""
    blocks: list[ContentBlock] = msgspec.field(default_factory=list)
    #: the content in the API's JSON shape, as it goes back into the history
    api_content: list[dict[str, Any]] = msgspec.field(default_factory=list)
    usage: dict[str, Any] = msgspec.field(default_factory=dict)
    stop_reason: str | None = None
    #: tool_use id → why its input could not be used (invalid JSON)
    bad_inputs: dict[str, str] = msgspec.field(default_factory=dict)
    complete: bool = False
    #: the tool_use blocks of ``blocks``, in order (kept as they are added: read every turn)
    tool_uses: list[ToolUseBlock] = msgspec.field(default_factory=list)

    @property
    def text(self) -> str:
        """The text blocks' text, joined by newlines ("" without one)."""
        blocks = self.blocks
        if len(blocks) == 1:  # most responses: no generator to make and join
            block = blocks[0]
            return block.text if isinstance(block, TextBlock) else ""
        return "\n".join(b.text for b in blocks if isinstance(b, TextBlock))


class ResponseBuilder(msgspec.Struct, eq=False, gc=False):
    """Folds stream events into a :class:`Response`. (Never tracked by the cycle collector,
    as its response: it holds the stream's parts only.)

    The response is made at the stream's first event, not with the builder: an agent waits
    for its model's first event (most of its life, with a real model) without the response's
    three lists, objects the collector would walk for every waiting agent of a tree."""

    _response: Response | None = None
    _parts: dict[int, list[str]] = msgspec.field(default_factory=dict)
    _starts: dict[int, dict[str, Any]] = msgspec.field(default_factory=dict)
    _signatures: dict[int, str] = msgspec.field(default_factory=dict)

    @property
    def response(self) -> Response:
        """What the stream has brought so far (an empty response before its first event)."""
        r = self._response
        if r is None:
            r = self._response = Response()
        return r

    def feed(self, event: BackendEvent) -> None:
        # One dict lookup on the event's type instead of a chain of isinstance checks: this
        # runs for every event of every response.
        handler = FEED.get(type(event))
        if handler is not None:  # anything else (a backend's own events) has nothing to add
            handler(self, event)

    async def consume(self, events: AsyncIterator[Any]) -> None:
        """Feed every event of ``events``: ``feed`` with the block events' steps inlined (this
        runs for every event of every response; a call per event is a tenth of its cost)."""
        parts = self._parts
        starts = self._starts
        # (the tables' ``get`` looked up at each use, not bound here: a bound method is an object
        # the collector tracks, held as long as the response streams, two for every agent)
        async for event in events:
            kind = type(event)
            if kind is ContentBlockDelta:
                delta = event.delta
                field = _DELTA_TEXT.get(delta.get("type"))
                if field is None:
                    self._delta(event)
                else:
                    parts[event.index].append(delta[field])
            elif kind is ContentBlockStart:
                index = event.index
                starts[index] = event.content_block
                parts[index] = []
            elif kind is ContentBlockStop:
                self._block_stop(event)
            elif kind is MessageStart:  # once per response: ``_message_start`` inlined
                message = event.message
                # (``self.response`` without its call while the response exists; so below)
                r = self._response or self.response
                r.message_id = message.get("id", "")
                r.model = message.get("model", "")
                r.usage = dict(message.get("usage") or {})
            elif kind is MessageStop:  # (``_message_stop``)
                (self._response or self.response).complete = True
            else:
                handler = FEED.get(kind)
                if handler is not None:  # anything else has nothing to add
                    handler(self, event)

    def _delta(self, event: ContentBlockDelta) -> None:
        delta = event.delta
        kind = delta.get("type")
        field = _DELTA_TEXT.get(kind)
        if field is not None:
            self._parts[event.index].append(delta[field])
        elif kind == "signature_delta":
            self._signatures[event.index] = delta["signature"]
        else:
            log.warning("ignoring unknown delta type %r", kind)

    def _block_start(self, event: ContentBlockStart) -> None:
        self._starts[event.index] = event.content_block
        self._parts[event.index] = []

    def _message_start(self, event: MessageStart) -> None:
        r = self._response or self.response
        message = event.message
        r.message_id = message.get("id", "")
        r.model = message.get("model", "")
        r.usage = dict(message.get("usage") or {})

    def _message_delta(self, event: MessageDelta) -> None:
        r = self._response or self.response
        r.stop_reason = event.delta.get("stop_reason", r.stop_reason)
        for key, value in event.usage.items():
            if value is not None:
                r.usage[key] = value

    def _message_stop(self, event: MessageStop) -> None:
        (self._response or self.response).complete = True

    def _block_stop(self, event: ContentBlockStop) -> None:
        """The block at ``event.index`` is complete: into the response's blocks and content."""
        index = event.index
        start = self._starts.pop(index, None)
        if start is None:
            return
        text = "".join(self._parts.pop(index, ()))
        kind = start.get("type")
        r = self._response or self.response
        if kind == "tool_use":
            tool_id = start["id"]
            name = start["name"]
            tool_input: dict[str, Any]
            if text:
                try:
                    tool_input = _json_decode(text)
                except (msgspec.DecodeError, RecursionError) as exc:
                    # (the model's JSON: nesting a million deep is as possible as a cut-off)
                    why = "nested too deeply to be read" if isinstance(exc, RecursionError) else exc
                    r.bad_inputs[tool_id] = f"invalid tool input JSON ({why}): {text[:200]!r}"
                    log.warning("tool %s %s: %s", name, tool_id, r.bad_inputs[tool_id])
                    tool_input = {}
            else:
                tool_input = start.get("input") or {}
            block = ToolUseBlock(tool_id, name, tool_input)
            r.blocks.append(block)
            r.tool_uses.append(block)
            r.api_content.append(
                {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
            )
        elif kind == "text":
            body = (start.get("text") or "") + text
            r.blocks.append(TextBlock(text=body))
            r.api_content.append({"type": "text", "text": body})
        elif kind == "thinking":
            body = (start.get("thinking") or "") + text
            signature = self._signatures.pop(index, start.get("signature") or "")
            r.blocks.append(ThinkingBlock(thinking=body, signature=signature))
            r.api_content.append({"type": "thinking", "thinking": body, "signature": signature})
        else:
            # redacted_thinking, server tool blocks ...: they must go back to the model unchanged,
            # but have no message type of their own in the stream (logged, never fatal).
            log.info("block type %r kept in history, not streamed", kind)
            r.api_content.append(start)

    def finish(self) -> Response:
        r = self._response
        if r is None or not r.complete:
            raise APIConnectionError("stream ended before message_stop")
        return r


#: the field holding a delta's text, by the delta's type (a signature is not text)
_DELTA_TEXT: dict[Any, str] = {
    "text_delta": "text",
    "input_json_delta": "partial_json",
    "thinking_delta": "thinking",
}

#: the builder's step for each type of stream event (anything else has nothing to add)
FEED: dict[type, Callable[[ResponseBuilder, Any], None]] = {
    ContentBlockDelta: ResponseBuilder._delta,
    ContentBlockStart: ResponseBuilder._block_start,
    ContentBlockStop: ResponseBuilder._block_stop,
    MessageStart: ResponseBuilder._message_start,
    MessageDelta: ResponseBuilder._message_delta,
    MessageStop: ResponseBuilder._message_stop,
}
