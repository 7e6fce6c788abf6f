"""``PostgresLedger``: one budget ledger shared by every process and host of a tree.

The in-process :class:`runtime.Ledger` is exact because one Trio thread owns it. Across processes
the owner is a row in PostgreSQL: every reservation is **one conditional update** of the tree's row
(``reserved + worst_case`` fits under the cap, or nothing changes), so the hard cap holds exactly
whatever the number of workers, with the row lock serializing concurrent reservations.

Amounts are integers of 1e-12 USD, as in the in-process ledger.

* **Leases.** A reservation carries a lease (default 10 s) that the ledger renews while it is
  outstanding (a heartbeat task). A worker that dies with a request in flight stops renewing; once
  its lease has expired, the ledger cannot know what that worker spent, so it **charges the whole
  worst case** and frees the booking (done when a reservation would not fit, and before reading
  the totals). The cap therefore holds for what was really spent, dead workers included.
* **Idempotent settle.** A reservation is settled once, by id; a repeated settle (a retry after a
  lost reply) changes nothing. A settle that arrives after its lease expired (the worker was only
  slow) corrects the worst case charged at the expiry to the actual cost.
* **Trip everywhere.** The charge that takes the total to the cap marks the tree tripped and sends
  a ``NOTIFY``; every ledger of the tree listens (and polls as a fallback) and sets its own
  :attr:`tripped` event and trip callbacks within a fraction of a second.

::

    async with open_postgres_ledger(dsn, tree_id="run-42", cap=5.0) as ledger:
        reservation = await ledger.try_reserve("main", 0.40)
        ...
        await ledger.settle(reservation, 0.12)
"""

from __future__ import annotations

import contextlib
import functools
import math
import uuid
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, TypeVar

import attrs
import trio

from agents.sessions.postgres import create_schema
from runtime import LedgerStatistics

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresLedger", "SharedReservation", "open_postgres_ledger"]

T = TypeVar("T")
#: integer units per USD, here and in the in-process ledger
SCALE = 10**12
_SCALE = SCALE
_MAX_UNITS = 2**62  # leaves a bigint headroom for the total's overshoot above the cap
_WATCH_INTERVAL_S = 0.2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {p}ledger_trees (
    tree_id  text PRIMARY KEY,
    cap      bigint,
    total    bigint NOT NULL DEFAULT 0,
    reserved bigint NOT NULL DEFAULT 0,
    charges  bigint NOT NULL DEFAULT 0,
    tripped  boolean NOT NULL DEFAULT false
);
CREATE TABLE IF NOT EXISTS {p}ledger_reservations (
    id          text PRIMARY KEY,
    tree_id     text NOT NULL,
    agent_id    text NOT NULL,
    units       bigint NOT NULL,
    lease_until timestamptz NOT NULL,
    state       text NOT NULL DEFAULT 'open'
);
CREATE INDEX IF NOT EXISTS {p}ledger_open ON {p}ledger_reservations (tree_id, lease_until)
    WHERE state = 'open';
