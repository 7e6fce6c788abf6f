"""The permissions benchmark keeps working (smoke run with tiny sizes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[3] / "benchmarks" / "bench_permissions.py"


def test_benchmark_quick_run_prints_json_lines() -> None:
    """`bench_permissions.py --quick` prints one JSON measurement per line."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert {(m["measurement"], m["case"]) for m in lines} == {
        (measurement, case)
        for measurement in ("RuleSet.match[deny]", "RuleSet.match[allow]", "PermissionGate.check")
        for case in ("bash_compound", "read_path")
    }
    assert all(m["us_per_op"] > 0 and m["rules"] == 200 for m in lines)
