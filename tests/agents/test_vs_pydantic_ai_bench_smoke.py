"""benchmarks/bench_vs_pydantic_ai.py keeps working without Pydantic AI installed: a --quick run
says that it is missing and prints trio-agents' wall and per-turn gap for both of its paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_vs_pydantic_ai.py"


def test_bench_vs_pydantic_ai_quick_without_pydantic_ai(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--pai-python", str(tmp_path / "no-python")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert rows[0]["bench"] == "pydantic_ai_missing"
    figures = {row["client"]: row for row in rows[1:]}
    assert set(figures) == {"trio_agents_default", "trio_agents_reused"}
    assert all(row["wall_ms_median"] > row["gap_ms_median"] > 0 for row in figures.values())