CREATE TABLE IF NOT EXISTS {p}ledger_agents (
    tree_id  text NOT NULL,
    agent_id text NOT NULL,
    units    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tree_id, agent_id)
);
"""

# The reservation itself: one conditional update of the tree's row. It books ``most`` units, or
# what is left under the cap if that is less, provided it is at least ``least``.
_RESERVE = """
UPDATE {p}ledger_trees AS t SET reserved = t.reserved + room.u
FROM (
    SELECT CASE WHEN cap IS NULL THEN %(most)s
                ELSE LEAST(%(most)s, cap - total - reserved) END AS u
    FROM {p}ledger_trees WHERE tree_id = %(t)s AND NOT tripped FOR UPDATE
) AS room
WHERE t.tree_id = %(t)s AND room.u >= %(least)s
RETURNING room.u
"""

# Expire every dead lease of the tree: its worst case is charged (to its agent) and unbooked.
_EXPIRE = """
WITH gone AS (
    UPDATE {p}ledger_reservations SET state = 'expired'
    WHERE tree_id = %(t)s AND state = 'open' AND lease_until < now()
    RETURNING agent_id, units
), per_agent AS (
    INSERT INTO {p}ledger_agents (tree_id, agent_id, units)
    SELECT %(t)s, agent_id, sum(units) FROM gone GROUP BY agent_id
    ON CONFLICT (tree_id, agent_id) DO UPDATE SET units = {p}ledger_agents.units + excluded.units
), dead AS (SELECT coalesce(sum(units), 0) AS units, count(*) AS n FROM gone)
UPDATE {p}ledger_trees AS t
SET reserved = t.reserved - dead.units, total = t.total + dead.units,
    tripped = t.tripped OR (t.cap IS NOT NULL AND t.total + dead.units >= t.cap)
FROM dead WHERE t.tree_id = %(t)s
RETURNING dead.n
"""

# Add ``u`` to the total (and to the agent); trip at the cap. Returns (tripped, newly tripped).
_CHARGE = """
WITH agent AS (
    INSERT INTO {p}ledger_agents (tree_id, agent_id, units) VALUES (%(t)s, %(a)s, %(u)s)
    ON CONFLICT (tree_id, agent_id) DO UPDATE SET units = {p}ledger_agents.units + %(u)s
)
UPDATE {p}ledger_trees AS t
SET total = t.total + %(u)s, charges = t.charges + 1, reserved = t.reserved - %(r)s,
    tripped = t.tripped OR (t.cap IS NOT NULL AND t.total + %(u)s >= t.cap)
