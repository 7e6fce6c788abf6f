"""The sessions benchmark still runs and prints one JSON line per measurement."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import trio

_BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_sessions.py"


async def test_bench_sessions_quick() -> None:
    """``bench_sessions.py --quick`` measures append, record and load for both stores."""
    done = await trio.run_process([sys.executable, str(_BENCH), "--quick"], capture_stdout=True)
    rows = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert {(r["store"], r["op"]) for r in rows} == {
        (store, op)
        for store in ("memory", "file")
        for op in ("append", "append_batch_100", "record", "load")
    }
    assert all(r["entries"] == 2000 and r["entries_per_s"] > 0 for r in rows)
