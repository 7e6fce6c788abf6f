"""The ``agents`` command: ``agents demo`` (no API key needed) and ``agents run PROMPT``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agents",
        description="trio-agents: the Claude Agent SDK's agent loop as a tree of Trio actors.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo", help="run a scripted agent hierarchy (no API key needed) and print its stream"
    )
    demo.add_argument("--fast", action="store_true", help="no simulated model latency")
    demo.add_argument(
        "--budget", type=float, default=0.08, help="max_budget_usd for the tree (default 0.08)"
    )
    demo.set_defaults(handler=_demo)
    try:
        from .cli_run import register
    except ImportError:  # pragma: no cover - the run command ships with the Anthropic backend
        pass
    else:
        register(sub)
    return parser


def _demo(args: argparse.Namespace) -> int:
    from ._demo import run_demo

    return run_demo(fast=args.fast, budget=args.budget)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agents`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    status: int = args.handler(args)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
