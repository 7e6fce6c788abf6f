"""A server's ``notifications/tools/list_changed``: its tools are listed again and the session's
tool set follows (deferred tools too), changing the definitions only when the list changed."""

from __future__ import annotations

from typing import Any

import trio

from agents import AgentOptions, ToolResultBlock, UserMessage
from agents.backends.base import ModelRequest
from agents.mcp import open_mcp_servers
from agents.testing import ScriptedBackend, Step, text, tool_use
from agents.testing.mcp_servers import stdio_server_config
from agents.tools.base import ToolContext
from tests.agents.helpers import collect

BOUND = 60
CTX = ToolContext(cwd="/", agent_id="main", tool_use_id="t", session_id="s")


def dynamic() -> dict[str, Any]:
    return {"dyn": stdio_server_config("dynamic")}


async def call(servers: Any, tool: str, text_: str) -> Any:
    found = next(t for t in servers.tools() if t.name == f"mcp__dyn__{tool}")
    return await found.handler(found.validate({"text": text_}), CTX)


async def test_the_manager_lists_a_changed_server_again() -> None:
    changed: list[str] = []
    with trio.fail_after(BOUND):
        async with open_mcp_servers(dynamic()) as servers:
            servers.watch(changed.append)
            await call(servers, "grow", "late")
            assert "mcp__dyn__late" in [t.name for t in servers.tools()]
            assert changed == ["dyn"]
            result = await call(servers, "late", "hi")
            assert result.content == [{"type": "text", "text": "late: hi"}]


async def test_a_change_that_is_none_changes_nothing() -> None:
    changed: list[str] = []
    with trio.fail_after(BOUND):
        async with open_mcp_servers(dynamic()) as servers:
            servers.watch(changed.append)
            before = [t.definition() for t in servers.tools()]
            await call(servers, "spam", "x")
            await call(servers, "echo", "after the burst")  # the listings have come back
            assert changed == []
            assert [t.definition() for t in servers.tools()] == before


def recording(steps: list[Step]) -> tuple[ScriptedBackend, list[list[dict[str, Any]]]]:
    seen: list[list[dict[str, Any]]] = []
    queue = list(steps)

    def respond(request: ModelRequest) -> Step:
        seen.append([dict(t) for t in request.tools])
        return queue.pop(0)

    return ScriptedBackend(respond), seen


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["name"] for t in tools]


def results(messages: list[Any]) -> list[ToolResultBlock]:
    return [
        b
        for m in messages
        if isinstance(m, UserMessage)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]


async def test_a_new_tool_is_offered_in_the_next_request_after_the_others() -> None:
    backend, seen = recording(
        [
            Step([tool_use("mcp__dyn__grow", {"text": "late"})]),
            Step([tool_use("mcp__dyn__late", {"text": "called"})]),
            Step([text("done")]),
        ]
    )
    options = AgentOptions(
        backend=backend, mcp_servers=dynamic(), allowed_tools=["mcp__dyn"], tool_search="off"
    )
    with trio.fail_after(BOUND):
        messages, error = await collect("go", options)
    assert error is None
    assert "mcp__dyn__late" not in names(seen[0])
    assert names(seen[1]) == [*names(seen[0]), "mcp__dyn__late"]
    assert seen[1][: len(seen[0])] == seen[0]  # the earlier definitions are unchanged
    assert [b.content for b in results(messages)][-1] == [{"type": "text", "text": "late: called"}]


async def test_a_redescribed_tool_is_updated() -> None:
    backend, seen = recording(
        [Step([tool_use("mcp__dyn__retitle", {"text": "Grow, renamed."})]), Step([text("done")])]
    )
    options = AgentOptions(
        backend=backend, mcp_servers=dynamic(), allowed_tools=["mcp__dyn"], tool_search="off"
    )
    with trio.fail_after(BOUND):
        _, error = await collect("go", options)
    assert error is None
    (grow,) = [t for t in seen[1] if t["name"] == "mcp__dyn__grow"]
    assert grow["description"] == "Grow, renamed."


async def test_announced_changes_that_are_none_keep_the_definitions() -> None:
    backend, seen = recording(
        [Step([tool_use("mcp__dyn__spam", {"text": "x"})]), Step([text("ok")])]
    )
    options = AgentOptions(backend=backend, mcp_servers=dynamic(), allowed_tools=["mcp__dyn"])
    with trio.fail_after(BOUND):
        _, error = await collect("go", options)
    assert error is None
    assert seen[1] == seen[0]


async def test_with_tool_search_a_new_tool_is_deferred_and_found() -> None:
    backend, seen = recording(
        [
            Step([tool_use("mcp__dyn__grow", {"text": "late"})]),
            Step([tool_use("ToolSearch", {"query": "select:mcp__dyn__late"})]),
            Step([text("done")]),
        ]
    )
    options = AgentOptions(
        backend=backend, mcp_servers=dynamic(), allowed_tools=["mcp__dyn"], tool_search="on"
    )
    with trio.fail_after(BOUND):
        messages, error = await collect("go", options)
    assert error is None
    (late,) = [t for t in seen[1] if t["name"] == "mcp__dyn__late"]
    assert late.get("defer_loading") is True
    (search,) = [t for t in seen[1] if t["name"] == "ToolSearch"]
    assert "mcp__dyn__late" in search["description"]
    assert results(messages)[-1].content == [
        {"type": "tool_reference", "tool_name": "mcp__dyn__late"}
    ]
