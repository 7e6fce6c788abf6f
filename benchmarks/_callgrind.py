"""Instruction counts under valgrind's callgrind: the benchmarks' figure that does not move
with the machine's load (shared by ``bench_tree.py`` and ``bench_loop.py``)."""

from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def instructions(code: str, python: str = sys.executable) -> int:
    """Instructions the interpreter ``python`` executes for ``python -c code``.

    Run with a fixed hash seed (the same dict layouts in every run) and from this folder, not
    the caller's directory: a checkout there would shadow ``python``'s build."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, "-c", code],
        capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"}, cwd=HERE,
    )  # fmt: skip
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    raise RuntimeError(f"no instruction count in callgrind's output: {done.stderr[-500:]}")
