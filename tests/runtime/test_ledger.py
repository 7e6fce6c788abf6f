from __future__ import annotations

import math
import random
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import (
    BudgetExhausted,
    ForeignReservation,
    Ledger,
    LedgerStatistics,
    Reservation,
    Settlement,
    affordable_output_tokens,
)

# Costs as real price arithmetic produces them: a few significant digits, e.g. 0.000123.
costs = st.integers(min_value=0, max_value=5_000_000).map(lambda n: n / 1e6)
agents = st.sampled_from(
    ["main", "main/researcher-1", "main/researcher-1/coder-1", "main/researcher-10", "main/coder-1"]
)

#: every property of this module runs this many examples (the suite's default is far lower)
PROPERTY = settings(max_examples=1_000, deadline=None)


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
    for bad in ("nan", "inf"):
        with pytest.raises(ValueError, match=rf"^cost must be >= 0 and finite, got {bad}$"):
            ledger.charge("main", float(bad))
    assert ledger.charges == 0 and ledger.total == 0
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
    with pytest.raises(ValueError, match=rf"^reservation {r.id} is not outstanding"):
        ledger.settle(r, 0.5)
    ledger.release(r)  # no-op after settle
    assert ledger.total == 0.5
    r2 = ledger.reserve("main", 0.1)
    ledger.release(r2)
    with pytest.raises(ValueError, match=rf"^reservation {r2.id} is not outstanding"):
        ledger.settle(r2, 0.1)
    assert ledger.total == 0.5 and ledger.outstanding == 0


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


@PROPERTY
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


@PROPERTY
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


@PROPERTY
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


# -- reservations belong to their ledger ---------------------------------------------------------


def test_reservation_ids_are_unique_across_ledgers() -> None:
    """Two ledgers never hand out the same reservation id (a new ledger does not restart at 0)."""
    first, second = Ledger(cap=1.0), Ledger(cap=1.0)
    ids = [first.reserve("main", 0.1).id, second.reserve("main", 0.1).id]
    ids += [first.reserve("main/a-1", 0.1).id, second.reserve("main/a-1", 0.1).id]
    assert len(set(ids)) == 4


def test_a_settle_on_another_ledger_is_refused_and_changes_neither() -> None:
    """Settling a reservation on a ledger that did not issue it raises ForeignReservation and
    touches no booking of either ledger; it can still be settled where it was issued."""
    old, new = Ledger(cap=1.0), Ledger(cap=1.0)
    theirs = old.reserve("main/bg-1", 0.5)
    mine = new.reserve("main", 0.25)
    with pytest.raises(ForeignReservation, match=r"^reservation \d+ was issued by ledger \d+, "):
        new.settle(theirs, 0.5)
    assert (new.total, new.reserved, new.outstanding) == (0.0, 0.25, 1)
    assert (old.total, old.reserved, old.outstanding) == (0.0, 0.5, 1)
    assert theirs.issuer is old
    assert old.settle(theirs, 0.5) is False
    assert new.settle(mine, 0.25) is False
    assert (old.total, new.total, old.outstanding, new.outstanding) == (0.5, 0.25, 0, 0)


def test_a_release_on_another_ledger_is_refused() -> None:
    """Releasing another ledger's reservation raises instead of leaking its booking silently."""
    old, new = Ledger(cap=1.0), Ledger(cap=1.0)
    theirs = old.reserve("main", 0.5)
    with pytest.raises(ForeignReservation):
        new.release(theirs)
    assert old.reserved == 0.5
    old.release(theirs)
    assert old.reserved == 0.0


def test_a_made_up_reservation_is_foreign_everywhere() -> None:
    """A Reservation built by hand (not issued) matches no booking, even with a live id."""
    ledger = Ledger(cap=1.0)
    real = ledger.reserve("main/a-1", 0.5)
    with pytest.raises(ForeignReservation, match=r"issued by no ledger"):
        ledger.settle(Reservation(agent_id="main", amount=0.5, id=real.id), 0.5)
    assert ledger.outstanding == 1


def test_a_reservation_settled_under_another_agent_is_not_outstanding() -> None:
    """The booking is the agent's: a copy naming another agent settles nothing."""
    ledger = Ledger(cap=1.0)
    real = ledger.reserve("main/a-1", 0.5)
    with pytest.raises(ValueError, match=r"is not outstanding"):
        ledger.settle(attrs.evolve(real, agent_id="main"), 0.5)
    assert (ledger.total, ledger.reserved) == (0.0, 0.5)


