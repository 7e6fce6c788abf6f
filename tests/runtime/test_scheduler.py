from __future__ import annotations

import contextlib
import itertools
import math
import types
from collections import Counter
from collections.abc import Awaitable, Callable, Generator
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import SchedulerStatistics, ToolScheduler, partition
from tests.virtual import run_virtual


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


class Gate:
    """A cancel scope factory whose scopes ``close()`` cancels at once, as the budget's trip
    cancels the waits it watches (every scope made after the close is cancelled at once)."""

    def __init__(self) -> None:
        self.scopes: list[trio.CancelScope] = []
        self.closed = False

    def __call__(self) -> contextlib.AbstractContextManager[trio.CancelScope]:
        scope = trio.CancelScope()
        if self.closed:
            scope.cancel()
        self.scopes.append(scope)
        return scope

    def close(self) -> None:
        self.closed = True
        for scope in self.scopes:
            scope.cancel()


async def test_a_call_whose_wait_is_cut_never_executes_and_answers_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """With one slot, calls waiting for it when their wait scope is cancelled (at t=1) never
    execute: each gets ``if_cut``'s result at that instant, reported to on_complete; the
    running call goes on, and the slot is neither leaked nor doubled."""
    spans, execute = recorder()
    gate = Gate()
    done: dict[str, float] = {}

    async def if_cut(call: Call) -> str:
        return f"cut {call.name}"

    async def on_complete(index: int, call: Call, result: str) -> None:
        done[call.name] = trio.current_time()

    scheduler = ToolScheduler(max_concurrency=1)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: _close_at(gate, 1.0))
        results = await scheduler.run(
            [R("a", 5), R("b"), W("c")], execute, read_only=is_read_only,
            on_complete=on_complete, wait_scope=gate, if_cut=if_cut,
        )  # fmt: skip
    assert results == ["A", "cut b", "C"]  # c never waited: it had the slot at once
    assert set(spans) == {"a", "c"}
    assert done["b"] == 1.0 and done["a"] == 5.0
    await scheduler.run([R("d"), R("e")], execute, read_only=is_read_only)
    assert scheduler.statistics().max_parallel_seen == 1
    assert scheduler.statistics().calls_total == 4  # a cut call is not counted as run


async def _close_at(gate: Gate, when: float) -> None:
    await trio.sleep_until(when)
    gate.close()


def test_wait_scope_and_if_cut_go_together() -> None:
    async def main() -> None:
        with pytest.raises(ValueError, match="wait_scope and if_cut"):
            await ToolScheduler().run([R("a")], recorder()[1], read_only=is_read_only,
                                      wait_scope=Gate())  # fmt: skip

    trio.run(main)


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


