"""The asyncio-overhead benchmark still runs: one JSON line per case, each with its control."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_asyncio.py"


def test_bench_asyncio_quick(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tiny sizes: the four cases, each with an asyncio figure and its Trio control."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "unset")  # the benchmark sets both for its server
    monkeypatch.setenv("ANTHROPIC_API_KEY", "unset")
    spec = importlib.util.spec_from_file_location("bench_asyncio", _BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.run(quick=True)
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["case"] for r in rows] == [
        "sequential_query",
        "concurrent_queries",
        "tool_calls",
        "http_query",
    ]
    for row in rows:
        assert row["bench"] == "asyncio_overhead"
        assert row["asyncio_us"] > 0 and row["trio_us"] > 0
        assert row["overhead_us"] == pytest.approx(row["asyncio_us"] - row["trio_us"], abs=0.2)
