"""Benchmark: the shared ledger and the workers on real PostgreSQL and Redis servers.

Starts its own throw-away servers on 127.0.0.1 (``agents.testing.servers``) and prints one JSON
line per measurement, each with the control it should be read against::

    {"bench": "scaleout", "what": "ledger_pairs", "processes": 4, "trees": 1,
     "pairs_per_s": 2100.0, "control_in_process_pairs_per_s": 1400000.0}
    {"bench": "scaleout", "what": "sessions", "workers": 2, "sessions": 40,
     "sessions_per_s": 31.0, "control_one_process_per_s": 95.0}

``ledger_pairs``: reserve+settle pairs per second on one tree from 1 and 4 processes (every
reservation of a tree takes that tree's row lock, so one tree is bounded by one row's update rate)
and from 4 processes on 4 trees (trees do not contend: the sharding unit). ``sessions``: one-turn
scripted agents per second through 1, 2 and 4 worker processes, against the same sessions run by
``query()`` in this process on the same PostgreSQL store. ``--quick`` shrinks everything.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.scaleout import open_postgres_ledger  # noqa: E402
from agents.scaleout.queue import SpawnRequest, open_spawn_queue  # noqa: E402
from agents.testing import ScriptedBackend, Step, text, usage  # noqa: E402
from agents.testing.servers import postgres_server, redis_server  # noqa: E402
from runtime import Ledger  # noqa: E402


def backend(request: SpawnRequest) -> ScriptedBackend:
    """The workers' backend: one immediate answer per agent."""
    return ScriptedBackend({"main": [Step([text("ok")], usage=usage(100, 10))]})


def control_in_process_pairs(seconds: float) -> float:
    ledger = Ledger(cap=1e6)
    n = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(1000):
            ledger.settle(ledger.reserve("a", 0.001), 0.0005)
        n += 1000
    return n / seconds


async def child_pairs(dsn: str, tree: str, seconds: float) -> None:
    """One process's reserve+settle loop; prints how many pairs it completed."""
    async with open_postgres_ledger(dsn, tree, max_connections=1) as ledger:
        n = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            reservation = await ledger.try_reserve("a", 0.001)
            assert reservation is not None
            await ledger.settle(reservation, 0.0005)
            n += 1
    print(n, flush=True)


def ledger_pairs(dsn: str, processes: int, trees: int, seconds: float) -> float:
    names = [f"bench-{uuid.uuid4().hex}" for _ in range(trees)]

    async def create() -> None:
        for name in names:
            async with open_postgres_ledger(dsn, name, cap=1e6):
                pass

    trio.run(create)
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--child-pairs", dsn, names[i % trees], str(seconds)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(processes)
    ]
    total = 0
    for proc in procs:
        out, _ = proc.communicate(timeout=seconds + 60)
        total += int(out.strip())
    return total / seconds


async def sessions_in_process(dsn: str, n: int, cwd: str) -> float:
    from agents import AgentOptions, query
    from agents.sessions.postgres import PostgresSessionStore

    async with PostgresSessionStore(dsn) as store:
        start = time.perf_counter()
        for _ in range(n):
            options = AgentOptions(
                cwd=cwd, tools=[], session_store=store, backend=backend(_request("x", cwd))
            )
            async for _message in query(prompt="task", options=options):
                pass
        return n / (time.perf_counter() - start)


def _request(tree: str, cwd: str) -> SpawnRequest:
    return SpawnRequest(
        job_id=uuid.uuid4().hex,
        tree_id=tree,
        session_id=str(uuid.uuid4()),
        prompt="task",
        cwd=cwd,
        tools=[],
        budget_usd=1.0,
        backend="benchmarks.bench_scaleout:backend",
    )


def sessions_through_workers(redis_url: str, dsn: str, workers: int, n: int, cwd: str) -> float:
    prefix = f"bench-{uuid.uuid4().hex}"
    tree = f"bench-{uuid.uuid4().hex}"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agents.scaleout.worker",
                "--redis",
                redis_url,
                "--postgres",
                dsn,
                "--name",
                f"w{i}",
                "--prefix",
                prefix,
                "--concurrency",
                "4",
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(workers)
    ]

    async def run() -> float:
        async with (
            open_postgres_ledger(dsn, tree, cap=1e6),
            open_spawn_queue(redis_url, prefix=prefix) as queue,
        ):
            warm = _request(tree, cwd)  # every worker has started when one job per worker is done
            for _ in range(workers):
                warm = _request(tree, cwd)
                await queue.submit(warm)
                await queue.result(warm.job_id)
            requests = [_request(tree, cwd) for _ in range(n)]
            start = time.perf_counter()
            for request in requests:
                await queue.submit(request)
            for request in requests:
                result = await queue.result(request.job_id)
                assert result.status == "completed", result
            return n / (time.perf_counter() - start)

    try:
        return trio.run(run)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for the smoke test")
    parser.add_argument("--child-pairs", nargs=3, metavar=("DSN", "TREE", "SECONDS"))
    args = parser.parse_args()
    if args.child_pairs:
        dsn, tree, seconds = args.child_pairs
        trio.run(child_pairs, dsn, tree, float(seconds))
        return
    seconds = 0.3 if args.quick else 3.0
    sessions = 2 if args.quick else 40
    control = control_in_process_pairs(0.2)
    cwd = os.path.realpath(os.environ.get("TMPDIR", "/tmp"))
    with postgres_server() as dsn, redis_server() as redis_url:
        for processes, trees in ((1, 1), (4, 1), (4, 4)):
            rate = ledger_pairs(dsn, processes, trees, seconds)
            row = {
                "bench": "scaleout",
                "what": "ledger_pairs",
                "processes": processes,
                "trees": trees,
                "pairs_per_s": round(rate, 1),
                "control_in_process_pairs_per_s": round(control, 1),
            }
            print(json.dumps(row), flush=True)
        one_process = trio.run(sessions_in_process, dsn, sessions, cwd)
        for workers in (1,) if args.quick else (1, 2, 4):
            rate = sessions_through_workers(redis_url, dsn, workers, sessions, cwd)
            row = {
                "bench": "scaleout",
                "what": "sessions",
                "workers": workers,
                "sessions": sessions,
                "sessions_per_s": round(rate, 2),
                "control_one_process_per_s": round(one_process, 2),
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
