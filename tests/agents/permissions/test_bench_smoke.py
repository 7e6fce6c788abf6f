"""The permissions benchmark keeps working (smoke run with tiny sizes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).parents[3] / "benchmarks" / "bench_permissions.py"


@pytest.fixture(scope="module")
def lines() -> list[dict[str, Any]]:
    """The JSON lines of one `bench_permissions.py --quick` run."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_benchmark_quick_run_prints_json_lines(lines: list[dict[str, Any]]) -> None:
    """`bench_permissions.py --quick` prints one JSON measurement per line."""
    rule_lines = [m for m in lines if "us_per_op" in m]
    assert {(m["measurement"], m["case"]) for m in rule_lines} == {
        (measurement, case)
        for measurement in ("RuleSet.match[deny]", "RuleSet.match[allow]", "PermissionGate.check")
        for case in ("bash_compound", "read_path")
    }
    assert all(m["us_per_op"] > 0 and m["rules"] == 200 for m in rule_lines)


def test_benchmark_quick_run_reports_the_bash_analysis_figures(
    lines: list[dict[str, Any]],
) -> None:
    """The Bash lines: typical p50/p99 with a control, scaling by size, the huge command."""
    by_case: dict[str, list[dict[str, Any]]] = {}
    for m in lines:
        by_case.setdefault(m["case"], []).append(m)
    (typical,) = by_case["bash_typical"]
    assert 0 < typical["p50_us"] <= typical["p99_us"]
    assert typical["control_read_path_p50_us"] > 0
    scaling = by_case["bash_scaling"]
    assert len(scaling) >= 2 and not any(m["opaque"] for m in scaling)
    (huge,) = by_case["bash_huge"]
    assert huge["decided_ms"] > 0 and huge["loop_longest_stall_ms"] >= 0