# -- overruns -------------------------------------------------------------------------------------


def test_an_overrun_is_charged_in_full_and_trips_the_ledger() -> None:
    """A settle above its booking charges all of it, trips the ledger under the cap, and says so."""
    ledger = Ledger(cap=1.0)
    trips: list[float] = []
    ledger.add_trip_callback(lambda: trips.append(ledger.total))
    r = ledger.reserve("main/a-1", 0.25)
    report = ledger.settle_and_report(r, 0.375)
    assert report == Settlement(
        agent_id="main/a-1", reserved_usd=0.25, actual_usd=0.375, tripped=True, overrun=True
    )
    assert ledger.total == 0.375
    assert ledger.exhausted and ledger.tripped.is_set()
    assert trips == [0.375]
    assert ledger.remaining == 0.0
    assert ledger.try_reserve("main", 0.0) is None
    assert ledger.charge("main", 0.0) is True
    assert ledger.statistics().overruns == 1


def test_a_settle_within_its_booking_is_no_overrun() -> None:
    """Settling at exactly the booking neither trips (under the cap) nor counts as an overrun."""
    ledger = Ledger(cap=1.0)
    r = ledger.reserve("main", 0.25)
    assert ledger.settle_and_report(r, 0.25) == Settlement(
        agent_id="main", reserved_usd=0.25, actual_usd=0.25, tripped=False, overrun=False
    )
    assert not ledger.exhausted
    assert ledger.statistics().overruns == 0


def test_an_overrun_without_a_cap_is_counted_but_trips_nothing() -> None:
    """No cap, nothing to exhaust: the overrun is charged and counted only."""
    ledger = Ledger()
    r = ledger.reserve("main", 0.25)
    assert ledger.settle_and_report(r, 0.5).overrun is True
    assert not ledger.exhausted
    assert ledger.statistics().overruns == 1


# -- fitting a request to the budget --------------------------------------------------------------


def test_a_request_is_fitted_to_what_is_left() -> None:
    """The output a fitted request may ask for is what the rest of the budget pays for."""
    ledger = Ledger(cap=0.05)
    r = ledger.try_reserve_request(
        "main", input_cost_usd=0.01, output_usd_per_mtok=15.0, max_tokens=32_000
    )
    assert r is not None and r.max_tokens == 2_666  # $0.04 / $15 per million tokens
    assert r.amount <= 0.05
    assert ledger.reserved == r.amount
    assert units(r.amount) >= units(0.01) + 2_666 * 15_000_000  # input + output, upper bound


def test_a_request_that_fits_whole_keeps_its_max_tokens() -> None:
    """Budget enough for the whole worst case: max_tokens is not lowered."""
    ledger = Ledger(cap=10.0)
    r = ledger.try_reserve_request(
        "main", input_cost_usd=0.01, output_usd_per_mtok=15.0, max_tokens=32_000
    )
    assert r is not None and r.max_tokens == 32_000


def test_a_request_is_never_fitted_below_min_output_tokens() -> None:
    """When not even min_output_tokens fit, the request is refused and nothing is booked."""
    ledger = Ledger(cap=0.02)
    fitted = dict(input_cost_usd=0.01, output_usd_per_mtok=15.0, max_tokens=32_000)
    assert ledger.try_reserve_request("main", **fitted, min_output_tokens=1_000) is None
    assert (ledger.reserved, ledger.outstanding) == (0.0, 0)
    r = ledger.try_reserve_request("main", **fitted, min_output_tokens=600)
    assert r is not None and r.max_tokens == 666


def test_a_small_max_tokens_needs_only_itself() -> None:
    """A request asking for fewer tokens than the minimum fits when those few fit."""
    ledger = Ledger(cap=0.02)
    r = ledger.try_reserve_request(
        "main", input_cost_usd=0.01, output_usd_per_mtok=15.0, max_tokens=100
    )
    assert r is not None and r.max_tokens == 100


def test_a_tripped_ledger_fits_no_request() -> None:
    """Once tripped, even a free request is refused."""
    ledger = Ledger(cap=1.0)
    ledger.charge("main", 1.0)
    assert (
        ledger.try_reserve_request(
            "main", input_cost_usd=0.0, output_usd_per_mtok=0.0, max_tokens=1
        )
        is None
    )


