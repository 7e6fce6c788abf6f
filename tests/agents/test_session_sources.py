"""What a session takes from settings files, skills, commands and external servers, merged
into its options below the options' own values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from agents import AgentDefinition, AgentOptions, create_sdk_mcp_server
from agents._assembly.sources import external_servers, open_session_sources
from agents.testing.mcp_servers import stdio_server_config
from agents.tools.base import ToolRegistry


def settings(project: Path, data: dict[str, object], name: str = "settings.json") -> None:
    path = project / ".claude" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


async def test_settings_rules_are_added_to_the_options(project: Path) -> None:
    settings(
        project, {"permissions": {"allow": ["Read"], "deny": ["Bash(rm *)"], "ask": ["WebFetch"]}}
    )
    options = AgentOptions(cwd=project, setting_sources=["project"], allowed_tools=["Glob"])
    async with open_session_sources(options, str(project)) as sources:
        merged = sources.apply(options)
    assert merged.allowed_tools == ["Glob", "Read"]
    assert merged.disallowed_tools == ["Bash(rm *)"]
    assert merged.extra["ask_rules"] == ["WebFetch"]


async def test_the_options_mode_wins_over_the_settings_default_mode(project: Path) -> None:
    settings(project, {"permissions": {"defaultMode": "acceptEdits"}})
    for mode, expected in ((None, "acceptEdits"), ("plan", "plan")):
        options = AgentOptions(cwd=project, setting_sources=["project"], permission_mode=mode)
        async with open_session_sources(options, str(project)) as sources:
            assert sources.apply(options).permission_mode == expected


async def test_the_options_env_wins_over_the_settings_env(project: Path) -> None:
    settings(project, {"env": {"A": "settings", "B": "settings"}})
    options = AgentOptions(cwd=project, setting_sources=["project"], env={"A": "options"})
    async with open_session_sources(options, str(project)) as sources:
        assert sources.apply(options).env == {"A": "options", "B": "settings"}


async def test_settings_hooks_join_the_options_hooks(project: Path) -> None:
    settings(project, {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}})
    options = AgentOptions(cwd=project, setting_sources=["project"])
    async with open_session_sources(options, str(project)) as sources:
        hooks = sources.apply(options).hooks
    assert hooks is not None and len(hooks["Stop"]) == 1


async def test_without_sources_nothing_changes(project: Path) -> None:
    settings(project, {"permissions": {"allow": ["Read"]}})
    options = AgentOptions(cwd=project)
    async with open_session_sources(options, str(project)) as sources:
        assert sources.apply(options) is options


def test_agent_definitions_name_known_servers_or_bring_their_own() -> None:
    mine = stdio_server_config()
    options = AgentOptions(
        mcp_servers={"shared": mine, "inproc": create_sdk_mcp_server("x")},
        agents={
            "a": AgentDefinition(
                description="d", prompt="p", mcp_servers=["shared", {"own": mine}]
            ),
        },
    )
    assert external_servers(options) == {"shared": mine, "own": mine}


def test_an_agent_naming_an_unknown_server_is_a_value_error() -> None:
    options = AgentOptions(
        agents={"a": AgentDefinition(description="d", prompt="p", mcp_servers=["nope"])}
    )
    with pytest.raises(
        ValueError,
        match=r"^agents\['a'\]\.mcp_servers: unknown server 'nope' \(mcp_servers has: none\)$",
    ):
        external_servers(options)


async def test_skills_add_the_skill_tool_and_a_system_block(project: Path) -> None:
    path = project / ".claude" / "skills" / "pdf" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\ndescription: PDF work\n---\nbody")
    options = AgentOptions(cwd=project, setting_sources=["project"])
    registry = ToolRegistry()
    async with open_session_sources(options, str(project)) as sources:
        sources.add_tools(registry, main_servers=[])
        blocks = sources.system_blocks()
        none = sources.system_blocks(skills=[])
    assert "Skill" in registry
    assert "- pdf: PDF work" in blocks[0]["text"]
    assert none == []


async def test_mcp_status_lists_every_server_in_order(project: Path) -> None:
    options = AgentOptions(
        mcp_servers={
            "inproc": create_sdk_mcp_server("x"),
            "ghost": {"command": "/nonexistent/server"},
        }
    )
    with trio.fail_after(60):
        async with open_session_sources(options, str(project)) as sources:
            status = sources.mcp_status(options)
    assert status[0] == {"name": "inproc", "status": "connected"}
    assert status[1]["name"] == "ghost" and status[1]["status"] == "failed"
    assert "No such file or directory" in status[1]["error"]


async def test_external_tools_are_deferred_behind_tool_search_when_on(project: Path) -> None:
    options = AgentOptions(mcp_servers={"demo": stdio_server_config()})
    registry = ToolRegistry()
    with trio.fail_after(60):
        async with open_session_sources(options, str(project)) as sources:
            sources.add_tools(registry, main_servers=["demo"], tool_search="on")
    definitions = {d["name"]: d for d in registry.definitions()}
    assert definitions["mcp__demo__echo"]["defer_loading"] is True
    assert "defer_loading" not in definitions["ToolSearch"]


async def test_an_agent_naming_an_unloaded_skill_fails_at_startup(project: Path) -> None:
    from agents import query
    from agents.testing import ScriptedBackend

    options = AgentOptions(
        backend=ScriptedBackend([]),
        cwd=project,
        agents={"a": AgentDefinition(description="d", prompt="p", skills=["x"])},
    )
    with pytest.raises(
        ValueError, match=r"^agents\['a'\]\.skills: unknown skill 'x' \(loaded: none"
    ):
        async for _ in query(prompt="hi", options=options):
            pass


async def test_a_subagent_keeps_the_parents_deferral(project: Path) -> None:
    options = AgentOptions(mcp_servers={"demo": stdio_server_config()})
    parent, child = ToolRegistry(), ToolRegistry()
    with trio.fail_after(60):
        async with open_session_sources(options, str(project)) as sources:
            sources.add_tools(parent, main_servers=["demo"], tool_search="on")
            for name in parent.names():
                tool = parent.get(name)
                assert tool is not None
                child.add(tool)
            sources.for_child(AgentDefinition(description="d", prompt="p"), child)
    assert child.definitions() == parent.definitions()
