from __future__ import annotations

import random

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from runtime import BudgetExhausted, Ledger, LedgerStatistics, Reservation

# Costs as real price arithmetic produces them: a few significant digits, e.g. 0.000123.
costs = st.integers(min_value=0, max_value=5_000_000).map(lambda n: n / 1e6)
agents = st.sampled_from(["main", "main/researcher-1", "main/researcher-2", "main/coder-1"])


def units(x: float) -> int:
    return round(x * 1e12)


def test_charge_under_the_cap_does_not_trip() -> None:
    """A charge below the cap returns False and leaves the event unset."""
    ledger = Ledger(cap=1.0)
    assert ledger.charge("main", 0.4) is False
    assert not ledger.exhausted
    assert not ledger.tripped.is_set()
    assert ledger.remaining == pytest.approx(0.6)


def test_reaching_the_cap_trips_once_and_calls_callbacks_once() -> None:
    """The charge making total >= cap returns True, sets `tripped` and runs callbacks once."""
    ledger = Ledger(cap=1.0)
    calls: list[float] = []
    ledger.add_trip_callback(lambda: calls.append(ledger.total))
    assert ledger.charge("main", 0.5) is False
    assert ledger.charge("main/researcher-1", 0.5) is True
    assert ledger.tripped.is_set()
    assert ledger.exhausted
    assert calls == [1.0]
    assert ledger.charge("main", 0.25) is True
    assert calls == [1.0]
    assert ledger.remaining == 0.0


def test_callback_added_after_the_trip_runs_immediately() -> None:
    """A late subscriber still hears about a trip that already happened."""
    ledger = Ledger(cap=0.1)
    ledger.charge("main", 0.2)
    calls: list[str] = []
    ledger.add_trip_callback(lambda: calls.append("tripped"))
    assert calls == ["tripped"]


def test_removed_callback_is_not_called() -> None:
    """remove_trip_callback unhooks a subscriber; removing twice is harmless."""
    ledger = Ledger(cap=1.0)
    calls: list[str] = []

    def callback() -> None:
        calls.append("x")

    ledger.add_trip_callback(callback)
    ledger.remove_trip_callback(callback)
    ledger.remove_trip_callback(callback)
    ledger.charge("main", 2.0)
    assert calls == []


async def test_tripped_event_wakes_waiters() -> None:
    """A task waiting on `tripped` wakes when a charge reaches the cap."""
    ledger = Ledger(cap=1.0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ledger.tripped.wait)
        await trio.testing.wait_all_tasks_blocked()
        ledger.charge("main", 1.0)


def test_zero_cap_is_exhausted_from_the_start() -> None:
    """With cap=0 nothing may be spent: the ledger starts tripped."""
    ledger = Ledger(cap=0)
    assert ledger.exhausted
    assert ledger.tripped.is_set()
    assert ledger.try_reserve("main", 0.0) is None


def test_without_a_cap_nothing_trips_and_reservations_always_fit() -> None:
    """No cap means no limit: remaining is None and reservations succeed."""
    ledger = Ledger()
    assert ledger.charge("main", 1e6) is False
    assert ledger.remaining is None
    assert ledger.reserve("main", 1e9).amount == 1e9
    assert not ledger.exhausted


def test_invalid_amounts_are_rejected() -> None:
    """Negative caps and costs are misuse and raise ValueError naming the parameter."""
    with pytest.raises(ValueError, match=r"^cap must be >= 0, got -1$"):
        Ledger(cap=-1)
    ledger = Ledger()
    with pytest.raises(ValueError, match=r"^cost must be >= 0 and finite, got -0\.5$"):
        ledger.charge("main", -0.5)
    with pytest.raises(ValueError, match=r"^worst_case must be >= 0 and finite, got nan$"):
        ledger.reserve("main", float("nan"))


def test_reserve_settle_release_bookkeeping() -> None:
    """Reservations hold budget until settled (charged) or released (dropped)."""
    ledger = Ledger(cap=1.0)
    r1 = ledger.reserve("main", 0.5)
    r2 = ledger.reserve("main/researcher-1", 0.25)
    assert r1 == Reservation(agent_id="main", amount=0.5, id=r1.id)
    assert r1.id != r2.id
    assert ledger.reserved == 0.75
    assert ledger.remaining == 0.25
    assert ledger.settle(r1, 0.125) is False
    ledger.release(r2)
    ledger.release(r2)  # idempotent
    assert ledger.reserved == 0.0
    assert ledger.total == 0.125
    assert ledger.per_agent() == {"main": 0.125}
    assert ledger.statistics() == LedgerStatistics(
        cap=1.0, total=0.125, reserved=0.0, charges=1, per_agent={"main": 0.125}
    )


