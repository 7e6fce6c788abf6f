"""Benchmark the built-in tools: Grep against plain ``rg`` on the same tree, and Read throughput.

Prints one JSON line per measurement::

    .venv/bin/python benchmarks/bench_tools.py            # 20 000-file tree
    .venv/bin/python benchmarks/bench_tools.py --quick    # tiny smoke run

Grep's target is at most 1.5x plain ``rg`` (the tool adds a process spawn's worth of Trio
plumbing, argument building, the newest-first sort and formatting). Times are medians of several
runs after one warm-up, so both sides search a tree already in the page cache.

* ``glob_small``: Glob per call on small trees, listed in-process (the default below 1 000
  entries) against the same call listing with ripgrep (the control, in the same run).
* ``grep_small``: Grep per call on small trees, searched in-process (the default for a pattern
  both engines read alike, up to the walk's limit) against the same call on ripgrep.
* ``scenario_gap``: the per-turn gap of a two-turn query (turn 1: text + Read, Read, Glob, Grep
  on a 60-file project; turn 2: the answer; a zero-latency scripted model) — from the first
  request to the second — for this build and, alternated in the same run, the previous build
  (``--old-python``, by default ``/work/main/.venv/bin/python`` when it exists; not with
  ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import os
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

from agents.tools import search
from agents.tools.base import ToolContext
from agents.tools.files import read_tool
from agents.tools.search import find_ripgrep, glob_tool, grep_tool

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


def bench_glob_small(tmp: Path, runs: int, sizes: list[int]) -> None:
    """Glob per call on small trees: the in-process listing against ripgrep's (the control)."""
    if find_ripgrep() is None:
        return
    tool = glob_tool()
    for size in sizes:
        root = tmp / f"glob{size}"
        make_tree(root, size)
        (root / ".gitignore").write_text("*.pyc\nbuild/\n")
        ctx = ToolContext(cwd=str(root), agent_id="bench", tool_use_id="t", session_id="s")
        args = tool.validate({"pattern": "**/*.py"})

        async def many(args: Any = args, ctx: ToolContext = ctx) -> float:
            await tool.handler(args, ctx)  # warm-up
            t0 = time.perf_counter()
            for _ in range(runs):
                out = await tool.handler(args, ctx)
                assert not out.is_error, out.content
            return (time.perf_counter() - t0) / runs

        walked = trio.run(many)
        limit, search.WALK_LIMIT = search.WALK_LIMIT, 0  # ripgrep lists every tree
        try:
            rg = trio.run(many)
        finally:
            search.WALK_LIMIT = limit
        emit(
            bench="glob_small",
            files=size,
            in_process_ms=round(walked * 1e3, 3),
            ripgrep_ms=round(rg * 1e3, 3),
            ripgrep_over_in_process=round(rg / walked, 1),
        )


def bench_grep_small(tmp: Path, runs: int, sizes: list[int]) -> None:
    """Grep per call on small trees: searched in-process against the same call on ripgrep (the
    control, in the same run), wall and CPU of this process (ripgrep's own CPU not counted:
    see ``ripgrep_children_cpu_ms``)."""
    if find_ripgrep() is None:
        return
    tool = grep_tool()
    for size in sizes:
        root = tmp / f"grep{size}"
        make_tree(root, size)
        ctx = ToolContext(cwd=str(root), agent_id="bench", tool_use_id="t", session_id="s")
        args = tool.validate({"pattern": "NEEDLE_\\w+"})

        async def many(args: Any = args, ctx: ToolContext = ctx) -> tuple[float, float, float]:
            await tool.handler(args, ctx)  # warm-up
            t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
            for _ in range(runs):
                out = await tool.handler(args, ctx)
                assert not out.is_error, out.content
            return (
                (time.perf_counter() - t0) / runs,
                (time.process_time() - c0) / runs,
                (_children_cpu() - k0) / runs,
            )

        here = trio.run(many)
        search.GREP_IN_PROCESS = False
        try:
            rg = trio.run(many)
        finally:
            search.GREP_IN_PROCESS = True
        emit(
            bench="grep_small",
            files=size,
            in_process_ms=round(here[0] * 1e3, 3),
            in_process_cpu_ms=round(here[1] * 1e3, 3),
            ripgrep_ms=round(rg[0] * 1e3, 3),
            ripgrep_cpu_ms=round(rg[1] * 1e3, 3),
            ripgrep_children_cpu_ms=round(rg[2] * 1e3, 3),
            ripgrep_over_in_process=round(rg[0] / here[0], 1),
        )


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


