"""Cancellation: nothing outlives a query or a client, and cancelling an agent cancels its
subtree."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import trio
import trio.testing

from agents import AgentClient, AgentOptions, AssistantMessage, ResultMessage, query
from agents.testing import ScriptedBackend, Step, text, tool_use

from .helpers import timed_tools


def live_tasks() -> int:
    """Every task of this Trio run, system tasks included."""

    def count(task: trio.lowlevel.Task) -> int:
        return 1 + sum(count(t) for n in task.child_nurseries for t in n.child_tasks)

    return count(trio.lowlevel.current_root_task())


def slow_options(project: Path, log: list[tuple[str, str, float]]) -> AgentOptions:
    backend = ScriptedBackend(
        [Step([tool_use("mcp__t__look", {"key": "slow"})]), Step([text("never")])]
    )
    return AgentOptions(
        cwd=str(project),
        backend=backend,
        tools=[],
        mcp_servers={"t": timed_tools(log, {"slow": 100})},
    )


async def test_cancelling_a_query_mid_tool_leaves_no_task(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A query cancelled while its tool sleeps ends the tool and every session task."""
    before = live_tasks()
    log: list[tuple[str, str, float]] = []
    with trio.move_on_after(5) as scope:
        async for _ in query(prompt="go", options=slow_options(project, log)):
            pass
    assert scope.cancelled_caught
    assert [e for _, e, _ in log] == ["start"]  # the tool started and never finished
    assert live_tasks() == before


async def test_breaking_out_of_a_query_early_leaves_no_task(project: Path) -> None:
    """Abandoning the iterator after the first message still tears the session down."""
    before = live_tasks()
    log: list[tuple[str, str, float]] = []
    stream = query(prompt="go", options=slow_options(project, log))
    async for _ in stream:
        break
    await stream.aclose()
    assert live_tasks() == before


@pytest.mark.filterwarnings("ignore:Async generator 'agents._assembly.query.query':ResourceWarning")
async def test_a_dropped_query_generator_is_cleaned_up(project: Path) -> None:
    """A generator dropped without aclose() is finalized by Trio and leaves no task behind."""
    before = live_tasks()
    log: list[tuple[str, str, float]] = []

    async def consume_one() -> None:
        async for _ in query(prompt="go", options=slow_options(project, log)):
            break

    await consume_one()
    gc.collect()
    for _ in range(20):
        await trio.testing.wait_all_tasks_blocked()
        if live_tasks() == before:
            break
        await trio.sleep(0.01)
    assert live_tasks() == before


async def test_client_interrupt_cancels_the_tool_and_the_next_prompt_runs(project: Path) -> None:
    """interrupt() mid-tool: the tool is cancelled, the result says aborted, M2 runs."""
    log: list[tuple[str, str, float]] = []
    backend = ScriptedBackend(
        [Step([tool_use("mcp__t__look", {"key": "slow"})]), Step([text("second answer")])]
    )
    options = AgentOptions(
        cwd=str(project),
        backend=backend,
        tools=[],
        mcp_servers={"t": timed_tools(log, {"slow": 100})},
    )
    results: list[ResultMessage] = []
    with trio.fail_after(10):
        async with AgentClient(options) as client:
            await client.query("M1")
            await client.query("M2")
            async for message in client.receive_messages():
                if isinstance(message, AssistantMessage):
                    await trio.testing.wait_all_tasks_blocked()
                    assert log == [("slow", "start", log[0][2])]
                    await client.interrupt()
                if isinstance(message, ResultMessage):
                    results.append(message)
                    if len(results) == 2:
                        break
    assert results[0].subtype == "error_during_execution"
    assert results[0].terminal_reason == "aborted_tools"
    assert results[1].subtype == "success" and results[1].result == "second answer"
    # M2 saw M1's history, with the interrupted call answered
    sent = backend.requests[1].messages
    assert sent[0] == {"role": "user", "content": "M1"}
    assert sent[2]["content"][0]["is_error"] is True
    assert sent[-1] == {"role": "user", "content": "M2"}
    assert client.statistics().live_actors == 0
    assert [e for _, e, _ in log] == ["start"]
