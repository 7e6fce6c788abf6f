"""A project directory with .claude/settings.json, a skill, a command and a shell hook, used by
query() with setting_sources=["project"]: each file does what it says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents import (
    AgentClient,
    AgentDefinition,
    AgentOptions,
    ResultMessage,
    SystemMessage,
    ToolResultBlock,
    UserMessage,
)
from agents.backends.base import ModelRequest
from agents.testing import ScriptedBackend, Step, text, tool_use
from tests.agents.helpers import collect


@pytest.fixture
def configured(project: Path) -> Path:
    claude = project / ".claude"
    (claude / "skills" / "release").mkdir(parents=True)
    (claude / "skills" / "release" / "SKILL.md").write_text(
        "---\nname: release\ndescription: Cut a release of this project\n---\n"
        "Bump the version in VERSION, then tag it.\n"
    )
    (claude / "commands").mkdir()
    (claude / "commands" / "greet.md").write_text(
        "---\ndescription: Greet someone\n---\nSay hello to $ARGUMENTS.\n"
    )
    (claude / "hooks").mkdir()
    guard = claude / "hooks" / "guard.sh"
    guard.write_text(
        "#!/bin/sh\n"
        "input=$(cat)\n"
        'case "$input" in *forbidden*)\n'
        '  echo "forbidden words are not allowed here" >&2; exit 2;;\n'
        "esac\n"
        "exit 0\n"
    )
    guard.chmod(0o755)
    settings = {
        "permissions": {
            "allow": ["Bash(echo *)"],
            "deny": ["Write"],
            "ask": ["Bash(echo secret*)"],
            "defaultMode": "acceptEdits",
        },
        "env": {"PROJECT_COLOUR": "teal"},
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {"type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.sh"}
                    ],
                }
            ],
            "Stop": [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": 'echo "$PROJECT_COLOUR" > "$CLAUDE_PROJECT_DIR/colour"',
                        }
                    ]
                }
            ],
        },
    }
    (claude / "settings.json").write_text(json.dumps(settings))
    return project


def results(messages: list[Any]) -> list[ToolResultBlock]:
    return [
        b
        for m in messages
        if isinstance(m, UserMessage)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]


def result_text(block: ToolResultBlock) -> str:
    content = block.content
    if isinstance(content, str):
        return content
    return "".join(item.get("text", "") for item in content or [])


def _greeting(configured: Path) -> tuple[list[ModelRequest], AgentOptions]:
    """Options reading the project's files, and the requests their model is sent."""
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> Step:
        seen.append(request)
        return Step([text("Hello, Ada!")])

    backend = ScriptedBackend(respond)
    return seen, AgentOptions(backend=backend, cwd=configured, setting_sources=["project"])


async def test_a_command_prompt_is_sent_as_the_command_files_text(configured: Path) -> None:
    seen, options = _greeting(configured)
    await collect("/greet Ada", options)
    first = seen[0].messages[0]["content"]
    assert "Say hello to Ada." in json.dumps(first)


async def test_a_command_sent_to_a_client_is_sent_as_the_command_files_text(
    configured: Path,
) -> None:
    """``AgentClient.query("/greet Ada")`` expands the command as ``query()`` does; the second
    prompt, plain text, goes as it is."""
    seen, options = _greeting(configured)
    async with AgentClient(options) as client:
        for prompt in ("/greet Ada", "and again"):
            await client.query(prompt)
            async for _ in client.receive_response():
                pass
    assert "Say hello to Ada." in json.dumps(seen[0].messages[0]["content"])
    assert "and again" in json.dumps(seen[1].messages[-1]["content"])
    assert "/greet" not in json.dumps(seen[1].messages)


async def test_the_skill_is_described_in_the_system_prompt_and_loaded_by_the_skill_tool(
    configured: Path,
) -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> Step:
        seen.append(request)
        if len(request.messages) == 1:
            return Step([tool_use("Skill", {"skill": "release"})])
        return Step([text("done")])

    backend = ScriptedBackend(respond)
    options = AgentOptions(
        backend=backend, cwd=configured, setting_sources=["project"], allowed_tools=["Skill"]
    )
    messages, _ = await collect("cut a release", options)
    system = json.dumps(seen[0].system)
    assert "release: Cut a release of this project" in system
    assert "Bump the version" not in system
    (loaded,) = results(messages)
    assert "Bump the version in VERSION, then tag it." in result_text(loaded)


