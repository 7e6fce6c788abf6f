"""Loop benchmarks (issue 2): fan-out efficiency, per-call and per-turn overhead, flatness, import.

Prints one JSON line per measurement::

    python benchmarks/bench_loop.py            # full run
    python benchmarks/bench_loop.py --quick    # tiny sizes (the smoke test)

* ``fanout``: k read-only tools that each wait L seconds (real time) in one turn; wall time of the
  whole query (model latency zero) against L. Ideal: L plus the loop's overhead. Printed beside
  it: the bare-Trio control (k sleeps in a nursery) and what creating a file costs on this disk
  at the moment (each query creates its transcript file before its first model request).
* ``overhead``: zero-latency scripted backend and no-op tools: µs per tool call and per turn, in
  CPU and wall time; with ``--callgrind``, also in instructions (valgrind's count, the stable
  figure on a shared machine).
* ``flatness``: a 200-turn chain; mean cost of turns 191-200 over turns 1-10 (≤ 2 is flat).
* ``import``: ``from agents import AgentOptions, query`` in a fresh interpreter (ms, best of N).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import _callgrind as callgrind  # this folder's (the scripts run from it)
import trio

from agents import AgentOptions, ToolAnnotations, create_sdk_mcp_server, query, tool
from agents.backends.base import ModelRequest
from agents.sessions import DATA_DIR_ENV
from agents.testing.scripted import ScriptedBackend, Step, text, tool_use


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def _server(wait: float) -> Any:
    @tool("wait", "waits", {"i": int}, annotations=ToolAnnotations(readOnlyHint=True))
    async def wait_tool(args: dict[str, Any]) -> dict[str, Any]:
        if wait:
            await trio.sleep(wait)
        return {"content": [{"type": "text", "text": "ok"}]}

    return create_sdk_mcp_server("b", "1", [wait_tool])


def chain(turns: int, calls_per_turn: int, stamps: list[float] | None = None) -> ScriptedBackend:
    """A responder script: ``turns`` tool turns of ``calls_per_turn`` calls, then a final answer."""

    def respond(request: ModelRequest) -> Step:
        if stamps is not None:
            stamps.append(time.perf_counter())
        turn = (len(request.messages) + 1) // 2
        if turn > turns:
            return Step([text("done")])
        return Step([tool_use("mcp__b__wait", {"i": i}) for i in range(calls_per_turn)])

    return ScriptedBackend(respond)


async def run_query(
    backend: ScriptedBackend, cwd: str, wait: float = 0.0, concurrency: int = 10
) -> float:
    options = AgentOptions(
        cwd=cwd,
        backend=backend,
        tools=[],
        mcp_servers={"b": _server(wait)},
        max_tool_concurrency=concurrency,
    )
    t0 = time.perf_counter()
    async for _ in query(prompt="go", options=options):
        pass
    return time.perf_counter() - t0


async def bare_trio(k: int, wait: float) -> float:
    """The control: ``k`` concurrent ``trio.sleep(wait)`` in a nursery, nothing else. On this
    kind of machine a sleep wakes up to a millisecond late (epoll's timeouts are whole
    milliseconds), which no code running on Trio can beat."""
    t0 = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(k):
            nursery.start_soon(trio.sleep, wait)
    return time.perf_counter() - t0


def file_creation_us(folder: str, n: int = 5) -> float:
    """The median cost of creating a small file in ``folder`` now: what a session's transcript
    file costs before its first model request, which on a busy disk is much of the overhead."""
    times = []
    for _ in range(n):
        path = os.path.join(folder, f"probe-{time.perf_counter_ns()}.jsonl")
        t0 = time.perf_counter()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"{}\n")
        os.close(fd)
        times.append(time.perf_counter() - t0)
        os.unlink(path)
    return statistics.median(times) * 1e6


async def bench_fanout(cwd: str, ks: list[int], waits: list[float]) -> None:
    for wait in waits:
        for k in ks:
            runs = [
                await run_query(chain(1, k), cwd, wait, concurrency=max(k, 10)) for _ in range(5)
            ]
            bare = min([await bare_trio(k, wait) for _ in range(5)])
            best = min(runs)
            emit(
                bench="fanout",
                k=k,
                wait_ms=wait * 1000,
                wall_ms=round(best * 1000, 2),
                overhead_ms=round((best - wait) * 1000, 2),
                bare_trio_ms=round(bare * 1000, 2),
                over_bare_ms=round((best - bare) * 1000, 2),
                file_creation_us=round(file_creation_us(cwd), 1),
            )


async def _cpu_query(backend: ScriptedBackend, cwd: str) -> float:
    """CPU seconds of this process for one query: on a shared machine, wall time also counts
    other processes' slices, CPU time counts only ours (there is no I/O to wait on here)."""
    t0 = time.process_time()
    await run_query(backend, cwd)
    return time.process_time() - t0


async def bench_overhead(cwd: str, turns: int) -> None:
    await run_query(chain(5, 1), cwd)  # warm up
    for clock in ("cpu", "wall"):
        measure = _cpu_query if clock == "cpu" else run_query
        one = min([await measure(chain(turns, 1), cwd) for _ in range(5)])
        many = min([await measure(chain(turns, 11), cwd) for _ in range(5)])
        per_call = (many - one) / (turns * 10)
        per_turn = one / (turns + 1) - per_call
        emit(
            bench="overhead",
            clock=clock,
            turns=turns,
            per_call_us=round(per_call * 1e6, 1),
            per_turn_us=round(per_turn * 1e6, 1),
            target_call_us=30,
            target_turn_us=150,
        )


