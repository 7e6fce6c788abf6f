"""A hold detector for tests: how long the event loop's thread could not run a Trio task.

Two meters, as in ``benchmarks/bench_event_loop.py``: the longest single task step (a Trio
instrument: work done *on* the loop), and the worst lateness of a task sleeping 1 ms in a loop,
which also sees a worker thread holding the interpreter (and, on a loaded machine, the operating
system's scheduling: tens of milliseconds while another thread runs Python). Real time: use it
without the autojump clock, and compare with a control measured in the same test, with generous
bounds (this machine is shared).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio


@attrs.frozen
class Hold:
    """Seconds: the longest task step, and the watchdog's worst lateness."""

    step: float
    late: float


class _StepMeter(trio.abc.Instrument):
    def __init__(self) -> None:
        self.longest = 0.0
        self._started: float | None = None  # None: the step began before the meter was added

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._started = time.perf_counter()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        if self._started is not None:
            self.longest = max(self.longest, time.perf_counter() - self._started)
            self._started = None


async def measure_hold(step: Callable[[], Awaitable[Any]]) -> Hold:
    """Both meters while ``step`` runs."""
    meter = _StepMeter()
    late = [0.0]

    async def watchdog(task_status: trio.TaskStatus[None]) -> None:
        task_status.started()
        while True:
            before = time.perf_counter()
            await trio.sleep(0.001)
            late[0] = max(late[0], time.perf_counter() - before - 0.001)

    async with trio.open_nursery() as nursery:
        await nursery.start(watchdog)
        await trio.sleep(0.003)
        late[0] = 0.0
        trio.lowlevel.add_instrument(meter)
        try:
            await trio.lowlevel.checkpoint()  # ``step`` starts in a step the meter sees whole
            await step()
            await trio.sleep(0.003)  # the watchdog sees the end of the step
        finally:
            trio.lowlevel.remove_instrument(meter)
            nursery.cancel_scope.cancel()
    return Hold(meter.longest, late[0])


async def best_hold(step: Callable[[], Awaitable[Any]], runs: int = 3) -> Hold:
    """The smallest of each meter over a few runs: a hold that is the code's shows in every
    run, one that is the machine's (another process scheduled) rarely in all."""
    holds = [await measure_hold(step) for _ in range(runs)]
    return Hold(min(h.step for h in holds), min(h.late for h in holds))


async def control_hold() -> Hold:
    """The hold of a thousand checkpoints: this machine's floor, right now."""

    async def checkpoints() -> None:
        for _ in range(1000):
            await trio.lowlevel.checkpoint()

    return await best_hold(checkpoints)


async def thread_control_hold(seconds: float = 0.3) -> Hold:
    """The hold while a worker thread runs plain Python for ``seconds``: the floor of the
    watchdog's meter when work is in a thread (the interpreter is handed over every few
    milliseconds, and the operating system adds its own delays)."""

    def spin() -> None:
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            pass

    return await best_hold(lambda: trio.to_thread.run_sync(spin))
