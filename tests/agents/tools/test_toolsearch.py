"""Tool search: which tools are deferred, how ToolSearch finds them, and that the tool list sent
to the model never changes when tools are loaded."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agents.tools.base import Tool, ToolContext, ToolOutput, ToolRegistry
from agents.tools.toolsearch import (
    MAX_QUERY_KEYWORDS,
    DeferredTools,
    _words,
    choose_deferred,
    search_tools,
    tool_search_tool,
)

from .toolkit import printed_within_a_deadline

CTX = ToolContext(cwd="/", agent_id="main", tool_use_id="t1", session_id="s1")


async def _noop(args: Any, ctx: ToolContext) -> ToolOutput:
    return ToolOutput(content="")


def make(name: str, description: str = "", schema_size: int = 0) -> Tool:
    props = {f"p{i}": {"type": "string", "description": "x" * 50} for i in range(schema_size)}
    return Tool(name, description, {"type": "object", "properties": props}, _noop)


TOOLS = [
    make("mcp__slack__send_message", "Post a message to a Slack channel"),
    make("mcp__slack__list_channels", "List the channels of the workspace"),
    make("mcp__github__create_issue", "Open an issue in a repository"),
    make("mcp__github__getPullRequest", "Read a pull request and its comments"),
    make("mcp__weather__forecast", "Weather forecast for a city; mentions slack winds"),
]


def test_off_defers_nothing() -> None:
    assert choose_deferred(TOOLS, "off", context_window=10) == []


def test_on_defers_every_mcp_tool_and_no_built_in() -> None:
    deferred = choose_deferred([make("Read"), *TOOLS], "on", context_window=1_000_000)
    assert [t.name for t in deferred] == [t.name for t in TOOLS]


def test_auto_defers_only_past_the_share_of_the_context() -> None:
    big = [make(f"mcp__s__t{i}", schema_size=20) for i in range(10)]  # ~3 000 tokens
    assert choose_deferred(big, "auto", context_window=200_000) == []
    assert len(choose_deferred(big, "auto", context_window=20_000)) == 10


def test_unknown_mode_is_a_value_error() -> None:
    with pytest.raises(
        ValueError, match=r"^unknown tool_search 'maybe' \(expected one of auto, on, off\)$"
    ):
        choose_deferred(TOOLS, "maybe", context_window=1)


def test_keywords_rank_name_matches_before_description_matches() -> None:
    assert search_tools("slack", TOOLS) == [
        "mcp__slack__send_message",
        "mcp__slack__list_channels",
        "mcp__weather__forecast",
    ]


def test_camel_case_names_split_into_words() -> None:
    assert search_tools("pull request", TOOLS)[0] == "mcp__github__getPullRequest"


def test_a_plus_keyword_must_be_in_the_name() -> None:
    assert search_tools("+slack message", TOOLS) == [
        "mcp__slack__send_message",
        "mcp__slack__list_channels",
    ]


def test_select_picks_exact_names_in_the_order_given() -> None:
    query = "select:mcp__github__create_issue,nope,mcp__slack__send_message"
    assert search_tools(query, TOOLS) == ["mcp__github__create_issue", "mcp__slack__send_message"]


def test_max_results_bounds_the_matches() -> None:
    assert len(search_tools("a", [make(f"mcp__s__a{i}", "a tool") for i in range(9)], 3)) == 3


async def test_tool_search_answers_with_tool_references_and_records_them() -> None:
    deferred = DeferredTools.of(TOOLS)
    tool = tool_search_tool(deferred)
    output = await tool.handler(tool.validate({"query": "issue"}), CTX)
    assert output.content == [{"type": "tool_reference", "tool_name": "mcp__github__create_issue"}]
    assert deferred.loaded == ["mcp__github__create_issue"]


async def test_tool_search_rejects_more_than_five_results() -> None:
    tool = tool_search_tool(DeferredTools.of(TOOLS))
    output = await tool.handler(tool.validate({"query": "x", "max_results": 6}), CTX)
    assert output.is_error and output.content == "max_results must be between 1 and 5, got 6"


def test_deferred_tools_are_listed_by_name_in_the_description() -> None:
    description = tool_search_tool(DeferredTools.of(TOOLS)).description
    assert "mcp__slack__send_message\nmcp__slack__list_channels" in description
    assert "Post a message" not in description


async def test_loading_a_tool_leaves_the_definitions_unchanged() -> None:
    registry = ToolRegistry()
    for t in TOOLS:
        registry.add(t)
    deferred = DeferredTools.of(TOOLS)
    registry.defer(deferred.names())
    search = tool_search_tool(deferred)
    registry.add(search)
    before = [dict(d) for d in registry.definitions()]
    await search.handler(search.validate({"query": "slack"}), CTX)
    assert registry.definitions() == before
    assert all(d.get("defer_loading") is True for d in before[:-1])
    assert "defer_loading" not in before[-1]
    assert "defer_loading" not in TOOLS[0].definition()  # the shared tool object is untouched


# -- the query is the model's: its work is bounded -----------------------------------------------


def _reference_search(query: str, tools: list[Tool], max_results: int = 5) -> list[str]:
    """The search as it was written: every keyword of the query, duplicates included, against
    every tool, the description lowered again for each (kept as the reference)."""
    query = query.strip()
    if query.startswith("select:"):
        wanted = [n.strip() for n in query[len("select:") :].split(",") if n.strip()]
        known = {t.name for t in tools}
        return [n for n in wanted if n in known][:max_results]
    terms = [t.lower() for t in query.split() if t.strip("+")]
    required = [t[1:] for t in terms if t.startswith("+")]
    keywords = [t.lstrip("+") for t in terms]
    scored: list[tuple[int, int, str]] = []
    for order, tool in enumerate(tools):
        name = tool.name.lower()
        name_words = _words(tool.name)
        if any(r not in name for r in required):
            continue
        description_words = _words(tool.description)
        score = 0
        for word in keywords:
            if word in name_words:
                score += 10
            elif word in name:
                score += 5
            if word in description_words:
                score += 2
            elif word in tool.description.lower():
                score += 1
        if score or (required and not keywords):
            scored.append((-score, order, tool.name))
    scored.sort()
    return [name for _, _, name in scored[:max_results]]


_PIECES = ["slack", "Slack", "send", "message", "Msg", "issue", "a", "s", "_", "__", "mcp", "+",
           "select:", ",", " ", "pull", "Request", "1"]  # fmt: skip
_SEARCH_TEXT = st.lists(st.sampled_from(_PIECES), max_size=12).map("".join)


@given(
    _SEARCH_TEXT,
    st.lists(st.tuples(_SEARCH_TEXT, _SEARCH_TEXT), max_size=6),
    st.integers(1, 5),
)
@example("slack slack +slack", [("slack__send", "Slack slack")], 5)
@example("message message slack", [("slack__x", ""), ("message__y", "")], 5)
@example("issue issue mcp", [("a", "mcp"), ("b", "issue")], 5)
@example("sla sla sla mess", [("mess_x", ""), ("slack_y", "")], 5)
@example("ssu ssu ssu ab", [("x", "ab"), ("y", "issue")], 5)
def test_search_finds_what_the_plain_search_found(
    query: str, named: list[tuple[str, str]], max_results: int
) -> None:
    """For any query within the bound, the same tools in the same order as the plain search
    (duplicated keywords count once each, as they did)."""
    tools = [make(f"mcp__{name}", description) for name, description in named]
    assert search_tools(query, tools, max_results) == _reference_search(query, tools, max_results)


async def test_a_query_of_too_many_keywords_is_the_tools_error() -> None:
    """More distinct keywords than the bound: an error naming the count and the bound."""
    tool = tool_search_tool(DeferredTools.of(TOOLS))
    query = " ".join(f"w{i}" for i in range(MAX_QUERY_KEYWORDS + 1)) + " w0 +w1"
    output = await tool.handler(tool.validate({"query": query}), CTX)
    assert output.is_error
    assert output.content == (
        f"query has {MAX_QUERY_KEYWORDS + 1} distinct keywords, "
        f"more than the {MAX_QUERY_KEYWORDS} a search takes"
    )


def test_a_query_of_many_keywords_is_answered_at_once() -> None:
    """30 000 keywords against 200 tools of 5 KB descriptions (the plain search lowered each
    description for each keyword: minutes) are answered at once."""
    script = (
        "from agents.tools.base import Tool\n"
        "from agents.tools.toolsearch import search_tools\n"
        "async def noop(args, ctx): pass\n"
        "tools = [Tool(f'mcp__s__t{i}', 'Xy' * 2500, {'type': 'object'}, noop)\n"
        "         for i in range(200)]\n"
        "query = ' '.join(f'k{i}' for i in range(30_000))\n"
        "try:\n"
        "    search_tools(query, tools)\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
    )  # fmt: skip
    assert printed_within_a_deadline(script, seconds=30).startswith("query has 30000")
