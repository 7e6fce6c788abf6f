"""Cost of one permission decision with a realistic rule set.

Builds 200 mixed rules (Bash prefixes, Read/Edit paths, MCP servers and tools, WebFetch domains,
spread over allow, deny and ask) and times ``RuleSet.match`` and ``PermissionGate.check`` for a
compound Bash command and for a Read of a file inside the project (target: <= 20 µs per path
check). The Bash analysis (tree-sitter-bash) gets its own measurements:

* ``bash_typical``: ``PermissionGate.check`` of typical commands, each call timed on its own
  (target: p50 <= 100 µs; p99 reported), beside the Read check as control;
* ``bash_scaling``: the analysis of command lines of growing size (it must be linear: µs per KB
  stays flat), beside the bare tree-sitter parse of the same bytes as control: dense lines of
  short commands (up to the 256-command limit) and here-documents up to 60 KB;
* ``bash_huge``: the decision on a 1 MB command (target: within 50 ms), and the longest the
  event loop went without running while a 60 KB command was checked (it is analysed in a
  worker thread).

Prints one JSON line per measurement::

    .venv/bin/python benchmarks/bench_permissions.py           # full run
    .venv/bin/python benchmarks/bench_permissions.py --quick   # smoke run, a few iterations
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from bisect import insort
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from agents.permissions import PermissionCheck, PermissionGate, RuleSet
from agents.permissions._bash import MAX_COMMAND_BYTES, _parser, analyze

BASH_COMMAND = "npm run build && git status | grep modified; ls -la dist"
#: What an agent typically runs: single commands, compounds, pipes, redirections, a cd.
TYPICAL = [
    "git status",
    "ls -la src",
    "npm run build && git status | grep modified; ls -la dist",
    "pytest -q tests/test_api.py 2>&1 | tail -20",
    "cd src && grep -rn 'def main' . | head",
    "git diff --stat HEAD~1",
    'git commit -m "fix: handle empty input"',
    "cargo build --release 2> build.log",
    'find . -name "*.py" -not -path "./.venv/*" | xargs wc -l',
    "mkdir -p build && cp -r src/assets build/",
]
#: A line of a long command (a heredoc-free mix), repeated to reach a size.
SCALING_LINE = 'cd src && grep -rn "TODO" . | sort | uniq -c > ../todo.txt; echo "$(date)" >> log\n'


def make_rules() -> RuleSet:
    """200 rules: 80 Bash, 60 paths, 30 MCP, 30 WebFetch."""
    allow: list[str] = []
    deny: list[str] = []
    ask: list[str] = []
    tools = ["npm", "git", "ls", "grep", "cargo", "make", "pytest", "docker", "kubectl", "uv"]
    for i in range(80):
        tool = tools[i % len(tools)]
        rule = f"Bash({tool} sub{i} *)" if i >= len(tools) else f"Bash({tool}:*)"
        (deny if i % 7 == 3 else ask if i % 11 == 5 else allow).append(rule)
    deny.append("Bash(rm -rf *)")
    for i in range(60):
        form = [
            "./src/pkg{}/**",
            "//etc/app{}/**",
            "~/.config/tool{}/**",
            "*.secret{}",
            "docs/{}/*.md",
        ]
        rule = ("Read" if i % 2 else "Edit") + "(" + form[i % len(form)].format(i) + ")"
        (deny if i % 5 == 3 else allow).append(rule)
    for i in range(30):
        rule = f"mcp__server{i}" if i % 3 == 0 else f"mcp__server{i}__tool{i}"
        (deny if i % 4 == 0 else allow).append(rule)
    for i in range(29):
        host = f"*.site{i}.example" if i % 5 == 0 else f"docs{i}.example.com"
        (deny if i % 6 == 0 else allow).append(f"WebFetch(domain:{host})")
    rules = RuleSet.from_strings(allow=allow, deny=deny, ask=ask)
    assert len(rules.allow) + len(rules.deny) + len(rules.ask) == 200
    return rules


REPEATS = 5


def emit(measurement: str, case: str, iterations: int, runs: list[float]) -> None:
    """One JSON line: best and median of the repeats (the best is the least disturbed run)."""
    per_op = sorted(seconds / iterations * 1e6 for seconds in runs)
    print(
        json.dumps(
            {
                "bench": "permissions",
                "measurement": measurement,
                "case": case,
                "rules": 200,
                "iterations": iterations,
                "repeats": len(runs),
                "us_per_op": round(per_op[0], 3),
                "us_per_op_median": round(statistics.median(per_op), 3),
            }
        ),
        flush=True,
    )


def time_sync(fn: Callable[[], object], iterations: int, repeats: int) -> list[float]:
    for _ in range(min(iterations, 200)):
        fn()  # warm up
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iterations):
            fn()
        runs.append(time.perf_counter() - start)
    return runs


async def time_async(
    fn: Callable[[], Awaitable[object]], iterations: int, repeats: int
) -> list[float]:
    for _ in range(min(iterations, 200)):
        await fn()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iterations):
            await fn()
        runs.append(time.perf_counter() - start)
    return runs


def percentile(sorted_values: list[float], fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


async def bash_typical(gate: PermissionGate, read: PermissionCheck, samples: int) -> None:
    """Each check timed alone: p50 and p99 over the typical commands (and a Read as control)."""
    checks = [PermissionCheck("Bash", {"command": c}, "t", read_only=False) for c in TYPICAL]
    for check in checks:
        await gate.check(check, {})
    timings: dict[str, list[float]] = {"bash_typical": [], "read_path": [], "cpu": []}
    for _ in range(samples):
        for check in checks:
            start, cpu = time.perf_counter(), time.process_time()
            await gate.check(check, {})
            insort(timings["bash_typical"], (time.perf_counter() - start) * 1e6)
            insort(timings["cpu"], (time.process_time() - cpu) * 1e6)
        start = time.perf_counter()
        await gate.check(read, {})
        insort(timings["read_path"], (time.perf_counter() - start) * 1e6)
    bash, control, cpu_times = timings["bash_typical"], timings["read_path"], timings["cpu"]
    print(
        json.dumps(
            {
                "bench": "permissions",
                "measurement": "PermissionGate.check[each]",
                "case": "bash_typical",
                "rules": 200,
                "commands": len(TYPICAL),
                "cache": "none: every check analyses its command afresh",
                "samples": len(bash),
                "p50_us": round(percentile(bash, 0.5), 1),
                "p99_us": round(percentile(bash, 0.99), 1),
                "cpu_p50_us": round(percentile(cpu_times, 0.5), 1),
                "cpu_p99_us": round(percentile(cpu_times, 0.99), 1),
                "control_read_path_p50_us": round(percentile(control, 0.5), 1),
                "control_read_path_p99_us": round(percentile(control, 0.99), 1),
                "load_average": round(os.getloadavg()[0], 2),
            }
        ),
        flush=True,
    )


def dense_line(size: int) -> str:
    """About ``size`` bytes of short commands, pipes, redirections and substitutions."""
    command = (SCALING_LINE * (size // len(SCALING_LINE) + 1))[:size]
    return command[: command.rfind("\n") + 1] or command


def heredoc_line(size: int) -> str:
    """A file of about ``size`` bytes written through an expanding here-document."""
    body = 'print("value: $HOME")  # a line of the file being written\n'
    return "cat > out.py <<EOF\n" + body * max(1, size // len(body)) + "EOF\n"


def bash_scaling(sizes: list[int], repeats: int, case: str = "dense") -> None:
    """The analysis of lines of growing size: µs per KB, and the bare parse as control (CPU
    time of this process, best of the repeats: other processes' load does not count)."""
    parser = _parser()
    for size in sizes:
        command = dense_line(size) if case == "dense" else heredoc_line(size)
        data = command.encode()
        best_analysis = best_parse = float("inf")
        for _ in range(repeats):
            start = time.process_time()
            analysis = analyze(command)
            best_analysis = min(best_analysis, time.process_time() - start)
            start = time.process_time()
            parser.parse(data)
            best_parse = min(best_parse, time.process_time() - start)
        kb = len(data) / 1024
        print(
            json.dumps(
                {
                    "bench": "permissions",
                    "measurement": "analyze",
                    "case": "bash_scaling",
                    "line": case,
                    "bytes": len(data),
                    "parts": len(analysis.commands),
                    "opaque": bool(analysis.opaque),
                    "us": round(best_analysis * 1e6, 1),
                    "us_per_kb": round(best_analysis * 1e6 / kb, 1),
                    "control_parse_us_per_kb": round(best_parse * 1e6 / kb, 1),
                }
            ),
            flush=True,
        )


async def bash_huge(gate: PermissionGate, megabytes: float, threaded_bytes: int) -> None:
    """The decision on a 1 MB command, and how long the loop stalls on a 60 KB one."""
    huge = "ls " + "x" * int(megabytes * 1024 * 1024)
    start = time.perf_counter()
    outcome = await gate.check(PermissionCheck("Bash", {"command": huge}, "t", False), {})
    decided_ms = (time.perf_counter() - start) * 1e3
    # the longest line judged part by part: a here-document (one write) of `threaded_bytes`
    body = "x = 1  # a line of the file being written\n"
    long_command = "cat > out.py <<'EOF'\n" + body * (threaded_bytes // len(body)) + "EOF\n"
    gaps: list[float] = []

    async def ticker(done: trio.Event) -> None:
        last = time.perf_counter()
        while not done.is_set():
            await trio.lowlevel.checkpoint()
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    done = trio.Event()
    check = PermissionCheck("Bash", {"command": long_command}, "t", False)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker, done)
        await trio.lowlevel.checkpoint()
        start = time.perf_counter()
        await gate.check(check, {})
        long_ms = (time.perf_counter() - start) * 1e3
        done.set()
    print(
        json.dumps(
            {
                "bench": "permissions",
                "measurement": "PermissionGate.check[each]",
                "case": "bash_huge",
                "bytes": len(huge),
                "size_limit_bytes": MAX_COMMAND_BYTES,
                "decision": outcome.behavior,
                "decided_ms": round(decided_ms, 2),
                "threaded_bytes": len(long_command),
                "threaded_check_ms": round(long_ms, 2),
                "loop_longest_stall_ms": round(max(gaps, default=0.0) * 1e3, 2),
            }
        ),
        flush=True,
    )


_CALLGRIND_CHILD = """
import functools, os, sys, tempfile
sys.path.insert(0, {here!r})
import trio
from bench_permissions import TYPICAL, make_rules
from agents.permissions import PermissionCheck, PermissionGate
from agents.permissions._bash import _parser

case, rounds = {case!r}, {rounds}
rules = make_rules()
cwd = tempfile.mkdtemp()
os.makedirs(os.path.join(cwd, "src", "pkg3"))
open(os.path.join(cwd, "src", "pkg3", "main.py"), "w").close()
gate = PermissionGate(mode="default", rules=rules, cwd=cwd, home=os.path.join(cwd, "home"))
bash = [PermissionCheck("Bash", {{"command": c}}, "t", read_only=False) for c in TYPICAL]
read = [PermissionCheck("Read", {{"file_path": "src/pkg3/main.py"}}, "t", read_only=True)]
data = [c.encode() for c in TYPICAL]


async def warm() -> None:
    for check in bash + read:
        await gate.check(check, {{}})  # warm up: every code path and regex compiled
    for d in data:
        _parser().parse(d)


async def run() -> None:
    checks = read if case == "read_path" else bash
    parser = _parser()
    for _ in range(rounds):
        if case == "parse":
            for d in data:
                parser.parse(d)
        else:
            for check in checks:
                await gate.check(check, {{}})

trio.run(warm)
# only what runs inside this reduce is counted (callgrind's --toggle-collect)
functools.reduce(lambda _, __: trio.run(run), [0], None)
"""


def _instructions(case: str, rounds: int, python: str) -> int:
    """Instructions the measured loop of one child process executes (valgrind's callgrind
    count, collected only inside that loop: start-up and warm-up, which vary from run to run
    by millions, are left out), started from a directory without the package so that
    ``python``'s own install of it is imported."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = _CALLGRIND_CHILD.format(here=here, case=case, rounds=rounds)
    with tempfile.TemporaryDirectory() as where:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
             "--collect-atstart=no", "--toggle-collect=functools_reduce",
             os.path.abspath(python), "-c", code],
            capture_output=True, text=True, check=True, cwd=where,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )  # fmt: skip
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    raise RuntimeError(f"no instruction count in callgrind's output: {done.stderr[-500:]}")


def bash_instructions(rounds: int, python: str) -> None:
    """Instructions per check of the typical commands (the stable figure on a shared machine),
    beside the Read check and the bare tree-sitter parse of the same commands as controls."""
    counts = {"bash_typical": len(TYPICAL), "read_path": 1, "parse": len(TYPICAL)}
    total = {case: _instructions(case, rounds, python) for case in counts}
    base = _instructions("bash_typical", 0, python)  # an empty trio.run
    per = {case: (total[case] - base) / (rounds * count) for case, count in counts.items()}
    print(
        json.dumps(
            {
                "bench": "permissions",
                "measurement": "PermissionGate.check[instructions]",
                "case": "bash_typical",
                "python": python,
                "rules": 200,
                "commands": len(TYPICAL),
                "rounds": rounds,
                "cache": "none: every check analyses its command afresh",
                "instructions_per_check": round(per["bash_typical"]),
                "control_read_path_instructions": round(per["read_path"]),
                "control_parse_instructions": round(per["parse"]),
            }
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument("--iterations", type=int, default=10_000)
    parser.add_argument(
        "--callgrind", action="store_true", help="only count instructions (valgrind, slow)"
    )
    parser.add_argument(
        "--python",
        action="append",
        help="with --callgrind: the interpreter(s) whose install of the package is measured "
        "(another build's venv, for a before/after in one run); default this one",
    )
    args = parser.parse_args()
    if args.callgrind:
        for python in args.python or [sys.executable]:
            bash_instructions(2 if args.quick else 50, python)
        return
    iterations = 50 if args.quick else args.iterations
    repeats = 1 if args.quick else REPEATS
    rules = make_rules()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp) / "project"
        (cwd / "src" / "pkg3").mkdir(parents=True)
        (cwd / "src" / "pkg3" / "main.py").write_text("")
        home = str(Path(tmp) / "home")
        bash_input: dict[str, Any] = {"command": BASH_COMMAND}
        read_input: dict[str, Any] = {"file_path": "src/pkg3/main.py"}
        for kind in ("deny", "allow"):
            for case, tool, tool_input in (
                ("bash_compound", "Bash", bash_input),
                ("read_path", "Read", read_input),
            ):
                seconds = time_sync(
                    lambda k=kind, t=tool, i=tool_input: rules.match(  # type: ignore[misc]
                        k, t, i, cwd=str(cwd), home=home
                    ),
                    iterations,
                    repeats,
                )
                emit(f"RuleSet.match[{kind}]", case, iterations, seconds)

        async def gate_run() -> None:
            gate = PermissionGate(mode="default", rules=rules, cwd=str(cwd), home=home)
            bash = PermissionCheck("Bash", bash_input, "t1", read_only=False)
            read = PermissionCheck("Read", read_input, "t2", read_only=True)
            assert (await gate.check(bash, {})).decided_by == "rule"
            assert (await gate.check(read, {})).decided_by == "mode"
            for case, check in (("bash_compound", bash), ("read_path", read)):
                seconds = await time_async(
                    lambda c=check: gate.check(c, {}),  # type: ignore[misc]
                    iterations,
                    repeats,
                )
                emit("PermissionGate.check", case, iterations, seconds)

        trio.run(gate_run)

        async def bash_run() -> None:
            gate = PermissionGate(mode="default", rules=rules, cwd=str(cwd), home=home)
            read = PermissionCheck("Read", read_input, "t2", read_only=True)
            await bash_typical(gate, read, 20 if args.quick else 2000)
            await bash_huge(gate, 0.01 if args.quick else 1.0, 6_000 if args.quick else 60_000)

        trio.run(bash_run)
        repeats = 1 if args.quick else 5
        bash_scaling([1024, 2048] if args.quick else [512, 1024, 2048, 3072], repeats)
        sizes = [4096, 8192] if args.quick else [4096, 16384, 61440]
        bash_scaling(sizes, repeats, "heredoc")


if __name__ == "__main__":
    main()
