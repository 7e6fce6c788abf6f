"""The CLI's start: how long ``agents run`` takes to send its first request, beside controls.

Prints one JSON line per measurement, each with its wall time and the CPU time of the process
(the operating system's accounting of the finished child, its own children included)::

    python benchmarks/bench_cli_start.py            # 7 runs each
    python benchmarks/bench_cli_start.py --quick    # 1 run each (the smoke test)
    python benchmarks/bench_cli_start.py --vs /other/venv/bin/python --pycache-prefix /tmp/pyc

* ``cli_first_request``: from starting ``agents run hi --base-url http://127.0.0.1:PORT`` to the
  first byte of its request reaching a listening socket here (the process is then stopped);
* ``python_start``: ``python -c pass`` from start to exit — the floor for any Python CLI;
* ``python_connect``: a Python process that connects to the same socket and sends a byte — the
  floor for a Python CLI that makes a request;
* ``import_agents``: ``python -c "import agents"``, and inside it the import's own clocks;
* ``import_query``: the same for ``from agents import AgentOptions, query`` — what a program
  that runs a query imports before it can start one.

``--vs PYTHON`` measures a second build (another virtual environment's interpreter, another
checkout) in the same run: every measurement alternates between the two (A B A B ...), and each
line names its build. The children write their bytecode on the warm-up run and read it after
(``PYTHONDONTWRITEBYTECODE`` is dropped from their environment): start-up is measured as a user
sees it after the first run. ``--pycache-prefix DIR`` keeps that bytecode out of the source trees.
Every child runs in a scratch directory, with its session data there too.

The targets: first request ≤ 400 ms on this machine, ``import agents`` ≤ 200 ms. Medians; on a
shared machine compare a run's figures with each other (and CPU times rather than wall times).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

IMPORT_AGENTS = "import agents"
IMPORT_QUERY = "from agents import AgentOptions, query"


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


class FirstByte:
    """A socket on 127.0.0.1 that notes when a connection first sends something."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.arrived: float | None = None
        self._got = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                if conn.recv(1) and self.arrived is None:
                    self.arrived = time.perf_counter()
                    self._got.set()

    def wait(self, started: float, proc: subprocess.Popen[bytes], limit: float = 60.0) -> float:
        if not self._got.wait(limit):
            proc.kill()
            raise RuntimeError(f"no request within {limit} s")
        assert self.arrived is not None
        return self.arrived - started

    def reset(self) -> None:
        self.arrived = None
        self._got.clear()


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Build:
    """One interpreter whose ``agents`` is measured, with the environment its children get."""

    def __init__(self, name: str, python: str, scratch: str, pycache_prefix: str | None) -> None:
        self.name = name
        self.python = python
        self.cwd = os.path.join(scratch, name)
        os.makedirs(os.path.join(self.cwd, "data"), exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["ANTHROPIC_API_KEY"] = "bench"
        env["TRIO_AGENTS_DATA_DIR"] = os.path.join(self.cwd, "data")
        if pycache_prefix:
            env["PYTHONPYCACHEPREFIX"] = os.path.join(pycache_prefix, name)
        self.env = env

    def first_request(self, argv: list[str], server: FirstByte) -> tuple[float, float]:
        """(wall, CPU) seconds until ``argv``'s first byte reaches ``server``."""
        server.reset()
        cpu = children_cpu()
        started = time.perf_counter()
        proc = subprocess.Popen(
            [self.python, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=self.env, cwd=self.cwd,
        )  # fmt: skip
        try:
            wall = server.wait(started, proc)
        finally:
            proc.kill()
            proc.wait()
        return wall, children_cpu() - cpu

    def process(self, argv: list[str]) -> tuple[float, float, str]:
        """(wall, CPU) seconds of running ``argv`` to its end, and what it printed."""
        cpu = children_cpu()
        started = time.perf_counter()
        done = subprocess.run(
            [self.python, *argv], check=True, capture_output=True, text=True, env=self.env,
            cwd=self.cwd,
        )  # fmt: skip
        return time.perf_counter() - started, children_cpu() - cpu, done.stdout


def timed_import(statement: str) -> list[str]:
    """A ``-c`` program printing the import's own wall and CPU seconds."""
    code = (
        "import time; w, c = time.perf_counter(), time.process_time(); "
        f"{statement}; print(time.perf_counter() - w, time.process_time() - c)"
    )
    return ["-c", code]


def ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def ratio(top: list[float], bottom: list[float]) -> float:
    return round(statistics.median(top) / statistics.median(bottom), 2)


class Samples:
    """The figures of one build, by measurement."""

    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}

    def add(self, key: str, value: float) -> None:
        self.values.setdefault(key, []).append(value)

    def __getitem__(self, key: str) -> list[float]:
        return self.values[key]


def measure_round(build: Build, samples: Samples, server: FirstByte, cli: list[str]) -> None:
    """One sample of every measurement, for one build."""
    wall, cpu = build.first_request(cli, server)
    samples.add("cli_wall", wall)
    samples.add("cli_cpu", cpu)
    wall, cpu, _ = build.process(["-c", "pass"])
    samples.add("start_wall", wall)
    samples.add("start_cpu", cpu)
    connect = [
        "-c",
        f"import socket; s = socket.create_connection(('127.0.0.1', {server.port})); s.send(b'x')",
    ]
    wall, cpu = build.first_request(connect, server)
    samples.add("connect_wall", wall)
    samples.add("connect_cpu", cpu)
    for key, statement in (("import", IMPORT_AGENTS), ("query", IMPORT_QUERY)):
        wall, cpu, out = build.process(timed_import(statement))
        inner_wall, inner_cpu = map(float, out.split())
        samples.add(f"{key}_wall", wall)
        samples.add(f"{key}_cpu", cpu)
        samples.add(f"{key}_inner_wall", inner_wall)
        samples.add(f"{key}_inner_cpu", inner_cpu)


def report(build: Build, s: Samples, runs: int, tag: Callable[[], dict[str, Any]]) -> None:
    emit(
        bench="cli_first_request", **tag(), runs=runs,
        median_ms=ms(s["cli_wall"]), min_ms=round(min(s["cli_wall"]) * 1000, 1),
        cpu_ms=ms(s["cli_cpu"]), target_ms=400,
        cpu_over_python_start=ratio(s["cli_cpu"], s["start_cpu"]),
    )  # fmt: skip
    emit(
        bench="python_start", **tag(), runs=runs,
        median_ms=ms(s["start_wall"]), cpu_ms=ms(s["start_cpu"]),
    )  # fmt: skip
    emit(
        bench="python_connect", **tag(), runs=runs,
        median_ms=ms(s["connect_wall"]), cpu_ms=ms(s["connect_cpu"]),
        cli_over_connect=ratio(s["cli_wall"], s["connect_wall"]),
    )  # fmt: skip
    for bench, key, statement in (
        ("import_agents", "import", IMPORT_AGENTS),
        ("import_query", "query", IMPORT_QUERY),
    ):
        emit(
            bench=bench, **tag(), runs=runs, statement=statement,
            median_ms=ms(s[f"{key}_inner_wall"]), cpu_ms=ms(s[f"{key}_inner_cpu"]),
            process_ms=ms(s[f"{key}_wall"]), process_cpu_ms=ms(s[f"{key}_cpu"]), target_ms=200,
        )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run each (smoke test)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--python", default=sys.executable, help="the interpreter measured (A)")
    parser.add_argument("--vs", metavar="PYTHON", help="a second interpreter (B), alternated")
    parser.add_argument("--pycache-prefix", help="where the children keep their bytecode")
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    server = FirstByte()
    cli = ["-m", "agents.cli", "run", "hi", "--base-url", f"http://127.0.0.1:{server.port}",
           "--max-retries", "0", "--no-live"]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-cli-start-") as scratch:
        builds = [Build("a", args.python, scratch, args.pycache_prefix)]
        if args.vs:
            builds.append(Build("b", args.vs, scratch, args.pycache_prefix))
        samples = {build.name: Samples() for build in builds}
        for build in builds:  # warm-up: bytecode written, page cache filled
            measure_round(build, Samples(), server, cli)
        for _ in range(runs):  # interleaved, so that a change in the machine's load hits all
            for build in builds:
                measure_round(build, samples[build.name], server, cli)
        for build in builds:

            def tag(build: Build = build) -> dict[str, Any]:
                return {"build": build.name, "python": build.python} if args.vs else {}

            report(build, samples[build.name], runs, tag)
        if args.vs:
            a, b = samples["a"], samples["b"]
            emit(
                bench="a_over_b", runs=runs,
                cli_wall=ratio(a["cli_wall"], b["cli_wall"]),
                cli_cpu=ratio(a["cli_cpu"], b["cli_cpu"]),
                import_agents_cpu=ratio(a["import_inner_cpu"], b["import_inner_cpu"]),
                import_query_cpu=ratio(a["query_inner_cpu"], b["query_inner_cpu"]),
            )  # fmt: skip
    server.sock.close()


if __name__ == "__main__":
    main()
