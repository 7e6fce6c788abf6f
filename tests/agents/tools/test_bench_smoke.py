"""benchmarks/bench_tools.py keeps working: a --quick run prints well-formed JSON lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_tools.py"


def test_bench_tools_quick() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    names = {row["bench"] for row in rows}
    assert {"tree", "grep_files_with_matches", "grep_content", "read"} <= names
    assert {"glob_small", "scenario_gap"} <= names  # both skipped only without ripgrep
    assert all("error" not in row for row in rows)
