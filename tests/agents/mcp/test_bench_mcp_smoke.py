"""benchmarks/bench_mcp.py keeps working: a --quick run prints well-formed JSON lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_mcp.py"


def test_bench_mcp_quick() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "ignore::ResourceWarning", str(BENCH), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = {(row["bench"], row.get("transport")) for row in rows}
    assert {("mcp_call", "inprocess"), ("mcp_call", "stdio"), ("mcp_call", "http")} <= kinds
    assert ("mcp_fanout", None) in kinds
