"""The session's variables reach its shells: ``AgentOptions.env`` over the settings files'
``env``, over the process's own, in the persistent shell and in background shells alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents import AgentOptions
from agents.testing import ScriptedBackend, Step, text, tool_use

from .helpers import collect, result_of


def outputs(backend: ScriptedBackend) -> list[str]:
    """The text of each tool result the model was sent, in order."""
    found = []
    for request in backend.requests:
        content = request.messages[-1]["content"]
        if isinstance(content, list):
            found += [b["content"] for b in content if b.get("type") == "tool_result"]
    return [c if isinstance(c, str) else "".join(i["text"] for i in c) for c in found]


async def run_bash(tmp_path: Path, calls: list[dict[str, Any]], **options: Any) -> list[str]:
    steps = [Step([tool_use(name, args, id=f"c{i}")]) for i, (name, args) in enumerate(calls)]
    backend = ScriptedBackend([*steps, Step([text("done")])])
    messages, _ = await collect(
        "go",
        AgentOptions(
            cwd=str(tmp_path), backend=backend, permission_mode="bypassPermissions", **options
        ),
    )
    assert result_of(messages).subtype == "success"
    return outputs(backend)


async def test_the_options_env_reaches_the_persistent_shell(tmp_path: Path) -> None:
    calls = [("Bash", {"command": 'echo "$TRIO_AGENTS_X/$PAGER"'})]
    assert await run_bash(tmp_path, calls, env={"TRIO_AGENTS_X": "seen", "PAGER": "less"}) == [
        "seen/less"  # the user's value wins over the tools' own defaults
    ]


async def test_the_options_env_reaches_a_background_shell(tmp_path: Path) -> None:
    calls = [
        ("Bash", {"command": 'echo "bg:$TRIO_AGENTS_X" > out', "run_in_background": True}),
        # a real process: poll for its file, with a deadline
        ("Bash", {"command": "for i in $(seq 500); do [ -s out ] && break; sleep 0.01; done"}),
        ("Bash", {"command": "cat out"}),
    ]
    out = await run_bash(tmp_path, calls, env={"TRIO_AGENTS_X": "seen"})
    assert out[2] == "bg:seen", out


async def test_the_options_env_wins_over_the_settings_files(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    settings = {"env": {"TRIO_AGENTS_X": "file", "TRIO_AGENTS_Y": "file"}}
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings))
    calls = [("Bash", {"command": 'echo "$TRIO_AGENTS_X $TRIO_AGENTS_Y"'})]
    out = await run_bash(
        tmp_path, calls, env={"TRIO_AGENTS_X": "option"}, setting_sources=["project"]
    )
    assert out == ["option file"]
