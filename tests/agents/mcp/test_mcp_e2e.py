"""External MCP servers through query() and AgentClient: init statuses, calls, the read-only
fan-out, status/reconnect/toggle, and no server process left when the session ends."""

from __future__ import annotations

import os
from typing import Any

import pytest
import trio

from agents import (
    AgentClient,
    AgentDefinition,
    AgentOptions,
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    ToolResultBlock,
    UserMessage,
    query,
)
from agents.backends.base import ModelRequest
from agents.testing import ScriptedBackend, Step, text, tool_use
from agents.testing.mcp_servers import stdio_server_config
from tests.agents.helpers import collect

BOUND = 90


def results(messages: list[Any]) -> list[ToolResultBlock]:
    return [
        b
        for m in messages
        if isinstance(m, UserMessage) and m.parent_tool_use_id is None
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]


def result_text(block: ToolResultBlock) -> str:
    content = block.content
    if isinstance(content, str):
        return content
    return "".join(item.get("text", "") for item in content or [])


def init_of(messages: list[Any]) -> dict[str, Any]:
    return next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init").data


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_stdio_server_tool_is_called_through_query() -> None:
    backend = ScriptedBackend(
        [Step([tool_use("mcp__demo__echo", {"text": "from the server"})]), Step([text("done")])]
    )
    options = AgentOptions(
        backend=backend, mcp_servers={"demo": stdio_server_config()}, allowed_tools=["mcp__demo"]
    )
    with trio.fail_after(BOUND):
        messages, error = await collect("go", options)
    assert error is None
    init = init_of(messages)
    assert init["mcp_servers"] == [{"name": "demo", "status": "connected"}]
    assert "mcp__demo__echo" in init["tools"]
    (result,) = results(messages)
    assert not result.is_error and result_text(result) == "from the server"


async def test_a_failed_server_is_listed_in_init_and_does_not_stop_the_session() -> None:
    backend = ScriptedBackend([Step([text("fine")])])
    options = AgentOptions(
        backend=backend,
        mcp_servers={"ghost": {"command": "/nonexistent/mcp"}, "demo": stdio_server_config()},
    )
    with trio.fail_after(BOUND):
        messages, error = await collect("go", options)
    assert error is None
    ghost, demo = init_of(messages)["mcp_servers"]
    assert ghost["name"] == "ghost" and ghost["status"] == "failed"
    assert "No such file or directory" in ghost["error"]
    assert demo == {"name": "demo", "status": "connected"}


async def test_read_only_mcp_calls_of_one_response_run_concurrently() -> None:
    calls = [tool_use("mcp__demo__sleep", {"seconds": 1}) for _ in range(5)]
    backend = ScriptedBackend([Step(calls), Step([text("done")])])
    options = AgentOptions(
        backend=backend, mcp_servers={"demo": stdio_server_config()}, allowed_tools=["mcp__demo"]
    )
    stamps: list[float] = []
    with trio.fail_after(BOUND):
        async for message in query(prompt="go", options=options):
            if isinstance(message, UserMessage) or (
                isinstance(message, AssistantMessage) and not stamps
            ):
                stamps.append(trio.current_time())
    assert len(stamps) == 6
    assert stamps[-1] - stamps[0] < 3, "5 read-only calls of 1 s did not overlap"


async def test_a_mutating_mcp_call_is_denied_without_permission() -> None:
    backend = ScriptedBackend(
        [Step([tool_use("mcp__demo__add", {"a": 1, "b": 2})]), Step([text("ok")])]
    )
    options = AgentOptions(backend=backend, mcp_servers={"demo": stdio_server_config()})
    with trio.fail_after(BOUND):
        messages, _ = await collect("go", options)
    (result,) = results(messages)
    assert result.is_error


async def test_server_processes_end_with_the_query() -> None:
    backend = ScriptedBackend([Step([tool_use("mcp__demo__pid", {})]), Step([text("done")])])
    options = AgentOptions(
        backend=backend, mcp_servers={"demo": stdio_server_config()}, allowed_tools=["mcp__demo"]
    )
    with trio.fail_after(BOUND):
        messages, _ = await collect("go", options)
    pid = int(result_text(results(messages)[0]))
    assert not alive(pid)


