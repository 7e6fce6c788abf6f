"""One budget across the tree: soft cap consequences, the hard cap, property-tested bounds."""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import msgspec
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from agents import (
    AgentDefinition,
    AgentOptions,
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)
from agents.testing import ScriptedBackend, Step, text, tool_use, usage
from agents.testing.probe import ProbeBackend, check_hard_cap, check_soft_cap, crossing_of
from agents.testing.strategies import (
    HONEST_BILLING,
    PROBE_MODEL,
    PROBE_PRICING,
    PROBE_READ_TOOL,
    PROBE_TOOL,
    NodeSpec,
    StepSpec,
    TreeSpec,
    caps,
    trees,
)
from tests.virtual import DEADLOCK_AFTER, run_virtual

from .helpers import collect, result_of
from .test_cancellation import live_tasks
from .test_subagents import spawn, tool_results

PRICING = {"m": {"input": 1.0, "output": 0.0}}  # $1 per million input tokens: easy sums
AGENTS = {
    "worker": AgentDefinition(description="w", prompt="work"),
    "sleeper": AgentDefinition(description="s", prompt="sleep"),
}


async def test_crossing_the_soft_cap_stops_everything_at_once(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """After the crossing response: its tools don't run, running background agents are cancelled
    in the same instant, later spawns are refused, the result is error_max_budget_usd."""
    bg = spawn("sleeper", background=True)
    late_spawn = spawn("worker")
    backend = ScriptedBackend(
        {
            "main": [
                Step([bg], usage=usage(100_000, 0)),  # $0.10
                Step([tool_use("Glob", {"pattern": "*"}), late_spawn], usage=usage(500_000, 0),
                     latency=2),  # crosses $0.5 at t=2
            ],
            "sleeper": [Step([text("zzz")], usage=usage(1_000, 0), latency=100)],
        }
    )  # fmt: skip
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, model="m", pricing=PRICING,
        max_budget_usd=0.5,
    )  # fmt: skip
    t0 = trio.current_time()
    messages, error = await collect("go", options)
    results = tool_results(messages)
    assert results[late_spawn.id].content == "Budget limit reached"
    assert all(r.content == "Budget limit reached" for k, r in results.items() if k != bg.id)
    main_result = next(m for m in messages if isinstance(m, ResultMessage))
    assert main_result.subtype == "error_max_budget_usd"
    assert main_result.errors == ["Reached maximum budget ($0.5)"]
    assert main_result.total_cost_usd == pytest.approx(0.6)
    assert main_result.usage["input_tokens"] == 100_000  # the crossing response is left out
    note = next(
        m for m in messages if isinstance(m, SystemMessage) and m.subtype == "task_notification"
    )
    assert note.data["status"] == "stopped"
    assert trio.current_time() - t0 == pytest.approx(2.0)  # the sleeper died at the crossing
    assert error is not None and error.subtype == "error_max_budget_usd"


async def test_the_hard_cap_refuses_a_request_that_might_not_fit(project: Path) -> None:
    """budget_mode='reserve': a request that might not fit, even with its max_tokens lowered to
    min_output_tokens, never starts."""
    backend = ScriptedBackend(
        [Step([tool_use("Glob", {"pattern": "*"})], usage=usage(100, 3_900)), Step([text("x")])]
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, model="m", tools=["Glob"],
        pricing={"m": {"input": 1, "output": 12}}, max_budget_usd=0.06, max_tokens=4_000,
        budget_mode="reserve",
    )  # fmt: skip
    messages, _ = await collect("go", options)
    result = result_of(messages)
    # after the first response ($0.0469) $0.0131 is left: less than 1 024 tokens of output
    # ($0.0123) plus the request's input, so the second request never starts
    assert result.subtype == "error_max_budget_usd"
    assert len(backend.requests) == 1
    assert result.total_cost_usd == pytest.approx(0.0469)




