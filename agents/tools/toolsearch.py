"""Tool search: deferred tool definitions and the ``ToolSearch`` tool that loads them.

A session with many MCP tools would spend a large share of its context on their schemas before
the first word. With tool search those tools are *deferred*: their definitions are still sent,
marked ``"defer_loading": true``, so the Messages API keeps them out of the model's context, and
the model sees only their names (in ``ToolSearch``'s description). ``ToolSearch{query,
max_results}`` finds tools by name and description and answers with ``tool_reference`` blocks,
which load the found tools into the context from that point of the conversation on. The tool list
itself never changes, so the cached prefix (tools, system, earlier messages) stays valid.

``tool_search`` modes: ``"off"`` (nothing deferred), ``"on"`` (every MCP tool deferred) and
``"auto"`` (the default: MCP tools are deferred once their definitions would take more than
:data:`DEFAULT_DEFER_SHARE` of the model's context window).

Queries work as Claude Code's: keywords match words of a tool's name (``mcp__slack__send_message``
→ slack, send, message) and of its description, name matches ranking first; a keyword written
``+word`` must appear in the name; ``select:A,B`` picks tools by exact name.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import attrs
import msgspec

from .base import Tool, ToolContext, ToolOutput

__all__ = [
    "DEFAULT_DEFER_SHARE",
    "MAX_QUERY_KEYWORDS",
    "TOOL_SEARCH_MODES",
    "DeferredTools",
    "choose_deferred",
    "search_tools",
    "tool_search_tool",
]

TOOL_SEARCH_MODES = ("auto", "on", "off")
#: In ``auto`` mode, MCP tools are deferred once their definitions exceed this share of the
#: context window (Claude Code's default: 10%).
DEFAULT_DEFER_SHARE = 0.10
#: The estimate used for definitions: about four characters of JSON per token.
_CHARS_PER_TOKEN = 4
MAX_RESULTS = 5
#: Distinct keywords one query may hold. Each is looked for in every deferred tool's name and
#: description, so a search costs their number times the descriptions' size; the query is the
#: model's (30 000 keywords against 200 descriptions of 5 KB held the event loop for minutes).
MAX_QUERY_KEYWORDS = 32

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def definition_tokens(tools: Iterable[Tool]) -> int:
    """About how many tokens the tools' definitions take in a request."""
    return sum(len(json.dumps(t.definition())) for t in tools) // _CHARS_PER_TOKEN


def choose_deferred(
    tools: Iterable[Tool], mode: str, context_window: int, share: float = DEFAULT_DEFER_SHARE
) -> list[Tool]:
    """The tools to defer under ``mode``: MCP tools only, all or none."""
    if mode not in TOOL_SEARCH_MODES:
        raise ValueError(
            f"unknown tool_search {mode!r} (expected one of {', '.join(TOOL_SEARCH_MODES)})"
        )
    mcp = [t for t in tools if t.name.startswith("mcp__")]
    if mode == "off" or not mcp:
        return []
    if mode == "on" or definition_tokens(mcp) > share * context_window:
        return mcp
    return []


@attrs.define(eq=False)
class DeferredTools:
    """The deferred tools of one agent, and which of them a search has loaded so far."""

    tools: dict[str, Tool] = attrs.Factory(dict)
    loaded: list[str] = attrs.Factory(list)

    @classmethod
    def of(cls, tools: Iterable[Tool]) -> DeferredTools:
        return cls(tools={t.name: t for t in tools})

    def names(self) -> list[str]:
        return list(self.tools)

    def is_deferred(self, name: str) -> bool:
        return name in self.tools

    def mark_loaded(self, names: Iterable[str]) -> None:
        for name in names:
            if name in self.tools and name not in self.loaded:
                self.loaded.append(name)


def deferred_definition(tool: Tool) -> dict[str, Any]:
    """``tool``'s definition as a deferred one (a new dict: the tool's own stays as it is)."""
    return {**tool.definition(), "defer_loading": True}


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text.replace("_", " "))}


def search_tools(query: str, tools: Iterable[Tool], max_results: int = MAX_RESULTS) -> list[str]:
    """Names of the best matches for ``query`` (at most ``max_results``), best first.

    A query of more than :data:`MAX_QUERY_KEYWORDS` distinct keywords is a ``ValueError``."""
    candidates = list(tools)
    query = query.strip()
    if query.startswith("select:"):
        wanted = [n.strip() for n in query[len("select:") :].split(",") if n.strip()]
        known = {t.name for t in candidates}
        return [n for n in wanted if n in known][:max_results]
    terms = [t.lower() for t in query.split() if t.strip("+")]
    required = list(dict.fromkeys(t[1:] for t in terms if t.startswith("+")))
    # (a keyword written twice scores twice: each distinct one is scored once, times its count)
    keywords = Counter(t.lstrip("+") for t in terms)
    if len(keywords) > MAX_QUERY_KEYWORDS:
        raise ValueError(
            f"query has {len(keywords)} distinct keywords, "
            f"more than the {MAX_QUERY_KEYWORDS} a search takes"
        )
    scored: list[tuple[int, int, str]] = []
    for order, tool in enumerate(candidates):
        name = tool.name.lower()
        if any(r not in name for r in required):
            continue
        name_words = _words(tool.name)
        description = tool.description.lower()
        description_words = _words(tool.description)
        score = 0
        for word, count in keywords.items():
            if word in name_words:
                score += 10 * count
            elif word in name:
                score += 5 * count
            if word in description_words:
                score += 2 * count
            elif word in description:
                score += count
        if score or (required and not keywords):
            scored.append((-score, order, tool.name))
    scored.sort()
    return [name for _, _, name in scored[:max_results]]


class ToolSearchInput(msgspec.Struct, forbid_unknown_fields=True):
    query: str
    max_results: int = MAX_RESULTS


def tool_search_tool(deferred: DeferredTools) -> Tool:
    """``ToolSearch`` over ``deferred``: found tools come back as ``tool_reference`` blocks."""

    async def run(args: ToolSearchInput, ctx: ToolContext) -> ToolOutput:
        if not 1 <= args.max_results <= MAX_RESULTS:
            return ToolOutput.error(
                f"max_results must be between 1 and {MAX_RESULTS}, got {args.max_results}"
            )
        try:
            found = search_tools(args.query, deferred.tools.values(), args.max_results)
        except ValueError as exc:
            return ToolOutput.error(str(exc))
        if not found:
            return ToolOutput(
                content=f"No deferred tools match {args.query!r}.", data={"matches": []}
            )
        deferred.mark_loaded(found)
        blocks = [{"type": "tool_reference", "tool_name": name} for name in found]
        return ToolOutput(content=blocks, data={"matches": found})

    names = "\n".join(deferred.names())
    return Tool(
        name="ToolSearch",
        description=(
            "Find and load deferred tools. The tools below exist but their definitions are not "
            "loaded; search for them by keywords (a '+word' must be in the name) or load them by "
            "name with 'select:Name1,Name2'. Found tools can be called right after.\n"
            f"<available-deferred-tools>\n{names}\n</available-deferred-tools>"
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Keywords, or select:<name>,<name>"},
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_RESULTS,
                    "default": MAX_RESULTS,
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        handler=run,
        read_only=True,
        input_type=ToolSearchInput,
    )
