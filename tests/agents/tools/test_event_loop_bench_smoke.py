"""benchmarks/bench_event_loop.py keeps working: a --quick run prints a JSON line per case."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_event_loop.py"


def test_bench_event_loop_quick() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    groups = {row["group"] for row in rows}
    assert groups == {
        "control",
        "bash_permission",
        "output_cap",
        "transcript_entry",
        "long_history",
        "other_inputs",
        "edit",
    }
    assert all(row["bench"] == "event_loop" for row in rows)
    assert all(row["longest_step_ms"] >= 0 and row["watchdog_late_ms"] >= 0 for row in rows)
    assert {row["case"] for row in rows if row["group"] == "long_history"} == {
        "append_all",
        "resume",
        "rebuild_history",
        "start_session",
        "fork_session",
        "end_of_session",
    }
