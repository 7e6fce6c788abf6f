"""``BudgetLedger``: the one interface the agent loop and the supervisor use to spend money.

The in-process :class:`~runtime.Ledger` is one implementation (pure synchronous bookkeeping);
a ledger whose storage is elsewhere — another process, a database shared by many hosts — is
another. The loop never knows which it has:

* every decision it takes on the budget is synchronous (``exhausted``, ``try_reserve_request``,
  ``settle_and_report``, ``charge``), so nothing runs between a check and what it allows;
* the one await is :meth:`BudgetLedger.prepare_request`, just before the synchronous booking of a
  request, where a remote ledger fetches the room for it from its storage. The in-process ledger
  returns at once, without a checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ._ledger import LedgerStatistics, Reservation, Settlement

__all__ = ["BudgetLedger"]


class BudgetLedger(Protocol):
    """What the loop, its features and the supervisor need of a tree's budget ledger."""

    @property
    def cap(self) -> float | None:
        """The tree's cap in USD, None without one."""
        ...

    @property
    def exhausted(self) -> bool:
        """The one exhausted state: the cap is reached, a settle overran, or it was exhausted."""
        ...

    @property
    def total(self) -> float:
        """What was charged here so far (USD)."""
        ...

    @property
    def reserved(self) -> float:
        """Worst cases booked here and not settled yet (USD)."""
        ...

    @property
    def charges(self) -> int:
        """How many charges and settles were made here (one per model response)."""
        ...

    def spent(self, agent_id: str) -> float:
        """Cost attributed to one agent so far."""
        ...

    def subtree_spent(self, agent_id: str) -> float:
        """Cost of ``agent_id`` and every agent below it (ids are paths)."""
        ...

    def per_agent(self) -> dict[str, float]:
        """Cost attributed to each agent (a copy)."""
        ...

    def statistics(self) -> LedgerStatistics:
        """A snapshot of the figures above."""
        ...

    def charge(self, agent_id: str, cost: float) -> bool:
        """Soft cap: add ``cost`` for ``agent_id``; True iff the ledger is exhausted now."""
        ...

    def exhaust(self) -> None:
        """Stop spending as if the cap were reached (a request the budget cannot pay for)."""
        ...

    def add_trip_callback(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once, synchronously, when the ledger trips (at once if it has)."""
        ...

    def remove_trip_callback(self, fn: Callable[[], None]) -> None:
        """Forget ``fn``."""
        ...

    async def prepare_request(
        self,
        agent_id: str,
        *,
        input_cost_usd: float,
        output_usd_per_mtok: float,
        max_tokens: int,
        min_output_tokens: int,
    ) -> None:
        """Make the coming :meth:`try_reserve_request` with the same arguments decidable here.

        Call it right before that booking (nothing else awaited between). A ledger whose
        storage is remote books the room for the request there; the in-process one has
        nothing to fetch."""
        ...

    def try_reserve_request(
        self,
        agent_id: str,
        *,
        input_cost_usd: float,
        output_usd_per_mtok: float,
        max_tokens: int,
        min_output_tokens: int = 1024,
    ) -> Reservation | None:
        """Hard cap: book the request with its output fitted to what is left, or None."""
        ...

    def settle_and_report(self, reservation: Reservation, actual: float) -> Settlement:
        """Charge ``actual`` in place of ``reservation`` (issued here), once."""
        ...

    def release(self, reservation: Reservation) -> None:
        """Drop a reservation whose request never started."""
        ...
