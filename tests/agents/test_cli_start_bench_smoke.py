"""benchmarks/bench_cli_start.py keeps working: a --quick run prints the CLI's time to its first
request beside its controls, as well-formed JSON lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_cli_start.py"


def test_bench_cli_start_quick() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    rows = {row["bench"]: row for row in map(json.loads, done.stdout.splitlines())}
    assert set(rows) == {"cli_first_request", "python_start", "python_connect", "import_agents"}
    assert rows["cli_first_request"]["median_ms"] > rows["python_start"]["median_ms"] > 0