def test_without_a_cap_a_request_keeps_its_max_tokens() -> None:
    """No cap: nothing to fit; the booking is still made (and must be settled)."""
    ledger = Ledger()
    r = ledger.try_reserve_request(
        "main", input_cost_usd=1.0, output_usd_per_mtok=15.0, max_tokens=64_000
    )
    assert r is not None and r.max_tokens == 64_000 and ledger.outstanding == 1


def test_affordable_output_tokens() -> None:
    """The pure helper agrees with the ledger's fitting."""
    assert affordable_output_tokens(0.05, 0.01, 15.0, 32_000) == 2_666
    assert affordable_output_tokens(None, 0.01, 15.0, 32_000) == 32_000
    assert affordable_output_tokens(0.05, 0.0, 0.0, 32_000) == 32_000
    assert affordable_output_tokens(0.01, 0.01, 15.0, 32_000) is None
    assert affordable_output_tokens(0.02, 0.01, 15.0, 32_000, min_output_tokens=667) is None


def test_fitting_arguments_are_validated() -> None:
    """Token counts must be >= 1 and prices finite and >= 0; messages name the parameter."""
    ledger = Ledger(cap=1.0)
    with pytest.raises(ValueError, match=r"^max_tokens must be >= 1, got 0$"):
        ledger.try_reserve_request(
            "main", input_cost_usd=0.0, output_usd_per_mtok=1.0, max_tokens=0
        )
    with pytest.raises(ValueError, match=r"^min_output_tokens must be >= 1, got 0$"):
        affordable_output_tokens(1.0, 0.0, 1.0, 10, min_output_tokens=0)
    with pytest.raises(ValueError, match=r"^output_usd_per_mtok must be >= 0 and finite, got -1"):
        affordable_output_tokens(1.0, 0.0, -1.0, 10)


# -- the model-based property ---------------------------------------------------------------------

prices = st.sampled_from([0.0, 0.3, 1.25, 4.0, 5.0, 15.0, 75.0])
token_counts = st.integers(min_value=1, max_value=64_000)
#: a settle's actual cost as a share of its booking, in thousandths: mostly within, some over
shares = st.one_of(st.integers(0, 1_000), st.integers(1_001, 2_000), st.just(1_000))
#: mostly small amounts, so that reservations made before the trip are settled after it
amounts = st.one_of(costs.map(lambda c: c / 10), costs)
charge_op = st.tuples(st.just("charge"), agents, amounts)
reserve_op = st.tuples(st.just("reserve"), agents, amounts)
request_op = st.tuples(
    st.just("request"),
    agents,
    costs.map(lambda c: c / 10),
    prices,
    token_counts,
    st.integers(min_value=1, max_value=4_096),
)
settle_op = st.tuples(st.just("settle"), st.integers(0, 20), shares)
#: reservations and settles weighted up: the interesting states need a few of them in a row
operations = st.one_of(
    charge_op,
    reserve_op,
    reserve_op,
    request_op,
    request_op,
    settle_op,
    settle_op,
    settle_op,
    st.tuples(st.just("release"), st.integers(0, 20)),
    st.tuples(st.just("again"), st.integers(0, 20), st.booleans()),
    st.tuples(st.just("impostor"), st.integers(0, 20), agents),
    st.tuples(st.just("foreign"), st.integers(0, 20), st.booleans()),
    st.tuples(st.just("exhaust")),
)


@attrs.define
class Expected:
    """What a ledger must hold, kept in plain integers of 1e-12 USD."""

    cap: int | None
    total: int = 0
    reserved: int = 0
    charges: int = 0
    overruns: int = 0
    tripped: bool = False
    per_agent: dict[str, int] = attrs.Factory(dict)
    booked: dict[int, int] = attrs.Factory(dict)

    def charge(self, agent: str, amount: int) -> bool:
        self.total += amount
        self.charges += 1
        self.per_agent[agent] = self.per_agent.get(agent, 0) + amount
        if self.cap is not None and self.total >= self.cap:
            self.tripped = True
        return self.tripped

    def available(self) -> int:
        assert self.cap is not None
        return self.cap - self.total - self.reserved


