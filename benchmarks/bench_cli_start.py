"""The CLI's start: how long ``agents run`` takes to send its first request, beside controls.

Prints one JSON line per measurement::

    python benchmarks/bench_cli_start.py            # 7 runs each
    python benchmarks/bench_cli_start.py --quick    # 1 run each (the smoke test)

* ``cli_first_request``: from starting ``agents run hi --base-url http://127.0.0.1:PORT`` to the
  first byte of its request reaching a listening socket here (the process is then stopped);
* ``python_start``: ``python -c pass`` from start to exit — the floor for any Python CLI;
* ``python_connect``: a Python process that connects to the same socket and sends a byte — the
  floor for a Python CLI that makes a request;
* ``import_agents``: ``import agents`` inside a fresh interpreter (its own clock).

The targets are ratios measured in the same run: first request ≤ 400 ms on this machine,
``import agents`` ≤ 200 ms. Medians; on a shared machine compare a run's figures with each other.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Any


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


def agents_command() -> list[str]:
    return [sys.executable, "-m", "agents.cli"]


def time_first_request(argv: list[str], server: FirstByte) -> float:
    server.reset()
    env = {**os.environ, "ANTHROPIC_API_KEY": "bench"}
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        return server.wait(started, proc)
    finally:
        proc.kill()
        proc.wait()


def time_process(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run each (smoke test)")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    server = FirstByte()
    base = f"http://127.0.0.1:{server.port}"
    cli = [*agents_command(), "run", "hi", "--base-url", base, "--max-retries", "0", "--no-live"]
    connect = [
        sys.executable, "-c",
        f"import socket; s = socket.create_connection(('127.0.0.1', {server.port})); s.send(b'x')",
    ]  # fmt: skip
    time_first_request(cli, server)  # warm-up: bytecode, page cache
    cli_s, start_s, connect_s = [], [], []
    for _ in range(runs):  # interleaved, so that a change in the machine's load hits all three
        cli_s.append(time_first_request(cli, server))
        start_s.append(time_process([sys.executable, "-c", "pass"]))
        connect_s.append(time_first_request(connect, server))
    emit(
        bench="cli_first_request",
        runs=runs,
        median_ms=median_ms(cli_s),
        min_ms=round(min(cli_s) * 1000, 1),
        target_ms=400,
    )
    emit(bench="python_start", runs=runs, median_ms=median_ms(start_s))
    emit(
        bench="python_connect",
        runs=runs,
        median_ms=median_ms(connect_s),
        cli_over_connect=round(statistics.median(cli_s) / statistics.median(connect_s), 2),
    )
    code = "import time; t = time.perf_counter(); import agents; print(time.perf_counter() - t)"
    imports = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(runs)
    ]
    emit(bench="import_agents", runs=runs, median_ms=median_ms(imports), target_ms=200)
    server.sock.close()


if __name__ == "__main__":
    main()
