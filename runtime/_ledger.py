"""The budget ledger: one per actor tree, pure synchronous bookkeeping plus a ``trio.Event``.

Amounts are kept as integers of 1e-12 USD, so totals are exact and independent of the order of
charges (float addition is neither). Public values are floats (``units / 1e12``); rounding a
public value back with ``round(x * 1e12)`` recovers the exact integer.

Two ways to stay under a cap:

* **soft cap** (``charge``): spend, then look. The charge that makes ``total >= cap`` trips the
  ledger: ``tripped`` is set and the trip callbacks run, once, inside that ``charge`` call.
* **hard cap** (``reserve`` / ``settle``): book the worst case first; the request starts only if
  ``total + reserved + worst_case <= cap``. Settling with ``actual <= worst_case`` therefore
  never makes ``total`` exceed the cap, under any interleaving. :meth:`Ledger.try_reserve_request`
  books a model request whose output is fitted to what is left.

Whatever ends a request, its reservation is settled (it ran, even partly) or released (it never
started). A settle whose actual cost is above the booked worst case — a backend can report
anything — is an *overrun*: it is charged in full (the money is spent), it trips the ledger at
once whatever the total, and :meth:`Ledger.settle_and_report` says so, for the layer above to
report. A ledger is the only one that can settle its reservations: reservation ids are unique
across every ledger of the process, and a settle or release on another ledger raises
:class:`ForeignReservation` instead of touching that ledger's bookings.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs
import trio

from ._errors import BudgetExhausted

if TYPE_CHECKING:
    from ._budget_ledger import BudgetLedger

_SCALE = 1e12
#: reservation ids, unique across every ledger (a ``/clear`` replaces the ledger mid-flight)
_reservation_ids = itertools.count()
#: ledger serial numbers, to name them in errors
_ledger_serials = itertools.count(1)
#: added to a fitted request's booking: float rounding of the actual cost cannot overrun it
_ROUNDING_SLACK = 64


def _to_units(value: float, name: str) -> int:
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be >= 0 and finite, got {value!r}")
    return round(value * _SCALE)


def _name(ledger: object) -> str:
    return f"ledger {ledger._serial}" if isinstance(ledger, Ledger) else repr(ledger)


def _check_cap(_instance: object, _attribute: object, value: float | None) -> None:
    if value is not None and not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"cap must be >= 0, got {value:g}")


class ForeignReservation(ValueError):
    """A reservation was settled or released on a ledger that did not issue it.

    The issuing ledger still holds the booking; settle it there (``reservation.issuer``). The
    ledger it was presented to is left untouched, so no other agent's booking is hit.
    """


@attrs.frozen
class Reservation:
    """A booked worst case, to be settled (request ran) or released (it never started).

    ``max_tokens`` is the output a fitted request may ask for (:meth:`Ledger.try_reserve_request`),
    None for a plain worst case. ``issuer`` is the ledger that booked it.
    """

    agent_id: str
    amount: float
    id: int
    max_tokens: int | None = attrs.field(default=None, kw_only=True)
    issuer: BudgetLedger | None = attrs.field(default=None, kw_only=True, eq=False, repr=False)


@attrs.frozen
class Settlement:
    """What settling one reservation did: the booked worst case, the cost charged in full, and
    whether the ledger is tripped now. ``overrun``: the cost was above the booking."""

    agent_id: str
    reserved_usd: float
    actual_usd: float
    tripped: bool
    overrun: bool


@attrs.frozen
class LedgerStatistics:
    """A snapshot of a ledger; ``per_agent`` is a copy. ``outstanding``: reservations neither
    settled nor released; ``overruns``: settles above their booking."""

    cap: float | None
    total: float
    reserved: float
    charges: int
    per_agent: dict[str, float]
    outstanding: int = 0
    overruns: int = 0


def affordable_output_tokens(
    available_usd: float | None,
    input_cost_usd: float,
    output_usd_per_mtok: float,
    max_tokens: int,
    min_output_tokens: int = 1024,
) -> int | None:
    """The largest ``max_tokens`` (at most the one asked for) that ``available_usd`` pays for
    after the worst-case input cost, at ``output_usd_per_mtok``; None if not even
    ``min_output_tokens`` (or ``max_tokens``, if smaller) fits. ``available_usd=None``: no cap.

    >>> affordable_output_tokens(0.05, 0.01, 15.0, 32_000)   # $0.04 of output at $15/MTok
    2666
    """
    if available_usd is None:
        _check_tokens(max_tokens, min_output_tokens)
        return max_tokens
    return _fit(
        _to_units(available_usd, "available_usd"),
        _to_units(input_cost_usd, "input_cost_usd") + _ROUNDING_SLACK,
        _per_token_units(output_usd_per_mtok),
        max_tokens,
        min_output_tokens,
    )


def _per_token_units(output_usd_per_mtok: float) -> int:
    """Units of 1e-12 USD per output token, rounded up: the booking stays an upper bound."""
    if not (output_usd_per_mtok >= 0 and math.isfinite(output_usd_per_mtok)):
        raise ValueError(
            f"output_usd_per_mtok must be >= 0 and finite, got {output_usd_per_mtok!r}"
        )
    return math.ceil(output_usd_per_mtok * 1e6)


def _check_tokens(max_tokens: int, min_output_tokens: int) -> None:
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if min_output_tokens < 1:
        raise ValueError(f"min_output_tokens must be >= 1, got {min_output_tokens}")


def _fit(
    available: int, input_units: int, per_token: int, max_tokens: int, least: int
) -> int | None:
    """The output tokens ``available`` units pay for after ``input_units``; see above."""
    _check_tokens(max_tokens, least)
    left = available - input_units
    if left < 0:
        return None
    tokens = max_tokens if per_token == 0 else min(max_tokens, left // per_token)
    return tokens if tokens >= min(least, max_tokens) else None


# Validated once, at construction; hot counters are then set without attrs hooks.
@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class Ledger:
    """Cost bookkeeping shared by every agent of a tree.

    ::

        ledger = Ledger(cap=1.0)
        ledger.charge("main", 0.25)            # False: under the cap
        r = ledger.reserve("main/researcher-1", 0.5)
        ledger.settle(r, 0.75)                 # True: total 1.0 >= cap; ledger.tripped is set
    """

    cap: float | None = attrs.field(default=None, validator=_check_cap)
    tripped: trio.Event = attrs.field(factory=trio.Event, init=False)
    _cap_units: int | None = attrs.field(default=None, init=False)
    _total: int = attrs.field(default=0, init=False)
    _reserved: int = attrs.field(default=0, init=False)
    _charges: int = attrs.field(default=0, init=False)
    _overruns: int = attrs.field(default=0, init=False)
    _is_tripped: bool = attrs.field(default=False, init=False)
    _per_agent: dict[str, int] = attrs.field(factory=dict, init=False)
    #: agent id → the ids directly below it (``main/a-1`` → ``main/a-1/b-1``...) that are
    #: charged or have charged ids below them, filled at each id's first charge: ``subtree_spent``
    #: walks a subtree, not every agent of the tree, and a charge links one id, not its path
    _below: dict[str, list[str]] = attrs.field(factory=dict, init=False)
    #: reservation id → (booked units, agent id)
    _outstanding: dict[int, tuple[int, str]] = attrs.field(factory=dict, init=False)
    _callbacks: list[Callable[[], None]] = attrs.field(factory=list, init=False)
    _serial: int = attrs.field(factory=lambda: next(_ledger_serials), init=False)

    def __attrs_post_init__(self) -> None:
        if self.cap is not None:
            self._cap_units = round(self.cap * _SCALE)
            if self._cap_units <= 0:
                self._trip()  # a zero cap is exhausted before anything is spent

    # -- soft cap ---------------------------------------------------------------------------

    def charge(self, agent_id: str, cost: float) -> bool:
        """Add ``cost`` (USD, >= 0) attributed to ``agent_id``; True iff the ledger is tripped
        now (``total >= cap``, or an earlier overrun)."""
        # ``_to_units`` inlined: this runs for every response
        if not (cost >= 0 and math.isfinite(cost)):
            raise ValueError(f"cost must be >= 0 and finite, got {cost!r}")
        return self._charge_units(agent_id, round(cost * _SCALE))

    def _charge_units(self, agent_id: str, units: int) -> bool:
        self._total += units
        self._charges += 1
        per_agent = self._per_agent
        spent = per_agent.get(agent_id)
        if spent is None:
            spent = 0
            # Link a newly charged id under its parent id (once per agent; one already linked
            # as the parent of an id charged before it stays as it is).
            if agent_id not in self._below:
                self._link(agent_id)
        per_agent[agent_id] = spent + units
        if self._is_tripped:
            return True
        cap = self._cap_units
        if cap is None or self._total < cap:
            return False
        self._trip()
        return True

    def _link(self, agent_id: str) -> None:
        cut = agent_id.rfind("/")
        if cut < 0:
            return
        parent = agent_id[:cut]
        below = self._below
        siblings = below.get(parent)
        if siblings is not None:
            siblings.append(agent_id)
            return
        below[parent] = [agent_id]
        if parent not in self._per_agent:  # neither charged nor linked yet: link it too
            self._link(parent)

    def _trip(self) -> None:
        """Set the tripped state and run the callbacks, once."""
        if self._is_tripped:
            return
        self._is_tripped = True
        self.tripped.set()
        for fn in tuple(self._callbacks):
            fn()

    def exhaust(self) -> None:
        """Trip the ledger without a charge: a request the budget cannot pay for was refused,
        and the tree must stop as if the cap were reached (one exhausted state, whatever the
        mode). A no-op without a cap or when already tripped."""
        if self._cap_units is not None:
            self._trip()

    def add_trip_callback(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` synchronously, once, inside the charge that trips the ledger.

        Synchronous so that whatever the callback cancels is cancelled in the same instant as
        the overspend, before any other task runs. If already tripped, ``fn`` runs at once.
        """
        if self._is_tripped:
            fn()
        else:
            self._callbacks.append(fn)

    def remove_trip_callback(self, fn: Callable[[], None]) -> None:
        """Forget ``fn`` (a supervisor that shares a ledger unregisters itself on exit)."""
        if fn in self._callbacks:
            self._callbacks.remove(fn)

    # -- hard cap ---------------------------------------------------------------------------

    def try_reserve(self, agent_id: str, worst_case: float) -> Reservation | None:
        """Book ``worst_case`` if it fits under the cap (always, without a cap); else None."""
        units = _to_units(worst_case, "worst_case")
        cap = self._cap_units
        if cap is not None and (self._is_tripped or self._total + self._reserved + units > cap):
            return None
        return self._book(agent_id, units, None)

    def _book(self, agent_id: str, units: int, max_tokens: int | None) -> Reservation:
        self._reserved += units
        rid = next(_reservation_ids)
        self._outstanding[rid] = (units, agent_id)
        return Reservation(
            agent_id=agent_id, amount=units / _SCALE, id=rid, max_tokens=max_tokens, issuer=self
        )

    def reserve(self, agent_id: str, worst_case: float) -> Reservation:
        """Like :meth:`try_reserve` but raises :class:`BudgetExhausted` when it does not fit."""
        reservation = self.try_reserve(agent_id, worst_case)
        if reservation is None:
            raise BudgetExhausted
        return reservation

    async def prepare_request(
        self,
        agent_id: str,
        *,
        input_cost_usd: float,
        output_usd_per_mtok: float,
        max_tokens: int,
        min_output_tokens: int,
    ) -> None:
        """Nothing to fetch: this ledger decides every booking locally (no checkpoint)."""

    def try_reserve_request(
        self,
        agent_id: str,
        *,
        input_cost_usd: float,
        output_usd_per_mtok: float,
        max_tokens: int,
        min_output_tokens: int = 1024,
    ) -> Reservation | None:
        """Book a model request with its output fitted to what is left: the worst-case input
        cost plus the largest ``max_tokens`` (at most the one asked for) the rest pays for,
        never below ``min_output_tokens``. None when not even that fits or the ledger is
        tripped. ``reservation.max_tokens`` is what the request may ask for.

        Synchronous, so nothing runs between the check and the booking; send the request
        right after it.
        """
        input_units = _to_units(input_cost_usd, "input_cost_usd") + _ROUNDING_SLACK
        per_token = _per_token_units(output_usd_per_mtok)
        cap = self._cap_units
        if cap is None:
            _check_tokens(max_tokens, min_output_tokens)
            return self._book(agent_id, input_units + max_tokens * per_token, max_tokens)
        if self._is_tripped:
            return None
        available = cap - self._total - self._reserved
        tokens = _fit(available, input_units, per_token, max_tokens, min_output_tokens)
        if tokens is None:
            return None
        return self._book(agent_id, input_units + tokens * per_token, tokens)

    def settle(self, reservation: Reservation, actual: float) -> bool:
        """Release ``reservation`` and charge ``actual`` instead; same return as :meth:`charge`.

        An ``actual`` above the booking is charged in full and trips the ledger (see
        :meth:`settle_and_report` to learn that it happened).
        """
        return self.settle_and_report(reservation, actual).tripped

    def settle_and_report(self, reservation: Reservation, actual: float) -> Settlement:
        """:meth:`settle`, returning what it did: booked, charged, tripped (and so, overrun).

        Raises :class:`ForeignReservation` for another ledger's reservation and ``ValueError``
        for one already settled or released; either way nothing is charged here.
        """
        units = _to_units(actual, "actual")
        booked = self._take(reservation)
        if booked is None:
            raise ValueError(
                f"reservation {reservation.id} is not outstanding (already settled or released)"
            )
        self._reserved -= booked
        tripped = self._charge_units(reservation.agent_id, units)
        overrun = units > booked
        if overrun:
            self._overruns += 1
            if self._cap_units is not None:  # without a cap there is nothing to exhaust
                self._trip()
                tripped = True
        return Settlement(
            agent_id=reservation.agent_id,
            reserved_usd=booked / _SCALE,
            actual_usd=units / _SCALE,
            tripped=tripped,
            overrun=overrun,
        )

    def release(self, reservation: Reservation) -> None:
        """Drop a reservation whose request never started; a no-op if already settled/released.

        Raises :class:`ForeignReservation` for another ledger's reservation."""
        booked = self._take(reservation)
        if booked is not None:
            self._reserved -= booked

    def _take(self, reservation: Reservation) -> int | None:
        """Pop this ledger's booking of ``reservation``: its units, or None if not outstanding."""
        if reservation.issuer is not self:
            issuer = reservation.issuer
            by = "no ledger" if issuer is None else _name(issuer)
            raise ForeignReservation(
                f"reservation {reservation.id} was issued by {by}, not by ledger {self._serial}"
            )
        entry = self._outstanding.get(reservation.id)
        if entry is None or entry[1] != reservation.agent_id:
            return None
        del self._outstanding[reservation.id]
        return entry[0]

    # -- reading ----------------------------------------------------------------------------

    @property
    def total(self) -> float:
        return self._total / _SCALE

    @property
    def reserved(self) -> float:
        return self._reserved / _SCALE

    @property
    def outstanding(self) -> int:
        """Reservations neither settled nor released yet (0 once every request is done)."""
        return len(self._outstanding)

    @property
    def remaining(self) -> float | None:
        """``cap - total - reserved`` (never negative; 0 once tripped); None without a cap."""
        cap = self._cap_units
        if cap is None:
            return None
        if self._is_tripped:
            return 0.0
        return max(cap - self._total - self._reserved, 0) / _SCALE

    @property
    def exhausted(self) -> bool:
        """The one exhausted state: the cap is reached or a settle overran its booking."""
        return self._is_tripped

    def spent(self, agent_id: str) -> float:
        """Cost attributed to one agent so far (O(1), unlike copying ``per_agent()``)."""
        return self._per_agent.get(agent_id, 0) / _SCALE

    def subtree_spent(self, agent_id: str) -> float:
        """Cost of ``agent_id`` and every agent below it (ids are paths: ``main/a-1/b-2``)."""
        per_agent = self._per_agent
        below = self._below
        units = per_agent.get(agent_id, 0)
        direct = below.get(agent_id)
        if direct is None:  # nothing charged below it (a leaf): no walk
            return units / _SCALE
        deeper: list[str] = []
        for linked in direct:
            units += per_agent.get(linked, 0)
            more = below.get(linked)
            if more is not None:
                deeper.extend(more)
        while deeper:
            linked = deeper.pop()
            units += per_agent.get(linked, 0)
            more = below.get(linked)
            if more is not None:
                deeper.extend(more)
        return units / _SCALE

    @property
    def overruns(self) -> int:
        """How many settles were above their booking (each one tripped the ledger)."""
        return self._overruns

    @property
    def charges(self) -> int:
        """How many charges and settles were made (one per model response)."""
        return self._charges

    def per_agent(self) -> dict[str, float]:
        """Cost attributed to each agent; the integers behind it sum to ``total`` exactly."""
        return {agent: units / _SCALE for agent, units in self._per_agent.items()}

    def statistics(self) -> LedgerStatistics:
        return LedgerStatistics(
            cap=self.cap,
            total=self.total,
            reserved=self.reserved,
            charges=self._charges,
            per_agent=self.per_agent(),
            outstanding=len(self._outstanding),
            overruns=self._overruns,
        )
