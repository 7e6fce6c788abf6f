"""The real-model-path benchmark still runs and prints one JSON line per measured query."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_anthropic_roundtrip.py"


async def test_bench_anthropic_roundtrip_quick(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three measured queries in-process: per-run lines with total/gap, then a summary line."""
    spec = importlib.util.spec_from_file_location("bench_anthropic_roundtrip", _BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    await bench.run_inproc(3, str(tmp_path))
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    names = [r["bench"] for r in rows]
    assert names == ["anthropic_roundtrip"] * 6 + ["anthropic_roundtrip_summary"] * 2 + [
        "anthropic_default_path"
    ]
    assert sorted(r["path"] for r in rows[:6]) == ["default"] * 3 + ["reused"] * 3
    assert all(r["total_ms"] > 0 and r["gap_ms"] > 0 for r in rows[:6])
    assert rows[-1]["default_over_reused"] > 0
