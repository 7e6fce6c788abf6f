"""The budget ledger: one per actor tree, pure synchronous bookkeeping plus a ``trio.Event``.

Amounts are kept as integers of 1e-12 USD, so totals are exact and independent of the order of
charges (float addition is neither). Public values are floats (``units / 1e12``); rounding a
public value back with ``round(x * 1e12)`` recovers the exact integer.

Two ways to stay under a cap:

* **soft cap** (``charge``): spend, then look. The charge that makes ``total >= cap`` trips the
  ledger: ``tripped`` is set and the trip callbacks run, once, inside that ``charge`` call.
* **hard cap** (``reserve`` / ``settle``): book the worst case first; the request starts only if
  ``total + reserved + worst_case <= cap``. Settling with ``actual <= worst_case`` therefore
  never makes ``total`` exceed the cap, under any interleaving.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import trio

from ._errors import BudgetExhausted

_SCALE = 1e12


def _to_units(value: float, name: str) -> int:
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be >= 0 and finite, got {value!r}")
    return round(value * _SCALE)


def _check_cap(_instance: object, _attribute: object, value: float | None) -> None:
    if value is not None and not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"cap must be >= 0, got {value:g}")


@attrs.frozen
class Reservation:
    """A booked worst case, to be settled (request ran) or released (it never started)."""

    agent_id: str
    amount: float
    id: int


@attrs.frozen
class LedgerStatistics:
    """A snapshot of a ledger; ``per_agent`` is a copy."""

    cap: float | None
    total: float
    reserved: float
    charges: int
    per_agent: dict[str, float]


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
    _per_agent: dict[str, int] = attrs.field(factory=dict, init=False)
    _outstanding: dict[int, int] = attrs.field(factory=dict, init=False)
    _next_id: int = attrs.field(default=0, init=False)
    _callbacks: list[Callable[[], None]] = attrs.field(factory=list, init=False)

    def __attrs_post_init__(self) -> None:
        if self.cap is not None:
            self._cap_units = round(self.cap * _SCALE)
            if self._cap_units <= 0:
                self.tripped.set()  # a zero cap is exhausted before anything is spent

    # -- soft cap ---------------------------------------------------------------------------

    def charge(self, agent_id: str, cost: float) -> bool:
        """Add ``cost`` (USD, >= 0) attributed to ``agent_id``; True iff ``total >= cap`` now."""
        return self._charge_units(agent_id, _to_units(cost, "cost"))

    def _charge_units(self, agent_id: str, units: int) -> bool:
        self._total += units
        self._charges += 1
        per_agent = self._per_agent
        per_agent[agent_id] = per_agent.get(agent_id, 0) + units
        cap = self._cap_units
        if cap is None or self._total < cap:
            return False
        if not self.tripped.is_set():
            self.tripped.set()
            for fn in tuple(self._callbacks):
                fn()
        return True

    def add_trip_callback(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` synchronously, once, inside the charge that trips the ledger.

        Synchronous so that whatever the callback cancels is cancelled in the same instant as
        the overspend, before any other task runs. If already tripped, ``fn`` runs at once.
        """
        if self.tripped.is_set():
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
        if cap is not None and (self._total >= cap or self._total + self._reserved + units > cap):
            return None
        self._reserved += units
        rid = self._next_id
        self._next_id = rid + 1
        self._outstanding[rid] = units
        return Reservation(agent_id=agent_id, amount=units / _SCALE, id=rid)

    def reserve(self, agent_id: str, worst_case: float) -> Reservation:
        """Like :meth:`try_reserve` but raises :class:`BudgetExhausted` when it does not fit."""
        reservation = self.try_reserve(agent_id, worst_case)
        if reservation is None:
            raise BudgetExhausted
        return reservation

    def settle(self, reservation: Reservation, actual: float) -> bool:
        """Release ``reservation`` and charge ``actual`` instead; same return as :meth:`charge`.

        The hard-cap bound holds only if ``actual <= reservation.amount``; it is not enforced
        because the real cost has been incurred either way and must be recorded.
        """
        units = _to_units(actual, "actual")
        booked = self._outstanding.pop(reservation.id, None)
        if booked is None:
            raise ValueError(
                f"reservation {reservation.id} is not outstanding (already settled or released)"
            )
        self._reserved -= booked
        return self._charge_units(reservation.agent_id, units)

    def release(self, reservation: Reservation) -> None:
        """Drop a reservation whose request never started; a no-op if already settled/released."""
        booked = self._outstanding.pop(reservation.id, None)
        if booked is not None:
            self._reserved -= booked

    # -- reading ----------------------------------------------------------------------------

    @property
    def total(self) -> float:
        return self._total / _SCALE

    @property
    def reserved(self) -> float:
        return self._reserved / _SCALE

    @property
    def remaining(self) -> float | None:
        """``cap - total - reserved`` (never negative); None without a cap."""
        cap = self._cap_units
        if cap is None:
            return None
        return max(cap - self._total - self._reserved, 0) / _SCALE

    @property
    def exhausted(self) -> bool:
        cap = self._cap_units
        return cap is not None and self._total >= cap

    def spent(self, agent_id: str) -> float:
        """Cost attributed to one agent so far (O(1), unlike copying ``per_agent()``)."""
        return self._per_agent.get(agent_id, 0) / _SCALE

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
        )
