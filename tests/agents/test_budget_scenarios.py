"""The budget's guarantees, one measured failure each: every model request passes the budget
gate right before it is sent, the hard cap holds for every kind of request, delivered usage is
charged once whatever cuts a response, and a trip reaches every agent and every waiting point."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from agents import (
    AgentClient,
    AgentDefinition,
    AgentOptions,
    Message,
    PermissionResultAllow,
    ResultError,
    ResultMessage,
    SystemMessage,
    ToolResultBlock,
    UserMessage,
    query,
)
from agents.testing import ScriptedBackend, Step, text, tool_use, usage
from agents.testing.probe import ProbeBackend
from agents.testing.scripted import Fault
from agents.testing.strategies import BilledBackend

from .helpers import collect, result_of, timed_tools
from .test_subagents import spawn

AGENTS = {
    "worker": AgentDefinition(description="w", prompt="work"),
    "sleeper": AgentDefinition(description="s", prompt="sleep"),
    "researcher": AgentDefinition(description="r", prompt="research"),
    "auditor": AgentDefinition(description="a", prompt="audit"),
}


def probe_for(backend: Any, pricing: dict[str, Any]) -> ProbeBackend:
    from agents.backends.pricing import default_price_table

    return ProbeBackend(backend, prices=default_price_table().with_overrides(pricing))


def summary_of(messages: list[Message]) -> dict[str, Any]:
    return next(
        m.data for m in messages if isinstance(m, SystemMessage) and m.subtype == "session_summary"
    )


def system(messages: list[Message], subtype: str) -> list[SystemMessage]:
    return [m for m in messages if isinstance(m, SystemMessage) and m.subtype == subtype]


# -- the hard cap holds for every kind of request ---------------------------------------------


async def test_a_compaction_request_is_gated_by_the_hard_cap(project: Path) -> None:
    """Reserve mode: a compaction request books its worst case like a turn; one that does not
    fit never starts, so an automatic compaction cannot push the total past the cap."""
    backend = ScriptedBackend(
        {
            "main": [
                Step([tool_use("Glob", {"pattern": "*"})], usage=usage(10, 10)),
                Step([tool_use("Glob", {"pattern": "*"})], usage=usage(1_200, 500)),  # $0.0512
                Step([text("done")], usage=usage(100, 10)),
            ],
            "compact": [Step([text("summary")], usage=usage(100, 1_000))],  # $0.1001
        }
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, model="m", tools=["Glob"], max_budget_usd=0.15,
        pricing={"m": {"input": 1.0, "output": 100.0, "context_window": 2_000}},
        max_tokens=1_024, budget_mode="reserve", compact_threshold=0.5,
    )  # fmt: skip
    messages, _ = await collect("go", options)
    assert len(backend.requests) >= 1
    assert summary_of(messages)["total_cost_usd"] <= 0.15


async def test_an_auto_mode_classifier_request_is_gated_by_the_hard_cap(project: Path) -> None:
    """Reserve mode: the classifier's request books its worst case; when it does not fit it is
    not sent (the call goes on to be asked, and is denied without a callback)."""
    content = "x" * 4_000  # the classifier's prompt quotes it: a request of over 4 000 bytes
    backend = ScriptedBackend(
        {
            "main": [
                Step([tool_use("Write", {"file_path": "x.txt", "content": content})],
                     usage=usage(1_200, 1_000)),  # $0.022
                Step([text("done")], usage=usage(100, 10)),
            ],
            "classifier": [Step([text("yes")], usage=usage(4_000, 1))],  # $0.04
        }
    )  # fmt: skip
    options = AgentOptions(
        cwd=str(project), backend=backend, model="m", tools=["Write"], max_budget_usd=0.05,
        pricing={"m": {"input": 10.0, "output": 10.0}}, max_tokens=1_024,
        budget_mode="reserve", permission_mode="auto",
    )  # fmt: skip
    messages, _ = await collect("go", options)
    assert len(backend.requests) >= 1
    assert summary_of(messages)["total_cost_usd"] <= 0.05


async def test_the_hard_cap_holds_after_a_compaction_replaces_the_history(project: Path) -> None:
    """After a compaction the next request's worst case is measured on the new history (a long
    summary), not on a stale estimate of the old one; input is billed from the request's size."""
    summary = "s" * 40_000
    scripted = ScriptedBackend(
        {
            "main": [
                Step([tool_use("Glob", {"pattern": "*"})], usage=usage(1, 0)),
                Step([tool_use("Glob", {"pattern": "*"})], usage=usage(1, 0)),
                Step([text("done")], usage=usage(1, 10)),
            ],
            "compact": [Step([text(summary)], usage=usage(1, 10))],
        }
    )
    options = AgentOptions(
        cwd=str(project), backend=BilledBackend(scripted, 1.0), model="m", tools=["Glob"],
        pricing={"m": {"input": 10.0, "output": 10.0, "context_window": 20_000}},
        max_budget_usd=0.3, max_tokens=1_024, budget_mode="reserve", compact_threshold=0.05,
    )  # fmt: skip
    messages, _ = await collect("go", options)
    assert system(messages, "compact_boundary"), "the scenario needs a compaction"
    assert not system(messages, "budget_overrun")
    assert summary_of(messages)["total_cost_usd"] <= 0.3


