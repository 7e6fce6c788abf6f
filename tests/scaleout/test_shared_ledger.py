"""One interface, two ledgers: the in-process ``Ledger`` and the ``SharedLedger`` on PostgreSQL
behave alike under the calls the agent loop makes, and a query spends on either the same way."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import trio

from agents import AgentOptions, ResultMessage, query
from agents.scaleout import PostgresLedger, SharedLedger, open_postgres_ledger, open_shared_ledger
from agents.testing import ScriptedBackend, Step, text, usage
from runtime import BudgetLedger, ForeignReservation, Ledger

PRICES = {"claude-test": {"input": 1.0, "output": 10.0}}  # USD per million tokens
TERMS = {"input_cost_usd": 0.001, "output_usd_per_mtok": 10.0, "min_output_tokens": 1_000}

Open = Callable[[float | None], contextlib.AbstractAsyncContextManager[BudgetLedger]]


@contextlib.asynccontextmanager
async def _in_process(cap: float | None) -> AsyncIterator[BudgetLedger]:
    yield Ledger(cap=cap)


def _shared(dsn: str) -> Open:
    @contextlib.asynccontextmanager
    async def open_one(cap: float | None) -> AsyncIterator[BudgetLedger]:
        tree = f"tree-{uuid.uuid4().hex}"
        async with (
            open_postgres_ledger(dsn, tree, cap=cap, lease_s=5) as pg,
            open_shared_ledger(pg, name="s", root=True) as ledger,
        ):
            yield ledger

    return open_one


@pytest.fixture(params=["in-process", "shared"])
def open_ledger(request: pytest.FixtureRequest) -> Open:
    if request.param == "in-process":
        return _in_process
    dsn: str = request.getfixturevalue("postgres_dsn")
    return _shared(dsn)


async def _reserve(ledger: BudgetLedger, agent: str, max_tokens: int) -> object:
    """What the loop's gate does: prepare (the one await), then book synchronously."""
    await ledger.prepare_request(agent, max_tokens=max_tokens, **TERMS)  # type: ignore[arg-type]
    return ledger.try_reserve_request(agent, max_tokens=max_tokens, **TERMS)  # type: ignore[arg-type]


async def _synced(ledger: BudgetLedger) -> None:
    """Wait until a shared ledger's updates have reached PostgreSQL (and its answers came back);
    then the tree's row says what the ledger says (it is the tree's only spender here)."""
    if isinstance(ledger, SharedLedger):
        await ledger.drained()
        tree = await ledger.tree.statistics()
        assert (tree.total, tree.reserved) == (
            pytest.approx(ledger.total),
            pytest.approx(ledger.reserved),
        )
        mine = f"{ledger.name}/"
        assert {a.removeprefix(mine): v for a, v in tree.per_agent.items()} == pytest.approx(
            ledger.per_agent()
        )


async def test_a_request_is_fitted_to_what_is_left_then_refused(open_ledger: Open) -> None:
    """Full output while it fits, fewer tokens near the cap, none below the minimum."""
    async with open_ledger(0.05) as ledger:  # $0.001 input + 1 000 tokens at $10/MTok = $0.011
        first = await _reserve(ledger, "main", 1_000)
        assert first is not None and first.max_tokens == 1_000  # type: ignore[attr-defined]
        ledger.settle_and_report(first, 0.011)  # type: ignore[arg-type]
        second = await _reserve(ledger, "main", 10_000)  # $0.039 left: 3 799 tokens (slack)
        assert second is not None and second.max_tokens == 3_799  # type: ignore[attr-defined]
        ledger.settle_and_report(second, 0.03)  # type: ignore[arg-type]
        assert await _reserve(ledger, "main", 10_000) is None  # $0.009 left: 799 < 1 000
        await _synced(ledger)
        assert ledger.total == pytest.approx(0.041)
        assert ledger.per_agent() == {"main": pytest.approx(0.041)}
        assert ledger.reserved == 0


async def test_a_release_gives_the_room_back(open_ledger: Open) -> None:
    async with open_ledger(0.02) as ledger:
        first = await _reserve(ledger, "main", 1_000)  # $0.011 of $0.02
        assert first is not None
        assert await _reserve(ledger, "main/a-1", 1_000) is None  # $0.009 left: 799 < 1 000
        ledger.release(first)  # type: ignore[arg-type]
        await _synced(ledger)
        again = await _reserve(ledger, "main/a-1", 1_000)
        assert again is not None and again.max_tokens == 1_000  # type: ignore[attr-defined]
        ledger.release(again)  # type: ignore[arg-type]
        await _synced(ledger)
        assert (ledger.total, ledger.reserved, ledger.exhausted) == (0, 0, False)


async def test_an_overrun_is_charged_in_full_and_trips(open_ledger: Open) -> None:
    async with open_ledger(1.0) as ledger:
        trips: list[int] = []
        ledger.add_trip_callback(lambda: trips.append(1))
        booked = await _reserve(ledger, "main", 1_000)
        assert booked is not None
        settlement = ledger.settle_and_report(booked, 0.5)  # type: ignore[arg-type]
        assert (settlement.overrun, settlement.tripped, settlement.actual_usd) == (True, True, 0.5)
        assert ledger.exhausted and trips == [1]
        assert await _reserve(ledger, "main", 1_000) is None
        await _synced(ledger)
        assert ledger.total == 0.5