FROM (SELECT tripped FROM {p}ledger_trees WHERE tree_id = %(t)s FOR UPDATE) AS old
WHERE t.tree_id = %(t)s
RETURNING t.tripped, t.tripped AND NOT old.tripped
"""


@attrs.frozen
class SharedReservation:
    """A worst case booked on a :class:`PostgresLedger`; settle or release it exactly once."""

    agent_id: str
    amount: float
    id: str
    tree_id: str


def to_units(value: float, name: str) -> int:
    """``value`` USD in integer units of 1e-12 USD; ``name`` names it in the error."""
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be >= 0 and finite, got {value!r}")
    return round(value * _SCALE)


@attrs.define(eq=False)
class PostgresLedger:
    """The tree ``tree_id``'s ledger in PostgreSQL; open it with :func:`open_postgres_ledger`."""

    tree_id: str
    #: the tree's cap in USD (set by whoever created the tree), None without one
    cap: float | None
    _pool: ConnectionPool
    _prefix: str
    _lease_s: float
    _limiter: trio.CapacityLimiter
    tripped: trio.Event = attrs.field(factory=trio.Event, init=False)
    _callbacks: list[Callable[[], None]] = attrs.field(factory=list, init=False)
    _outstanding: set[str] = attrs.field(factory=set, init=False)

    def _sql(self, template: str) -> str:
        return template.format(p=self._prefix)

    async def _run(self, fn: Callable[[Connection[TupleRow]], T]) -> T:
        def work() -> T:
            with self._pool.connection() as conn:
                return fn(conn)

        # never abandoned: a statement in flight commits or rolls back before we go on
        return await trio.to_thread.run_sync(work, limiter=self._limiter)

    # -- trips ------------------------------------------------------------------------------

    def _trip(self) -> None:
        if not self.tripped.is_set():
            self.tripped.set()
            for fn in tuple(self._callbacks):
                fn()

    def add_trip_callback(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once when the tree trips, here or on any other host."""
        if self.tripped.is_set():
            fn()
        else:
            self._callbacks.append(fn)

    def remove_trip_callback(self, fn: Callable[[], None]) -> None:
        if fn in self._callbacks:
            self._callbacks.remove(fn)

    # -- hard cap ---------------------------------------------------------------------------

    async def try_reserve(self, agent_id: str, worst_case: float) -> SharedReservation | None:
        """Book ``worst_case`` if it fits under the cap; else None (after releasing dead leases)."""
        units = to_units(worst_case, "worst_case")
        return await self._reserve(agent_id, units, units)

    async def try_reserve_between(
        self, agent_id: str, least: float, most: float
    ) -> SharedReservation | None:
        """Book ``most``, or what is left under the cap if that is less but at least ``least``
        (one conditional update: a request whose output is fitted to what is left); None when
        not even ``least`` fits. ``reservation.amount`` says how much was booked."""
        low, high = to_units(least, "least"), to_units(most, "most")
        if low > high:
            raise ValueError(f"least must be <= most, got least={least!r}, most={most!r}")
        return await self._reserve(agent_id, low, high)

    async def _reserve(self, agent_id: str, least: int, most: int) -> SharedReservation | None:
        rid = f"{self.tree_id}:{uuid.uuid4().hex}"
        reserve, expire = self._sql(_RESERVE), self._sql(_EXPIRE)
        insert = self._sql(
            "INSERT INTO {p}ledger_reservations (id, tree_id, agent_id, units, lease_until)"
            " VALUES (%s, %s, %s, %s, now() + make_interval(secs => %s))"
        )
        params = {"least": least, "most": most, "t": self.tree_id}

        def work(conn: Connection[TupleRow]) -> int | None:
            row = conn.execute(reserve, params).fetchone()
            if row is None:
                gone = conn.execute(expire, params).fetchone()
                if gone is None or not gone[0]:
                    return None
                row = conn.execute(reserve, params).fetchone()
                if row is None:
                    return None
            units = int(row[0])
            conn.execute(insert, (rid, self.tree_id, agent_id, units, self._lease_s))
            return units

        units = await self._run(work)
        if units is None:
            return None
        self._outstanding.add(rid)
        return SharedReservation(agent_id, units / _SCALE, rid, self.tree_id)

    async def settle(self, reservation: SharedReservation, actual: float) -> bool:
        """Charge ``actual`` in place of the reservation, once; True iff the tree is tripped."""
        return await self._close(reservation, to_units(actual, "actual"))

    async def release(self, reservation: SharedReservation) -> None:
        """Drop a reservation whose request never started; a no-op once settled or released."""
        await self._close(reservation, None)

    async def _close(self, reservation: SharedReservation, actual: int | None) -> bool:
        if reservation.tree_id != self.tree_id:
            raise ValueError(
                f"reservation {reservation.id} belongs to tree {reservation.tree_id!r},"
                f" not {self.tree_id!r}"
            )
        mark = self._sql(
            "UPDATE {p}ledger_reservations AS r SET state = %s"
            " FROM (SELECT state FROM {p}ledger_reservations WHERE id = %s FOR UPDATE) AS old"
            " WHERE r.id = %s AND old.state IN ('open', 'expired') RETURNING old.state, r.units"
        )
        unbook = self._sql("UPDATE {p}ledger_trees SET reserved = reserved - %s WHERE tree_id = %s")
        charge = self._sql(_CHARGE)
        tripped_now = self._sql("SELECT tripped FROM {p}ledger_trees WHERE tree_id = %s")
        rid = reservation.id

        def work(conn: Connection[TupleRow]) -> tuple[bool, bool]:
            state = "settled" if actual is not None else "released"
            row = conn.execute(mark, (state, rid, rid)).fetchone()
            if row is None:  # settled or released before: idempotent
                done = conn.execute(tripped_now, (self.tree_id,)).fetchone()
                return bool(done and done[0]), False
            units = int(row[1])
            if row[0] == "open":
                if actual is None:
                    conn.execute(unbook, (units, self.tree_id))
                    return False, False
                booked, delta = units, actual
            else:  # expired: its worst case was charged then; correct it to the actual cost
                booked, delta = 0, (actual or 0) - units
            params = {"t": self.tree_id, "a": reservation.agent_id, "u": delta, "r": booked}
            out = conn.execute(charge, params).fetchone()
            assert out is not None
            return bool(out[0]), bool(out[1])

        tripped, newly = await self._run(work)
        self._outstanding.discard(rid)
        if newly:
            await self._notify()
        if tripped:
            self._trip()
        return tripped

    # -- soft cap ---------------------------------------------------------------------------

    async def charge(self, agent_id: str, cost: float) -> bool:
        """Add ``cost`` attributed to ``agent_id``; True iff the tree's total is at the cap now."""
        params = {"t": self.tree_id, "a": agent_id, "u": to_units(cost, "cost"), "r": 0}
        sql = self._sql(_CHARGE)

        def work(conn: Connection[TupleRow]) -> tuple[bool, bool]:
            row = conn.execute(sql, params).fetchone()
            assert row is not None
            return bool(row[0]), bool(row[1])

        tripped, newly = await self._run(work)
        if newly:
            await self._notify()
        if tripped:
            self._trip()
        return tripped

    async def exhaust(self) -> None:
        """Trip the tree without a charge (its root agent cannot start a request): every
        ledger of the tree learns it, here at once and on the other hosts by ``NOTIFY``."""
        sql = self._sql(
            "UPDATE {p}ledger_trees SET tripped = true WHERE tree_id = %s AND NOT tripped"
            " RETURNING 1"
        )

        def work(conn: Connection[TupleRow]) -> bool:
            return conn.execute(sql, (self.tree_id,)).fetchone() is not None

        if await self._run(work):
            await self._notify()
        self._trip()

    async def _notify(self) -> None:
        channel = self._channel()

        def work(conn: Connection[TupleRow]) -> None:
            conn.execute("SELECT pg_notify(%s, %s)", (channel, self.tree_id))

        await self._run(work)

    def _channel(self) -> str:
        return f"{self._prefix}ledger_trip"

    # -- reading ----------------------------------------------------------------------------

    async def statistics(self) -> LedgerStatistics:
        """The tree's totals now (expired leases charged first, so ``reserved`` is live ones)."""
        tree = self._sql(
            "SELECT cap, total, reserved, charges FROM {p}ledger_trees WHERE tree_id = %s"
        )
        agents = self._sql("SELECT agent_id, units FROM {p}ledger_agents WHERE tree_id = %s")

        expire = self._sql(_EXPIRE)

        def work(conn: Connection[TupleRow]) -> LedgerStatistics:
            conn.execute(expire, {"t": self.tree_id})
            row = conn.execute(tree, (self.tree_id,)).fetchone()
            assert row is not None
            cap, total, reserved, charges = row
            per_agent = {str(a): int(u) / _SCALE for a, u in conn.execute(agents, (self.tree_id,))}
            return LedgerStatistics(
                cap=None if cap is None else int(cap) / _SCALE,
                total=int(total) / _SCALE,
                reserved=int(reserved) / _SCALE,
                charges=int(charges),
                per_agent=per_agent,
            )

        return await self._run(work)

    # -- background work --------------------------------------------------------------------

    async def _heartbeat(self) -> None:
        """Renew the leases of this ledger's outstanding reservations, at a third of a lease."""
        renew = self._sql(
            "UPDATE {p}ledger_reservations SET lease_until = now() + make_interval(secs => %s)"
            " WHERE id = ANY(%s) AND state = 'open'"
        )
        while True:
            await trio.sleep(self._lease_s / 3)
            ids = list(self._outstanding)
            if not ids:
                continue

            def work(conn: Connection[TupleRow], ids: list[str] = ids) -> None:
                conn.execute(renew, (self._lease_s, ids))

            await self._run(work)

    async def _watch(self, dsn: str) -> None:
        """Set :attr:`tripped` when any host trips the tree: LISTEN, with a poll as fallback."""
        import psycopg

        check = self._sql("SELECT tripped FROM {p}ledger_trees WHERE tree_id = %s")
        conn = await trio.to_thread.run_sync(
            functools.partial(psycopg.connect, dsn, autocommit=True)
        )
        try:
            await trio.to_thread.run_sync(conn.execute, f'LISTEN "{self._channel()}"')

            def wait_once() -> bool:
                for _ in conn.notifies(timeout=_WATCH_INTERVAL_S, stop_after=1):
                    pass
                row = conn.execute(check, (self.tree_id,)).fetchone()
                return bool(row and row[0])

            while not self.tripped.is_set():
                if await trio.to_thread.run_sync(wait_once):
                    self._trip()
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(conn.close)


@contextlib.asynccontextmanager
async def open_postgres_ledger(
    dsn: str,
    tree_id: str,
    *,
    cap: float | None = None,
    lease_s: float = 10.0,
    max_connections: int = 4,
    table_prefix: str = "trio_agents_",
) -> AsyncIterator[PostgresLedger]:
    """Join (or create) tree ``tree_id``'s ledger; ``cap`` is set by whoever creates the tree.

    The heartbeat and the trip watcher run in a nursery owned by this context manager; they end,
    and the pool closes, when it exits. ``lease_s`` bounds how long a dead worker's reservation
    stays booked.
    """
    if not lease_s > 0:
        raise ValueError(f"lease_s must be > 0, got {lease_s!r}")
    if max_connections < 1:
        raise ValueError(f"max_connections must be >= 1, got {max_connections}")
    if not table_prefix.replace("_", "").isalnum():
        raise ValueError(f"table_prefix must be letters, digits and '_', got {table_prefix!r}")
    cap_units = None if cap is None else to_units(cap, "cap")
    if cap_units is not None and cap_units > _MAX_UNITS:
        raise ValueError(
            f"cap must be <= {_MAX_UNITS / _SCALE:g} USD (a bigint of 1e-12 USD), got {cap!r}"
        )
    pool, tree_cap = await trio.to_thread.run_sync(
        _open_pool, dsn, max_connections, table_prefix, tree_id, cap_units
    )
    ledger = PostgresLedger(
        tree_id,
        None if tree_cap is None else tree_cap / _SCALE,
        pool,
        table_prefix,
        lease_s,
        trio.CapacityLimiter(max_connections),
    )
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ledger._heartbeat)
            nursery.start_soon(ledger._watch, dsn)
            yield ledger
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(pool.close)


