"""Servers from the project's ``.mcp.json`` (with ``setting_sources=["project"]``) and
in-process servers given to one subagent through ``AgentDefinition.mcp_servers``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from agents import (
    AgentDefinition,
    AgentOptions,
    ResultMessage,
    SystemMessage,
    ToolAnnotations,
    ToolResultBlock,
    UserMessage,
    create_sdk_mcp_server,
    tool,
)
from agents.backends.base import ModelRequest
from agents.settings import SettingsError, load_mcp_json
from agents.testing import ScriptedBackend, Step, text, tool_use
from agents.testing.mcp_servers import stdio_server_config
from tests.agents.helpers import collect

BOUND = 90


def write_mcp_json(project: Path, data: Any) -> Path:
    path = project / ".mcp.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def init_of(messages: list[Any]) -> dict[str, Any]:
    return next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init").data


# -- .mcp.json ----------------------------------------------------------------------------------


def test_mcp_json_servers_are_read_in_claude_codes_shape(project: Path) -> None:
    write_mcp_json(project, {"mcpServers": {"fs": {"command": "mcp-fs", "args": ["."]}}})
    assert load_mcp_json(str(project)) == {"fs": {"command": "mcp-fs", "args": ["."]}}


def test_no_mcp_json_is_no_servers(project: Path) -> None:
    assert load_mcp_json(str(project)) == {}


def test_mcp_json_expands_environment_variables(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("X15_TOKEN", "secret")
    write_mcp_json(
        project,
        {
            "mcpServers": {
                "api": {
                    "type": "http",
                    "url": "${X15_BASE:-http://127.0.0.1:1}/mcp",
                    "headers": {"Authorization": "Bearer ${X15_TOKEN}"},
                }
            }
        },
    )
    api = load_mcp_json(str(project))["api"]
    assert api["url"] == "http://127.0.0.1:1/mcp"
    assert api["headers"] == {"Authorization": "Bearer secret"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"invalid JSON at line 1"),
        ([], r"must be a JSON object"),
        ({"mcpServers": []}, r"mcpServers must be a JSON object"),
        ({"mcpServers": {"fs": "mcp-fs"}}, r"mcpServers\.fs must be a server config"),
        ({"mcpServers": {"fs": {"command": ""}}}, r"mcpServers\.fs\.command must be"),
        ({"mcpServers": {"fs": {"command": "x", "args": "y"}}}, r"mcpServers\.fs\.args must be"),
        ({"mcpServers": {"fs": {"type": "ws", "url": "x"}}}, r"mcpServers\.fs\.type must be"),
        ({"mcpServers": {"a b": {"command": "x"}}}, r"mcpServers key 'a b' must be"),
        (
            {"mcpServers": {"fs": {"command": "${X15_UNSET_VARIABLE}"}}},
            r"mcpServers\.fs: environment variable X15_UNSET_VARIABLE is not set",
        ),
    ],
)
def test_a_malformed_mcp_json_is_an_error_naming_file_and_key(
    project: Path, content: Any, message: str
) -> None:
    path = write_mcp_json(project, content)
    with pytest.raises(SettingsError, match=rf"^{path}: .*{message}"):
        load_mcp_json(str(project))


async def test_a_malformed_mcp_json_fails_the_query_at_start(project: Path) -> None:
    path = write_mcp_json(project, {"mcpServers": {"fs": {"command": 3}}})
    options = AgentOptions(
        backend=ScriptedBackend([Step([text("never")])]),
        cwd=str(project),
        setting_sources=["project"],
    )
    with trio.fail_after(BOUND), pytest.raises(SettingsError, match=rf"^{path}: mcpServers\.fs"):
        await collect("go", options)


async def test_mcp_json_is_ignored_without_the_project_source(project: Path) -> None:
    write_mcp_json(project, {"mcpServers": {"proj": {"command": "/nonexistent/x15"}}})
    options = AgentOptions(
        backend=ScriptedBackend([Step([text("done")])]),
        cwd=str(project),
        setting_sources=["user"],
    )
    with trio.fail_after(BOUND):
        messages, error = await collect("go", options)
    assert error is None
    assert init_of(messages)["mcp_servers"] == []


async def test_mcp_json_servers_join_the_options_and_the_options_win(project: Path) -> None:
    write_mcp_json(
        project,
        {
            "mcpServers": {
                "proj": stdio_server_config(name="from-file"),
                "both": {"command": "/nonexistent/x15-server"},  # shadowed by the options
            }
        },
    )

    def respond(request: ModelRequest) -> Step:
        if len(request.messages) == 1:
            return Step([tool_use("mcp__proj__echo", {"text": "from .mcp.json"})])
        return Step([text("done")])

    options = AgentOptions(
        backend=ScriptedBackend(respond),
        cwd=str(project),
        setting_sources=["project"],
        mcp_servers={"both": stdio_server_config(name="from-options")},
        allowed_tools=["mcp__proj", "mcp__both"],
    )
    with trio.fail_after(BOUND):
        messages, error = await collect("go", options)
    assert error is None
    statuses = {s["name"]: s["status"] for s in init_of(messages)["mcp_servers"]}
    assert statuses == {"both": "connected", "proj": "connected"}
    assert {"mcp__proj__echo", "mcp__both__echo"} <= set(init_of(messages)["tools"])
    blocks = [
        b
        for m in messages
        if isinstance(m, UserMessage)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert [(b.is_error, b.content) for b in blocks] == [
        (None, [{"type": "text", "text": "from .mcp.json"}])
    ]


# -- in-process servers of one subagent ---------------------------------------------------------


@tool("shout", "Upper-case the text.", {"text": str}, ToolAnnotations(readOnlyHint=True))
async def _shout(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": args["text"].upper()}]}


async def test_a_subagent_gets_the_tools_of_its_in_process_servers() -> None:
    seen: dict[str, list[str]] = {}

    def respond(request: ModelRequest) -> Step:
        seen.setdefault(request.agent_type or "main", [t["name"] for t in request.tools])
        if request.agent_type == "main":
            if len(request.messages) == 1:
                spawn = {"description": "d", "prompt": "p", "subagent_type": "helper"}
                return Step([tool_use("Agent", {**spawn, "run_in_background": False})])
            return Step([text("main done")])
        if len(request.messages) == 1:
            return Step([tool_use("mcp__loud__shout", {"text": "child called"})])
        return Step([text("child done")])

    server = create_sdk_mcp_server("loud", tools=[_shout])
    options = AgentOptions(
        backend=ScriptedBackend(respond),
        allowed_tools=["mcp__loud", "Agent"],
        agents={
            "helper": AgentDefinition(description="h", prompt="p", mcp_servers=[{"loud": server}])
        },
    )
    with trio.fail_after(BOUND):
        messages, error = await collect("go", options)
    assert error is None
    assert "mcp__loud__shout" in seen["helper"]
    assert "mcp__loud__shout" not in seen["main"]
    child = [
        b
        for m in messages
        if isinstance(m, UserMessage) and m.parent_tool_use_id is not None
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert [b.content for b in child] in ([[{"type": "text", "text": "CHILD CALLED"}]],)
    assert [m for m in messages if isinstance(m, ResultMessage)][-1].result == "main done"
