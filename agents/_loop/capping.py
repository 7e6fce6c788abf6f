"""The output cap of a tool: ``Tool.output_cap`` characters, in work bounded by the cap.

A tool's result reaches the model and the transcript only after this cut, and the cut runs on
the event loop, so its cost must not grow with the output: a custom tool may return millions of
content items. The rule: text items share the cap of characters, in order, and a capped output
keeps at most :data:`MAX_CONTENT_ITEMS` items — so finding the cut looks at no more than that
many items, whatever follows. Past the cut, items are dropped, with a note saying how many.
"""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from ..tools.base import Tool, ToolOutput, truncate

__all__ = ["MAX_CONTENT_ITEMS", "capped"]

#: The most content items a capped tool result keeps (the Messages API takes at most 100 images
#: in a request; 10 000 items are looked at in about a millisecond).
MAX_CONTENT_ITEMS = 10_000


def capped(tool: Tool, output: ToolOutput) -> ToolOutput:
    """``output`` within the tool's ``output_cap`` characters: text is cut with a note saying
    how much; in a list of content items, text items share the cap, at most
    ``MAX_CONTENT_ITEMS`` items are kept, and the items past the cut are replaced by a note
    saying how many."""
    cap = tool.output_cap
    if cap is None:
        return output
    content = output.content
    if isinstance(content, str):
        if len(content) <= cap:
            return output
        return replace(output, content=truncate(content, cap))
    if len(content) == 1:  # one item, the common case: fits unless it is a long text
        only = content[0]
        if only.get("type") != "text" or len(only.get("text", "")) <= cap:
            return output
    cut = _cut_point(content, cap)
    if cut is None:
        return output
    index, budget = cut
    kept: list[dict[str, Any]] = content[:index]
    item = content[index]
    if budget > 0 and item.get("type") == "text":
        kept.append({"type": "text", "text": truncate(item.get("text", ""), budget)})
        index += 1
    rest = len(content) - index
    if rest:
        note = (
            f"... [output truncated: {rest} more content items not shown (the output is "
            f"capped at {cap} characters and {MAX_CONTENT_ITEMS} items)]"
        )
        kept.append({"type": "text", "text": note})
    return replace(output, content=kept)


def _cut_point(content: list[dict[str, Any]], cap: int) -> tuple[int, int] | None:
    """Where ``content`` passes the cap: the index of the first item that does not fit whole
    and the characters left for it; None when everything fits. Looks at
    ``MAX_CONTENT_ITEMS + 1`` items at most."""
    used = 0
    for index, item in enumerate(content):
        if index == MAX_CONTENT_ITEMS:
            return index, 0
        if item.get("type") == "text":
            size = len(item.get("text", ""))
            if used + size > cap:
                return index, cap - used
            used += size
    return None