async def test_a_reservation_is_settled_once_and_only_where_it_was_issued(
    open_ledger: Open,
) -> None:
    async with open_ledger(1.0) as ledger, _in_process(1.0) as other:
        booked = await _reserve(ledger, "main", 1_000)
        assert booked is not None
        with pytest.raises(ForeignReservation):
            other.settle_and_report(booked, 0.001)  # type: ignore[arg-type]
        ledger.settle_and_report(booked, 0.001)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="not outstanding"):
            ledger.settle_and_report(booked, 0.001)  # type: ignore[arg-type]
        await _synced(ledger)
        assert (ledger.total, ledger.charges) == (0.001, 1)


async def test_the_soft_cap_trips_at_the_crossing_charge(open_ledger: Open) -> None:
    async with open_ledger(0.3) as ledger:
        trips: list[int] = []
        ledger.add_trip_callback(lambda: trips.append(1))
        ledger.charge("main", 0.2)
        await _synced(ledger)
        assert not ledger.exhausted
        ledger.charge("main/a-1", 0.1)
        await _synced(ledger)
        assert ledger.exhausted and trips == [1]
        assert ledger.subtree_spent("main") == pytest.approx(0.3)


async def test_exhaust_is_the_one_exhausted_state(open_ledger: Open) -> None:
    async with open_ledger(1.0) as ledger:
        trips: list[int] = []
        ledger.add_trip_callback(lambda: trips.append(1))
        ledger.exhaust()
        ledger.exhaust()
        assert ledger.exhausted and trips == [1]
        assert await _reserve(ledger, "main", 1_000) is None


def _options(
    tmp_path: Path, ledger: BudgetLedger, turns: int, spend: tuple[int, int] = (1_000, 2_000)
) -> AgentOptions:
    steps = [Step([text(f"turn {i}")], usage=usage(*spend)) for i in range(turns)]
    return AgentOptions(
        cwd=str(tmp_path),
        tools=[],
        model="claude-test",
        pricing=PRICES,
        ledger=ledger,
        budget_mode="reserve",
        max_tokens=4_000,
        min_output_tokens=100,
        backend=ScriptedBackend({"main": steps}),
    )


async def test_a_query_spends_on_the_tree_in_postgres(postgres_dsn: str, tmp_path: Path) -> None:
    """Each request is booked on the tree's row and settled there with its actual cost."""
    tree = f"tree-{uuid.uuid4().hex}"
    async with open_postgres_ledger(postgres_dsn, tree, cap=1.0) as pg:
        async with open_shared_ledger(pg, name="run", root=True) as ledger:
            results = [
                m
                async for m in query(prompt="hi", options=_options(tmp_path, ledger, 1))
                if isinstance(m, ResultMessage)
            ]
        stats = await pg.statistics()
    cost = 1_000 * 1.0 / 1e6 + 2_000 * 10.0 / 1e6
    assert [(r.subtype, r.total_cost_usd) for r in results] == [("success", pytest.approx(cost))]
    assert (stats.total, stats.reserved, stats.charges) == (pytest.approx(cost), 0, 1)
    assert stats.per_agent == {"run/main": pytest.approx(cost)}


async def test_a_query_stops_at_the_trees_cap_spent_elsewhere(
    postgres_dsn: str, tmp_path: Path
) -> None:
    """Another host spent most of the tree's cap: this query gets shorter answers, then the
    budget error, and the tree's total never passes the cap."""
    tree = f"tree-{uuid.uuid4().hex}"
    async with open_postgres_ledger(postgres_dsn, tree, cap=0.1) as pg:
        elsewhere = await pg.try_reserve("other-host/main", 0.095)
        assert elsewhere is not None
        await pg.settle(elsewhere, 0.095)
        async with open_shared_ledger(pg, name="run", root=True) as ledger:
            with trio.fail_after(30):
                prompts = [f"prompt {i}" for i in range(12)]
                results: list[ResultMessage] = []
                options = _options(tmp_path, ledger, 12, spend=(100, 50))

                async def feed() -> AsyncIterator[dict[str, object]]:
                    for p in prompts:
                        yield {"type": "user", "message": {"role": "user", "content": p}}

                async for m in query(prompt=feed(), options=options):
                    if isinstance(m, ResultMessage):
                        results.append(m)
        stats = await pg.statistics()
    assert results[0].subtype == "success"
    assert results[-1].subtype == "error_max_budget_usd"
    assert stats.total <= 0.1
    assert stats.reserved == 0
    assert await _tripped(pg)


async def _tripped(pg: PostgresLedger) -> bool:
    return pg.tripped.is_set()


async def test_a_limit_caps_one_sessions_spending_and_the_tree_goes_on(postgres_dsn: str) -> None:
    """``limit`` fits and refuses as a cap of the session's own, without tripping the tree."""
    tree = f"tree-{uuid.uuid4().hex}"
    async with (
        open_postgres_ledger(postgres_dsn, tree, cap=1.0) as pg,
        open_shared_ledger(pg, name="job", limit=0.02) as ledger,
    ):
        assert ledger.cap == 0.02
        first = await _reserve(ledger, "main", 10_000)  # $0.02 left: 1 899 tokens (slack)
        assert first is not None and first.max_tokens == 1_899  # type: ignore[attr-defined]
        ledger.settle_and_report(first, 0.02)  # type: ignore[arg-type]
        assert ledger.exhausted
        assert await _reserve(ledger, "main", 1_000) is None
        await _synced(ledger)
        assert not pg.tripped.is_set()
        assert await pg.try_reserve("another-job/main", 0.5) is not None