def _open_pool(
    dsn: str, size: int, prefix: str, tree_id: str, cap_units: int | None
) -> tuple[ConnectionPool, int | None]:
    """The pool, with the schema and the tree's row in place, and the tree's cap (its
    creator's: joining a tree with another ``cap`` does not change it)."""
    try:
        from psycopg_pool import ConnectionPool
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            "PostgresLedger needs psycopg: pip install 'trio-agents[postgres]'"
        ) from exc
    pool = ConnectionPool(dsn, min_size=1, max_size=size + 1, open=False, timeout=30.0)
    pool.open(wait=True, timeout=30.0)
    with pool.connection() as conn:
        create_schema(conn, prefix + "ledger_agents", _SCHEMA.format(p=prefix))
    with pool.connection() as conn:
        conn.execute(
            f"INSERT INTO {prefix}ledger_trees (tree_id, cap, tripped) VALUES (%s, %s, %s)"
            " ON CONFLICT (tree_id) DO NOTHING",
            (tree_id, cap_units, cap_units is not None and cap_units <= 0),
        )
        row = conn.execute(
            f"SELECT cap FROM {prefix}ledger_trees WHERE tree_id = %s", (tree_id,)
        ).fetchone()
    return pool, None if row is None or row[0] is None else int(row[0])
