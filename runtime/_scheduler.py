"""The read/write tool scheduler: read-only calls fan out, mutating calls run alone, in order.

The calls of one model response are partitioned, in order, into maximal runs of consecutive
read-only calls and single mutating calls. A read-only run executes concurrently; a mutating
call executes alone, after everything before it and before everything after it. Results come
back in call order whatever order the calls finish in, which keeps transcripts deterministic.
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable, Generator, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import attrs
import trio

C = TypeVar("C")
R = TypeVar("R")

#: how waits for a slot are cut: the scope entered around each wait, the result of a cut call
_Cut = tuple[Callable[[], AbstractContextManager[trio.CancelScope]], Callable[[C], Awaitable[R]]]

#: the name of a call's task (given: Trio need not format it)
_TASK_NAME = "runtime.ToolScheduler._one"


#: what :func:`_stepping` yields when the call sent in has finished (never a trap of Trio's)
_DONE: Any = object()


@types.coroutine
def _stepping() -> Generator[Any, Any, None]:
    """Run the calls sent in, one at a time: each yield of a call's goes out as it is (a call
    that waits), and once the call has finished, ``_DONE`` does. A call that finishes without
    waiting thus costs no ``StopIteration``, as ``coroutine.send`` would; an error it raises
    ends the stepping and goes out."""
    step = yield
    while True:
        yield from step
        step = yield _DONE


@types.coroutine
def _go_on(stepping: Generator[Any, Any, None], trap: Any) -> Generator[Any, Any, None]:
    """Carry the call ``stepping`` runs, which has just yielded ``trap``, to its end as
    ``await`` would have: each yield goes up to Trio and each answer goes back down."""
    while True:
        try:
            answer = yield trap
        except BaseException as exc:  # thrown in (closing too): into the call, as ``await`` does
            trap = stepping.throw(exc)
        else:
            trap = stepping.send(answer)
        if trap is _DONE:
            return


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
            on_complete=emit_result,   # awaited as each call finishes, in the task that ran it
        )

    ``max_concurrency`` bounds the calls executing at once across every ``run`` of this
    scheduler; calls over the bound wait in line (first come, first served, as with a
    ``trio.CapacityLimiter``, which costs more per call than this counter). A run of one call is
    awaited directly, without a nursery: it is the common case and the hot path. In a longer
    read-only run only the calls that wait get a task of their own (see ``_together``).

    A call waiting for a slot can be cut: ``wait_scope()`` is entered around each wait (a cancel
    scope someone else may cancel — the agents cancel it when the budget trips), and a call
    whose wait it cut never executes; its result is ``if_cut(call)`` instead (reported to
    ``on_complete`` like any). A run of calls that is cancelled as a whole is not affected.

    Errors follow nursery semantics: an exception from ``execute`` cancels the rest of its run
    and nothing later starts; inside a run of several calls it arrives wrapped in an
    ``ExceptionGroup`` (use ``except*`` to handle both shapes).
    """

    _max_concurrency: int
    #: calls waiting for a slot, made at the first wait (most schedulers never need one); a
    #: finishing call hands its slot to the first of them
    _waiting: trio.lowlevel.ParkingLot | None
    _runs_total: int
    _calls_total: int
    _running: int
    _max_parallel: int

    def __init__(self, max_concurrency: int = 10) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self._max_concurrency = max_concurrency
        self._waiting = None
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
        wait_scope: Callable[[], AbstractContextManager[trio.CancelScope]] | None = None,
        if_cut: Callable[[C], Awaitable[R]] | None = None,
    ) -> list[R]:
        """Execute ``calls`` run by run and return their results in call order.

        ``wait_scope`` and ``if_cut`` go together: see the class docstring."""
        if (wait_scope is None) != (if_cut is None):
            raise ValueError("wait_scope and if_cut must be given together (or neither)")
        cut = None if wait_scope is None or if_cut is None else (wait_scope, if_cut)
        results: list[Any] = [None] * len(calls)
        if len(calls) == 1:  # the common case: one call, a run of its own whatever it is
            self._runs_total += 1
            await self._one(0, calls, execute, on_complete, results, cut)
            return results
        flags = list(map(read_only, calls))
        # all read-only (a fan-out): one run, found without partition's loop
        for run in (range(len(calls)),) if calls and all(flags) else partition(flags):
            self._runs_total += 1
            if len(run) == 1:
                await self._one(run.start, calls, execute, on_complete, results, cut)
            else:
                await self._together(run, calls, execute, on_complete, results, cut)
        return results

    async def _together(
        self,
        run: range,
        calls: Sequence[C],
        execute: Callable[[C], Awaitable[R]],
        on_complete: Callable[[int, C, R], Awaitable[None]] | None,
        results: list[Any],
        cut: _Cut[C, R] | None,
    ) -> None:
        """Execute a read-only run concurrently, paying for a task only where a call waits.

        This task steps the calls one after another, in call order, for as long as each
        finishes without waiting. The first call that waits (yields to Trio) starts every call
        not begun yet, each in a task of its own, before its wait goes on; this task then
        carries that call to its end, so from the first call that waits on, all of them wait
        together. Calls that never wait would have run one after another anyway (a Trio task
        runs until it waits): the outcome is that of one task per call, without the cost of a
        task for each call that did not need one, nor of a task to watch for the first wait.

        The nursery is open before the first call, though most runs start no task in it: a call
        may enter cancel scopes of its own before it first waits, and the calls it starts must
        not be nested inside those (nor could its scopes then be exited in order).
        """
        stop = run.stop
        stepping = _stepping()
        stepping.send(None)
        async with trio.open_nursery() as nursery:
            for index in run:
                trap = stepping.send(self._one(index, calls, execute, on_complete, results, cut))
                if trap is _DONE:
                    continue  # finished without waiting
                for later in range(index + 1, stop):
                    nursery.start_soon(
                        self._one_unless_cancelled, later, calls, execute, on_complete,
                        results, cut, name=_TASK_NAME,
                    )  # fmt: skip
                await _go_on(stepping, trap)
                break

    async def _one_unless_cancelled(
        self,
        index: int,
        calls: Sequence[C],
        execute: Callable[[C], Awaitable[R]],
        on_complete: Callable[[int, C, R], Awaitable[None]] | None,
        results: list[Any],
        cut: _Cut[C, R] | None,
    ) -> None:
        """A call started in a task of its own: a cancelled run starts nothing more."""
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._one(index, calls, execute, on_complete, results, cut)

    async def _one(
        self,
        index: int,
        calls: Sequence[C],
        execute: Callable[[C], Awaitable[R]],
        on_complete: Callable[[int, C, R], Awaitable[None]] | None,
        results: list[Any],
        cut: _Cut[C, R] | None,
    ) -> None:
        call = calls[index]
        # A free slot is taken without a schedule point (``execute`` checkpoints on its own). A
        # slot is free only while nobody waits: a finishing call hands its slot over instead.
        if self._running < self._max_concurrency:
            self._running += 1
        elif not await self._wait_for_a_slot(cut):
            assert cut is not None
            result = results[index] = await cut[1](call)  # cut while waiting: never executed
            if on_complete is not None:
                await on_complete(index, call, result)
            return
        self._calls_total += 1
        if self._running > self._max_parallel:
            self._max_parallel = self._running
        try:
            result = await execute(call)
        finally:
            waiting = self._waiting
            if waiting:
                waiting.unpark()
            else:
                self._running -= 1
        results[index] = result
        # Outside the slot: a slow consumer of completions must not hold one.
        if on_complete is not None:
            await on_complete(index, call, result)

    async def _wait_for_a_slot(self, cut: _Cut[C, R] | None) -> bool:
        """Wait in line; True owning the slot handed over, False when ``cut``'s scope ended
        the wait first (then no slot is held: a handed-over slot is never lost, as a task
        rescheduled by ``unpark`` can no longer be cancelled out of its ``park``)."""
        if self._waiting is None:
            self._waiting = trio.lowlevel.ParkingLot()
        if cut is None:
            await self._waiting.park()
            return True
        with cut[0]() as scope:
            await self._waiting.park()
        return not scope.cancelled_caught

    def statistics(self) -> SchedulerStatistics:
        return SchedulerStatistics(
            runs_total=self._runs_total,
            calls_total=self._calls_total,
            max_parallel_seen=self._max_parallel,
        )
