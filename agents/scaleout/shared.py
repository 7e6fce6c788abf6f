"""``SharedLedger``: a tree's budget kept in PostgreSQL, as the ledger an agent loop spends on.

The loop depends on one interface, :class:`runtime.BudgetLedger`; the in-process
:class:`runtime.Ledger` is one implementation and this is the other. A session uses it through
``AgentOptions(ledger=...)``; the tree's :class:`~agents.scaleout.PostgresLedger` holds the truth.

* **Hard cap** (``budget_mode="reserve"``). Before each request the loop awaits
  :meth:`SharedLedger.prepare_request`, which books the request's worst case on PostgreSQL in one
  conditional update — all of it, or, when the tree has less left, what is left if that pays for
  ``min_output_tokens`` — with a lease. The loop's synchronous booking then takes exactly that
  grant and fits ``max_tokens`` to it, and nothing is awaited before the send. The tree's cap
  therefore holds exactly across every host; a dead host's grants are charged in full when their
  lease expires.
* **Settling.** The loop settles synchronously here; the settle of the grant on PostgreSQL (with
  the actual cost, idempotent per grant) is sent in order by this ledger's flusher task right
  after. Until it lands the tree counts the worst case, which only errs on the safe side.
* **Soft cap.** A charge is counted here and sent to PostgreSQL by the flusher; the charge that
  takes the tree to its cap trips it there, and every host's ledgers trip (``NOTIFY``). The soft
  bound across hosts is the in-process one plus what is charged during one flush.
* **Trips.** The tree's trip, from any host, trips this ledger (the supervisor then cancels its
  background agents and the loop ends at its next gate). :meth:`exhaust` — the agent cannot start
  a request — ends this ledger's session; it trips the whole tree only for the tree's ``root``
  (the main agent's session), as in one process a subagent's refusal does not end the tree.
* ``limit``: an optional cap of this ledger's own spending within the tree (a job's allowance).

The figures it reports (``total``, ``per_agent``…) are this ledger's; the tree's are in
:meth:`PostgresLedger.statistics`. Agents are attributed on PostgreSQL as ``<name>/<agent id>``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable

import attrs
import trio

from runtime import (
    ForeignReservation,
    Ledger,
    LedgerStatistics,
    Reservation,
    Settlement,
    affordable_output_tokens,
)

from .ledger import SCALE as _SCALE
from .ledger import PostgresLedger, SharedReservation
from .ledger import to_units as _units

__all__ = ["SharedLedger", "open_shared_ledger"]

log = logging.getLogger("agents.scaleout")

#: as the in-process ledger: a fitted booking's slack for float rounding of the actual cost
_ROUNDING_SLACK = 64
#: local reservation ids, apart from the in-process ledgers' (which count up from 0)
_ids = itertools.count(1 << 52)
#: how long closing waits for the last settles to reach PostgreSQL
_CLOSE_TIMEOUT_S = 10.0


@attrs.define(eq=False)
class SharedLedger:
    """A session's view of tree ``tree.tree_id``'s budget; see the module docstring. Open it with
    :func:`open_shared_ledger` (its flusher task runs while it is open)."""

    tree: PostgresLedger
    name: str
    root: bool = False
    limit: float | None = None
    tripped: trio.Event = attrs.field(factory=trio.Event, init=False)
    _is_tripped: bool = attrs.field(default=False, init=False)
    #: what was spent here, per agent: in-process books without a cap (the cap is the tree's)
    _book: Ledger = attrs.field(factory=Ledger, init=False)
    _reserved: int = attrs.field(default=0, init=False)
    _overruns: int = attrs.field(default=0, init=False)
    #: grants fetched by prepare_request and not yet taken by try_reserve_request, per agent
    _prepared: dict[str, SharedReservation] = attrs.field(factory=dict, init=False)
    #: local reservation id -> (booked units, agent id, the grant behind it)
    _outstanding: dict[int, tuple[int, str, SharedReservation]] = attrs.field(
        factory=dict, init=False
    )
    _callbacks: list[Callable[[], None]] = attrs.field(factory=list, init=False)
    #: what the flusher sends to PostgreSQL, in order
    _ops: list[Callable[[], Awaitable[object]]] = attrs.field(factory=list, init=False)
    _wake: trio.Event = attrs.field(factory=trio.Event, init=False)
    _idle: trio.Event = attrs.field(factory=trio.Event, init=False)
    _closing: bool = attrs.field(default=False, init=False)
    _flusher: trio.CancelScope = attrs.field(
        factory=lambda: trio.CancelScope(shield=True), init=False
    )

    # -- the interface the loop uses ----------------------------------------------------------

    @property
    def cap(self) -> float | None:
        """The tree's cap, or ``limit`` if that is lower (or the tree has none)."""
        caps = [c for c in (self.tree.cap, self.limit) if c is not None]
        return min(caps) if caps else None

    @property
    def exhausted(self) -> bool:
        return self._is_tripped

    @property
    def total(self) -> float:
        return self._book.total

    @property
    def reserved(self) -> float:
        return self._reserved / _SCALE

    @property
    def charges(self) -> int:
        return self._book.charges

    @property
    def overruns(self) -> int:
        return self._overruns

    @property
    def outstanding(self) -> int:
        """Local reservations neither settled nor released."""
        return len(self._outstanding)

    def spent(self, agent_id: str) -> float:
        return self._book.spent(agent_id)

    def subtree_spent(self, agent_id: str) -> float:
        return self._book.subtree_spent(agent_id)

    def per_agent(self) -> dict[str, float]:
        return self._book.per_agent()

    def statistics(self) -> LedgerStatistics:
        return attrs.evolve(
            self._book.statistics(),
            cap=self.cap,
            reserved=self.reserved,
            outstanding=len(self._outstanding),
            overruns=self._overruns,
        )

    def charge(self, agent_id: str, cost: float) -> bool:
        units = _units(cost, "cost")
        self._count(agent_id, units)
        self._send(self.tree.charge, self._remote(agent_id), units / _SCALE)
        return self._is_tripped

    def exhaust(self) -> None:
        if self.cap is None:
            return
        self._trip()
        if self.root:
            self._send(self.tree.exhaust)

    def add_trip_callback(self, fn: Callable[[], None]) -> None:
        if self._is_tripped:
            fn()
        else:
            self._callbacks.append(fn)

    def remove_trip_callback(self, fn: Callable[[], None]) -> None:
        if fn in self._callbacks:
            self._callbacks.remove(fn)

    async def prepare_request(
        self,
        agent_id: str,
        *,
        input_cost_usd: float,
        output_usd_per_mtok: float,
        max_tokens: int,
        min_output_tokens: int,
    ) -> None:
        """Book the request's room on PostgreSQL (its worst case, or what is left if that pays
        for ``min_output_tokens``), for the synchronous booking that follows."""
        stale = self._prepared.pop(agent_id, None)
        if stale is not None:  # prepared for a request that never asked: give it back
            self._send(self.tree.release, stale)
        if self._is_tripped or self.cap is None:
            return
        input_units = _units(input_cost_usd, "input_cost_usd") + _ROUNDING_SLACK
        per_token = math.ceil(output_usd_per_mtok * 1e6)
        most = input_units + max_tokens * per_token
        least = input_units + min(min_output_tokens, max_tokens) * per_token
        if self.limit is not None:
            room = _units(self.limit, "limit") - _units(self._book.total, "total") - self._reserved
            room -= sum(_units(g.amount, "grant") for g in self._prepared.values())
            if room < least:
                return
            most = min(most, room)
        grant = await self.tree.try_reserve_between(
            self._remote(agent_id), least / _SCALE, most / _SCALE
        )
        if grant is not None:
            self._prepared[agent_id] = grant  # no checkpoint since the grant came back

    def try_reserve_request(
        self,
        agent_id: str,
        *,
        input_cost_usd: float,
        output_usd_per_mtok: float,
        max_tokens: int,
        min_output_tokens: int = 1024,
    ) -> Reservation | None:
        """Take the grant :meth:`prepare_request` fetched and fit the request to it."""
        grant = self._prepared.pop(agent_id, None)
        if grant is None:
            return None
        if self._is_tripped:
            self._send(self.tree.release, grant)
            return None
        tokens = affordable_output_tokens(
            grant.amount, input_cost_usd, output_usd_per_mtok, max_tokens, min_output_tokens
        )
        if tokens is None:  # prepared for a larger request than this one asks
            self._send(self.tree.release, grant)
            return None
        units = _units(grant.amount, "grant")
        rid = next(_ids)
        self._reserved += units
        self._outstanding[rid] = (units, agent_id, grant)
        return Reservation(
            agent_id=agent_id, amount=units / _SCALE, id=rid, max_tokens=tokens, issuer=self
        )

    def settle_and_report(self, reservation: Reservation, actual: float) -> Settlement:
        units = _units(actual, "actual")
        booked, grant = self._take(reservation)
        if grant is None:
            raise ValueError(
                f"reservation {reservation.id} is not outstanding (already settled or released)"
            )
        self._reserved -= booked
        self._count(reservation.agent_id, units)
        self._send(self.tree.settle, grant, units / _SCALE)
        overrun = units > booked
        if overrun:  # charged in full; the tree cannot trust its bookings any more
            self._overruns += 1
            self._trip()
            self._send(self.tree.exhaust)
        return Settlement(
            agent_id=reservation.agent_id,
            reserved_usd=booked / _SCALE,
            actual_usd=units / _SCALE,
            tripped=self._is_tripped,
            overrun=overrun,
        )

    def release(self, reservation: Reservation) -> None:
        booked, grant = self._take(reservation)
        if grant is not None:
            self._reserved -= booked
            self._send(self.tree.release, grant)

    # -- inside -------------------------------------------------------------------------------

    def _take(self, reservation: Reservation) -> tuple[int, SharedReservation | None]:
        if reservation.issuer is not self:
            raise ForeignReservation(
                f"reservation {reservation.id} was not issued by the shared ledger {self.name!r}"
            )
        entry = self._outstanding.get(reservation.id)
        if entry is None or entry[1] != reservation.agent_id:
            return 0, None
        del self._outstanding[reservation.id]
        return entry[0], entry[2]

    def _remote(self, agent_id: str) -> str:
        return f"{self.name}/{agent_id}"

    def _count(self, agent_id: str, units: int) -> None:
        self._book.charge(agent_id, units / _SCALE)
        if self.limit is not None and self._book.total >= self.limit:
            self._trip()  # this ledger's own allowance is spent; the tree goes on

    def _trip(self) -> None:
        if self._is_tripped:
            return
        self._is_tripped = True
        self.tripped.set()
        for fn in tuple(self._callbacks):
            fn()

    def _send(self, fn: Callable[..., Awaitable[object]], *args: object) -> None:
        self._ops.append(lambda: fn(*args))
        self._idle = trio.Event() if self._idle.is_set() else self._idle
        self._wake.set()

    async def _flush(self) -> None:
        """Send the queued operations to PostgreSQL in order, retrying a failed one. Shielded:
        cancelling the session does not cut an update half-sent; :meth:`_stop` ends it once
        the queue is empty (or gives up after a timeout, leaving the rest to the leases)."""
        with self._flusher:
            while True:
                while self._ops:
                    await self._send_first()
                self._idle.set()
                if self._closing:
                    return
                await self._wake.wait()
                self._wake = trio.Event()

    async def _send_first(self) -> None:
        delay = 0.05
        while True:
            try:
                await self._ops[0]()
            except Exception:  # the database is away: keep it, in order, and retry
                log.exception("shared ledger %s: retrying an update", self.name)
                await trio.sleep(delay)
                delay = min(delay * 2, 2.0)
            else:
                del self._ops[0]
                return

    async def _stop(self) -> None:
        """Give back what is held, send what is queued (at most 10 s), then end the flusher."""
        self._give_back()
        self._closing = True
        self._wake.set()
        with trio.CancelScope(shield=True), trio.move_on_after(_CLOSE_TIMEOUT_S):
            await self.drained()
        self._flusher.cancel()

    def _give_back(self) -> None:
        """At close: return unused grants; a booking never settled (its request's end was not
        seen) is charged its whole worst case, as a dead host's would be."""
        for grant in self._prepared.values():
            self._send(self.tree.release, grant)
        self._prepared.clear()
        for units, _agent, grant in self._outstanding.values():
            log.warning("shared ledger %s: a booking was never settled; charged in full", self.name)
            self._send(self.tree.settle, grant, units / _SCALE)
        self._outstanding.clear()
        self._reserved = 0

    async def drained(self) -> None:
        """Wait until every update made so far has reached PostgreSQL."""
        if self._ops:
            await self._idle.wait()


@contextlib.asynccontextmanager
async def open_shared_ledger(
    tree: PostgresLedger, *, name: str, root: bool = False, limit: float | None = None
) -> AsyncIterator[SharedLedger]:
    """A :class:`SharedLedger` on ``tree`` for one session, named ``name`` on PostgreSQL.

    ``root=True`` for the session of the tree's main agent (its refusal ends the tree). On exit
    the grants it holds are given back and its updates are sent (waiting at most 10 s, also when
    cancelled); one that cannot be sent is left to its lease, which charges its worst case.
    """
    if limit is not None:
        _units(limit, "limit")
    ledger = SharedLedger(tree, name, root, limit)
    tree.add_trip_callback(ledger._trip)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ledger._flush)
            try:
                yield ledger
            finally:
                await ledger._stop()
    finally:
        tree.remove_trip_callback(ledger._trip)
