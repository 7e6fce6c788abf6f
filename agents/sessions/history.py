"""Rebuild the Messages API ``messages`` list from a transcript, repairing what a crash left.

The transcript stores the message *stream* (one ``AssistantMessage`` per content block, one
``UserMessage`` per tool result, system and result messages in between); the model needs the
*conversation*: alternating ``{"role", "content"}`` dicts in the API's JSON shape. The rules:

* only main-agent entries (``agent_id == "main"``) whose message is not a subagent's
  (``parent_tool_use_id is None``) count; ``system``, ``result`` and ``stream_event`` are skipped,
  and so are synthetic assistant error messages (``error`` set), which the model never wrote;
* assistant blocks sharing a ``message_id`` form one assistant message;
* the tool results answering one assistant message form one user message, in call order;
* a ``history_snapshot`` entry (written after compaction) replaces everything rebuilt so far with
  its ``data["messages"]``, unless they are not a history (:func:`snapshot_problem`): then it is
  ignored, and the history goes on from the entries before it;
* repair (:func:`repair_history`): whatever the entries, the result is a history the Messages API
  accepts — it starts with a user turn, roles alternate, and every ``tool_use`` is answered in the
  next user message (a call without a result, because the process died while the tool ran, gets
  an error result saying it was interrupted; a result answering no call is dropped).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any, assert_never

import trio

from agents.messages import (
    AssistantMessage,
    ContentBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from agents.sessions.entry import HISTORY_SNAPSHOT, TranscriptEntry, gc_paused, is_large_entry

__all__ = [
    "INLINE_REBUILD_ENTRIES",
    "INTERRUPTED_TOOL_RESULT",
    "block_to_api",
    "fits_the_loop",
    "history_from_entries",
    "rebuild_history",
    "release",
    "repair_history",
    "snapshot_problem",
]

#: The content of the error result that answers a tool call cut short by the end of the process.
INTERRUPTED_TOOL_RESULT = "Tool call was interrupted: the session ended before it completed."


def block_to_api(block: ContentBlock) -> dict[str, Any]:
    """One content block in the Messages API's JSON shape."""
    match block:
        case TextBlock(text=text):
            return {"type": "text", "text": text}
        case ThinkingBlock(thinking=thinking, signature=signature):
            return {"type": "thinking", "thinking": thinking, "signature": signature}
        case ToolUseBlock(id=id_, name=name, input=input_):
            return {"type": "tool_use", "id": id_, "name": name, "input": input_}
        case ToolResultBlock(tool_use_id=tool_use_id, content=content, is_error=is_error):
            out: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id}
            if content is not None:
                out["content"] = content
            if is_error is not None:
                out["is_error"] = is_error
            return out
        case _:
            assert_never(block)


