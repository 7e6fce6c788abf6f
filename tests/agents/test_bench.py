"""`agents bench` and `agents.bench`: throughput, overhead, speed-up and latency of parallel calls,
a report directory with JSON lines and plots, and a hint when matplotlib is missing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trio

from agents.bench import (
    PLOT_HINT,
    Call,
    format_table,
    json_lines,
    load_workload,
    run_bench,
    write_report,
)
from agents.bench._run import _schedule
from agents.cli import main


async def test_sleep_tool_speed_up_is_k_in_virtual_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """With a virtual clock the runtime costs no time: k read-only calls of 100 ms take 100 ms
    together and k × 100 ms one by one, so throughput, speed-up and latency are exact."""
    result = await run_bench("sleep:100", [1, 4, 8], turns=2, clock=trio.current_time)
    by_k = {row.k: row for row in result.rows}
    assert result.own_duration_s == {"mcp__bench__wait": 0.1, "mcp__bench__wait_and_write": 0.1}
    for k, row in by_k.items():
        assert row.calls == 2 * k
        assert row.calls_per_s == pytest.approx(10 * k)
        assert row.serial_calls_per_s == pytest.approx(10)
        assert row.speedup == pytest.approx(k)
        assert row.overhead_us == pytest.approx(0, abs=1)
        assert (row.p50_ms, row.p99_ms) == (pytest.approx(100), pytest.approx(100))


async def test_mutating_calls_run_alone(autojump_clock: trio.testing.MockClock) -> None:
    """Every 2nd call mutates: it runs after everything before it, before everything after."""
    result = await run_bench("sleep:100", [4], turns=1, mutating=0.5, clock=trio.current_time)
    row = result.rows[0]
    kinds = [(s.mutating, round(s.start_s, 3), round(s.end_s, 3)) for s in row.timeline]
    assert kinds == [(False, 0, 0.1), (True, 0.1, 0.2), (False, 0.2, 0.3), (True, 0.3, 0.4)]
    assert row.speedup == pytest.approx(1)
    assert row.overhead_us == pytest.approx(0, abs=1)


def test_schedule_follows_the_concurrency_limit() -> None:
    """With 2 slots, the 3rd read-only call starts when the first one ends."""
    read = Call("r", {})
    turn = [(read, 10.0, 10.1), (read, 10.0, 10.2), (read, 10.0, 10.3)]
    starts = [round(s.start_s, 3) for s in _schedule(turn, 2)]
    assert starts == [0, 0, 0.1]


async def test_builtin_tools_are_measured(tmp_path: Path) -> None:
    """Read, Grep and Glob on a generated project: each one's own cost, and every k's row."""
    result = await run_bench("builtin", [1, 3], turns=1, workdir=tmp_path)
    assert set(result.own_duration_s) == {"Read", "Grep", "Glob", "Write"}
    assert [row.k for row in result.rows] == [1, 3]
    assert all(row.calls_per_s > 0 and row.p99_ms >= row.p50_ms > 0 for row in result.rows)
    assert format_table(result).splitlines()[2].split()[:2] == ["k", "calls/s"]


def test_a_module_of_tools_is_a_tool_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bench_tools_mod.py").write_text(
        "from agents import tool, ToolAnnotations\n"
        "RO = ToolAnnotations(readOnlyHint=True)\n"
        "@tool('lookup', 'looks up', {'key': str}, annotations=RO)\n"
        "async def lookup(args):\n    return {'content': [{'type': 'text', 'text': args['key']}]}\n"
        "@tool('store', 'stores', {'key': str, 'n': int})\n"
        "async def store(args):\n    return {'content': [{'type': 'text', 'text': 'ok'}]}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    workload = load_workload("module:bench_tools_mod", tmp_path)
    assert [c.name for c in workload.read_only] == ["mcp__bench__lookup"]
    assert workload.mutating[0].input == {"key": "x", "n": 1} and workload.mutating[0].mutating


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope", "unknown tool set 'nope' (expected builtin, sleep:MS or module:PKG.MOD)"),
        ("sleep:fast", "--tools sleep:MS needs a number of milliseconds, got 'fast'"),
        ("module:no_such_module_here", "--tools module:no_such_module_here: cannot import it"),
    ],
)
def test_a_bad_tool_set_is_named(spec: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        load_workload(spec, tmp_path)


async def test_report_has_json_lines_and_three_plots(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    result = await run_bench("sleep:10", [1, 2], turns=1, clock=trio.current_time)
    paths = write_report(result, tmp_path / "report")
    assert sorted(p.name for p in paths) == [
        "overhead.png", "results.jsonl", "throughput.png", "timeline.png",
    ]  # fmt: skip
    for png in paths[1:]:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (tmp_path / "report" / "results.jsonl").read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    assert [line["k"] for line in lines] == [1, 2, 2]
    assert lines[1]["speedup"] == pytest.approx(2) and lines[1]["tools"] == "sleep:10"
    assert lines[2]["bench"] == "agents-bench-timeline" and len(lines[2]["calls"]) == 2
    assert json_lines(result)[0].startswith('{"bench": "agents-bench"')


def test_the_command_prints_the_table_and_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["bench", "--tools", "sleep:1", "-k", "1,2", "--turns", "1",
                   "--report", str(tmp_path)])  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0
    assert out.splitlines()[0] == "agents bench: sleep:1, 1 turns per k, model latency 0 ms"
    assert "speed-up" in out and (tmp_path / "throughput.png").exists()
    assert PLOT_HINT not in out


def test_without_matplotlib_the_table_and_json_come_with_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    status = main(["bench", "--tools", "sleep:1", "-k", "1", "--turns", "1",
                   "--report", str(tmp_path)])  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0
    assert out.rstrip().splitlines()[-1] == PLOT_HINT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl"]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["-k", "0"], "every k must be >= 1"),
        (["-k", "a,b"], "expected integers like 1,2,4,8"),
        (["--mutating", "2"], "must be between 0 and 1"),
        (["--tools", "nope"], "unknown tool set 'nope'"),
        (["--tools", "mcp:servers.json"], "external MCP servers are not built yet"),
        (["--turns", "0"], "--turns must be >= 1"),
    ],
)
def test_a_bad_bench_flag_is_one_line(
    flags: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = main(["bench", *flags])
    except SystemExit as exc:
        status = exc.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert status == 2 and len(err.splitlines()) == 1 and expected in err