#: One build's scenario, run by that build's interpreter: prints the median per-turn gap (ms).
_SCENARIO = r"""
import os, statistics, sys, tempfile, time
import trio
from agents import AgentOptions, query
from agents.testing.scripted import ScriptedBackend, Step, text, tool_use

root, queries = sys.argv[1], int(sys.argv[2])
stamps = []

def respond(request):
    stamps.append(time.perf_counter())
    if len(request.messages) == 1:
        return Step([
            text("Looking."),
            tool_use("Read", {"file_path": os.path.join(root, "pkg0000", "mod00001.py")}),
            tool_use("Read", {"file_path": os.path.join(root, "pkg0000", "mod00002.py")}),
            tool_use("Glob", {"pattern": "**/*.py"}),
            tool_use("Grep", {"pattern": "NEEDLE_\w+"}),
        ])
    return Step([text("done")])

async def main():
    gaps = []
    with tempfile.TemporaryDirectory() as data:
        os.environ["TRIO_AGENTS_DATA_DIR"] = data
        for i in range(queries + 1):
            stamps.clear()
            options = AgentOptions(cwd=root, backend=ScriptedBackend(respond))
            async for _ in query(prompt="go", options=options):
                pass
            if i:  # the first is a warm-up
                gaps.append(stamps[1] - stamps[0])
    print(statistics.median(gaps) * 1e3)

trio.run(main)
"""


def _scenario_gap(python: str, root: Path, queries: int) -> float:
    env = {**os.environ, "PYTHONPATH": ""}
    done = subprocess.run(
        [python, "-c", _SCENARIO, str(root), str(queries)],
        capture_output=True, text=True, check=True, cwd=str(root), env=env,
    )  # fmt: skip
    return float(done.stdout.strip().splitlines()[-1])


def bench_scenario(tmp: Path, old_python: str | None, rounds: int, queries: int) -> None:
    """The scenario's per-turn gap, this build against the previous one, alternated."""
    if find_ripgrep() is None:
        return
    root = tmp / "project"
    make_tree(root, 60)
    new_python = sys.executable
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(rounds):
        ours.append(_scenario_gap(new_python, root, queries))
        if old_python is not None:
            theirs.append(_scenario_gap(old_python, root, queries))
    fields: dict[str, Any] = {"gap_ms": round(statistics.median(ours), 3)}
    if theirs:
        old = statistics.median(theirs)
        fields.update(
            previous_build_gap_ms=round(old, 3),
            previous_over_this=round(old / statistics.median(ours), 2),
        )
    emit(bench="scenario_gap", rounds=rounds, queries=queries, **fields)


#: The previous build's interpreter on this project's machine (the main branch's venv).
_PREVIOUS_BUILD = "/work/main/.venv/bin/python"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--old-python",
        default=None,
        help="the previous build's interpreter, for the scenario's control ('' for none; "
        "by default /work/main/.venv/bin/python when it exists, except with --quick)",
    )
    opts = parser.parse_args()
    if opts.old_python is None and not opts.quick and os.path.exists(_PREVIOUS_BUILD):
        opts.old_python = _PREVIOUS_BUILD
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
        bench_glob_small(Path(tmp), 5 if opts.quick else 50, [20] if opts.quick else [20, 200, 900])
        bench_grep_small(
            Path(tmp), 5 if opts.quick else 50, [20] if opts.quick else [20, 60, 200, 900]
        )
        bench_scenario(
            Path(tmp), opts.old_python or None, 1 if opts.quick else 5, 3 if opts.quick else 30
        )


if __name__ == "__main__":
    main()
