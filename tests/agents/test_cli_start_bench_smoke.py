"""benchmarks/bench_cli_start.py keeps working: a --quick run prints the CLI's time to its first
request beside its controls, as well-formed JSON lines with wall and CPU times, for each of two
builds alternated in the same run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_cli_start.py"
BENCHES = {"cli_first_request", "python_start", "python_connect", "import_agents", "import_query"}


def test_bench_cli_start_quick_with_two_builds() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--vs", sys.executable],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert {(row["bench"], row.get("build")) for row in rows} == {
        *((bench, build) for bench in BENCHES for build in "ab"),
        ("a_over_b", None),
    }
    figures = {row["bench"]: row for row in rows if row.get("build") == "a"}
    assert figures["cli_first_request"]["median_ms"] > figures["python_start"]["median_ms"] > 0
    assert all(row["cpu_ms"] > 0 for row in figures.values())
    assert next(row for row in rows if row["bench"] == "a_over_b")["cli_cpu"] > 0