def is_tool_results(message: dict[str, Any]) -> bool:
    """Whether an API message is a user turn made only of tool results (not a prompt)."""
    content = message["content"]
    return (
        message["role"] == "user"
        and isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def history_from_entries(entries: Iterable[TranscriptEntry]) -> list[dict[str, Any]]:
    """The API ``messages`` list for the main agent's transcript entries, repaired.

    Example: a prompt, a response with a text block and a tool call, and its result become::

        [{"role": "user", "content": "List files"},
         {"role": "assistant", "content": [{"type": "text", ...}, {"type": "tool_use", ...}]},
         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": ..., ...}]}]
    """
    history: list[dict[str, Any]] = []
    message_ids: list[str | None] = []  # parallel to history: the assistant message_id, if any
    for entry in entries:
        if entry.agent_id != "main":
            continue
        if entry.kind == HISTORY_SNAPSHOT:
            if snapshot_problem(entry.data) is not None:
                continue  # not a history: what the entries before it rebuilt stands
            history = copy.deepcopy(entry.data["messages"])
            message_ids = [None] * len(history)
            continue
        message = entry.message
        if isinstance(message, AssistantMessage):
            if message.parent_tool_use_id is not None or message.error is not None:
                continue
            blocks = [block_to_api(b) for b in message.content]
            mid = message.message_id or None
            if mid is not None and message_ids and message_ids[-1] == mid:
                history[-1]["content"].extend(blocks)
            else:
                history.append({"role": "assistant", "content": blocks})
                message_ids.append(mid)
        elif isinstance(message, UserMessage):
            if message.parent_tool_use_id is not None:
                continue
            if isinstance(message.content, str):
                content: str | list[dict[str, Any]] = message.content
            else:
                content = [block_to_api(b) for b in message.content]
            new = {"role": "user", "content": content}
            if is_tool_results(new) and history and is_tool_results(history[-1]):
                history[-1]["content"].extend(content)
            else:
                history.append(new)
                message_ids.append(None)
        # system, result and stream_event messages, and other kinds, are not conversation
    return repair_history(history)


#: What a snapshot's message may nest, at most: tool inputs nest at most 64 levels, a message
#: wraps them in 4 more; the copy and the API's encoders recurse once a level or more.
MAX_SNAPSHOT_DEPTH = 128
_ROLES = ("user", "assistant")
#: the string fields each content block the history builds must have
_BLOCK_STRINGS = {
    "text": ("text",),
    "thinking": ("thinking", "signature"),
    "tool_use": ("id", "name"),
    "tool_result": ("tool_use_id",),
}


def snapshot_problem(data: dict[str, Any]) -> str | None:
    """What makes a ``history_snapshot`` entry's ``data`` not a history, or None.

    Compaction writes ``{"messages": [...]}``, messages in the API's shape. A file can hold
    anything there, so a snapshot is used only if ``messages`` is a list of objects with a
    ``role`` of ``user`` or ``assistant`` and a ``content`` that is a non-empty text or a
    non-empty list of content blocks (objects with a string ``type``; text, thinking, tool_use
    and tool_result blocks with their fields), nested at most ``MAX_SNAPSHOT_DEPTH`` levels.
    The answer names the field: ``messages[2].content[0].id: expected a string, got null``.
    """
    messages = data.get("messages")
    if type(messages) is not list:
        return f"messages: expected a list of messages, got {_shown(messages)}"
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if type(message) is not dict:
            return f"{where}: expected an object with a role and a content, got {_shown(message)}"
        role = message.get("role")
        if role not in _ROLES:
            return f"{where}.role: expected 'user' or 'assistant', got {_shown(role)}"
        content = message.get("content")
        if type(content) is str and content:
            continue
        if type(content) is not list or not content:
            return f"{where}.content: expected a text or a list of content blocks, got " + _shown(
                content
            )
        for j, block in enumerate(content):
            if type(block) is not dict or type(kind := block.get("type")) is not str:
                return (
                    f"{where}.content[{j}]: expected a content block (an object with a string "
                    f"type), got {_shown(block)}"
                )
            for name in _BLOCK_STRINGS.get(kind, ()):
                if type(block.get(name)) is not str:
                    return f"{where}.content[{j}].{name}: expected a string, got " + _shown(
                        block.get(name)
                    )
            if kind == "tool_use" and type(block.get("input")) is not dict:
                return f"{where}.content[{j}].input: expected an object, got " + _shown(
                    block.get("input")
                )
        if _deeper_than(message, MAX_SNAPSHOT_DEPTH):
            return f"{where}: nested more than {MAX_SNAPSHOT_DEPTH} levels deep"
    return None


def _deeper_than(root: Any, limit: int) -> bool:
    """Whether ``root``'s lists and dicts nest more than ``limit`` levels (a walk with a stack of
    its own: a recursive one would hit the limit it looks for)."""
    stack = [(root, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        if type(value) is dict:
            stack.extend((v, depth + 1) for v in value.values() if type(v) in (dict, list))
        elif type(value) is list:
            stack.extend((v, depth + 1) for v in value if type(v) in (dict, list))
    return False


def _shown(value: Any) -> str:
    """A value in an error message: a short repr of a text, else JSON's name for its type."""
    if type(value) is str:
        if not value:
            return "an empty text"
        return repr(value) if len(value) <= 40 else repr(value[:40]) + "…"
    if value == []:
        return "an empty list"
    return "null" if value is None else type(value).__name__


#: Transcripts longer than this are rebuilt in a worker thread: about 10 µs an entry, a long one
#: (100 000 entries: over a second) would hold the event loop far past 50 ms.
INLINE_REBUILD_ENTRIES = 1000


def fits_the_loop(entries: Sequence[TranscriptEntry]) -> bool:
    """Whether rebuilding (or walking) ``entries`` is short work, fit for the event loop: at most
    ``INLINE_REBUILD_ENTRIES`` of them, and none a history snapshot that may be large. One
    snapshot holds a whole history (two entries with one of 200 000 messages took 3 s to
    rebuild), so counting entries alone is not enough."""
    if len(entries) > INLINE_REBUILD_ENTRIES:
        return False
    return not any(e.kind == HISTORY_SNAPSHOT and is_large_entry(e) for e in entries)


async def rebuild_history(entries: Sequence[TranscriptEntry]) -> list[dict[str, Any]]:
    """:func:`history_from_entries` as the event loop should call it: inline for a short
    transcript, in a worker thread (with the cyclic GC paused, as for decoding) for a long one
    (see :func:`fits_the_loop`)."""
    if fits_the_loop(entries):
        history = history_from_entries(entries)
        await trio.lowlevel.checkpoint()
        return history
    return await trio.to_thread.run_sync(_rebuild_paused, list(entries))


def _rebuild_paused(entries: list[TranscriptEntry]) -> list[dict[str, Any]]:
    with gc_paused(True):
        return history_from_entries(entries)


#: How many items a worker thread frees per call when emptying a long list (about a millisecond).
_RELEASE_SLICE = 1000


async def release(items: list[Any], *, inline_up_to: int = INLINE_REBUILD_ENTRIES) -> None:
    """Empty ``items``, freeing what only it held, off the event loop when it is long.

    Freeing the entries of a long transcript is work too: 100 000 resumed entries are about a
    million objects, 130 ms of deallocation on whichever thread drops the last reference. A
    long list is emptied in a worker thread a slice at a time, so the thread gives the
    interpreter back to the event loop between slices.
    """
    if len(items) <= inline_up_to:
        items.clear()
        await trio.lowlevel.checkpoint()
        return
    await trio.to_thread.run_sync(clear_in_slices, items)


def clear_in_slices(items: list[Any]) -> None:
    """Empty ``items`` from the end, ``_RELEASE_SLICE`` at a time (in a worker thread)."""
    while items:
        del items[-_RELEASE_SLICE:]


def repair_history(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Make ``history`` one the Messages API accepts, changing as little as possible.

    * it starts with the user's turn: assistant turns before the first prompt are dropped;
    * every ``tool_use`` is answered in the next user message, in call order: a dangling call gets
      an error result saying it was interrupted, and a ``tool_result`` answering no call of the
      preceding assistant message is dropped;
    * roles alternate: consecutive user messages (a prompt whose turn never came) or assistant
      messages (a response continued) are merged into one;
    * a ``tool_use`` id used earlier is dropped (ids must be unique), and messages left empty go.

    Returns a new list; the input is not modified. Idempotent.
    """
    out: list[dict[str, Any]] = []
    pending: list[str] = []  # tool_use ids of the last assistant message, in call order
    used: set[str] = set()
    for message in history:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if message["role"] == "assistant":
            blocks = [b for b in blocks if not _reused_call(b, used)]
            if not blocks or not out:
                continue  # nothing left, or no prompt yet: a history starts with the user
            if pending:  # two assistant messages in a row with calls in between unanswered
                out.append({"role": "user", "content": _interrupted(pending)})
                pending = []
            calls = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            used.update(calls)
            if out[-1]["role"] == "assistant":
                out[-1] = {"role": "assistant", "content": [*out[-1]["content"], *blocks]}
                pending = calls
            else:
                out.append({**message, "content": blocks} if blocks != content else message)
                pending = calls
            continue
        results: dict[str, dict[str, Any]] = {}
        for b in blocks:
            if b.get("type") == "tool_result" and b.get("tool_use_id") in pending:
                results.setdefault(b["tool_use_id"], b)
        others = [b for b in blocks if b.get("type") != "tool_result"]
        if not pending and len(others) == len(blocks) and (not out or out[-1]["role"] != "user"):
            out.append(message)  # an ordinary prompt, untouched
            continue
        merged = [results.get(i) or _interrupted([i])[0] for i in pending] + others
        pending = []
        if not merged:
            continue
        if out and out[-1]["role"] == "user":
            previous = out[-1]["content"]
            if isinstance(previous, str):
                previous = [{"type": "text", "text": previous}]
            out[-1] = {"role": "user", "content": [*previous, *merged]}
        else:
            out.append({"role": "user", "content": merged})
    if pending:
        out.append({"role": "user", "content": _interrupted(pending)})
    return out


def _reused_call(block: dict[str, Any], used: set[str]) -> bool:
    return block.get("type") == "tool_use" and block.get("id") in used


def _interrupted(ids: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "type": "tool_result",
            "tool_use_id": i,
            "content": INTERRUPTED_TOOL_RESULT,
            "is_error": True,
        }
        for i in ids
    ]
