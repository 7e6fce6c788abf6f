"""The ``agents`` command: ``agents demo`` (no API key needed), ``agents run PROMPT`` (the
``claude -p`` of this runtime) and ``agents bench`` (parallel tool throughput).

Usage mistakes are one line on stderr and exit status 2, never a traceback::

    $ agents run --max-turns x hi
    agents run: argument --max-turns: invalid int value: 'x' (see agents run --help)

Only the command that runs is imported: ``agents --version`` and a bad flag answer before the
agent loop (or ``rich``, or the Anthropic client) is loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = [
    "START_UP_ALLOCATIONS",
    "OneLineParser",
    "defer_collection",
    "import_trio",
    "main",
    "version",
]


def version() -> str:
    """This package's version, as installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as _version

    try:
        return _version("trio-agents")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


class _Version(argparse.Action):
    """``--version``: looked up only when asked (the metadata lookup is not free)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> NoReturn:
        sys.stdout.write(f"{version()} (trio-agents)\n")
        parser.exit(0)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: ``PROG: MESSAGE (see PROG --help)``."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="agents",
        description="trio-agents: the Claude Agent SDK's agent loop as a tree of Trio actors.",
    )
    parser.add_argument("-v", "--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="{demo,run,bench,worker}")
    demo = sub.add_parser(
        "demo",
        help="run a scripted agent hierarchy (no API key needed), shown as a live tree",
        description="Run a scripted agent hierarchy on a throwaway project: no API key needed.",
    )
    demo.add_argument("--fast", action="store_true", help="no simulated model latency")
    demo.add_argument(
        "--budget", type=float, default=0.08, help="max_budget_usd for the tree (default 0.08)"
    )
    demo.add_argument(
        "--no-live", action="store_true", help="plain lines, even on a terminal (the default "
        "when the output is not a terminal)"
    )  # fmt: skip
    demo.set_defaults(handler=_demo)
    from .cli_run import register

    register(sub)
    from .bench_cli import register as register_bench

    register_bench(sub)
    _register_worker(sub)
    return parser


def _register_worker(sub: Any) -> None:
    worker = sub.add_parser(
        "worker",
        help="run agents of many trees, taking spawn requests from Redis (scale-out)",
        description="Take spawn requests from a Redis Stream and run each agent under its tree's "
        "shared ledger in PostgreSQL (extras: postgres, redis).",
    )
    worker.add_argument("--redis", required=True, help="Redis URL of the spawn queue")
    worker.add_argument("--postgres", required=True, help="PostgreSQL DSN of ledger and sessions")
    worker.add_argument("--name", help="consumer name (default: host-pid)")
    worker.add_argument("--concurrency", type=int, default=4, help="jobs at once (default 4)")
    worker.add_argument("--lease", type=float, default=10.0, help="lease in seconds (default 10)")
    worker.add_argument("--prefix", default="trio-agents", help="key prefix of the streams")
    worker.set_defaults(handler=_worker)


def _worker(args: argparse.Namespace) -> int:
    from .scaleout.worker import run_from_args

    return run_from_args(args)


def _demo(args: argparse.Namespace) -> int:
    from ._demo import run_demo

    return run_demo(fast=args.fast, budget=args.budget, live=False if args.no_live else None)


def import_trio() -> None:
    """Import Trio without the ``/sbin/ldconfig -p`` child process it starts on Linux.

    Trio's thread cache looks up ``libpthread`` with ``ctypes.util.find_library`` when it is
    imported (to name its worker threads), and on Linux that runs ``ldconfig -p`` and parses its
    listing: a process start on every command's way to its first request. glibc's soname is
    fixed, so while Trio is imported here the lookup of ``pthread`` tries ``libpthread.so.0``
    first, and asks ``find_library`` only if that does not load (musl, another libc). Every
    other lookup, and every lookup after the import, is ``find_library``'s own.
    """
    if "trio" in sys.modules or not sys.platform.startswith("linux"):
        return
    import ctypes
    import ctypes.util

    found = ctypes.util.find_library

    def find_library(name: str) -> str | None:
        if name == "pthread":
            with contextlib.suppress(OSError):
                ctypes.CDLL("libpthread.so.0")
                return "libpthread.so.0"
        return found(name)

    ctypes.util.find_library = find_library
    try:
        import trio  # noqa: F401
    finally:
        ctypes.util.find_library = found


#: Objects allocated (net) before the CLI's first garbage collection: more than its start-up
#: allocates (about 60 000: modules, classes, functions, nearly all of them kept for good).
START_UP_ALLOCATIONS = 150_000


def defer_collection(allocations: int = START_UP_ALLOCATIONS) -> None:
    """Hold the cyclic garbage collector off through start-up, then hand it back frozen.

    Start-up creates tens of thousands of objects that live as long as the process; with the
    default thresholds the collector runs about 90 times over them before the first request
    (a few percent of the start's CPU) and finds next to nothing. Here the first collection waits
    for ``allocations`` net allocations; when it has run, the default thresholds come back and
    what survived it is frozen (``gc.freeze()``): later collections no longer walk it.
    """
    saved = gc.get_threshold()
    done = False

    def restore(phase: str, info: dict[str, int]) -> None:
        nonlocal done
        if phase == "stop" and not done:
            done = True
            gc.set_threshold(*saved)
            gc.freeze()

    gc.callbacks.append(restore)
    gc.set_threshold(allocations, *saved[1:])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agents`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    if argv is None:  # the process is this command (not a test or a program calling main)
        defer_collection()
    import_trio()
    try:
        status: int = args.handler(args)
    except KeyboardInterrupt:
        print(f"agents {args.command}: interrupted", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