async def test_usage_above_the_reservation_is_charged_trips_and_is_reported(
    project: Path,
) -> None:
    """A backend billing more input tokens than the request has bytes: the response is charged
    in full, the ledger trips, and the stream says budget_overrun with what was booked."""
    scripted = ScriptedBackend(
        [Step([tool_use("Glob", {"pattern": "*"})], usage=usage(1, 0)), Step([text("x")])]
    )
    options = AgentOptions(
        cwd=str(project), backend=BilledBackend(scripted, 3.0), model="m", tools=["Glob"],
        pricing={"m": {"input": 1.0, "output": 0.0}}, max_budget_usd=1.0, max_tokens=1_024,
        budget_mode="reserve",
    )  # fmt: skip
    messages, _ = await collect("go", options)
    overruns = system(messages, "budget_overrun")
    assert len(overruns) == 1
    data = overruns[0].data
    assert set(data) == {"agent_id", "reserved_usd", "actual_usd"}
    assert data["agent_id"] == "main" and data["actual_usd"] > data["reserved_usd"]
    result = result_of(messages)
    assert result.subtype == "error_max_budget_usd"
    assert result.total_cost_usd == pytest.approx(data["actual_usd"])
    assert len(scripted.requests) == 1  # nothing starts after the trip


# -- the soft cap: no request starts after the crossing -----------------------------------------


