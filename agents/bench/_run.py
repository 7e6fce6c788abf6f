"""Measuring parallel tool throughput: turns of k calls on the scripted backend, timed from the
message stream.

For each k the same turns run twice: with ``max_tool_concurrency=k`` (the calls of a read-only run
go at once) and with ``max_tool_concurrency=1`` (serial), so the speed-up is measured, not
assumed. A call's end is the arrival of its ``UserMessage`` result; its start follows from the
scheduling rule (a read-only run starts when everything before it has ended, at most
``concurrency`` of its calls at once; a mutating call starts alone after the previous one), the
turn's tool phase starting when its response's last block has arrived.

*Per-call overhead* is what the runtime adds to the tools' own cost: the turns' tool phases minus
the ideal schedule of each call's own duration, divided by the calls. A sleep tool's own
duration is its latency; another tool's is its best duration when called alone (a calibration
run, one call per turn: the best of several, as noise only ever adds time).

Times are taken where the stream's consumer sees the messages, so a tool that finishes before
the consumer runs again (a ``Read`` of a small file) shows as a few microseconds: a lower bound.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from .. import AgentOptions, AssistantMessage, ToolResultBlock, ToolUseBlock, UserMessage, query
from ..testing.scripted import ScriptedBackend, Step, text, tool_use
from ._workload import Call, Workload, load_workload

__all__ = ["BenchResult", "CallSample", "KResult", "run_bench"]


@attrs.frozen
class CallSample:
    """One call of a turn, in seconds from the start of the turn's tool phase."""

    name: str
    mutating: bool
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@attrs.frozen
class KResult:
    """The figures for one k: throughput, overhead, speed-up and latency percentiles."""

    k: int
    calls: int
    phase_s: float
    serial_phase_s: float
    ideal_s: float
    p50_ms: float
    p99_ms: float
    timeline: list[CallSample]

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.phase_s if self.phase_s else 0.0

    @property
    def serial_calls_per_s(self) -> float:
        return self.calls / self.serial_phase_s if self.serial_phase_s else 0.0

    @property
    def speedup(self) -> float:
        return self.serial_phase_s / self.phase_s if self.phase_s else 0.0

    @property
    def overhead_us(self) -> float:
        return (self.phase_s - self.ideal_s) / self.calls * 1e6 if self.calls else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "calls": self.calls,
            "calls_per_s": round(self.calls_per_s, 1),
            "serial_calls_per_s": round(self.serial_calls_per_s, 1),
            "speedup": round(self.speedup, 2),
            "per_call_overhead_us": round(self.overhead_us, 1),
            "p50_ms": round(self.p50_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            "phase_s": round(self.phase_s, 6),
            "serial_phase_s": round(self.serial_phase_s, 6),
            "ideal_s": round(self.ideal_s, 6),
        }


@attrs.frozen
class BenchResult:
    """A whole run: the workload, its settings, each tool's own duration and one row per k."""

    tools: str
    mutating_share: float
    model_latency_s: float
    turns: int
    own_duration_s: dict[str, float]
    rows: list[KResult]


Plan = list[list[Call]]


Clock = Callable[[], float]


async def _session(
    workload: Workload,
    plans: Plan,
    concurrency: int,
    cwd: Path,
    model_latency: float,
    clock: Clock = time.perf_counter,
) -> list[list[tuple[Call, float, float]]]:
    """Run ``plans`` (one list of calls per turn); each call with its phase start and end."""
    from ..sessions import FileSessionStore

    def respond(request: Any) -> Step:
        turn = len(request.messages) // 2
        if turn >= len(plans):
            return Step([text("done")])
        return Step([tool_use(c.name, c.input) for c in plans[turn]], latency=model_latency)

    calls: dict[str, tuple[int, int]] = {}  # tool_use_id -> (turn, position)
    started: dict[str, float] = {}  # message_id -> when its last block arrived
    turn_of: dict[str, int] = {}
    ends: dict[str, float] = {}
    async with FileSessionStore(cwd / ".sessions") as store:
        options = AgentOptions(
            cwd=str(cwd),
            backend=ScriptedBackend(respond),
            tools=workload.builtin_tools,
            mcp_servers=workload.mcp_servers,
            max_tool_concurrency=concurrency,
            permission_mode="bypassPermissions",
            session_store=store,
        )
        async for message in query(prompt="bench", options=options):
            now = clock()
            if isinstance(message, AssistantMessage):
                for block in message.content:
                    if isinstance(block, ToolUseBlock):
                        turn = turn_of.setdefault(message.message_id, len(turn_of))
                        calls[block.id] = (turn, sum(1 for t, _ in calls.values() if t == turn))
                        started[message.message_id] = now
            elif isinstance(message, UserMessage) and isinstance(message.content, list):
                for result in message.content:
                    if isinstance(result, ToolResultBlock):
                        if result.is_error:
                            raise RuntimeError(f"a bench call failed: {result.content}")
                        ends[result.tool_use_id] = now
    phase_start = {turn_of[m]: t for m, t in started.items()}
    out: list[list[tuple[Call, float, float]]] = [[] for _ in plans]
    for call_id, (turn, pos) in sorted(calls.items(), key=lambda kv: kv[1]):
        out[turn].append((plans[turn][pos], phase_start[turn], ends[call_id]))
    return out


