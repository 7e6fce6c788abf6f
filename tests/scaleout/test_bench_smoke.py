"""benchmarks/bench_scaleout.py keeps working: a --quick run prints each figure with its control."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import trio

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_scaleout.py"


async def test_bench_scaleout_quick(postgres_dsn: str, redis_url: str) -> None:
    """The ledger and worker figures come out as JSON lines, each with a positive control."""
    # the fixtures only prove the servers can be started here; the script starts its own
    done = await trio.run_process([sys.executable, str(BENCH), "--quick"], capture_stdout=True)
    rows = [json.loads(line) for line in done.stdout.decode().splitlines()]
    ledger = [r for r in rows if r["what"] == "ledger_pairs"]
    sessions = [r for r in rows if r["what"] == "sessions"]
    assert [(r["processes"], r["trees"]) for r in ledger] == [(1, 1), (4, 1), (4, 4)]
    assert all(r["pairs_per_s"] > 0 and r["control_in_process_pairs_per_s"] > 0 for r in ledger)
    assert [r["workers"] for r in sessions] == [1]
    assert all(r["sessions_per_s"] > 0 and r["control_one_process_per_s"] > 0 for r in sessions)
