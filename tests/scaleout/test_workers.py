"""Worker processes take agents of one tree from Redis Streams under the shared ledger."""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
import trio

from agents.messages import ToolResultBlock, UserMessage
from agents.scaleout import open_postgres_ledger
from agents.scaleout.queue import SpawnQueue, SpawnRequest, SpawnResult, open_spawn_queue
from agents.sessions import SessionKey, project_key_for
from agents.sessions.postgres import PostgresSessionStore

ROOT = Path(__file__).resolve().parents[2]
BACKEND = "tests.scaleout.backends:scripted"


@pytest.fixture
async def queue(redis_url: str) -> AsyncIterator[SpawnQueue]:
    async with open_spawn_queue(redis_url, prefix=f"t-{uuid.uuid4().hex}") as q:
        yield q


async def _start_worker(
    redis_url: str, dsn: str, queue: SpawnQueue, name: str, role: str, lease_s: float = 1.0
) -> trio.Process:
    """A worker process; a short lease lets the kill tests reclaim quickly, a longer one keeps a
    live but slow worker's job (this host can be very loaded) from being reclaimed meanwhile."""
    env = {**os.environ, "TEST_WORKER_ROLE": role}
    return await trio.lowlevel.open_process(
        [
            sys.executable,
            "-m",
            "agents.scaleout.worker",
            "--redis",
            redis_url,
            "--postgres",
            dsn,
            "--name",
            name,
            "--lease",
            str(lease_s),
            "--prefix",
            queue.prefix,
        ],
        cwd=ROOT,
        env=env,
    )


async def _stop(proc: trio.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGKILL)
    await proc.wait()


async def _result_of(queue: SpawnQueue, job_id: str, workers: list[trio.Process]) -> SpawnResult:
    """The job's result; fails at once if every worker has died (instead of waiting forever)."""
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            while any(proc.returncode is None for proc in workers):
                await trio.sleep(0.1)
            raise AssertionError(f"all workers exited: {[p.returncode for p in workers]}")

        nursery.start_soon(watch)
        result = await queue.result(job_id)
        nursery.cancel_scope.cancel()
    return result


def _request(tree: str, prompt: str, cwd: Path) -> SpawnRequest:
    return SpawnRequest(
        job_id=uuid.uuid4().hex,
        tree_id=tree,
        session_id=str(uuid.uuid4()),
        prompt=prompt,
        cwd=str(cwd),
        tools=["Glob"],
        permission_mode="bypassPermissions",
        budget_usd=2.0,
        backend=BACKEND,
    )


async def test_jobs_of_one_tree_run_on_two_workers_within_the_cap(
    redis_url: str, postgres_dsn: str, queue: SpawnQueue, tmp_path: Path
) -> None:
    """Every job completes once, on one of the workers, and the tree's total stays in its cap."""
    tree = f"tree-{uuid.uuid4().hex}"
    async with open_postgres_ledger(postgres_dsn, tree, cap=50.0) as ledger:
        workers = [
            await _start_worker(redis_url, postgres_dsn, queue, f"w{i}", "second", lease_s=10)
            for i in range(2)
        ]
        try:
            requests = [_request(tree, f"task {i}", tmp_path) for i in range(6)]
            for request in requests:
                await queue.submit(request)
            with trio.fail_after(90):
                results = [await _result_of(queue, r.job_id, workers) for r in requests]
        finally:
            for proc in workers:
                await _stop(proc)
        stats = await ledger.statistics()
    assert [(r.status, r.result) for r in results] == [
        ("completed", f"done: task {i}") for i in range(6)
    ]
    assert {r.worker for r in results} <= {"w0", "w1"}
    assert stats.reserved == 0
    assert 0 < stats.total <= 50.0
    assert stats.total == pytest.approx(sum(r.total_cost_usd for r in results))


async def test_a_failing_job_is_a_failed_result_and_the_worker_goes_on(
    redis_url: str, postgres_dsn: str, queue: SpawnQueue, tmp_path: Path
) -> None:
    """A job that raises is published as ``failed`` naming the error; the next job still runs."""
    tree = f"tree-{uuid.uuid4().hex}"
    bad = msgspec.structs.replace(
        _request(tree, "bad task", tmp_path), backend="tests.scaleout.backends:broken"
    )
    good = _request(tree, "good task", tmp_path)
    worker = await _start_worker(redis_url, postgres_dsn, queue, "w", "second", lease_s=10)
    try:
        await queue.submit(bad)
        await queue.submit(good)
        with trio.fail_after(60):
            failed = await _result_of(queue, bad.job_id, [worker])
            done = await _result_of(queue, good.job_id, [worker])
    finally:
        await _stop(worker)
    assert (failed.status, failed.errors) == (
        "failed",
        ["worker error: no backend for bad task"],
    )
    assert (done.status, done.result) == ("completed", "done: good task")