async def test_a_run_cancelled_by_a_call_that_then_waits_starts_no_more_calls(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A call that cancels its run and then waits (shielded) still starts none of the calls
    after it: the tasks its wait starts check the run first."""
    started: list[str] = []
    with trio.CancelScope() as scope:

        async def execute(call: Call) -> None:
            started.append(call.name)
            if call.name == "a":
                scope.cancel()
                with trio.CancelScope(shield=True):
                    await trio.sleep(1)
            await trio.sleep(1)

        await ToolScheduler().run([R("a"), R("b"), R("c")], execute, read_only=is_read_only)
    assert scope.cancelled_caught
    assert started == ["a"]


async def test_a_call_carried_past_its_first_wait_gets_what_trio_throws_in() -> None:
    """The call that waits first in a run gets every answer Trio gives it, thrown errors
    included (here the TypeError for a yield Trio does not know)."""

    @types.coroutine
    def foreign() -> Generator[str, None, None]:
        yield "not a trap of Trio's"

    async def execute(call: Call) -> str:
        if call.name == "a":
            try:
                await foreign()
            except TypeError:
                return "caught"
        return call.name

    calls = [R("a"), R("b")]
    assert await ToolScheduler().run(calls, execute, read_only=is_read_only) == ["caught", "b"]


async def test_a_call_carried_past_its_first_wait_is_cancelled_with_its_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Cancelling a run reaches the call that waited first as well as the calls it started."""
    cancelled: list[str] = []

    async def execute(call: Call) -> None:
        try:
            await trio.sleep(5)
        except trio.Cancelled:
            cancelled.append(call.name)
            raise

    with trio.move_on_after(1):
        await ToolScheduler().run([R("a"), R("b"), R("c")], execute, read_only=is_read_only)
    assert sorted(cancelled) == ["a", "b", "c"]
    assert trio.current_time() == 1


def test_closing_a_carried_call_closes_the_call() -> None:
    """A call carried by hand is closed with the coroutine carrying it (its ``finally`` runs
    then, not when the collector finds it)."""
    from runtime._scheduler import _go_on, _stepping

    closed: list[bool] = []

    @types.coroutine
    def pause() -> Generator[str, None, None]:
        yield "trap"

    async def step() -> None:
        try:
            await pause()
            await pause()
        finally:
            closed.append(True)

    stepping = _stepping()
    stepping.send(None)
    carrier = _go_on(stepping, stepping.send(step()))
    assert carrier.send(None) == "trap"
    carrier.close()
    assert closed == [True]


#: how a drawn call ends: at once without waiting, after a schedule point, or after a sleep
kinds = st.sampled_from(["now", "checkpoint", 0, 1, 2, 3])


@settings(deadline=None, max_examples=500)
@given(st.lists(st.tuples(st.booleans(), kinds), min_size=1, max_size=12))
def test_calls_stepped_by_hand_end_as_with_a_task_each(spec: list[tuple[bool, Any]]) -> None:
    """Calls that return without waiting mixed with calls that wait, in a drawn order: each
    starts, ends and is reported when it would with a task of its own per call in each run;
    in a read-only run the calls up to the first that waits run in the caller's task, in
    order, and each call after it in a task of its own."""
    calls = [Call(f"c{i}", ro) for i, (ro, _) in enumerate(spec)]
    kind = {c.name: k for c, (_, k) in zip(calls, spec, strict=True)}

    async def main(scheduled: bool) -> dict[str, Any]:
        seen: dict[str, Any] = {"start": {}, "end": {}, "done": {}, "task": {}, "order": []}

        async def execute(call: Call) -> str:
            seen["start"][call.name] = trio.current_time()
            seen["task"][call.name] = trio.lowlevel.current_task()
            seen["order"].append(call.name)
            how = kind[call.name]
            if how == "checkpoint":
                await trio.lowlevel.cancel_shielded_checkpoint()
            elif how != "now":
                await trio.sleep(how)
            seen["end"][call.name] = trio.current_time()
            return call.name.upper()

        async def on_complete(index: int, call: Call, result: str) -> None:
            assert calls[index] is call and result == call.name.upper()
            seen["done"][call.name] = trio.current_time()

        if scheduled:
            scheduler = ToolScheduler(max_concurrency=len(calls))
            seen["results"] = await scheduler.run(
                calls, execute, read_only=is_read_only, on_complete=on_complete
            )
        else:  # the reference: one task per call of a run, in a nursery
            seen["results"] = [None] * len(calls)

            async def one(i: int) -> None:
                seen["results"][i] = result = await execute(calls[i])
                await on_complete(i, calls[i], result)

            for run in partition([c.read_only for c in calls]):
                async with trio.open_nursery() as nursery:
                    for i in run:
                        nursery.start_soon(one, i)
        seen["caller"] = trio.lowlevel.current_task()
        return seen

    got = run_virtual(lambda: main(True))
    want = run_virtual(lambda: main(False))
    for key in ("results", "start", "end", "done"):
        assert got[key] == want[key], key
    for run in partition([c.read_only for c in calls]):
        names = [calls[i].name for i in run]
        waits = [n for n in names if kind[n] != "now"]
        stepped = names[: names.index(waits[0]) + 1] if waits else names
        assert got["order"][run.start : run.start + len(stepped)] == stepped
        assert all(got["task"][n] is got["caller"] for n in stepped)
        others = [got["task"][n] for n in names[len(stepped) :]]
        assert got["caller"] not in others and len(set(others)) == len(others)


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


async def test_no_calls_make_no_run() -> None:
    """An empty list of calls runs nothing and counts no run."""
    scheduler = ToolScheduler()
    assert await scheduler.run([], recorder()[1], read_only=is_read_only) == []
    assert scheduler.statistics() == SchedulerStatistics(0, 0, 0)


def test_max_concurrency_is_validated() -> None:
    """A scheduler needs at least one slot."""
    with pytest.raises(ValueError, match=r"^max_concurrency must be >= 1, got 0$"):
        ToolScheduler(max_concurrency=0)


@settings(deadline=None, max_examples=1_000)
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

    results, spans, elapsed = run_virtual(main)
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


def counting(limit: int) -> tuple[dict[str, Any], Callable[[Call], Awaitable[str]]]:
    """An execute that records each call's start, how often it ran, which have finished and
    the most running at once; a call named ``...!`` fails after its sleep."""
    seen: dict[str, Any] = {"starts": {}, "runs": Counter(), "done": set(), "running": 0, "most": 0}

    async def execute(call: Call) -> str:
        seen["runs"][call.name] += 1
        seen["starts"][call.name] = trio.current_time()
        seen["running"] += 1
        seen["most"] = max(seen["most"], seen["running"])
        assert seen["running"] <= limit, f"{seen['running']} calls running, limit {limit}"
        try:
            await trio.sleep(call.duration)
        finally:
            seen["running"] -= 1
        seen["done"].add(call.name)
        if call.name.endswith("!"):
            raise ValueError(call.name)
        return call.name.upper()

    return seen, execute


async def watch_slots(calls: list[Call], limit: int, seen: dict[str, Any]) -> None:
    """Between the calls' integer start/end instants, check that no slot is idle while a call
    of the current run waits: exactly min(limit, unfinished calls of the run) are running."""
    runs = partition([c.read_only for c in calls])
    origin = trio.current_time()
    for k in itertools.count():
        await trio.sleep_until(origin + k + 0.25)
        active = next((r for r in runs if any(calls[i].name not in seen["done"] for i in r)), None)
        if active is None:
            return
        unfinished = sum(1 for i in active if calls[i].name not in seen["done"])
        assert seen["running"] == min(limit, unfinished), (k, seen["running"], unfinished)


scheduler_calls = st.lists(
    st.tuples(st.booleans(), st.integers(min_value=0, max_value=4)), min_size=1, max_size=14
)


@settings(deadline=None, max_examples=1_000)
@given(
    spec=scheduler_calls,
    limit=st.integers(min_value=1, max_value=5),
    cut=st.one_of(st.none(), st.integers(0, 12).map(lambda n: n + 0.5)),
    failing=st.one_of(st.none(), st.integers(0, 13)),
)
def test_a_drawn_concurrency_limit_is_respected_and_every_call_runs_once(
    spec: list[tuple[bool, int]], limit: int, cut: float | None, failing: int | None
) -> None:
    """Under a drawn limit no more calls run at once than it allows and no slot idles while a
    call waits; every call runs exactly once and results come in call order; a run cut mid-way
    or failing runs nothing twice, starts nothing after, and leaves every slot free."""
    first = [Call(f"a{i}" + ("!" if i == failing else ""), ro, d) for i, (ro, d) in enumerate(spec)]
    second = [Call(f"b{i}", ro, d) for i, (ro, d) in enumerate(spec)]

    async def main() -> tuple[dict[str, Any], list[str], float, BaseException | None]:
        seen, execute = counting(limit)
        seen["stats"] = []
        scheduler = ToolScheduler(max_concurrency=limit)
        error: BaseException | None = None
        with trio.move_on_after(cut if cut is not None else math.inf):
            try:
                await scheduler.run(first, execute, read_only=is_read_only)
            except* ValueError as group:  # bare from a lone call, grouped from a run
                error = group
        t1 = trio.current_time()
        seen["stats"].append(scheduler.statistics())
        async with trio.open_nursery() as nursery:  # the same scheduler: all slots came back
            nursery.start_soon(watch_slots, second, limit, seen)
            results = await scheduler.run(second, execute, read_only=is_read_only)
        seen["stats"].append(scheduler.statistics())
        return seen, results, t1, error

    seen, results, t1, error = run_virtual(main)
    assert results == [c.name.upper() for c in second]
    assert all(seen["runs"][c.name] == 1 for c in second)
    assert all(seen["runs"][c.name] <= 1 for c in first)
    assert seen["most"] <= limit
    ran = [c for c in first if seen["runs"][c.name]]
    if cut is not None:
        assert all(seen["starts"][c.name] <= cut for c in ran)
    bad = next((c for c in ran if c.name.endswith("!") and c.name in seen["done"]), None)
    if bad is not None:
        failed_at = seen["starts"][bad.name] + bad.duration
        assert error is not None
        assert all(seen["starts"][c.name] <= failed_at for c in ran)
    elif error is None and (cut is None or t1 < cut):
        assert ran == first  # nothing stopped the first run: it ran whole
    # the limit is met whenever a read-only run has more calls that wait than slots
    runs = partition([c.read_only for c in second])
    waiting = [sum(1 for i in r if second[i].duration) for r in runs]
    if all(c.duration for c in second):
        assert seen["most"] == min(limit, max(waiting))
    # the statistics count what happened
    before, after = seen["stats"]
    assert after.calls_total == sum(seen["runs"].values())
    assert after.calls_total - before.calls_total == len(second)
    assert after.runs_total - before.runs_total == len(runs)
    assert after.max_parallel_seen == seen["most"]


def expected_with_cut(
    calls: list[Call], limit: int, close: float
) -> tuple[dict[str, float], dict[str, float], float]:
    """A model of the scheduler whose waits are cut at ``close`` (never an integer instant):
    run by run, calls take free slots in call order; a finishing call hands its slot to the
    first waiting one; waits still going at ``close``, or begun after it, end at once. Returns
    when each executed call starts, when each cut call is answered, and when all is done."""
    starts: dict[str, float] = {}
    cuts: dict[str, float] = {}
    now = 0.0
    for run in partition([c.read_only for c in calls]):
        pending = [calls[i] for i in run]
        ends: list[float] = []
        while pending:
            while pending and len(ends) < limit:
                call = pending.pop(0)
                starts[call.name] = now
                ends.append(now + call.duration)
            if not pending:
                break
            ends.sort()
            if ends[0] > close:  # still waiting at the cut (or waiting begun after it)
                for call in pending:
                    cuts[call.name] = max(close, now)
                pending = []
                break
            now = ends.pop(0)
        now = max([now, *ends, *(cuts[calls[i].name] for i in run if calls[i].name in cuts)])
    return starts, cuts, now


@settings(deadline=None, max_examples=1_000)
@given(
    read_only=st.lists(st.booleans(), min_size=1, max_size=14),
    duration=st.integers(1, 3),
    limit=st.integers(min_value=1, max_value=4),
    close=st.integers(0, 12).map(lambda n: n + 0.5),
)
def test_waits_cut_at_a_drawn_instant_end_there_and_nothing_cut_runs(
    read_only: list[bool], duration: int, limit: int, close: float
) -> None:
    """With waits cut at a drawn instant (the budget's trip): every call either runs once, when
    the model says, or is answered ``if_cut`` once, at the cut (or as soon as it would wait
    after it), never both; the limit holds and every slot comes back. (The calls of a run
    start in no set order, so they all take one drawn time here, at least a time unit: a call
    that never waits may free its slot before the next one asks.)"""
    calls = [Call(f"a{i}", ro, duration) for i, ro in enumerate(read_only)]

    async def main() -> tuple[dict[str, Any], list[str], dict[str, list[float]], float]:
        seen, execute = counting(limit)
        gate = Gate()
        answered: dict[str, list[float]] = {}

        async def if_cut(call: Call) -> str:
            return f"cut {call.name}"

        async def on_complete(index: int, call: Call, result: str) -> None:
            assert calls[index] is call
            answered.setdefault(call.name, []).append(trio.current_time())

        scheduler = ToolScheduler(max_concurrency=limit)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_close_at, gate, close)
            results = await scheduler.run(
                calls, execute, read_only=is_read_only, on_complete=on_complete,
                wait_scope=gate, if_cut=if_cut,
            )  # fmt: skip
            done = trio.current_time()
            nursery.cancel_scope.cancel()
        seen["first_starts"] = dict(seen["starts"])
        again = await scheduler.run(calls, execute, read_only=is_read_only)  # all slots free
        seen["again"] = again
        seen["stats"] = scheduler.statistics()
        return seen, results, answered, done

    seen, results, answered, done = run_virtual(main)
    starts, cuts, end = expected_with_cut(calls, limit, close)
    cut = {c.name for c, r in zip(calls, results, strict=True) if r == f"cut {c.name}"}
    assert results == [f"cut {c.name}" if c.name in cut else c.name.upper() for c in calls]
    for run in partition(read_only):  # which calls of a run wait is not set: how many is
        names = [calls[i].name for i in run]
        assert sum(n in cut for n in names) == sum(n in cuts for n in names)
        assert sorted(seen["first_starts"][n] for n in names if n not in cut) == sorted(
            starts[n] for n in names if n in starts
        )
        assert sorted(answered[n][0] for n in names if n in cut) == sorted(
            cuts[n] for n in names if n in cuts
        )
    assert {c.name: seen["runs"][c.name] for c in calls} == {
        c.name: 1 if c.name in cut else 2 for c in calls
    }  # once in the run with cuts (unless cut), once again after
    assert all(len(answered[c.name]) == 1 for c in calls)
    assert done == end
    assert seen["again"] == [c.name.upper() for c in calls]
    assert seen["most"] <= limit
    assert seen["stats"].calls_total == 2 * len(calls) - len(cut)