async def test_no_retry_starts_after_the_crossing(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A retry waiting out its backoff when another agent crosses the cap is cancelled at the
    crossing: no request starts after it, and the query ends on the budget at that instant."""
    scripted = ScriptedBackend(
        {
            "main": [
                Step([spawn("sleeper", background=True)], usage=usage(10, 0)),
                Step(fault=Fault(status=529, message="overloaded")),
                Step([text("late")], usage=usage(10, 0)),
                Step([text("late")], usage=usage(10, 0)),
            ],
            "sleeper": [Step([text("zzz")], usage=usage(600_000, 0), latency=1)],  # crosses
        },
        retry_base_delay=3.0,
        retry_max_delay=3.0,
    )
    pricing = {"m": {"input": 1.0, "output": 0.0}}
    probe = probe_for(scripted, pricing)
    options = AgentOptions(
        cwd=str(project), backend=probe, agents=AGENTS, model="m", pricing=pricing,
        max_budget_usd=0.5,
    )  # fmt: skip
    t0 = trio.current_time()
    messages, _ = await collect("go", options)
    crossing = next(r for r in probe.records if r.agent_id != "main").end
    assert [r.start for r in probe.records if r.start > crossing] == []
    assert result_of(messages).subtype == "error_max_budget_usd"
    assert trio.current_time() - t0 == pytest.approx(crossing - t0)


async def test_no_turn_request_starts_after_a_crossing_during_compaction(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """The budget is checked right before each request, not once per turn: a crossing while the
    main agent compacts stops the turn request that would have followed."""
    scripted = ScriptedBackend(
        {
            "main": [
                Step([tool_use("Glob", {"pattern": "*"})], usage=usage(10, 0)),
                Step([spawn("sleeper", background=True)], usage=usage(1_500, 0)),
                Step([text("late")], usage=usage(10, 0)),
                Step([text("late")], usage=usage(10, 0)),
            ],
            "compact": [Step([text("summary")], usage=usage(10, 0), latency=3)],
            "sleeper": [Step([text("zzz")], usage=usage(600_000, 0), latency=1)],  # crosses
        }
    )
    pricing = {"m": {"input": 1.0, "output": 0.0, "context_window": 2_000}}
    probe = probe_for(scripted, pricing)
    options = AgentOptions(
        cwd=str(project), backend=probe, agents=AGENTS, model="m", pricing=pricing,
        max_budget_usd=0.5, compact_threshold=0.5,
    )  # fmt: skip
    messages, _ = await collect("go", options)
    crossing = next(r for r in probe.records if r.agent_id != "main").end
    assert any(r.start < crossing < r.end for r in probe.records), "compaction spans the crossing"
    assert [r.start_seq for r in probe.records if r.start > crossing] == []
    assert result_of(messages).subtype == "error_max_budget_usd"


# -- delivered usage is charged once, whatever cuts the response --------------------------------


async def test_usage_delivered_to_a_slow_consumer_is_charged_when_interrupted(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """With partial messages on and nobody reading, the loop blocks emitting an event; an
    interrupt then must still charge the usage that event carried (recorded before emitted).
    The sweep over response shapes makes some of them block on a usage-carrying event."""
    pricing = {"m": {"input": 1.0, "output": 5.0}}
    lost: list[tuple[int, int, float]] = []
    for blocks in range(52, 66):
        for calls in (1, 2, 3, 4):
            scripted = ScriptedBackend(
                [
                    Step([*[text(f"t{i}") for i in range(blocks)],
                          *[tool_use("mcp__t__look", {"key": "k"}) for _ in range(calls)]],
                         usage=usage(10, 10)),
                    Step([text("second")], usage=usage(500_000, 100_000)),
                    Step([text("never")]),
                ]
            )  # fmt: skip
            probe = probe_for(scripted, pricing)
            options = AgentOptions(
                cwd=str(project), backend=probe, model="m", pricing=pricing,
                mcp_servers={"t": timed_tools([], {"k": 0})}, include_partial_messages=True,
            )  # fmt: skip
            async with AgentClient(options) as client:
                await client.query("go")
                await trio.testing.wait_all_tasks_blocked()
                await client.interrupt()
                async for _ in client.receive_response():
                    pass
                delivered = sum(r.cost for r in probe.records)
                charged = client.spend()["total_cost_usd"]
                if abs(charged - delivered) > 1e-12:
                    lost.append((blocks, calls, delivered - charged))
    assert lost == []


async def test_a_compaction_stream_cut_midway_is_charged(project: Path) -> None:
    """A compaction response cut after its input usage arrived is charged for that usage."""
    scripted = ScriptedBackend(
        {
            "main": [
                Step([tool_use("Glob", {"pattern": "*"})], usage=usage(10, 0)),
                Step([tool_use("Glob", {"pattern": "*"})], usage=usage(1_500, 0)),
                Step([text("done")], usage=usage(10, 0)),
            ],
            "compact": [Step([text("summary")], usage=usage(100_000, 0),
                             fault=Fault(drop_after=2))],
        }
    )  # fmt: skip
    pricing = {"m": {"input": 1.0, "output": 0.0, "context_window": 2_000}}
    probe = probe_for(scripted, pricing)
    options = AgentOptions(
        cwd=str(project), backend=probe, model="m", tools=["Glob"], pricing=pricing,
        compact_threshold=0.5,
    )  # fmt: skip
    messages, _ = await collect("go", options)
    assert any(r.usage.get("input_tokens") == 100_000 for r in probe.records)
    delivered = sum(r.cost for r in probe.records)
    assert summary_of(messages)["total_cost_usd"] == pytest.approx(delivered, abs=1e-12)


async def test_a_classifier_stream_cut_midway_is_charged(project: Path) -> None:
    """An auto-mode classifier response cut after its input usage arrived is charged for it."""
    scripted = ScriptedBackend(
        {
            "main": [
                Step([tool_use("Write", {"file_path": "x.txt", "content": "x"})],
                     usage=usage(10, 0)),
                Step([text("done")], usage=usage(10, 0)),
            ],
            "classifier": [Step([text("yes")], usage=usage(100_000, 1),
                                fault=Fault(drop_after=2))],
        }
    )  # fmt: skip
    pricing = {"m": {"input": 1.0, "output": 0.0}}
    probe = probe_for(scripted, pricing)
    options = AgentOptions(
        cwd=str(project), backend=probe, model="m", tools=["Write"], pricing=pricing,
        permission_mode="auto",
    )  # fmt: skip
    messages, _ = await collect("go", options)
    assert any(r.usage.get("input_tokens") == 100_000 for r in probe.records)
    delivered = sum(r.cost for r in probe.records)
    assert summary_of(messages)["total_cost_usd"] == pytest.approx(delivered, abs=1e-12)


# -- a reservation belongs to the ledger that issued it ------------------------------------------


async def test_clear_while_a_background_request_is_in_flight_in_reserve_mode(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """/clear replaces the ledger while a background agent's request holds a reservation on the
    old one: that request settles where it was booked, the agent completes, and a request of
    the main agent on the new ledger (whose reservation ids do not restart) is unaffected."""
    backend = ScriptedBackend(
        {
            "main": [
                Step([spawn("sleeper", background=True)], usage=usage(10, 0)),
                Step([text("spawned")], usage=usage(10, 0)),
                Step([text("after clear")], usage=usage(10, 0), latency=10),
                Step([text("noted")], usage=usage(10, 0)),
            ],
            "sleeper": [Step([text("zzz")], usage=usage(1_000, 0), latency=5)],
        }
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, model="m",
        pricing={"m": {"input": 1.0, "output": 1.0}}, max_budget_usd=1.0, max_tokens=1_024,
        budget_mode="reserve",
    )  # fmt: skip
    seen: list[Message] = []
    async with AgentClient(options) as client:
        await client.query("go")
        async for message in client.receive_response():
            seen.append(message)
        await client.query("/clear")
        async for message in client.receive_response():
            seen.append(message)
        await client.query("again")  # in flight on the new ledger when the sleeper settles
        with trio.fail_after(60):
            async for message in client.receive_messages():
                seen.append(message)
                if isinstance(message, ResultMessage) and message.result == "noted":
                    break
        assert client.spend()["total_cost_usd"] == pytest.approx(20e-6)  # the new ledger's
    notes = system(seen, "task_notification")
    assert [n.data["status"] for n in notes] == ["completed"]
    assert all(m.subtype == "success" for m in seen if isinstance(m, ResultMessage))


# -- the trip reaches every waiting point ---------------------------------------------------------


async def test_the_trip_cancels_a_pending_permission_prompt(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A foreground can_use_tool still waiting when a background agent crosses the cap is
    cancelled at the crossing; the tool it was asked about never runs, however late it says
    yes, and the query ends on the budget at once."""
    log: list[tuple[str, str, float]] = []

    async def slow_yes(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        await trio.sleep(49)
        return PermissionResultAllow()

    backend = ScriptedBackend(
        {
            "main": [
                Step([spawn("sleeper", background=True)], usage=usage(10, 0)),
                Step([tool_use("mcp__t__poke", {"key": "late"})], usage=usage(10, 0)),
                Step([text("done")], usage=usage(10, 0)),
                Step([text("noted")], usage=usage(10, 0)),
            ],
            "sleeper": [Step([text("zzz")], usage=usage(600_000, 0), latency=1)],  # crosses
        }
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, model="m",
        pricing={"m": {"input": 1.0, "output": 0.0}}, max_budget_usd=0.5,
        mcp_servers={"t": timed_tools(log, {})}, can_use_tool=slow_yes,
    )  # fmt: skip
    t0 = trio.current_time()
    with trio.fail_after(600):
        messages, _ = await collect("go", options)
    assert log == []
    assert result_of(messages).subtype == "error_max_budget_usd"
    assert trio.current_time() - t0 == pytest.approx(1.0)


# -- agents spawned from code ---------------------------------------------------------------------


async def test_ask_on_a_tripped_tree_returns_a_budget_result_and_spares_its_sibling(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Two agents spawned from code ask at once; one crosses the cap. Neither ask raises a
    Trio exception: each returns an error_max_budget_usd result (or raises ResultError), and
    the sibling is not cancelled by the other's failure."""
    backend = ScriptedBackend(
        {
            "researcher": [Step([text("found")], usage=usage(600_000, 0), latency=1)],
            "auditor": [Step([text("audited")], usage=usage(10, 0), latency=5)],
        }
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, model="m",
        pricing={"m": {"input": 1.0, "output": 0.0}}, max_budget_usd=0.5,
    )  # fmt: skip
    outcomes: dict[str, Any] = {}

    async def ask(handle: Any, name: str) -> None:
        try:
            outcomes[name] = await handle.ask("go")
        except ResultError as exc:
            outcomes[name] = exc

    async with AgentClient(options) as client:
        researcher = await client.spawn("researcher")
        auditor = await client.spawn("auditor")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, researcher, "researcher")
            nursery.start_soon(ask, auditor, "auditor")
    assert set(outcomes) == {"researcher", "auditor"}
    for outcome in outcomes.values():
        result = outcome if isinstance(outcome, ResultMessage) else outcome.result
        assert result.subtype == "error_max_budget_usd"


# -- reserve mode that fits requests to the budget -------------------------------------------------


async def test_a_small_hard_cap_gets_a_shorter_answer_not_a_refusal(project: Path) -> None:
    """$0.05 cap, a model whose default max_tokens (32 000) alone is worth $0.48: the first
    request is sent with max_tokens lowered to what the budget pays for (at least 1 024)."""
    backend = ScriptedBackend([Step([text("short")], usage=usage(100, 50))])
    options = AgentOptions(
        cwd=str(project), backend=backend, model="m", tools=["Glob"], budget_mode="reserve",
        max_budget_usd=0.05,
        pricing={"m": {"input": 3.0, "output": 15.0, "max_output_default": 32_000}},
    )  # fmt: skip
    messages, _ = await collect("go", options)
    assert result_of(messages).subtype == "success"
    assert len(backend.requests) == 1
    assert 1_024 <= backend.requests[0].max_tokens < 32_000


async def test_when_the_main_agent_cannot_start_a_request_the_whole_query_ends(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Reserve mode: once the main agent cannot start a request for budget, the query ends
    error_max_budget_usd, the background agent is cancelled (its notification says stopped)
    and no later result of the query is a success."""
    bg = [Step([tool_use("Glob", {"pattern": "*"})], usage=usage(10, 9_000), latency=1)] * 8
    backend = ScriptedBackend(
        {
            "main": [
                Step([spawn("worker", background=True)], usage=usage(10, 0)),
                Step([tool_use("Glob", {"pattern": "*"})], usage=usage(10, 9_000), latency=3),
                Step([text("done")], usage=usage(10, 9_000)),
                *[Step([text("noted")], usage=usage(10, 10))] * 3,
            ],
            "worker": [*bg, Step([text("worked")], usage=usage(10, 10))],
        }
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, model="m", tools=["Glob", "Agent"],
        pricing={"m": {"input": 1.0, "output": 10.0}}, max_budget_usd=0.5, max_tokens=10_000,
        budget_mode="reserve",
    )  # fmt: skip
    messages, _ = await collect("go", options)
    results = [m for m in messages if isinstance(m, ResultMessage)]
    first = next(i for i, r in enumerate(results) if r.subtype == "error_max_budget_usd")
    assert all(r.subtype != "success" for r in results[first:])
    notes = system(messages, "task_notification")
    assert [n.data["status"] for n in notes] == ["stopped"]


async def test_an_agents_total_cost_is_the_cost_of_its_subtree(project: Path) -> None:
    """A spawned agent's ResultMessage.total_cost_usd is what it (and its children) cost, not
    the tree's total; the main agent's is the whole tree."""
    backend = ScriptedBackend(
        {
            "main": [Step([text("hi")], usage=usage(100_000, 0))],  # $0.1
            "researcher": [Step([text("found")], usage=usage(20_000, 0))],  # $0.02
        }
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, model="m",
        pricing={"m": {"input": 1.0, "output": 0.0}},
    )  # fmt: skip
    async with AgentClient(options) as client:
        await client.query("hi")
        main_results = [m async for m in client.receive_response() if isinstance(m, ResultMessage)]
        researcher = await client.spawn("researcher")
        result = await researcher.ask("go")
        assert result.total_cost_usd == pytest.approx(0.02)
        assert main_results[0].total_cost_usd == pytest.approx(0.1)
        assert client.spend()["total_cost_usd"] == pytest.approx(0.12)


async def collect_timed(
    prompt: str, options: AgentOptions
) -> tuple[list[tuple[float, Message]], float]:
    """Every message of a query with the (Trio) time it was seen; and when the query ended."""
    seen: list[tuple[float, Message]] = []
    try:
        async for message in query(prompt=prompt, options=options):
            seen.append((trio.current_time(), message))
    except ResultError:
        pass
    return seen, trio.current_time()


def result_times(seen: list[tuple[float, Message]]) -> dict[str, tuple[float, Any]]:
    """tool_use_id → (when its result was seen, the result block)."""
    out: dict[str, tuple[float, Any]] = {}
    for at, message in seen:
        if isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    out[block.tool_use_id] = (at, block)
    return out


async def test_the_trip_cuts_a_tool_call_waiting_for_a_slot(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """One tool slot, two read-only calls: the second waits for the slot when a background
    agent crosses the cap (t=1). Its wait ends at the crossing — it never runs and answers
    Budget limit reached at once — while the running call goes on."""
    log: list[tuple[str, str, float]] = []
    first, second = tool_use("mcp__t__look", {"key": "a"}), tool_use("mcp__t__look", {"key": "b"})
    backend = ScriptedBackend(
        {
            "main": [
                Step([spawn("sleeper", background=True)], usage=usage(10, 0)),
                Step([first, second], usage=usage(10, 0)),
                Step([text("done")], usage=usage(10, 0)),
            ],
            "sleeper": [Step([text("zzz")], usage=usage(600_000, 0), latency=1)],  # crosses
        }
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, model="m", max_tool_concurrency=1,
        pricing={"m": {"input": 1.0, "output": 0.0}}, max_budget_usd=0.5,
        mcp_servers={"t": timed_tools(log, {"a": 10, "b": 10})},
    )  # fmt: skip
    t0 = trio.current_time()
    seen, _ = await collect_timed("go", options)
    results = result_times(seen)
    assert [k for k, what, _ in log if what == "start"] == ["a"]
    at, block = results[second.id]
    assert block.content == "Budget limit reached"
    assert at - t0 == pytest.approx(1.0)
    assert results[first.id][0] - t0 == pytest.approx(10.0)  # a running call goes on
    assert result_of([m for _, m in seen]).subtype == "error_max_budget_usd"


# -- an overrun is reported whatever ends the response ---------------------------------------------


async def test_a_stream_cut_after_delivering_more_than_its_booking_reports_the_overrun(
    project: Path,
) -> None:
    """A backend billing more input than the request has bytes, whose stream is then cut: the
    cut attempt is charged in full, the ledger trips, and the stream says budget_overrun (the
    retry never starts)."""
    scripted = ScriptedBackend(
        [Step([text("x")], usage=usage(1, 0), fault=Fault(drop_after=2)), Step([text("x")])]
    )
    options = AgentOptions(
        cwd=str(project), backend=BilledBackend(scripted, 3.0), model="m", tools=["Glob"],
        pricing={"m": {"input": 1.0, "output": 0.0}}, max_budget_usd=1.0, max_tokens=1_024,
        budget_mode="reserve",
    )  # fmt: skip
    messages, _ = await collect("go", options)
    overruns = system(messages, "budget_overrun")
    assert len(overruns) == 1
    data = overruns[0].data
    assert data["agent_id"] == "main" and data["actual_usd"] > data["reserved_usd"]
    assert result_of(messages).subtype == "error_max_budget_usd"
    assert summary_of(messages)["total_cost_usd"] == pytest.approx(data["actual_usd"])
    assert len(scripted.requests) == 1


async def test_a_response_cancelled_at_the_trip_after_delivering_more_than_its_booking_reports(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Reserve mode: a background agent's stream has delivered more input than its booking
    when another agent's overrun trips the ledger; it is cancelled at the trip, charged what it
    delivered, and its overrun is reported too, though the cut is a cancellation."""
    backend = ScriptedBackend(
        {
            "main": [
                Step([spawn("sleeper", background=True)], usage=usage(10, 0)),
                Step([text("lied")], usage=usage(1_000_000, 0), latency=1),  # trips at t=1
                Step([text("noted")], usage=usage(10, 0)),
            ],
            "sleeper": [Step([text("zzz")], usage=usage(1_000_000, 0), token_latency=10)],
        }
    )
    pricing = {"m": {"input": 1.0, "output": 0.0}}
    probe = probe_for(backend, pricing)
    options = AgentOptions(
        cwd=str(project), backend=probe, agents=AGENTS, model="m", pricing=pricing,
        max_budget_usd=1.5, max_tokens=1_024, budget_mode="reserve",
    )  # fmt: skip
    messages, _ = await collect("go", options)
    overruns = system(messages, "budget_overrun")
    assert sorted(o.data["agent_id"].split("/")[0] for o in overruns) == ["main", "main"]
    assert len({o.data["agent_id"] for o in overruns}) == 2  # main's, and the sleeper's
    delivered = sum(r.cost for r in probe.records)
    assert summary_of(messages)["total_cost_usd"] == pytest.approx(delivered, abs=1e-12)
    assert delivered == pytest.approx(2.00001)


# -- a running hook ends at the trip ---------------------------------------------------------------


def slow_hook(log: list[str], seconds: float = 49.0) -> Any:
    async def hook(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        log.append(f"{data['hook_event_name']} start")
        await trio.sleep(seconds)
        log.append(f"{data['hook_event_name']} end")
        return {}

    return hook


async def test_the_trip_cuts_a_running_post_tool_use_hook(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A PostToolUse hook still running when a background agent crosses the cap is cancelled
    at the crossing; the output it could not vet is not passed on (the call answers Budget
    limit reached) and the query ends on the budget at once."""
    from agents.hooks import HookMatcher

    log: list[str] = []
    call = tool_use("mcp__t__look", {"key": "a"})
    backend = ScriptedBackend(
        {
            "main": [
                Step([spawn("sleeper", background=True)], usage=usage(10, 0)),
                Step([call], usage=usage(10, 0)),
                Step([text("done")], usage=usage(10, 0)),
            ],
            "sleeper": [Step([text("zzz")], usage=usage(600_000, 0), latency=1)],  # crosses
        }
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, model="m",
        pricing={"m": {"input": 1.0, "output": 0.0}}, max_budget_usd=0.5,
        mcp_servers={"t": timed_tools([], {"a": 0.5})},
        hooks={"PostToolUse": [HookMatcher("mcp__t__look", [slow_hook(log)])]},
    )  # fmt: skip
    t0 = trio.current_time()
    seen, end = await collect_timed("go", options)
    assert log == ["PostToolUse start"]
    at, block = result_times(seen)[call.id]
    assert block.content == "Budget limit reached"
    assert at - t0 == pytest.approx(1.0)
    assert result_of([m for _, m in seen]).subtype == "error_max_budget_usd"
    assert end - t0 == pytest.approx(1.0)


async def test_the_trip_cuts_a_running_stop_hook(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A Stop hook still running when a background agent crosses the cap is cancelled at the
    crossing: the query ends error_max_budget_usd at that instant (the hook might have asked
    the agent to go on)."""
    from agents.hooks import HookMatcher

    log: list[str] = []
    backend = ScriptedBackend(
        {
            "main": [
                Step([spawn("sleeper", background=True)], usage=usage(10, 0)),
                Step([text("done")], usage=usage(10, 0)),
                Step([text("noted")], usage=usage(10, 0)),
            ],
            "sleeper": [Step([text("zzz")], usage=usage(600_000, 0), latency=1)],  # crosses
        }
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, model="m",
        pricing={"m": {"input": 1.0, "output": 0.0}}, max_budget_usd=0.5,
        hooks={"Stop": [HookMatcher(None, [slow_hook(log)])]},
    )  # fmt: skip
    t0 = trio.current_time()
    seen, end = await collect_timed("go", options)
    assert log == ["Stop start"]
    results = [m for _, m in seen if isinstance(m, ResultMessage)]
    assert results[0].subtype == "error_max_budget_usd"
    assert all(r.subtype != "success" for r in results)
    assert end - t0 == pytest.approx(1.0)


async def test_clear_while_a_background_request_is_in_flight_in_soft_mode(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Soft cap: a background request in flight across /clear counts for the conversation it
    started in, as a booked one does in reserve mode: the new ledger holds only what was sent
    after the /clear."""
    backend = ScriptedBackend(
        {
            "main": [
                Step([spawn("sleeper", background=True)], usage=usage(10, 0)),
                Step([text("spawned")], usage=usage(10, 0)),
                Step([text("after clear")], usage=usage(10, 0), latency=10),
                Step([text("noted")], usage=usage(10, 0)),
            ],
            "sleeper": [Step([text("zzz")], usage=usage(1_000, 0), latency=5)],
        }
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, model="m",
        pricing={"m": {"input": 1.0, "output": 1.0}}, max_budget_usd=1.0,
    )  # fmt: skip
    async with AgentClient(options) as client:
        await client.query("go")
        async for _ in client.receive_response():
            pass
        await client.query("/clear")
        async for _ in client.receive_response():
            pass
        await client.query("again")
        with trio.fail_after(60):
            async for message in client.receive_messages():
                if isinstance(message, ResultMessage) and message.result == "noted":
                    break
        assert client.spend()["total_cost_usd"] == pytest.approx(20e-6)


async def test_the_trip_cuts_a_running_pre_compact_hook(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A PreCompact hook still running when a background agent crosses the cap is cancelled at
    the crossing, like any hook: no compaction or turn request follows, and the query ends
    on the budget at that instant."""
    from agents.hooks import HookMatcher

    log: list[str] = []
    scripted = ScriptedBackend(
        {
            "main": [
                Step([tool_use("Glob", {"pattern": "*"})], usage=usage(10, 0)),
                Step([spawn("sleeper", background=True)], usage=usage(1_500, 0)),
                Step([text("late")], usage=usage(10, 0)),
                Step([text("late")], usage=usage(10, 0)),
            ],
            "compact": [Step([text("summary")], usage=usage(10, 0))],
            "sleeper": [Step([text("zzz")], usage=usage(600_000, 0), latency=1)],  # crosses
        }
    )
    pricing = {"m": {"input": 1.0, "output": 0.0, "context_window": 2_000}}
    probe = probe_for(scripted, pricing)
    options = AgentOptions(
        cwd=str(project), backend=probe, agents=AGENTS, model="m", pricing=pricing,
        max_budget_usd=0.5, compact_threshold=0.5,
        hooks={"PreCompact": [HookMatcher(None, [slow_hook(log)])]},
    )  # fmt: skip
    t0 = trio.current_time()
    seen, end = await collect_timed("go", options)
    assert log == ["PreCompact start"]
    assert [r.purpose for r in probe.records if r.agent_id == "main"] == ["turn", "turn"]
    assert result_of([m for _, m in seen]).subtype == "error_max_budget_usd"
    assert end - t0 == pytest.approx(1.0)