def check_state(ledger: Ledger, expected: Expected) -> None:
    assert units(ledger.total) == expected.total
    assert units(ledger.reserved) == expected.reserved
    assert ledger.outstanding == len(expected.booked)
    assert ledger.exhausted is expected.tripped
    assert ledger.tripped.is_set() is expected.tripped
    assert {a: units(v) for a, v in ledger.per_agent().items()} == expected.per_agent
    assert ledger.charges == expected.charges
    for agent in ("main", "main/researcher-1"):
        below = sum(
            v for a, v in expected.per_agent.items() if a == agent or a.startswith(agent + "/")
        )
        assert units(ledger.subtree_spent(agent)) == below
    stats = ledger.statistics()
    assert (stats.charges, stats.overruns, stats.outstanding) == (
        expected.charges,
        expected.overruns,
        len(expected.booked),
    )
    if expected.cap is None:
        assert ledger.remaining is None
    else:
        left = 0 if expected.tripped else max(expected.available(), 0)
        assert ledger.remaining is not None and units(ledger.remaining) == left


def check_fitted(
    ledger: Ledger,
    expected: Expected,
    reservation: Reservation | None,
    op: tuple[Any, ...],
) -> None:
    """A fitted request books an upper bound of its cost with the most output the budget pays
    for (at most what was asked, at least the minimum), or nothing when even that is too much."""
    _, agent, input_cost, price, max_tokens, least = op
    per_token = math.ceil(price * 1e6)
    floor = min(least, max_tokens)
    if reservation is None:
        assert expected.cap is not None
        # refused only if even the minimum does not fit (the booking rounds up by < 1e-9 USD)
        need = units(input_cost) + floor * per_token
        assert expected.tripped or need + 1_000 > expected.available()
        return
    tokens = reservation.max_tokens
    assert tokens is not None and floor <= tokens <= max_tokens
    booked = units(reservation.amount)
    assert booked >= units(input_cost) + tokens * per_token  # an upper bound of the request
    assert booked <= units(input_cost) + tokens * per_token + 1_000  # and a tight one
    if expected.cap is not None:
        assert not expected.tripped
        assert booked <= expected.available()
        assert tokens == max_tokens or booked + per_token > expected.available()
    assert reservation.agent_id == agent and reservation.issuer is ledger


@PROPERTY
@given(
    cap=st.one_of(st.none(), *[st.integers(0, 3_000_000).map(lambda n: n / 1e6)] * 3),
    ops=st.lists(operations, min_size=1, max_size=50),
)
def test_the_ledger_keeps_exact_books_under_any_sequence(
    cap: float | None, ops: list[tuple[Any, ...]]
) -> None:
    """Charges, reservations (plain and fitted), settles within and over the booking, releases,
    repeated and foreign settles: every return value and the whole state after each step are
    what exact integer bookkeeping says; every booking can be settled or released at the end."""
    ledger = Ledger(cap=cap)
    other = Ledger()  # never charged: a foreign settle must not reach it
    expected = Expected(cap=None if cap is None else units(cap))
    expected.tripped = expected.cap is not None and expected.cap <= 0
    trips: list[int] = []
    ledger.add_trip_callback(lambda: trips.append(len(trips)))
    pending: list[Reservation] = []
    closed: list[Reservation] = []
    for op in ops:
        kind = op[0]
        if kind == "charge":
            assert ledger.charge(op[1], op[2]) is expected.charge(op[1], units(op[2]))
        elif kind in ("reserve", "request"):
            if kind == "reserve":
                r = ledger.try_reserve(op[1], op[2])
                fits = expected.cap is None or (
                    not expected.tripped and units(op[2]) <= expected.available()
                )
                assert (r is not None) is fits
                assert r is None or (r.max_tokens is None and units(r.amount) == units(op[2]))
            else:
                r = ledger.try_reserve_request(
                    op[1],
                    input_cost_usd=op[2],
                    output_usd_per_mtok=op[3],
                    max_tokens=op[4],
                    min_output_tokens=op[5],
                )
                check_fitted(ledger, expected, r, op)
            if r is not None:
                assert r.id not in expected.booked
                expected.booked[r.id] = units(r.amount)
                expected.reserved += units(r.amount)
                pending.append(r)
        elif kind == "settle" and pending:
            r = pending.pop(op[1] % len(pending))
            booked = expected.booked.pop(r.id)
            actual = booked * op[2] // 1_000
            expected.reserved -= booked
            tripped = expected.charge(r.agent_id, actual)
            if actual > booked:
                expected.overruns += 1
                if expected.cap is not None:
                    expected.tripped = tripped = True
            report = ledger.settle_and_report(r, actual / 1e12)
            assert report == Settlement(
                agent_id=r.agent_id,
                reserved_usd=booked / 1e12,
                actual_usd=actual / 1e12,
                tripped=tripped,
                overrun=actual > booked,
            )
            closed.append(r)
        elif kind == "release" and pending:
            r = pending.pop(op[1] % len(pending))
            expected.reserved -= expected.booked.pop(r.id)
            ledger.release(r)
            closed.append(r)
        elif kind == "again" and closed:
            r = closed[op[1] % len(closed)]
            if op[2]:
                with pytest.raises(ValueError, match=r"is not outstanding"):
                    ledger.settle(r, 0.0)
            else:
                ledger.release(r)  # a no-op
        elif kind == "impostor" and pending:
            r = pending[op[1] % len(pending)]
            if op[2] != r.agent_id:  # the same booking, claimed by another agent: no match
                with pytest.raises(ValueError, match=r"is not outstanding"):
                    ledger.settle(attrs.evolve(r, agent_id=op[2]), 0.0)
        elif kind == "exhaust":
            ledger.exhaust()
            if expected.cap is not None:
                expected.tripped = True
        elif kind == "foreign":
            stranger = other.try_reserve("main", 0.0) if op[2] or not pending else None
            target = stranger or pending[op[1] % len(pending)]
            with pytest.raises(ForeignReservation):
                (other if stranger is None else ledger).settle(target, 0.0)
            if stranger is not None:
                other.release(stranger)
        check_state(ledger, expected)
        assert other.total == 0 and other.outstanding == 0
        assert len(trips) == int(expected.tripped)  # the callbacks ran once, at the trip
    for r in pending:
        ledger.release(r)
    assert ledger.reserved == 0 and ledger.outstanding == 0