@attrs.define
class TreeRun:
    """What a property needs from one run of a drawn tree."""

    probe: ProbeBackend
    total: float | None = None
    results: list[ResultMessage] = attrs.Factory(list)
    overrun: float = 0.0
    #: how many budget_overrun messages the stream carried
    overruns: int = 0
    summary: dict[str, Any] = attrs.Factory(dict)
    #: when the last message was seen (Trio time)
    ended: float = 0.0
    #: the probe's sequence number when the main agent's first budget result was seen
    budget_end: int | None = None
    tasks_before: int = 0
    tasks_after: int = 0
    #: tool call id → (tool name, when the response asking for it was seen, the call's key)
    calls: dict[str, tuple[str, float, str]] = attrs.Factory(dict)
    #: each response's tool calls, in order: message id → [(call id, tool name)]
    turns: dict[str, list[tuple[str, str]]] = attrs.Factory(dict)
    #: tool call id → (its result's content, when it was seen)
    answers: dict[str, tuple[Any, float]] = attrs.Factory(dict)
    #: when each of ``results`` was seen
    result_times: list[float] = attrs.Factory(list)


def run_tree(tree: TreeSpec, cap: float, mode: str) -> TreeRun:
    """Run a tree under a cap in virtual time, collecting its results, overruns and summary."""
    out: dict[str, Any] = {}

    async def main() -> None:
        from agents.backends.pricing import default_price_table

        probe = ProbeBackend(
            tree.backend(), prices=default_price_table().with_overrides(PROBE_PRICING)
        )
        options = tree.options(probe, max_budget_usd=cap, budget_mode=mode, cwd=out["cwd"])
        run = out["run"] = TreeRun(probe=probe, tasks_before=live_tasks())
        try:
            async for message in query(prompt="go", options=options):
                if isinstance(message, ResultMessage):
                    run.results.append(message)
                    run.result_times.append(trio.current_time())
                    if message.subtype == "error_max_budget_usd" and run.budget_end is None:
                        run.budget_end = probe.mark()
                elif isinstance(message, AssistantMessage):
                    turn = run.turns.setdefault(message.message_id, [])
                    for block in message.content:
                        if isinstance(block, ToolUseBlock):
                            turn.append((block.id, block.name))
                            key = str(block.input.get("call", ""))
                            run.calls[block.id] = (block.name, trio.current_time(), key)
                elif isinstance(message, UserMessage) and isinstance(message.content, list):
                    for block in message.content:
                        if isinstance(block, ToolResultBlock):
                            run.answers[block.tool_use_id] = (block.content, trio.current_time())
                elif isinstance(message, SystemMessage) and message.subtype == "budget_overrun":
                    run.overrun += message.data["actual_usd"] - message.data["reserved_usd"]
                    run.overruns += 1
                elif isinstance(message, SystemMessage) and message.subtype == "session_summary":
                    run.summary = dict(message.data)
                    run.total = message.data["total_cost_usd"]
                    assert sum(message.data["cost_by_agent"].values()) == pytest.approx(run.total)
        except Exception as exc:  # an error result raises ResultError: that is fine here
            assert type(exc).__name__ == "ResultError", exc
        run.ended = trio.current_time()
        run.tasks_after = live_tasks()

    import tempfile

    with tempfile.TemporaryDirectory() as cwd:
        out["cwd"] = cwd
        run_virtual(main)
    run: TreeRun = out["run"]
    records = run.probe.records
    # nothing is left booked, and every response was charged exactly once (a request that
    # failed before delivering anything is charged only if it held a booking, to settle it)
    assert run.summary["reserved_usd"] == 0
    charged = [r for r in records if r.usage or mode == "reserve"]
    assert run.summary["charges"] == len(charged), (run.summary["charges"], len(charged))
    # every overrun is reported, whatever ended its response (cut, cancelled, complete)
    assert run.overruns == run.summary["overruns"], (run.overruns, run.summary["overruns"])
    # one exhausted state: once the main agent ends on the budget, nothing starts any more and
    # no later result of the query is a success
    if run.budget_end is not None:
        assert [r for r in records if r.start_seq > run.budget_end] == []
        first = next(i for i, r in enumerate(run.results) if r.subtype == "error_max_budget_usd")
        assert all(r.subtype != "success" for r in run.results[first:])
    event("no request started" if not records else "requests started")
    if run.total is not None and run.total >= cap:
        event("the cap was crossed")
    if any(not r.completed and r.usage for r in records):
        event("a response was cut after delivering usage")
    if run.overrun:
        event("an overrun was reported")
    if any(r.subtype == "error_max_budget_usd" for r in run.results):
        event("the run ended on the budget")
    return run


def in_background(tree: TreeSpec) -> Callable[[str], bool]:
    """agent id → whether the agent runs in a background subtree (cancelled at the crossing)."""
    background = {n.name for n in tree.nodes if n.background and n is not tree.root}
    return lambda agent_id: any(_node_name(part) in background for part in agent_id.split("/")[1:])