async def bench_flatness(cwd: str, turns: int) -> None:
    ratios = []
    for _ in range(3):
        stamps: list[float] = []
        await run_query(chain(turns, 1, stamps), cwd)
        gaps = [b - a for a, b in itertools.pairwise(stamps)]
        ratios.append(statistics.mean(gaps[-10:]) / statistics.mean(gaps[:10]))
    emit(bench="flatness", turns=turns, ratio_last10_first10=round(min(ratios), 3), target_max=2.0)


_CALLGRIND_CHILD = """
import os, sys, tempfile, trio
# Trio draws at random which of the ready tasks runs first, and the count follows the draw (by
# 4 k instructions per call between runs of one build): seeded, a build counts the same each run
_draw = getattr(trio._core._run, "_r", None)
if _draw is not None:
    _draw.seed(0)
sys.path.insert(0, {here!r})
from bench_loop import chain, run_query
turns, calls = {turns}, {calls}
with tempfile.TemporaryDirectory() as cwd:
    os.environ["TRIO_AGENTS_DATA_DIR"] = os.path.join(cwd, ".data")
    async def main():
        await run_query(chain(2, 2), cwd)  # warm up: imports, caches
        if turns:
            await run_query(chain(turns, calls), cwd)
    trio.run(main)
"""


def _instructions(turns: int, calls: int, python: str = sys.executable) -> int:
    """Instructions the interpreter ``python`` executes for one query of ``turns`` × ``calls``
    (and the fixed part: start, imports, warm-up), counted by valgrind's callgrind."""
    code = _CALLGRIND_CHILD.format(here=callgrind.HERE, turns=turns, calls=calls)
    return callgrind.instructions(code, python)


def bench_instructions(turns: int, python: str = sys.executable) -> None:
    """The per-call and per-turn figures as instruction counts: the stable figure on a shared
    machine (the same code counts the same within a fraction of a percent). ``python``:
    another build's interpreter (its venv), to compare builds in one run."""
    # once without valgrind first: modules changed since their bytecode was cached are compiled
    # (and cached) then, not in the first count, where the compiler's work would inflate ``base``
    code = _CALLGRIND_CHILD.format(here=callgrind.HERE, turns=0, calls=0)
    subprocess.run([python, "-c", code], check=True, cwd=callgrind.HERE)
    base = _instructions(0, 0, python)
    one = _instructions(turns, 1, python) - base
    two = _instructions(turns, 2, python) - base
    many = _instructions(turns, 11, python) - base
    per_call = (many - one) / (turns * 10)
    per_turn = one / (turns + 1) - per_call
    # The same difference split in two: a call more in a turn that already fans out, and what
    # fanning out costs a turn once (the scheduler's nursery and helper task for a read-only
    # run of two calls or more), which ``per_call`` spreads over the ten calls it adds.
    per_call_in_fanout = (many - two) / (turns * 9)
    fanout_per_turn = (two - one) / turns - per_call_in_fanout
    emit(bench="overhead", clock="instructions", turns=turns, python=python,
         per_call_instructions=round(per_call), per_turn_instructions=round(per_turn),
         per_call_in_fanout_instructions=round(per_call_in_fanout),
         fanout_per_turn_instructions=round(fanout_per_turn),
         target_call_instructions=120_000, target_turn_instructions=250_000)


def bench_import(repeats: int) -> None:
    # the names a query needs (a bare ``import agents`` loads them lazily, on first use)
    code = (
        "import time; t = time.perf_counter(); from agents import AgentOptions, query; "
        "print(time.perf_counter() - t)"
    )
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(repeats)
    ]
    emit(
        bench="import",
        best_ms=round(min(times) * 1000, 1),
        median_ms=round(statistics.median(times) * 1000, 1),
        target_ms=300,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for the smoke test")
    parser.add_argument(
        "--callgrind", action="store_true", help="also count instructions (valgrind, slow)"
    )
    parser.add_argument("--python", action="append", metavar="PATH", help="with --callgrind: "
                        "count with this interpreter (another build's venv); repeatable")
    parser.add_argument("--only-callgrind", action="store_true", help="count instructions only "
                        "(skip the timed benchmarks)")
    args = parser.parse_args()
    if args.only_callgrind:
        for python in args.python or [sys.executable]:
            bench_instructions(5 if args.quick else 50, python)
        return
    with tempfile.TemporaryDirectory() as cwd:
        os.environ[DATA_DIR_ENV] = os.path.join(cwd, ".data")  # the sessions' transcripts go too
        if args.quick:
            trio.run(bench_fanout, cwd, [1, 4], [0.01])
            trio.run(bench_overhead, cwd, 5)
            trio.run(bench_flatness, cwd, 20)
            bench_import(1)
        else:
            trio.run(bench_fanout, cwd, [1, 2, 4, 8, 10, 16, 32, 64], [0.1])
            trio.run(bench_fanout, cwd, [10], [0.01, 0.05, 0.2])
            trio.run(bench_overhead, cwd, 200)
            trio.run(bench_flatness, cwd, 200)
            bench_import(7)
        if args.callgrind:
            for python in args.python or [sys.executable]:
                bench_instructions(5 if args.quick else 50, python)


if __name__ == "__main__":
    main()