async def test_settings_allow_and_deny_rules_apply(configured: Path) -> None:
    backend = ScriptedBackend(
        [
            Step(
                [
                    tool_use("Bash", {"command": "echo allowed"}),
                    tool_use("Write", {"file_path": str(configured / "x"), "content": "x"}),
                ]
            ),
            Step([text("done")]),
        ]
    )
    options = AgentOptions(backend=backend, cwd=configured, setting_sources=["project"])
    messages, _ = await collect("go", options)
    bash, write = results(messages)
    assert not bash.is_error and "allowed" in result_text(bash)
    assert write.is_error
    assert not (configured / "x").exists()


async def test_the_shell_hook_blocks_with_exit_2_and_its_stderr(configured: Path) -> None:
    backend = ScriptedBackend(
        [Step([tool_use("Bash", {"command": "echo forbidden"})]), Step([text("ok")])]
    )
    options = AgentOptions(backend=backend, cwd=configured, setting_sources=["project"])
    messages, _ = await collect("go", options)
    (blocked,) = results(messages)
    assert blocked.is_error
    assert "forbidden words are not allowed here" in result_text(blocked)
    denials = [m for m in messages if isinstance(m, ResultMessage)][-1].permission_denials
    assert denials and denials[0]["tool_name"] == "Bash"


async def test_without_the_project_source_the_files_are_ignored(configured: Path) -> None:
    backend = ScriptedBackend(
        [Step([tool_use("Skill", {"skill": "release"})]), Step([text("done")])]
    )
    options = AgentOptions(backend=backend, cwd=configured, allowed_tools=["Skill"])
    messages, _ = await collect("go", options)
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert "Skill" not in init.data["tools"]
    (missing,) = results(messages)
    assert missing.is_error


async def test_a_subagent_with_skills_gets_only_those(configured: Path) -> None:
    other = configured / ".claude" / "skills" / "lint" / "SKILL.md"
    other.parent.mkdir()
    other.write_text("---\ndescription: Lint the code\n---\nRun ruff.\n")
    child_tools: list[dict[str, Any]] = []

    def respond(request: ModelRequest) -> Step:
        if request.agent_type == "main":
            if len(request.messages) == 1:
                spawn = {
                    "description": "d",
                    "prompt": "p",
                    "subagent_type": "linter",
                    "run_in_background": False,
                }
                return Step([tool_use("Agent", spawn)])
            return Step([text("main done")])
        if len(request.messages) == 1:
            child_tools.extend(request.tools)
            return Step([tool_use("Skill", {"skill": "release"})])
        return Step([text("child done")])

    options = AgentOptions(
        backend=ScriptedBackend(respond),
        cwd=configured,
        setting_sources=["project"],
        allowed_tools=["Skill", "Agent"],
        agents={"linter": AgentDefinition(description="l", prompt="p", skills=["lint"])},
    )
    messages, error = await collect("go", options)
    assert error is None
    skill = next(t for t in child_tools if t["name"] == "Skill")
    assert "lint" in skill["description"] and "release" not in skill["description"]
    child_results = [
        b
        for m in messages
        if isinstance(m, UserMessage) and m.parent_tool_use_id is not None
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert [result_text(b) for b in child_results] == ["unknown skill 'release' (available: lint)"]


async def test_an_ask_rule_beats_the_allow_rule_without_a_callback(configured: Path) -> None:
    backend = ScriptedBackend(
        [Step([tool_use("Bash", {"command": "echo secret plans"})]), Step([text("ok")])]
    )
    options = AgentOptions(backend=backend, cwd=configured, setting_sources=["project"])
    messages, _ = await collect("go", options)
    (asked,) = results(messages)
    assert asked.is_error and "secret plans" not in result_text(asked)


async def test_the_default_mode_of_the_settings_applies(configured: Path) -> None:
    target = configured / "notes.txt"
    target.write_text("old text\n")
    edit = {"file_path": str(target), "old_string": "old", "new_string": "new"}
    read = {"file_path": str(target)}
    backend = ScriptedBackend(
        [Step([tool_use("Read", read)]), Step([tool_use("Edit", edit)]), Step([text("ok")])]
    )
    options = AgentOptions(backend=backend, cwd=configured, setting_sources=["project"])
    messages, _ = await collect("go", options)
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert init.data["permission_mode"] == "acceptEdits"
    assert target.read_text() == "new text\n"


async def test_the_settings_env_reaches_the_hooks(configured: Path) -> None:
    options = AgentOptions(
        backend=ScriptedBackend([Step([text("ok")])]), cwd=configured, setting_sources=["project"]
    )
    await collect("go", options)
    assert (configured / "colour").read_text() == "teal\n"
