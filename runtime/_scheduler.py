"""The read/write tool scheduler (SPEC T5/T6).

The calls of one model response are partitioned, in order, into maximal runs of consecutive
read-only calls and single mutating calls. A read-only run executes concurrently; a mutating
call executes alone, after everything before it and before everything after it. Results come
back in call order whatever order the calls finish in, which keeps transcripts deterministic.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import attrs
import trio

C = TypeVar("C")
R = TypeVar("R")


def partition(read_only: Sequence[bool]) -> list[range]:
    """Split call indices into runs: maximal stretches of read-only calls, each mutating alone.

    >>> partition([True, True, False, True])
    [range(0, 2), range(2, 3), range(3, 4)]
    """
    runs: list[range] = []
    start = 0
    n = len(read_only)
    for i, ro in enumerate(read_only):
        if not ro:
            if start < i:
                runs.append(range(start, i))
            runs.append(range(i, i + 1))
            start = i + 1
    if start < n:
        runs.append(range(start, n))
    return runs


@attrs.frozen
class SchedulerStatistics:
    """Counters since creation; ``max_parallel_seen`` = most ``execute`` calls running at once."""

    runs_total: int
    calls_total: int
    max_parallel_seen: int


@attrs.define(eq=False, init=False)
class ToolScheduler:
    """Runs tool calls with read-only fan-out and serialized writes.

    ::

        scheduler = ToolScheduler(max_concurrency=10)
        results = await scheduler.run(
            calls, execute, read_only=lambda call: call.name in {"Read", "Grep"},
            on_complete=emit_result,   # awaited in the call's own task as it finishes
        )

    One ``trio.CapacityLimiter`` bounds the calls executing at once across every ``run`` of
    this scheduler. A run of one call is awaited directly, without a nursery: it is the common
    case and the hot path.

    Errors follow nursery semantics: an exception from ``execute`` cancels the rest of its run
    and nothing later starts; inside a run of several calls it arrives wrapped in an
    ``ExceptionGroup`` (use ``except*`` to handle both shapes).
    """

    _limiter: trio.CapacityLimiter
    _runs_total: int
    _calls_total: int
    _running: int
    _max_parallel: int

    def __init__(self, max_concurrency: int = 10) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self._limiter = trio.CapacityLimiter(max_concurrency)
        self._runs_total = 0
        self._calls_total = 0
        self._running = 0
        self._max_parallel = 0

    async def run(
        self,
        calls: Sequence[C],
        execute: Callable[[C], Awaitable[R]],
        *,
        read_only: Callable[[C], bool],
        on_complete: Callable[[int, C, R], Awaitable[None]] | None = None,
    ) -> list[R]:
        """Execute ``calls`` run by run and return their results in call order."""
        results: list[Any] = [None] * len(calls)
        for run in partition([read_only(call) for call in calls]):
            self._runs_total += 1
            if len(run) == 1:
                await self._one(run.start, calls, execute, on_complete, results)
            else:
                async with trio.open_nursery() as nursery:
                    for i in run:
                        nursery.start_soon(self._one, i, calls, execute, on_complete, results)
        return results

    async def _one(
        self,
        index: int,
        calls: Sequence[C],
        execute: Callable[[C], Awaitable[R]],
        on_complete: Callable[[int, C, R], Awaitable[None]] | None,
        results: list[Any],
    ) -> None:
        call = calls[index]
        limiter = self._limiter
        # A free slot is taken without the schedule point of ``acquire()``: the task was just
        # started (a schedule point already) and ``execute`` will checkpoint on its own.
        try:
            limiter.acquire_nowait()
        except trio.WouldBlock:
            await limiter.acquire()
        try:
            self._calls_total += 1
            running = self._running + 1
            self._running = running
            if running > self._max_parallel:
                self._max_parallel = running
            try:
                result = await execute(call)
            finally:
                self._running -= 1
        finally:
            limiter.release()
        results[index] = result
        # Outside the limiter: a slow consumer of completions must not hold a slot.
        if on_complete is not None:
            await on_complete(index, call, result)

    def statistics(self) -> SchedulerStatistics:
        return SchedulerStatistics(
            runs_total=self._runs_total,
            calls_total=self._calls_total,
            max_parallel_seen=self._max_parallel,
        )