async def test_server_processes_end_when_the_client_is_cancelled() -> None:
    backend = ScriptedBackend([Step([tool_use("mcp__demo__pid", {})]), Step([text("done")])])
    options = AgentOptions(
        backend=backend, mcp_servers={"demo": stdio_server_config()}, allowed_tools=["mcp__demo"]
    )
    pids: list[int] = []
    with trio.fail_after(BOUND), trio.CancelScope() as scope:
        async with AgentClient(options) as client:
            await client.query("go")
            async for message in client.receive_response():
                if isinstance(message, UserMessage):
                    pids.extend(
                        int(result_text(b))
                        for b in message.content
                        if isinstance(b, ToolResultBlock)
                    )
            scope.cancel()
            await trio.sleep_forever()
    assert pids and not alive(pids[0])


async def test_client_status_reconnect_and_toggle() -> None:
    def respond(request: ModelRequest) -> Step:
        return Step([text("ok")])

    options = AgentOptions(
        backend=ScriptedBackend(respond), mcp_servers={"demo": stdio_server_config()}
    )
    with trio.fail_after(BOUND):
        async with AgentClient(options) as client:
            (before,) = await client.mcp_server_status()
            off = await client.toggle_mcp_server("demo", enabled=False)
            (disabled,) = await client.mcp_server_status()
            on = await client.toggle_mcp_server("demo", enabled=True)
            again = await client.reconnect_mcp_server("demo")
            with pytest.raises(
                ValueError, match=r"^unknown MCP server 'nope' \(configured: demo\)$"
            ):
                await client.reconnect_mcp_server("nope")
    assert before["status"] == "connected" and "mcp__demo__echo" in before["tools"]
    assert off == {"name": "demo", "status": "disabled"} == disabled
    assert on["status"] == "connected"
    assert again["status"] == "connected"


async def test_a_disabled_servers_tools_answer_with_an_error_naming_it() -> None:
    backend = ScriptedBackend(
        [Step([tool_use("mcp__demo__echo", {"text": "x"})]), Step([text("ok")])]
    )
    options = AgentOptions(
        backend=backend, mcp_servers={"demo": stdio_server_config()}, allowed_tools=["mcp__demo"]
    )
    with trio.fail_after(BOUND):
        async with AgentClient(options) as client:
            await client.toggle_mcp_server("demo", enabled=False)
            await client.query("go")
            messages = [m async for m in client.receive_response()]
    (result,) = results(messages)
    assert (
        result.is_error
        and result_text(result) == "MCP server 'demo' is disabled; tool 'echo' was not called"
    )


async def test_a_subagent_gets_the_tools_of_its_own_servers() -> None:
    def respond(request: ModelRequest) -> Step:
        if request.agent_type == "main":
            if len(request.messages) == 1:
                spawn = {
                    "description": "d",
                    "prompt": "p",
                    "subagent_type": "helper",
                    "run_in_background": False,
                }
                return Step([tool_use("Agent", spawn)])
            return Step([text("main done")])
        if len(request.messages) == 1:
            assert any(t["name"] == "mcp__own__echo" for t in request.tools)
            return Step([tool_use("mcp__own__echo", {"text": "child called"})])
        return Step([text("child done")])

    options = AgentOptions(
        backend=ScriptedBackend(respond),
        allowed_tools=["mcp__own", "Agent"],
        agents={
            "helper": AgentDefinition(
                description="h", prompt="p", mcp_servers=[{"own": stdio_server_config()}]
            )
        },
    )
    with trio.fail_after(BOUND):
        messages, error = await collect("go", options)
    assert error is None
    child = [
        b
        for m in messages
        if isinstance(m, UserMessage) and m.parent_tool_use_id is not None
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert [result_text(b) for b in child] == ["child called"]
    init = init_of(messages)
    assert "mcp__own__echo" not in init["tools"]  # the main agent does not get it
    assert [m for m in messages if isinstance(m, ResultMessage)][-1].result == "main done"
