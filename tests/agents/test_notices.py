"""A background agent's notices (``task_progress``, ``task_notification``) never wait for the
stream's reader: a reader that stops reading holds no agent, and loses no notice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from agents import AgentDefinition, AgentOptions, SystemMessage, query
from agents._assembly import query as query_module
from agents.backends.base import ModelRequest
from agents.testing import ScriptedBackend, Step, text, tool_use

CHILDREN = 6


def _spawn(i: int) -> dict[str, Any]:
    return {"description": f"job {i}", "prompt": "go", "subagent_type": "leaf",
            "run_in_background": True}  # fmt: skip


def _backend(heard: list[float]) -> ScriptedBackend:
    def respond(request: ModelRequest) -> Step:
        if request.agent_type == "main" and len(request.messages) == 1:
            return Step([tool_use("Agent", _spawn(i)) for i in range(CHILDREN)])
        if request.agent_type == "main" and "<task-notification>" in str(request.messages[-1]):
            heard.append(trio.current_time())  # a notification turn: when the spawner heard
        return Step([text("done")])

    return ScriptedBackend(respond)


async def test_a_stalled_reader_holds_no_background_agent_and_loses_no_notice(
    project: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader stops for 100 s after the first message; the stream's buffer has room for
    what the spawner sends (its calls, their results, the ``task_started``), not for the
    children's notices: the children still end and their spawner hears of them at once, and
    once the reader reads again every child's ``task_started`` and ``task_notification``
    come, in that order, without the ``task_progress`` that was still waiting in line when
    the child ended (its end says more)."""
    monkeypatch.setattr(query_module, "OUTPUT_BUFFER", 3 * CHILDREN + 2)
    heard: list[float] = []
    options = AgentOptions(
        cwd=str(project),
        backend=_backend(heard),
        agents={"leaf": AgentDefinition(description="l", prompt="l", tools=[])},
        tools=["Agent"],
        permission_mode="bypassPermissions",
    )
    messages: list[Any] = []
    start = trio.current_time()
    async for message in query(prompt="go", options=options):
        if not messages:
            await trio.sleep(100)  # the reader stalls
        messages.append(message)
    assert heard and heard[0] - start < 1  # children ended while the reader was away
    notices: dict[str, list[str]] = {}
    for m in messages:
        if isinstance(m, SystemMessage) and m.subtype.startswith("task_"):
            notices.setdefault(m.data["task_id"], []).append(m.subtype)
    assert len(notices) == CHILDREN
    for kinds in notices.values():
        assert kinds == ["task_started", "task_notification"]