#: how a background agent's notification summary starts when it ended on the budget (one
#: cancelled with a parent the interrupt cut is ``stopped``)
INTERRUPTED_ENDS = ("error_max_budget_usd",)

#: the tree properties run this many examples each (the trees are small, virtual time is free);
#: ``BUDGET_PROPERTY_EXAMPLES`` lowers it for a quick local run, never in CI
PROPERTY = settings(
    max_examples=int(os.environ.get("BUDGET_PROPERTY_EXAMPLES", "1000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPERTY
@given(data=st.data(), tree=trees(max_agents=6))
def test_soft_cap_bound_holds_for_random_trees(data: st.DataObject, tree: TreeSpec) -> None:
    """total < cap + in-flight responses' cost; no response or tool starts after the crossing;
    background agents end at the crossing; the ledger equals what the responses delivered;
    nothing is left reserved; no task remains."""
    cap = data.draw(caps(tree), label="cap")
    if data.draw(st.sampled_from([True, False]), label="crossed at a drawn response"):
        cap = data.draw(cap_at_a_response(tree), label="cap at a response") or cap
    run = run_tree(tree, cap, "soft")
    assert run.total is not None
    check_soft_cap(run.probe.records, cap, run.total, run.probe.tool_starts, in_background(tree))
    assert run.tasks_after == run.tasks_before
    check_nothing_waits_past_thecrossing_of(run, cap)
    check_the_crossing_cuts_every_wait(run, cap)


def cap_at_a_response(tree: TreeSpec) -> st.SearchStrategy[float | None]:
    """A soft cap that the tree's run crosses at the end of a drawn response: often one that
    ends while a tool call waits for a slot or for its turn, or while a prompt, a hook or a
    tool runs; else any. A run without a cap says what the responses cost in the order they
    end, and when the waits are; under a soft cap the run is the same up to the crossing (but
    for the jitter of retry backoffs). None when no response costs anything."""
    free = run_tree(tree, 1e9, "soft")
    probe = free.probe
    records = sorted(probe.records, key=lambda r: r.end_seq)
    spent = [round(s, 9) for s in itertools.accumulate(r.cost for r in records)]
    ends = {t.call: t.at for t in probe.tool_ends}
    windows = [(w.start, w.end) for w in probe.waits]
    windows += [(t.at, ends[t.call]) for t in probe.tool_starts if t.call in ends]
    # a call of a response starting after another had: it waited (for a slot, or its turn)
    first: dict[str, float] = {}
    queued = []
    for t in probe.tool_starts:
        response = t.call.rpartition(".")[0]
        if first.setdefault(response, t.at) < t.at:
            queued.append((first[response], t.at))

    def inside(spans: list[tuple[float, float]]) -> list[float]:
        return [
            s for r, s in zip(records, spent, strict=True)
            if s > 1e-9 and any(a < r.end < b for a, b in spans)
        ]  # fmt: skip

    ending = [(w.start, w.end) for w in probe.waits if w.kind == "Stop"]  # the main agent's end
    options = [inside(queued), inside(ending), inside(windows), [s for s in spent if s > 1e-9]]
    drawn = [st.sampled_from(o) for o in options if o]
    return st.one_of(*drawn) if drawn else st.none()


def check_nothing_waits_past_thecrossing_of(run: TreeRun, cap: float) -> None:
    """After the crossing only the responses then in flight and the tool calls then running go
    on: every other wait (a retry backoff, a permission prompt, a hook, a call queued for a
    tool slot) is cut at the crossing, so the query is over once those are."""
    records = run.probe.records
    crossing = crossing_of(records, cap)
    if crossing is None:
        return
    event("the cap was crossed mid-run")
    busy = [crossing.end, *(r.end for r in records), *(t.at for t in run.probe.tool_ends)]
    assert run.ended <= max(busy) + 1e-9, f"the query ended at {run.ended}, {max(busy)} expected"


#: a call the budget stopped is answered with this
BUDGET_TEXT = "Budget limit reached"
PROBE_TOOLS = (PROBE_TOOL, PROBE_READ_TOOL)


def check_the_crossing_cuts_every_wait(run: TreeRun, cap: float) -> None:
    """At the crossing every wait ends: no permission prompt or hook completes after it (one
    started later is cut at once); a probe tool call asked for before it that never ran (its
    prompt or its wait for a tool slot cut) is answered then; a PostToolUse hook cut there
    could not vet its call's output, which is not passed on; a Stop hook cut there ends the
    main agent on the budget."""
    crossing = crossing_of(run.probe.records, cap)
    if crossing is None:
        return
    at = crossing.end
    for wait in run.probe.waits:
        if wait.completed:
            assert wait.end <= at + 1e-9, f"{wait} completed after the crossing at {at}"
            continue
        assert wait.end <= max(wait.start, at) + 1e-9, f"{wait} outlived the crossing at {at}"
        if wait.start > at + 1e-9:
            continue
        event(f"a {wait.kind} wait was cut at the crossing")
        if wait.kind == "PostToolUse" and wait.tool_use_id in run.answers:
            content, _ = run.answers[wait.tool_use_id]
            assert content == BUDGET_TEXT, f"{wait}: the unvetted output was passed on"
        if wait.kind == "Stop":
            ends = [r for r, t in zip(run.results, run.result_times, strict=True) if t >= at]
            assert ends and ends[0].subtype == "error_max_budget_usd", (wait, ends[:1])
    # a call's blocks are seen before its response ends: one in flight at the crossing ends
    # later, and its calls are refused then
    ends = [r.end for r in run.probe.records]
    ran = {t.call for t in run.probe.tool_starts}
    for turn in run.turns.values():
        started = at  # when the call's run could start: the crossing, or the run before's end
        for run_calls in _runs(turn):
            for call_id, name in run_calls:
                _, asked, key = run.calls[call_id]
                if name not in PROBE_TOOLS or asked >= at or call_id not in run.answers:
                    continue
                if key in ran:  # it ran (a PostToolUse hook cut once it ended is checked above)
                    continue
                if any(k in ran for _, k in [(c, run.calls[c][2]) for c, _ in run_calls]):
                    event("a call waited for a slot at the crossing")
                content, answered = run.answers[call_id]
                if content == BUDGET_TEXT:
                    event("a call asked for before the crossing was stopped by it")
                    late = answered > max(started, at) + 1e-9
                    late = late and all(abs(answered - end) > 1e-9 for end in ends)
                    assert not late, f"call {call_id} answered at {answered}, after {at}"
            done = [run.answers[c][1] for c, _ in run_calls if c in run.answers]
            started = max(done, default=started)


def _runs(calls: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The calls of one response as the scheduler runs them: consecutive read-only calls
    together, every other call alone, one run after another."""
    runs: list[list[tuple[str, str]]] = []
    for call in calls:
        if call[1] == PROBE_READ_TOOL and runs and runs[-1][-1][1] == PROBE_READ_TOOL:
            runs[-1].append(call)
        else:
            runs.append([call])
    return runs


@PROPERTY
@given(data=st.data(), tree=trees(max_agents=6))
def test_hard_cap_is_never_exceeded(data: st.DataObject, tree: TreeSpec) -> None:
    """budget_mode='reserve': total cost <= cap under any spawn shape, latency and fault; with
    a backend billing more than a request can hold, every overrun is reported and the total
    is within the cap plus what the overruns charged above their bookings."""
    cap = data.draw(caps(tree), label="cap")
    run = run_tree(tree, cap, "reserve")
    assert run.total is not None
    records = run.probe.records
    if tree.billing is None or tree.billing <= HONEST_BILLING:
        assert run.overrun == 0  # the worst case is an upper bound of what the API bills
        check_hard_cap(records, cap, run.total)
    else:  # a lying backend: its first turn that delivers anything overruns, and is reported
        if any(r.usage and r.purpose == "turn" for r in records):
            assert run.overruns >= 1
        check_hard_cap(records, cap, run.total, run.overrun)
    assert run.tasks_after == run.tasks_before


@PROPERTY
@given(tree=trees(max_agents=6, faults=False, billing=False, side_requests=False))
def test_without_a_cap_every_scripted_response_is_charged_once(tree: TreeSpec) -> None:
    """No cap: every step runs, and the ledger is exactly the sum of the scripted costs.

    A parent answers its background children's notifications in one to ``b`` turns (those
    queued behind a busy parent share one), each costing the node's ``final`` step."""
    run = run_tree(tree, 1e9, "soft")
    assert all(r.completed for r in run.probe.records)
    prices = PROBE_PRICING[PROBE_MODEL]

    def cost(step: Any) -> float:
        tokens = step.input_tokens * prices["input"] + step.output_tokens * prices["output"]
        return float(tokens) / 1e6

    responses = Counter(_node_name(r.agent_id) for r in run.probe.records)
    expected = 0.0
    for node in tree.nodes:
        background = sum(c.background for s in node.steps for c in s.children)
        notes = responses[node.name if node is not tree.root else "main"] - len(node.steps) - 1
        assert min(background, 1) <= notes <= background
        expected += sum(cost(s) for s in node.steps) + cost(node.final) * (1 + notes)
    assert run.total == pytest.approx(expected, abs=1e-9)
    # the tree's token counts per model add up every response's
    model_usage = run.results[-1].model_usage[PROBE_MODEL]
    for key in ("input_tokens", "output_tokens"):
        assert model_usage[key] == sum(r.usage.get(key, 0) for r in run.probe.records), key


def _node_name(agent_id: str) -> str:
    """``main/n1-1/n3-1`` → ``n3``; ``main`` → ``main``."""
    return agent_id if agent_id == "main" else agent_id.rsplit("/", 1)[-1].rsplit("-", 1)[0]


def _big_tools() -> Any:
    """A read-only ``look`` tool: ``{"key": "big"}`` answers with 20 000 characters."""
    from agents import create_sdk_mcp_server, tool
    from agents.tools.base import ToolAnnotations

    @tool("look", "look at something", {"key": str}, annotations=ToolAnnotations(readOnlyHint=True))
    async def look(args: dict[str, Any]) -> dict[str, Any]:
        body = "x" * 20_000 if args["key"] == "big" else f"seen {args['key']}"
        return {"content": [{"type": "text", "text": body}]}

    return create_sdk_mcp_server("t", "1.0", [look])


def _request_bytes(request: Any) -> int:
    parts = (request.messages, request.system, request.tools)
    return sum(len(msgspec.json.encode(part)) for part in parts)


class _Booking:
    """Records every amount booked on a ledger (``Ledger.try_reserve_request``, the budget
    gate's booking, patched in by the tests below)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from runtime import Ledger

        self.amounts: list[float] = []
        try_reserve_request = Ledger.try_reserve_request

        def recording(ledger: Ledger, agent_id: str, **request: Any) -> Any:
            reservation = try_reserve_request(ledger, agent_id, **request)
            self.amounts.append(0.0 if reservation is None else reservation.amount)
            return reservation

        monkeypatch.setattr(Ledger, "try_reserve_request", recording)


class _BookedBackend:
    """Notes, for each request, how many bookings had been made when it started."""

    max_retries = 0

    def __init__(self, inner: ScriptedBackend, booking: _Booking) -> None:
        self.inner, self.booking = inner, booking
        self.sent: list[tuple[int, Any]] = []

    def stream(self, request: Any) -> Any:
        self.sent.append((len(self.booking.amounts), request))
        return self.inner.stream(request)

    def check_every_request_was_booked(self) -> None:
        """Each request started after a booking of its own, and (at $1 per million input tokens,
        a token being at least one byte) the booked dollars times a million are at least the
        request's size in bytes."""
        previous = 0
        for count, request in self.sent:
            assert count > previous, f"{request.purpose} request started without a booking"
            previous = count
            worst = self.booking.amounts[count - 1]
            assert worst * 1e6 >= _request_bytes(request), (request.purpose, worst * 1e6)


async def test_the_reserved_worst_case_covers_the_request_sent_after_a_compaction(
    project: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """budget_mode='reserve': each request, the summary one included, starts after a booking of
    a worst case that covers the request as sent, also when compaction has just rewritten the
    history into as many entries as it had at the previous request (the big tool result kept,
    the small prefix summarized away)."""
    scripted = ScriptedBackend(
        {
            "main": [
                Step([tool_use("mcp__t__look", {"key": "a"})], usage=usage(100, 10)),
                Step([tool_use("mcp__t__look", {"key": "big"})], usage=usage(200, 10)),
                Step([text("done")], usage=usage(300, 10)),
            ],
            "compact": [Step([text("the summary")], usage=usage(100, 10))],
        }
    )
    backend = _BookedBackend(scripted, _Booking(monkeypatch))
    options = AgentOptions(
        cwd=str(project), backend=backend, tools=[], model="m",  # type: ignore[arg-type]
        pricing={"m": {"input": 1.0, "output": 0.0, "context_window": 4_000}},
        mcp_servers={"t": _big_tools()}, max_budget_usd=100.0, budget_mode="reserve",
    )  # fmt: skip
    _, error = await collect("go", options)
    assert error is None
    assert [r.purpose for r in scripted.requests] == ["turn", "turn", "compact", "turn"]
    assert len(scripted.requests[-1].messages) == 3  # as many entries as at the request before
    backend.check_every_request_was_booked()


async def test_the_auto_mode_classifier_request_is_booked_in_reserve_mode(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """budget_mode='reserve': auto mode's classifier request, like any, starts only after its
    worst case is booked."""
    scripted = ScriptedBackend(
        {
            "main": [Step([tool_use("Bash", {"command": "echo hi"})]), Step([text("done")])],
            "classifier": [Step([text("yes")])],
        }
    )
    backend = _BookedBackend(scripted, _Booking(monkeypatch))
    options = AgentOptions(
        cwd=str(project), backend=backend, model="m",  # type: ignore[arg-type]
        pricing={"m": {"input": 1.0, "output": 0.0}}, permission_mode="auto",
        max_budget_usd=100.0, budget_mode="reserve",
    )  # fmt: skip
    _, error = await collect("go", options)
    assert error is None
    assert [r.purpose for r in scripted.requests] == ["turn", "classifier", "turn"]
    backend.check_every_request_was_booked()


def run_tree_interrupted(
    tree: TreeSpec, cap: float, mode: str, interrupt_after: int | None, delay: float, clear: bool
) -> None:
    """Run a tree through ``AgentClient`` with partial messages on and a reader that takes
    ``delay`` per message behind a one-message output buffer (so the loop is often blocked
    handing over a stream event), interrupting the main agent once the reader has seen
    ``interrupt_after`` messages (the loop is then blocked on one a little further); then, if
    ``clear``, ``/clear`` while background agents may still be running and a prompt more.

    Checked: every response's delivered usage is charged exactly once, on the ledger current
    when it was sent (after a ``/clear``, the new ledger holds exactly what was sent after
    it); nothing stays booked; no agent fails (every message is read, to the last
    notification)."""
    from agents import AgentClient
    from agents._assembly import query as query_module
    from agents.backends.pricing import default_price_table

    out: dict[str, Any] = {}

    async def read(
        client: AgentClient,
        interrupt_after: int | None = None,
        whole: bool = False,
        until_session_is_not: str | None = None,
    ) -> None:
        seen = 0
        stream = client.receive_messages() if whole else client.receive_response()
        if until_session_is_not is not None:  # the /clear's own result: its new session id
            stream = client.receive_messages()
        async for message in stream:
            seen += 1
            if isinstance(message, ResultMessage):
                out["session_id"] = message.session_id
                if until_session_is_not is not None and message.session_id != until_session_is_not:
                    break
            if seen == interrupt_after:
                await client.interrupt()
            if isinstance(message, SystemMessage) and message.subtype == "budget_overrun":
                out["overruns"] = out.get("overruns", 0) + 1
            if isinstance(message, SystemMessage) and message.subtype == "task_notification":
                data = message.data  # an agent may end on the budget or stop, never crash
                ok = data["status"] != "failed" or data["summary"].startswith(INTERRUPTED_ENDS)
                assert ok, data
            if delay:
                await trio.sleep(delay)

    async def main() -> None:
        probe = ProbeBackend(
            tree.backend(), prices=default_price_table().with_overrides(PROBE_PRICING)
        )
        out["probe"] = probe
        options = tree.options(
            probe, max_budget_usd=cap, budget_mode=mode, cwd=out["cwd"],
            include_partial_messages=True,
        )  # fmt: skip
        async with AgentClient(options) as client:
            await client.query("go")
            await read(client, interrupt_after)
            out["clear_mark"] = None
            if clear:
                out["before_clear"] = probe.mark()
                if any(r.end_seq < 0 for r in probe.records):
                    out["in_flight"] = True
                await client.query("/clear")
                # (results of runs begun before it, for background agents' notifications,
                # may come first: the /clear's is the first with the new session id)
                await read(client, until_session_is_not=out["session_id"])
                out["clear_mark"] = probe.mark()
                await client.query("again")
                await read(client)
            with trio.move_on_after(DEADLOCK_AFTER / 10):  # the rest: background agents' ends
                await read(client, whole=True)
        out["summary"] = client.spend()

    import tempfile

    buffer = query_module.OUTPUT_BUFFER
    query_module.OUTPUT_BUFFER = 1
    try:
        with tempfile.TemporaryDirectory() as cwd:
            out["cwd"] = cwd
            run_virtual(main)
    finally:
        query_module.OUTPUT_BUFFER = buffer
    records = out["probe"].records
    if out.get("in_flight"):
        note(f"a request was in flight at the /clear ({mode})")
    mark = out["clear_mark"]
    summary = out["summary"]
    total = summary["total_cost_usd"]
    if mark is None:
        delivered = sum(r.cost for r in records)
        assert total == pytest.approx(delivered, abs=1e-9), (total, delivered)
    else:  # sent after the /clear's result: the new ledger's; before it was asked: the old's
        after = sum(r.cost for r in records if r.start_seq > mark)
        since = sum(r.cost for r in records if r.start_seq > out["before_clear"])
        assert after - 1e-9 <= total <= since + 1e-9, (after, total, since)
    assert summary["reserved_usd"] == 0
    if mark is None:  # every overrun reported, the interrupted response's too (one ledger)
        assert out.get("overruns", 0) == summary["overruns"], (out.get("overruns"), summary)
    if any(not r.completed and r.usage for r in records):
        note("a response was cut after delivering usage")


def note(text: str) -> None:
    """``hypothesis.event(text)`` in a property; nothing in a plain test."""
    if currently_in_test_context():
        event(text)


@PROPERTY
@given(
    data=st.data(),
    tree=trees(max_agents=4),
    mode=st.sampled_from(["soft", "reserve"]),
    # half without an interrupt: the /clear then often comes while background agents run
    interrupt_after=st.one_of(st.none(), st.sampled_from(range(2, 16))),  # uniform, not small
    delay=st.sampled_from([0.05, 0.5, 0.5]),
    clear=st.booleans(),
)
def test_an_interrupt_a_slow_reader_or_a_clear_loses_no_usage(
    data: st.DataObject,
    tree: TreeSpec,
    mode: str,
    interrupt_after: int | None,
    delay: float,
    clear: bool,
) -> None:
    """Whatever instant an interrupt lands at while a slow reader holds the stream back, and
    whether a /clear replaces the ledger while background requests are in flight, every
    response is charged once, on the ledger it was sent on, and nothing stays booked."""
    if not clear and data.draw(st.booleans(), label="lying"):  # an interrupt cuts an overrun
        tree = attrs.evolve(tree, billing=30.0)
    cap = data.draw(caps(tree), label="cap")
    if clear:  # background agents often still at work when the /clear comes (not cancelled
        # by a trip before it: half the time a budget that room for every request at once)
        tree = slow_background(tree, data.draw(st.sampled_from([600.0, 20.0, 0.0]), label="slow"))
        if data.draw(st.sampled_from([True, False]), label="roomy"):
            cap = 10 * (tree.one_request_worst_case() * len(tree.nodes) + tree.scripted_cost())
    run_tree_interrupted(tree, cap, mode, interrupt_after, delay, clear)


def slow_background(tree: TreeSpec, seconds: float) -> TreeSpec:
    """``tree`` with each background agent's final response ``seconds`` slower to start."""

    def slowed(node: NodeSpec) -> NodeSpec:
        steps = tuple(
            attrs.evolve(s, children=tuple(slowed(c) for c in s.children)) for s in node.steps
        )
        final = node.final
        if node.background:
            final = attrs.evolve(final, latency=final.latency + seconds)
        return attrs.evolve(node, steps=steps, final=final)

    return attrs.evolve(tree, root=slowed(tree.root))


def test_an_interrupt_landing_while_an_overrun_is_reported_does_not_lose_the_report() -> None:
    """Reserve mode, a backend billing thirty times the request's size: the first response
    is above its booking, and the interrupt lands after each number of messages in turn, one
    of them while the loop hands the complete response's budget_overrun report to a slow
    reader; every report still arrives (it is sent shielded)."""
    step = StepSpec(input_tokens=100, output_tokens=100, latency=0.0, event_latency=1.5, tools=1)
    final = StepSpec(input_tokens=100, output_tokens=100, latency=0.0, event_latency=1.5)
    tree = TreeSpec(root=NodeSpec("main", False, (step,), final), billing=30.0)
    for after in range(2, 12):
        run_tree_interrupted(tree, 5.0, "reserve", interrupt_after=after, delay=0.05, clear=False)