def test_reservation_that_does_not_fit_raises_budget_exhausted() -> None:
    """reserve() refuses a worst case larger than what is left, with the fixed message."""
    ledger = Ledger(cap=1.0)
    ledger.reserve("main", 0.75)
    with pytest.raises(BudgetExhausted, match=r"^Budget limit reached$"):
        ledger.reserve("main", 0.5)
    assert ledger.try_reserve("main", 0.5) is None
    assert ledger.try_reserve("main", 0.25) is not None


def test_reserve_on_an_exhausted_ledger_raises() -> None:
    """Once the cap is reached even a zero worst case is refused."""
    ledger = Ledger(cap=1.0)
    ledger.charge("main", 1.0)
    with pytest.raises(BudgetExhausted):
        ledger.reserve("main", 0.0)


def test_settling_twice_or_after_release_is_an_error() -> None:
    """A reservation is settled at most once."""
    ledger = Ledger(cap=1.0)
    r = ledger.reserve("main", 0.5)
    ledger.settle(r, 0.5)
    with pytest.raises(ValueError, match=r"^reservation 0 is not outstanding"):
        ledger.settle(r, 0.5)
    ledger.release(r)  # no-op after settle
    assert ledger.total == 0.5
    r2 = ledger.reserve("main", 0.1)
    ledger.release(r2)
    with pytest.raises(ValueError, match=r"^reservation 1 is not outstanding"):
        ledger.settle(r2, 0.1)


def test_settle_that_reaches_the_cap_trips() -> None:
    """Settling charges like charge() does, including tripping."""
    ledger = Ledger(cap=1.0)
    r = ledger.reserve("main", 1.0)
    assert ledger.settle(r, 1.0) is True
    assert ledger.tripped.is_set()


def test_amounts_are_exact_where_floats_are_not() -> None:
    """0.1 + 0.2 charges total exactly 0.3, unlike float addition."""
    ledger = Ledger(cap=0.3)
    ledger.charge("a", 0.1)
    assert ledger.charge("b", 0.2) is True
    assert ledger.total == 0.3


@given(st.lists(st.tuples(agents, costs), max_size=40), st.randoms(use_true_random=False))
def test_total_is_exact_and_order_independent(
    charges: list[tuple[str, float]], rng: random.Random
) -> None:
    """Any order of the same charges gives the same total, equal to the per-agent sum."""
    forward = Ledger()
    for agent, cost in charges:
        forward.charge(agent, cost)
    shuffled = list(charges)
    rng.shuffle(shuffled)
    backward = Ledger()
    for agent, cost in shuffled:
        backward.charge(agent, cost)

    expected = sum(units(cost) for _, cost in charges)
    assert units(forward.total) == expected
    assert forward.total == backward.total
    assert forward.per_agent() == backward.per_agent()
    assert sum(units(v) for v in forward.per_agent().values()) == units(forward.total)
    assert forward.statistics().charges == len(charges)


@given(
    cap=st.integers(min_value=0, max_value=3_000_000).map(lambda n: n / 1e6),
    steps=st.lists(
        st.tuples(agents, costs, st.floats(0, 1), st.booleans(), st.integers(0, 10)),
        max_size=60,
    ),
)
def test_hard_cap_is_never_exceeded(
    cap: float, steps: list[tuple[str, float, float, bool, int]]
) -> None:
    """Random try_reserve/settle sequences (actual <= worst case) never pass the cap."""
    ledger = Ledger(cap=cap)
    pending: list[Reservation] = []
    for agent, worst, fraction, settle_now, pick in steps:
        reservation = ledger.try_reserve(agent, worst)
        if reservation is not None:
            pending.append(reservation)
        if settle_now and pending:
            r = pending.pop(pick % len(pending))
            ledger.settle(r, r.amount * fraction)
        assert ledger.total <= cap
        assert units(ledger.total) + units(ledger.reserved) <= units(cap)
    for r in pending:
        ledger.settle(r, r.amount)
    assert ledger.total <= cap
    assert ledger.reserved == 0


@given(
    cap=st.integers(min_value=1, max_value=3_000_000).map(lambda n: n / 1e6),
    charges=st.lists(st.tuples(agents, costs), max_size=30),
)
def test_soft_cap_trips_on_the_first_charge_reaching_it(
    cap: float, charges: list[tuple[str, float]]
) -> None:
    """The first charge whose running total reaches the cap is the one that trips."""
    ledger = Ledger(cap=cap)
    trips: list[int] = []
    returns: list[bool] = []
    ledger.add_trip_callback(lambda: trips.append(len(returns)))
    for agent, cost in charges:
        returns.append(ledger.charge(agent, cost))

    running = 0
    first: int | None = None
    for i, (_, cost) in enumerate(charges):
        running += units(cost)
        if first is None and running >= units(cap):
            first = i
    assert returns == [first is not None and i >= first for i in range(len(charges))]
    assert ledger.tripped.is_set() == (first is not None)
    assert trips == ([] if first is None else [first])
