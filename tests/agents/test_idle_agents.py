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


async def test_an_agent_spawned_from_code_without_the_agent_tool_runs_as_a_leaf(
    project: Path,
) -> None:
    """It can spawn nothing, so it runs without a nursery for children (memory per agent);
    one with the Agent tool keeps its nursery and can still spawn."""
    options = AgentOptions(
        cwd=str(project),
        backend=ScriptedBackend(lambda request: Step([text("ok")])),
        agents={
            "idle": AgentDefinition(description="i", prompt="i", tools=[]),
            "boss": AgentDefinition(description="b", prompt="b", tools=["Agent"]),
        },
        tools=[],
    )
    async with AgentClient(options) as client:
        idle = await client.spawn("idle")
        boss = await client.spawn("boss")
        idle_actor, boss_actor = idle.loop.links.actor, boss.loop.links.actor
        assert idle_actor is not None and boss_actor is not None
        assert idle_actor.leaf
        assert not boss_actor.leaf
        assert (await idle.ask("hi")).result == "ok"


def _live_memory_channels() -> int:
    gc.collect()
    kinds = (trio.MemorySendChannel, trio.MemoryReceiveChannel)
    return sum(1 for obj in gc.get_objects() if isinstance(obj, kinds))


async def test_idle_agents_hold_no_memory_channel(project: Path) -> None:
    """An agent's mailbox and its handle's results are lighter than a Trio memory channel
    (over a kilobyte each before anything is sent): spawning idle agents makes none."""
    options = AgentOptions(
        cwd=str(project),
        backend=ScriptedBackend(lambda request: Step([text("ok")])),
        agents={"idle": AgentDefinition(description="i", prompt="i", tools=[])},
        tools=[],
    )
    async with AgentClient(options) as client:
        await trio.testing.wait_all_tasks_blocked()
        before = _live_memory_channels()
        handles = [await client.spawn("idle") for _ in range(5)]
        await trio.testing.wait_all_tasks_blocked()
        assert _live_memory_channels() == before
        assert [(await handle.ask("hi")).result for handle in handles] == ["ok"] * 5