def _schedule(turn: list[tuple[Call, float, float]], concurrency: int) -> list[CallSample]:
    """Each call's start under the scheduling rule, from the ends the stream reported."""
    samples: list[CallSample] = []
    if not turn:
        return samples
    t0 = turn[0][1]
    ready = 0.0  # when everything before the current run has ended
    i = 0
    while i < len(turn):
        if turn[i][0].mutating:
            call, _, end = turn[i]
            samples.append(CallSample(call.name, True, ready, end - t0))
            ready = max(ready, end - t0)
            i += 1
            continue
        j = i
        while j < len(turn) and not turn[j][0].mutating:
            j += 1
        run = turn[i:j]
        finished: list[float] = []
        for n, (call, _, end) in enumerate(run):
            start = ready if n < concurrency else max(ready, sorted(finished)[n - concurrency])
            samples.append(CallSample(call.name, False, start, end - t0))
            finished.append(end - t0)
        ready = max(ready, *finished)
        i = j
    return samples


def _ideal(turn: list[Call], own: dict[str, float], concurrency: int) -> float:
    """The tool phase if the runtime cost nothing: each call takes its own duration."""
    total = 0.0
    i = 0
    while i < len(turn):
        if turn[i].mutating:
            total += own[turn[i].name]
            i += 1
            continue
        j = i
        while j < len(turn) and not turn[j].mutating:
            j += 1
        durations = [own[c.name] for c in turn[i:j]]
        total += max(max(durations), sum(durations) / concurrency)
        i = j
    return total


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def _own_durations(
    workload: Workload, cwd: Path, repeats: int, clock: Clock
) -> dict[str, float]:
    """Each distinct call alone, ``repeats`` times: its best duration (or its known cost)."""
    distinct = {c.name: c for c in workload.read_only + workload.mutating}
    own = {n: c.intrinsic_s for n, c in distinct.items() if c.intrinsic_s is not None}
    todo = [c for n, c in distinct.items() if n not in own]
    if todo:
        plans = [[c] for c in todo for _ in range(repeats)]
        turns = await _session(workload, plans, 1, cwd, 0.0, clock)
        durations: dict[str, list[float]] = {}
        for turn in turns:
            for sample in _schedule(turn, 1):
                durations.setdefault(sample.name, []).append(sample.duration_s)
        own.update({n: min(d) for n, d in durations.items()})
    return {n: float(v) for n, v in own.items()}


async def run_bench(
    tools: str = "builtin",
    ks: Sequence[int] = (1, 2, 4, 8, 16),
    *,
    turns: int = 3,
    mutating: float = 0.0,
    model_latency: float = 0.0,
    workdir: str | Path | None = None,
    clock: Clock = time.perf_counter,
) -> BenchResult:
    """Measure the tool set ``tools`` at each concurrency ``k`` in ``ks``; see the module doc.

    ``mutating`` is the share of calls that mutate (0 to 1); ``model_latency`` the scripted
    model's latency per response (seconds); ``clock`` what times the calls (``trio.current_time``
    in a test with a virtual clock). Runs inside ``trio.run``::

        result = trio.run(run_bench, "sleep:100", [1, 4, 16])
        print(format_table(result))
    """
    if not ks or any(k < 1 for k in ks):
        raise ValueError(f"ks must be integers >= 1, got {list(ks)!r}")
    if turns < 1:
        raise ValueError(f"turns must be >= 1, got {turns}")
    if not 0 <= mutating <= 1:
        raise ValueError(f"mutating must be between 0 and 1, got {mutating}")
    with tempfile.TemporaryDirectory(prefix="agents-bench-", dir=workdir) as tmp:
        cwd = Path(tmp) / "project"
        cwd.mkdir()
        workload = load_workload(tools, cwd)
        await _session(workload, [workload.calls(2, 0.0, 0)], 2, cwd, 0.0, clock)  # warm-up
        own = await _own_durations(workload, cwd, max(3, turns), clock)
        rows = []
        for k in ks:
            plans = [workload.calls(k, mutating, t) for t in range(turns)]
            parallel = await _session(workload, plans, k, cwd, model_latency, clock)
            serial = await _session(workload, plans, 1, cwd, model_latency, clock)
            samples = [_schedule(turn, k) for turn in parallel]
            latencies = [s.duration_s * 1000 for turn in samples for s in turn]
            rows.append(
                KResult(
                    k=k,
                    calls=k * turns,
                    phase_s=sum(max(s.end_s for s in turn) for turn in samples),
                    serial_phase_s=sum(max(s.end_s for s in _schedule(turn, 1)) for turn in serial),
                    ideal_s=sum(_ideal(plan, own, k) for plan in plans),
                    p50_ms=_percentile(latencies, 0.5),
                    p99_ms=_percentile(latencies, 0.99),
                    timeline=samples[len(samples) // 2],
                )
            )
    return BenchResult(tools, mutating, model_latency, turns, own, rows)
