"""Cost of one permission decision with a realistic rule set (target: <= 20 µs per check).

Builds 200 mixed rules (Bash prefixes, Read/Edit paths, MCP servers and tools, WebFetch domains,
spread over allow, deny and ask) and times ``RuleSet.match`` and ``PermissionGate.check`` for a
compound Bash command and for a Read of a file inside the project. Prints one JSON line per
measurement::

    .venv/bin/python benchmarks/bench_permissions.py           # full run
    .venv/bin/python benchmarks/bench_permissions.py --quick   # smoke run, a few iterations
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from agents.permissions import PermissionCheck, PermissionGate, RuleSet

BASH_COMMAND = "npm run build && git status | grep modified; ls -la dist"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument("--iterations", type=int, default=10_000)
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
