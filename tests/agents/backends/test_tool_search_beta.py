"""Requests carrying deferred tool definitions name the API feature they need; others do not."""

from __future__ import annotations

from agents.testing import FakeAnthropicServer, Step, text
from tests.agents.backends.test_anthropic_backend import fetch, request

TOOL = {"name": "mcp__s__t", "description": "d", "input_schema": {"type": "object"}}


async def test_a_request_with_deferred_tools_sends_the_tool_search_beta() -> None:
    async with FakeAnthropicServer([Step([text("ok")])]) as server:
        await fetch(server, request(tools=[TOOL, {**TOOL, "name": "x", "defer_loading": True}]))
    assert server.requests[0].headers["anthropic-beta"] == "advanced-tool-use-2025-11-20"


async def test_a_request_without_deferred_tools_sends_no_beta() -> None:
    async with FakeAnthropicServer([Step([text("ok")])]) as server:
        await fetch(server, request(tools=[TOOL]))
    assert "anthropic-beta" not in server.requests[0].headers
