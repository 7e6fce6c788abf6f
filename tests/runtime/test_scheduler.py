from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import SchedulerStatistics, ToolScheduler, partition


@attrs.frozen
class Call:
    name: str
    read_only: bool
    duration: int = 1


@attrs.frozen
class Span:
    start: float
    end: float


def is_read_only(call: Call) -> bool:
    return call.read_only


def recorder() -> tuple[dict[str, Span], Callable[[Call], Awaitable[str]]]:
    spans: dict[str, Span] = {}

    async def execute(call: Call) -> str:
        start = trio.current_time()
        await trio.sleep(call.duration)
        spans[call.name] = Span(start, trio.current_time())
        return call.name.upper()

    return spans, execute


def overlaps(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


def R(name: str, duration: int = 1) -> Call:
    return Call(name, True, duration)


def W(name: str, duration: int = 1) -> Call:
    return Call(name, False, duration)


def test_partition_groups_consecutive_read_only_calls() -> None:
    """Maximal read-only runs are grouped; each mutating call is a run of its own."""
    assert partition([]) == []
    assert partition([True, True, False, True, True]) == [range(0, 2), range(2, 3), range(3, 5)]
    assert partition([False, False]) == [range(0, 1), range(1, 2)]
    assert partition([True]) == [range(0, 1)]
    assert partition([False, True, True]) == [range(0, 1), range(1, 3)]


async def test_two_read_only_calls_overlap(autojump_clock: trio.testing.MockClock) -> None:
    """Read-only calls of one run execute at the same time."""
    spans, execute = recorder()
    results = await ToolScheduler().run([R("a"), R("b")], execute, read_only=is_read_only)
    assert results == ["A", "B"]
    assert overlaps(spans["a"], spans["b"])
    assert trio.current_time() == 1


async def test_a_mutating_call_overlaps_nothing(autojump_clock: trio.testing.MockClock) -> None:
    """A mutating call runs after everything before it and before everything after it."""
    spans, execute = recorder()
    calls = [R("a"), W("w"), R("b")]
    await ToolScheduler().run(calls, execute, read_only=is_read_only)
    assert not overlaps(spans["w"], spans["a"])
    assert not overlaps(spans["w"], spans["b"])
    assert spans["a"].end <= spans["w"].start <= spans["w"].end <= spans["b"].start


async def test_runs_execute_in_order(autojump_clock: trio.testing.MockClock) -> None:
    """[R, R, W, R, R] runs as {R, R} -> W -> {R, R}."""
    spans, execute = recorder()
    calls = [R("r1"), R("r2"), W("w"), R("r3"), R("r4")]
    scheduler = ToolScheduler()
    await scheduler.run(calls, execute, read_only=is_read_only)
    assert {name: span.start for name, span in spans.items()} == {
        "r1": 0,
        "r2": 0,
        "w": 1,
        "r3": 2,
        "r4": 2,
    }
    assert scheduler.statistics() == SchedulerStatistics(
        runs_total=3, calls_total=5, max_parallel_seen=2
    )


async def test_results_in_call_order_while_completions_report_as_they_finish(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Results come back in call order; on_complete sees completion order."""
    _, execute = recorder()
    completed: list[tuple[int, str, str]] = []

    async def on_complete(index: int, call: Call, result: str) -> None:
        completed.append((index, call.name, result))

    calls = [R("slow", 3), R("fast", 1), R("mid", 2)]
    results = await ToolScheduler().run(
        calls, execute, read_only=is_read_only, on_complete=on_complete
    )
    assert results == ["SLOW", "FAST", "MID"]
    assert completed == [(1, "fast", "FAST"), (2, "mid", "MID"), (0, "slow", "SLOW")]


async def test_limiter_bounds_parallelism(autojump_clock: trio.testing.MockClock) -> None:
    """At most max_concurrency calls execute at once, even inside one read-only run."""
    _, execute = recorder()
    scheduler = ToolScheduler(max_concurrency=2)
    calls = [R(str(i)) for i in range(5)]
    await scheduler.run(calls, execute, read_only=is_read_only)
    assert scheduler.statistics().max_parallel_seen == 2
    assert trio.current_time() == 3


async def test_a_call_cancelled_while_waiting_for_a_slot_takes_none(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Cancelling calls that wait for a slot neither leaks a slot nor adds one."""
    _, execute = recorder()
    scheduler = ToolScheduler(max_concurrency=1)
    with trio.move_on_after(0.5):
        await scheduler.run([R("a"), R("b"), R("c")], execute, read_only=is_read_only)
    await scheduler.run([R("d"), R("e")], execute, read_only=is_read_only)
    assert scheduler.statistics().max_parallel_seen == 1
    assert trio.current_time() == 2.5


async def test_a_single_call_runs_in_the_callers_task() -> None:
    """A one-call run is awaited directly: no nursery, no new task (the fast path)."""
    caller = trio.lowlevel.current_task()
    seen: list[trio.lowlevel.Task] = []

    async def execute(call: Call) -> int:
        seen.append(trio.lowlevel.current_task())
        return 1

    async def on_complete(index: int, call: Call, result: int) -> None:
        seen.append(trio.lowlevel.current_task())

    await ToolScheduler().run(
        [W("w"), R("r")], execute, read_only=is_read_only, on_complete=on_complete
    )
    assert seen == [caller] * 4


async def test_calls_that_never_wait_run_in_the_callers_task_in_order() -> None:
    """In a read-only run, calls that finish without waiting need no task of their own."""
    caller = trio.lowlevel.current_task()
    seen: list[tuple[str, trio.lowlevel.Task]] = []

    async def execute(call: Call) -> str:
        seen.append((call.name, trio.lowlevel.current_task()))
        return call.name

    calls = [R(str(i)) for i in range(5)]
    assert await ToolScheduler().run(calls, execute, read_only=is_read_only) == list("01234")
    assert seen == [(str(i), caller) for i in range(5)]


async def test_the_calls_after_one_that_waits_start_together(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Once a call waits, every call not started yet starts at once, each in its own task."""
    spans, execute = recorder()
    calls = [R("a", 0), R("b", 2), R("c", 1), R("d", 1)]
    await ToolScheduler().run(calls, execute, read_only=is_read_only)
    assert [spans[c.name].start for c in calls] == [0, 0, 0, 0]
    assert overlaps(spans["b"], spans["c"]) and overlaps(spans["b"], spans["d"])
    assert trio.current_time() == 2


async def test_a_run_cancelled_before_any_call_waits_starts_no_more_calls() -> None:
    """A run cancelled by a call that has not waited yet starts none of the calls after it."""
    started: list[str] = []
    with trio.CancelScope() as scope:

        async def execute(call: Call) -> None:
            started.append(call.name)
            if call.name == "a":
                scope.cancel()
            await trio.sleep(1)

        await ToolScheduler().run([R("a"), R("b"), R("c")], execute, read_only=is_read_only)
    assert scope.cancelled_caught
    assert started == ["a"]


async def test_an_error_in_a_single_call_propagates_bare() -> None:
    """An exception from a lone call propagates as is, and later runs do not start."""
    started: list[str] = []

    async def execute(call: Call) -> None:
        started.append(call.name)
        raise ValueError(f"{call.name} failed")

    with pytest.raises(ValueError, match=r"^w failed$"):
        await ToolScheduler().run([W("w"), R("r")], execute, read_only=is_read_only)
    assert started == ["w"]


async def test_an_error_in_a_run_cancels_its_siblings(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Inside a read-only run an error cancels the siblings and arrives as a group."""
    cancelled: list[str] = []

    async def execute(call: Call) -> None:
        if call.name == "bad":
            raise ValueError("bad failed")
        try:
            await trio.sleep(10)
        except trio.Cancelled:
            cancelled.append(call.name)
            raise

    with pytest.RaisesGroup(pytest.RaisesExc(ValueError, match=r"^bad failed$")):
        await ToolScheduler().run([R("ok"), R("bad"), W("never")], execute, read_only=is_read_only)
    assert cancelled == ["ok"]


async def test_cancellation_propagates(autojump_clock: trio.testing.MockClock) -> None:
    """Cancelling the caller cancels the running calls."""
    _, execute = recorder()
    with trio.move_on_after(1.5) as scope:
        await ToolScheduler().run(
            [R("a", 1), R("b", 1), W("w", 5)], execute, read_only=is_read_only
        )
    assert scope.cancelled_caught
    assert trio.current_time() == 1.5


def test_max_concurrency_is_validated() -> None:
    """A scheduler needs at least one slot."""
    with pytest.raises(ValueError, match=r"^max_concurrency must be >= 1, got 0$"):
        ToolScheduler(max_concurrency=0)


@settings(deadline=None, max_examples=200)
@given(st.lists(st.tuples(st.booleans(), st.integers(min_value=0, max_value=5)), max_size=12))
def test_scheduling_property(spec: list[tuple[bool, int]]) -> None:
    """Writes overlap nothing, each run starts together, total time = sum of run maxima."""
    calls = [Call(str(i), ro, d) for i, (ro, d) in enumerate(spec)]

    async def main() -> tuple[list[str], dict[str, Span], float]:
        spans, execute = recorder()
        results = await ToolScheduler(max_concurrency=len(calls) or 1).run(
            calls, execute, read_only=is_read_only
        )
        return results, spans, trio.current_time()

    results, spans, elapsed = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert results == [c.name.upper() for c in calls]
    expected_time = 0
    for run in partition([c.read_only for c in calls]):
        run_calls = [calls[i] for i in run]
        run_start = min(spans[c.name].start for c in run_calls)
        assert all(spans[c.name].start == run_start for c in run_calls)
        assert run_start == expected_time
        expected_time += max(c.duration for c in run_calls)
    assert elapsed == expected_time
    for w in calls:
        if w.read_only:
            continue
        for other in calls:
            if other is not w:
                assert not overlaps(spans[w.name], spans[other.name])
