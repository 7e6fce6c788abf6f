"""``agents bench``: parallel tool throughput from the command line (see :mod:`agents.bench`).

Registered here, apart from :mod:`agents.bench`, so that parsing the command line imports
nothing heavy::

    agents bench                                 # the built-in read-only tools
    agents bench --tools sleep:100 -k 1,4,16     # a custom tool that takes 100 ms
    agents bench --tools module:my_tools --mutating 0.25 --report out/
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["parse_ks", "register"]

DEFAULT_REPORT = "agents-bench-report"


def parse_ks(value: str) -> list[int]:
    """``"1,2,4"`` → ``[1, 2, 4]``; argparse shows the error as one line."""
    try:
        ks = [int(part) for part in value.replace(" ", ",").split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers like 1,2,4,8, got {value!r}") from None
    if not ks or any(k < 1 for k in ks):
        raise argparse.ArgumentTypeError(f"every k must be >= 1, got {value!r}")
    return ks


def _share(value: str) -> float:
    try:
        share = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {value!r}") from None
    if not 0 <= share <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value!r}")
    return share


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser(
        "bench",
        help="measure parallel tool throughput on the scripted backend (table, JSON, plots)",
        description="Run turns of k parallel tool calls on the scripted backend and report "
        "calls/s, per-call overhead, speed-up over serial and p50/p99; write JSON lines and "
        "PNG plots (with the [plot] extra) to a report directory.",
    )
    add = bench.add_argument
    add("--tools", default="builtin", metavar="SET",
        help="builtin (Read, Grep, Glob; Write when mutating), sleep:MS (a custom tool taking "
        "MS ms) or module:PKG.MOD (its @tool functions); default builtin")  # fmt: skip
    add("-k", "--k", dest="ks", type=parse_ks, default=[1, 2, 4, 8, 16], metavar="K,K,...",
        help="calls per turn to measure (default 1,2,4,8,16)")  # fmt: skip
    add("--turns", type=int, default=3, help="turns per k (default 3)")
    add("--mutating", type=_share, default=0.0, metavar="SHARE",
        help="share of the calls that mutate, 0 to 1 (default 0)")  # fmt: skip
    add("--model-latency-ms", type=float, default=0.0, help="the scripted model's latency")
    add("--report", default=DEFAULT_REPORT, metavar="DIR",
        help=f"where results.jsonl and the plots go (default ./{DEFAULT_REPORT})")  # fmt: skip
    add("--no-plots", action="store_true", help="JSON lines only, even with matplotlib")
    bench.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace) -> int:
    import trio

    from .bench import PLOT_HINT, format_table, plotting_available, run_bench, write_report

    if args.turns < 1:
        print(f"agents bench: --turns must be >= 1, got {args.turns}", file=sys.stderr)
        return 2
    try:
        result = trio.run(
            lambda: run_bench(
                args.tools,
                args.ks,
                turns=args.turns,
                mutating=args.mutating,
                model_latency=args.model_latency_ms / 1000,
            )
        )
    except (ValueError, NotImplementedError) as exc:
        print(f"agents bench: {exc}", file=sys.stderr)
        return 2
    print(format_table(result))
    paths = write_report(result, args.report, plots=not args.no_plots)
    print(f"report: {', '.join(str(p) for p in paths)}")
    if not args.no_plots and not plotting_available():
        print(PLOT_HINT)
    return 0
