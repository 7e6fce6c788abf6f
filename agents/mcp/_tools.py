"""An external server's tools as the same :class:`~agents.tools.base.Tool` objects in-process
servers produce: named ``mcp__<server>__<tool>``, read-only when the server marks them
``readOnlyHint``, their results converted to Messages API content and capped in tokens.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..tools.base import Tool, ToolContext, ToolOutput
from ..tools.names import mcp_tool_name

if TYPE_CHECKING:
    from mcp.types import CallToolResult
    from mcp.types import Tool as McpTool

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "cap_output",
    "convert_result",
    "make_tool",
]

#: MCP tool output beyond this many tokens is cut, with a note (Claude Code's default).
DEFAULT_MAX_OUTPUT_TOKENS = 25_000
#: The estimate used for the cap: about four characters per token of English text and JSON.
CHARS_PER_TOKEN = 4

Caller = Callable[[str, dict[str, Any]], Awaitable[ToolOutput]]


def make_tool(server: str, listed: McpTool, call: Caller) -> Tool:
    """The tool the model sees for ``listed``; ``call(tool_name, args)`` reaches the server
    under the name it listed (the model's is made to fit the API: :func:`mcp_tool_name`)."""
    name = listed.name

    async def run(args: Any, ctx: ToolContext) -> ToolOutput:
        return await call(name, args)

    annotations = listed.annotations
    return Tool(
        name=mcp_tool_name(server, name),
        description=listed.description or listed.title or name,
        input_schema=dict(listed.input_schema or {"type": "object", "properties": {}}),
        handler=run,
        read_only=bool(annotations is not None and annotations.read_only_hint),
        output_cap=None,  # capped here, in tokens, by cap_output
    )


def convert_result(result: CallToolResult) -> ToolOutput:
    """An MCP ``CallToolResult`` (the ``mcp`` package's type, from a ``ClientSession``) as
    Messages API content blocks: its JSON read by the stdio client's own decoding, so both
    transports convert a result alike (the extra encoding is nothing beside an HTTP call)."""
    import msgspec

    from ._rpc import decode_call_result

    return decode_call_result(msgspec.Raw(result.model_dump_json(by_alias=True).encode()))


def cap_output(output: ToolOutput, max_tokens: int) -> ToolOutput:
    """``output`` with its text cut to about ``max_tokens`` tokens, and a note saying how much
    was cut; images and other blocks are kept (the text blocks share the cap, in order)."""
    cap = max_tokens * CHARS_PER_TOKEN
    content = output.content
    items = [{"type": "text", "text": content}] if isinstance(content, str) else content
    total = sum(len(i.get("text", "")) for i in items if i.get("type") == "text")
    if total <= cap:
        return output
    kept: list[dict[str, Any]] = []
    budget = cap
    for item in items:
        if item.get("type") != "text":
            kept.append(item)
        elif budget > 0:
            text = item.get("text", "")
            kept.append({"type": "text", "text": text[:budget]})
            budget -= min(budget, len(text))
    cut = total - cap
    kept.append(
        {
            "type": "text",
            "text": f"[output truncated: the MCP tool's output is larger than {max_tokens} tokens; "
            f"{cut} more characters (about {cut // CHARS_PER_TOKEN} tokens) not shown]",
        }
    )
    return ToolOutput(content=kept, is_error=output.is_error, data=output.data)
