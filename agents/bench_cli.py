"""``agents bench``: registered here so that parsing the command line imports nothing heavy."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser(
        "bench",
        help="measure parallel tool throughput on the scripted backend (table, JSON, plots)",
        description="Run turns of k parallel tool calls on the scripted backend and report "
        "calls/s, per-call overhead, speed-up over serial and p50/p99.",
    )
    bench.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace) -> int:
    raise NotImplementedError("agents bench is not built yet")
