"""benchmarks/bench_tree.py and bench_loop.py keep working: a --quick run prints each figure
with its control."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _rows(script: str) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_bench_tree_quick_prints_the_tree_beside_bare_trio() -> None:
    rows = _rows("bench_tree.py")
    names = [row["bench"] for row in rows]
    assert {"tree", "tree_bare_trio", "tree_over_bare_trio", "idle", "waiting", "ledger"} <= set(
        names
    )
    ratio = next(row for row in rows if row["bench"] == "tree_over_bare_trio")
    assert isinstance(ratio["cpu_ratio"], float) and ratio["cpu_ratio"] > 0
    assert ratio["cpu_ratio_min"] <= ratio["cpu_ratio"] <= ratio["cpu_ratio_max"]
    assert ratio["pairs"] == 1  # --quick: one pair (five at full size)
    waiting = next(row for row in rows if row["bench"] == "waiting")
    assert waiting["tracked_objects_per_agent"] > 0  # the agents were all waiting when counted
    assert waiting["bare_trio_tracked_objects_per_task"] > 0
    idle = next(row for row in rows if row["bench"] == "idle")
    assert isinstance(idle["spawns_per_s"], int) and idle["spawns_per_s"] > 0


def test_bench_loop_quick_prints_overhead_and_fanout() -> None:
    rows = _rows("bench_loop.py")
    names = {row["bench"] for row in rows}
    assert {"fanout", "overhead", "flatness", "import"} <= names
