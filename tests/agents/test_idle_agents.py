"""Idle agents hold nothing beyond their state while they wait (their memory is per agent)."""

from __future__ import annotations

import gc
from pathlib import Path

import trio
import trio.testing

from agents import AgentClient, AgentDefinition, AgentOptions
from agents.testing import ScriptedBackend, Step, text


def _live_would_blocks() -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if isinstance(obj, trio.WouldBlock))


async def test_idle_agents_keep_no_exception_alive_while_waiting(project: Path) -> None:
    options = AgentOptions(
        cwd=str(project),
        backend=ScriptedBackend(lambda request: Step([text("ok")])),
        agents={"idle": AgentDefinition(description="i", prompt="i", tools=[])},
        tools=[],
    )
    async with AgentClient(options) as client:
        before = _live_would_blocks()
        for _ in range(5):
            await client.spawn("idle")
        await trio.testing.wait_all_tasks_blocked()
        assert _live_would_blocks() == before
