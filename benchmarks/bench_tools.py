"""Benchmark the built-in tools: Grep against plain ``rg`` on the same tree, and Read throughput.

Prints one JSON line per measurement::

    .venv/bin/python benchmarks/bench_tools.py            # 20 000-file tree
    .venv/bin/python benchmarks/bench_tools.py --quick    # tiny smoke run

Grep's target is at most 1.5x plain ``rg`` (the tool adds a process spawn's worth of Trio
plumbing, argument building, the newest-first sort and formatting). Times are medians of several
runs after one warm-up, so both sides search a tree already in the page cache.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.tools.base import ToolContext
from agents.tools.files import read_tool
from agents.tools.search import find_ripgrep, grep_tool

WORDS = ["alpha", "beta", "data", "trio", "nursery", "cancel", "scope", "return", "import"]


def make_tree(root: Path, files: int, seed: int = 1) -> int:
    """``files`` source-like files in directories of 100; 1 in 100 holds the needle."""
    rng = random.Random(seed)
    needles = 0
    for i in range(files):
        d = root / f"pkg{i // 100:04d}"
        if i % 100 == 0:
            d.mkdir(parents=True, exist_ok=True)
        lines = [" ".join(rng.choices(WORDS, k=8)) for _ in range(30)]
        if i % 100 == 7:
            lines[rng.randrange(30)] += " NEEDLE_token"
            needles += 1
        (d / f"mod{i:05d}.py").write_text("\n".join(lines) + "\n")
    return needles


def median_time(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm-up: page cache, binary lookup
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def bench_grep(root: Path, files: int, runs: int) -> None:
    rg = find_ripgrep()
    if rg is None:
        emit(bench="grep", error="ripgrep not available")
        return
    tool = grep_tool()
    ctx = ToolContext(cwd=str(root), agent_id="bench", tool_use_id="t", session_id="s")
    cases = [
        ("files_with_matches", {"pattern": "NEEDLE_\\w+"}, [rg, "-l", "NEEDLE_\\w+", str(root)]),
        (
            "content",
            {"pattern": "NEEDLE_\\w+", "output_mode": "content"},
            [rg, "-n", "NEEDLE_\\w+", str(root)],
        ),
        ("count", {"pattern": "nursery", "output_mode": "count"}, [rg, "-c", "nursery", str(root)]),
    ]
    for mode, raw, argv in cases:
        args = tool.validate(raw)

        async def once(args: Any = args) -> None:
            out = await tool.handler(args, ctx)
            assert not out.is_error, out.content

        tool_s = median_time(lambda once=once: trio.run(once), runs)  # type: ignore[misc]
        rg_s = median_time(lambda argv=argv: subprocess.run(argv, capture_output=True), runs)  # type: ignore[misc]
        # trio.run's own start-up is not the tool's cost: measure it and report it separately.
        empty_s = median_time(lambda: trio.run(trio.lowlevel.checkpoint), runs)
        emit(
            bench=f"grep_{mode}",
            files=files,
            tool_s=round(tool_s - empty_s, 5),
            rg_s=round(rg_s, 5),
            ratio=round((tool_s - empty_s) / rg_s, 3),
            trio_run_overhead_s=round(empty_s, 5),
        )


def bench_small_grep(root: Path, runs: int) -> None:
    rg = find_ripgrep()
    if rg is None:
        return
    one = root / "pkg0000" / "mod00007.py"
    tool = grep_tool()
    ctx = ToolContext(cwd=str(root), agent_id="bench", tool_use_id="t", session_id="s")
    args = tool.validate({"pattern": "NEEDLE", "path": str(one), "output_mode": "content"})

    async def many() -> None:
        for _ in range(runs):
            await tool.handler(args, ctx)

    t0 = time.perf_counter()
    trio.run(many)
    tool_s = (time.perf_counter() - t0) / runs
    rg_s = median_time(
        lambda: subprocess.run([rg, "-n", "NEEDLE", str(one)], capture_output=True), runs
    )
    emit(
        bench="grep_single_file",
        tool_s=round(tool_s, 5),
        rg_s=round(rg_s, 5),
        ratio=round(tool_s / rg_s, 3),
    )


def bench_read(tmp: Path, runs: int, line_chars: int) -> None:
    path = tmp / "big.txt"
    line = ("x" * (line_chars - 1)) + "\n"
    path.write_text(line * 2000)  # one default window: 2000 lines
    size = path.stat().st_size
    tool = read_tool()
    ctx = ToolContext(cwd=str(tmp), agent_id="bench", tool_use_id="t", session_id="s")
    args = tool.validate({"file_path": str(path)})

    async def many() -> None:
        for _ in range(runs):
            out = await tool.handler(args, ctx)
            assert not out.is_error

    t0 = time.perf_counter()
    trio.run(many)
    per = (time.perf_counter() - t0) / runs
    emit(
        bench="read",
        bytes=size,
        lines=2000,
        seconds=round(per, 5),
        mb_per_s=round(size / per / 1e6, 1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=7)
    opts = parser.parse_args()
    files = 300 if opts.quick else opts.files
    runs = 2 if opts.quick else opts.runs
    with tempfile.TemporaryDirectory(prefix="bench-tools-") as tmp:
        root = Path(tmp) / "tree"
        t0 = time.perf_counter()
        needles = make_tree(root, files)
        emit(bench="tree", files=files, needles=needles, build_s=round(time.perf_counter() - t0, 2))
        bench_grep(root, files, runs)
        bench_small_grep(root, 5 if opts.quick else 50)
        bench_read(Path(tmp), runs, 100 if opts.quick else 1000)


if __name__ == "__main__":
    main()