async def test_a_killed_workers_job_is_resumed_elsewhere_not_restarted(
    redis_url: str, postgres_dsn: str, queue: SpawnQueue, tmp_path: Path
) -> None:
    """kill -9 mid-response: another worker reclaims the job after the lease and resumes it."""
    tree = f"tree-{uuid.uuid4().hex}"
    request = _request(tree, "slow task", tmp_path)
    key = SessionKey(project_key_for(tmp_path), request.session_id)
    async with (
        open_postgres_ledger(postgres_dsn, tree, cap=50.0) as ledger,
        PostgresSessionStore(postgres_dsn) as store,
    ):
        first = await _start_worker(redis_url, postgres_dsn, queue, "first", "first")
        try:
            await queue.submit(request)
            deadline = time.monotonic() + 60
            while not any(
                isinstance(e.message, UserMessage)
                and isinstance(e.message.content, list)
                and any(isinstance(b, ToolResultBlock) for b in e.message.content)
                for e in await store.load(key) or []
            ):
                assert time.monotonic() < deadline, "the first turn never reached the transcript"
                await trio.sleep(0.05)
        finally:
            await _stop(first)  # SIGKILL while the second response is in flight
        second = await _start_worker(redis_url, postgres_dsn, queue, "second", "second")
        try:
            with trio.fail_after(60):
                result = await _result_of(queue, request.job_id, [second])
        finally:
            await _stop(second)
        entries = await store.load(key) or []
        stats = await ledger.statistics()
    prompts = [
        e.message.content
        for e in entries
        if isinstance(e.message, UserMessage) and isinstance(e.message.content, str)
    ]
    assert (result.status, result.worker, result.resumed) == ("completed", "second", True)
    assert prompts.count("slow task") == 1  # never started again from the beginning
    assert stats.reserved == 0
    assert stats.total <= 50.0


async def test_a_subagent_spawned_here_runs_on_a_worker_and_answers_its_parent(
    redis_url: str, postgres_dsn: str, queue: SpawnQueue, tmp_path: Path
) -> None:
    """An Agent call of a remote type runs on a worker; its final text is the call's result."""
    from agents import (
        AgentDefinition,
        AgentOptions,
        ResultMessage,
        ToolResultBlock,
        UserMessage,
        query,
    )
    from agents.scaleout import SpawnQueueAgents
    from agents.testing import ScriptedBackend, Step, text, tool_use

    tree = f"tree-{uuid.uuid4().hex}"
    spawn = tool_use(
        "Agent", {"description": "look", "prompt": "map the repo", "subagent_type": "researcher"}
    )
    options = AgentOptions(
        cwd=str(tmp_path),
        agents={"researcher": AgentDefinition(description="Maps code", prompt="You map code.")},
        remote_agents=SpawnQueueAgents(
            queue, tree, {"researcher"}, budget_usd=2.0, backend=BACKEND
        ),
        backend=ScriptedBackend({"main": [Step([spawn]), Step([text("all mapped")])]}),
    )
    async with open_postgres_ledger(postgres_dsn, tree, cap=10.0) as ledger:
        worker = await _start_worker(redis_url, postgres_dsn, queue, "remote", "second")
        try:
            with trio.fail_after(90):
                messages = [m async for m in query(prompt="go", options=options)]
        finally:
            await _stop(worker)
        stats = await ledger.statistics()
    results = [
        block
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for block in m.content
        if isinstance(block, ToolResultBlock)
    ]
    assert [(r.is_error, r.content) for r in results] == [
        (None, [{"type": "text", "text": "done: map the repo"}])
    ]
    assert [m.result for m in messages if isinstance(m, ResultMessage)] == ["all mapped"]
    assert 0 < stats.total <= 10.0 and stats.reserved == 0


async def test_a_remote_agent_type_refuses_background_runs(tmp_path: Path) -> None:
    """Remote agents run in the foreground of the call: a background spawn is an error result."""
    from agents import AgentDefinition, AgentOptions, ToolResultBlock, UserMessage, query
    from agents.remote import RemoteOutcome, RemoteTask
    from agents.testing import ScriptedBackend, Step, text, tool_use

    class Echo:
        def runs(self, agent_type: str) -> bool:
            return agent_type == "echo"

        async def run(self, task: RemoteTask) -> RemoteOutcome:
            return RemoteOutcome(status="completed", text=task.prompt, agent_id="echo-1")

    calls = [
        tool_use("Agent", {"description": "a", "prompt": "hi", "subagent_type": "echo"}),
        tool_use(
            "Agent",
            {
                "description": "b",
                "prompt": "hi",
                "subagent_type": "echo",
                "run_in_background": True,
            },
        ),
    ]
    options = AgentOptions(
        cwd=str(tmp_path),
        agents={"echo": AgentDefinition(description="Echoes", prompt="Echo.")},
        remote_agents=Echo(),
        backend=ScriptedBackend({"main": [Step(calls), Step([text("ok")])]}),
    )
    messages = [m async for m in query(prompt="go", options=options)]
    results = [
        (block.is_error, block.content)
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for block in m.content
        if isinstance(block, ToolResultBlock)
    ]
    assert results == [
        (None, [{"type": "text", "text": "hi"}]),
        (
            True,
            "agent type 'echo' runs on another host, in the foreground only; call it without "
            "run_in_background",
        ),
    ]