def test_exhausting_a_ledger_trips_it_without_a_charge() -> None:
    """A refused request exhausts the tree: tripped, callbacks run once, nothing charged."""
    ledger = Ledger(cap=1.0)
    calls: list[str] = []
    ledger.add_trip_callback(lambda: calls.append("trip"))
    ledger.charge("main", 0.25)
    ledger.exhaust()
    ledger.exhaust()
    assert ledger.exhausted and ledger.tripped.is_set()
    assert calls == ["trip"]
    assert (ledger.total, ledger.charges, ledger.remaining) == (0.25, 1, 0.0)
    assert ledger.try_reserve("main", 0.0) is None


def test_exhausting_a_ledger_without_a_cap_does_nothing() -> None:
    """No cap, no budget to run out of."""
    ledger = Ledger()
    ledger.exhaust()
    assert not ledger.exhausted


def test_subtree_spent_sums_an_agent_and_its_descendants() -> None:
    """Agent ids are paths; a subtree is the agent and the ids below it, not its namesakes."""
    ledger = Ledger()
    for agent, cost in [("main", 1.0), ("main/a-1", 0.5), ("main/a-1/b-1", 0.25),
                        ("main/a-10", 0.125), ("main/c-1", 2.0)]:  # fmt: skip
        ledger.charge(agent, cost)
    assert ledger.subtree_spent("main") == 3.875 == ledger.total
    assert ledger.subtree_spent("main/a-1") == 0.75
    assert ledger.subtree_spent("main/a-1/b-1") == 0.25
    assert ledger.subtree_spent("main/x-1") == 0.0


def test_subtree_spent_counts_ids_charged_before_their_parents_once() -> None:
    """A grandchild charged before its parent and grandparent (or under ids never charged)
    still counts in each ancestor's subtree, and a parent charged after its children counts
    once."""
    ledger = Ledger()
    for agent, cost in [("main/a-1/b-1/c-1", 0.5), ("main/a-1/b-1", 0.25), ("main/a-1", 1.0),
                        ("main/a-1/b-2", 0.125), ("main", 2.0)]:  # fmt: skip
        ledger.charge(agent, cost)
    assert ledger.subtree_spent("main") == 3.875 == ledger.total
    assert ledger.subtree_spent("main/a-1") == 1.875
    assert ledger.subtree_spent("main/a-1/b-1") == 0.75
    assert ledger.subtree_spent("main/a-1/b-1/c-1") == 0.5
    ledger.charge("x/y/z", 1.0)  # no ancestor ever charged
    assert ledger.subtree_spent("x") == 1.0 == ledger.subtree_spent("x/y")
