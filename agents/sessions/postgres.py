"""``PostgresSessionStore``: session transcripts in PostgreSQL, shared by many hosts.

Needs the ``postgres`` extra (``pip install 'trio-agents[postgres]'``: psycopg 3 and its pool).
No PostgreSQL driver is Trio-native, so the store drives psycopg's synchronous pool from worker
threads behind a :class:`trio.CapacityLimiter` as wide as the pool: a Trio task waits for a
connection without blocking the event loop, and a statement in flight is never abandoned
half-way (a cancelled ``append`` either lands whole or not at all, in one transaction).

Layout: one row per entry, keyed by ``(project_key, session_id, subpath, seq)`` with ``subpath``
``''`` for the main transcript; a head row per key holds the next sequence number, the writer's
fencing epoch and the summary that ``list_sessions`` reads without scanning entries.

**Fencing.** The first ``append`` of a key by a store claims the key: it bumps the key's epoch and
remembers it. Every later append by that store runs only while the epoch is still its own, so
once another host claims the key (it resumed the session elsewhere) the first host's appends
raise :class:`StaleWriterError` instead of interleaving with the new writer's. Call
:meth:`PostgresSessionStore.claim` to take a key over explicitly before writing.

::

    async with PostgresSessionStore("postgresql://agents@db/agents") as store:
        options = AgentOptions(session_store=store)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Literal, TypeVar

import attrs
import trio

from agents.sessions.entry import LoadReport, TranscriptEntry, decode_transcript, encode_entry
from agents.sessions.store import SessionInfo, SessionKey, prompt_text, summarize_prompt

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresSessionStore", "StaleWriterError", "create_schema"]

T = TypeVar("T")
_Outcome = Literal["written", "stale", "deleted"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {prefix}heads (
    project_key  text NOT NULL,
    session_id   text NOT NULL,
    subpath      text NOT NULL,
    next_seq     bigint NOT NULL DEFAULT 0,
    epoch        bigint NOT NULL DEFAULT 0,
    created      double precision,
    mtime        double precision,
    first_prompt text,
    PRIMARY KEY (project_key, session_id, subpath)
);
CREATE TABLE IF NOT EXISTS {prefix}entries (
    project_key text NOT NULL,
    session_id  text NOT NULL,
    subpath     text NOT NULL,
    seq         bigint NOT NULL,
    entry       bytea NOT NULL,
    PRIMARY KEY (project_key, session_id, subpath, seq)
);
"""

# Claim a key: create its head or bump its epoch; either way the caller now owns it.
_CLAIM = """
INSERT INTO {prefix}heads (project_key, session_id, subpath, epoch) VALUES (%s, %s, %s, 1)
ON CONFLICT (project_key, session_id, subpath)
DO UPDATE SET epoch = {prefix}heads.epoch + 1
RETURNING epoch
"""

# Book ``n`` sequence numbers, only while the caller's epoch is current (the fence).
_ADVANCE = """
UPDATE {prefix}heads
SET next_seq = next_seq + %(n)s,
    mtime = %(mtime)s,
    created = coalesce(created, %(created)s),
    first_prompt = coalesce(first_prompt, %(prompt)s)
WHERE project_key = %(p)s AND session_id = %(s)s AND subpath = %(sub)s AND epoch = %(epoch)s
RETURNING next_seq - %(n)s
"""


class StaleWriterError(RuntimeError):
    """An append by a store whose claim on the key was taken over by another writer.

    The entries were not written. It means another process resumed the session: this one must stop
    writing it (resume it again to take it back).
    """


def _subpath(key: SessionKey) -> str:
    return key.subpath or ""


@attrs.define(eq=False)
class PostgresSessionStore:
    """A :class:`~agents.sessions.SessionStore` on PostgreSQL; see the module docstring.

    ``dsn`` is a libpq connection string; ``max_connections`` bounds both the pool and the worker
    threads using it; ``table_prefix`` names the two tables (``<prefix>heads``,
    ``<prefix>entries``), created on first use.
    """

    dsn: str
    max_connections: int = attrs.field(default=8, kw_only=True)
    table_prefix: str = attrs.field(default="trio_agents_", kw_only=True)
    _pool: ConnectionPool | None = attrs.field(default=None, init=False)
    _limiter: trio.CapacityLimiter = attrs.field(init=False)
    _open_lock: trio.Lock = attrs.field(factory=trio.Lock, init=False)
    _epochs: dict[SessionKey, int] = attrs.field(factory=dict, init=False)
    _closed: bool = attrs.field(default=False, init=False)

    def __attrs_post_init__(self) -> None:
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {self.max_connections}")
        if not self.table_prefix.replace("_", "").isalnum():
            raise ValueError(
                f"table_prefix must be letters, digits and '_', got {self.table_prefix!r}"
            )
        self._limiter = trio.CapacityLimiter(self.max_connections)

    def _sql(self, template: str) -> str:
        return template.format(prefix=self.table_prefix)

    # -- connections ------------------------------------------------------------------------

    async def _run(self, fn: Callable[[Connection[TupleRow]], T]) -> T:
        """Run ``fn(connection)`` in one transaction, in a worker thread."""
        pool = await self._open()

        def work() -> T:
            with pool.connection() as conn:
                return fn(conn)

        return await trio.to_thread.run_sync(work, limiter=self._limiter)

    async def _open(self) -> ConnectionPool:
        if self._pool is not None:
            return self._pool
        async with self._open_lock:
            if self._closed:
                raise RuntimeError("PostgresSessionStore is closed")
            if self._pool is None:
                self._pool = await trio.to_thread.run_sync(self._connect)
        return self._pool

    def _connect(self) -> ConnectionPool:
        try:
            from psycopg_pool import ConnectionPool
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ImportError(
                "PostgresSessionStore needs psycopg: pip install 'trio-agents[postgres]'"
            ) from exc
        pool = ConnectionPool(
            self.dsn, min_size=1, max_size=self.max_connections, open=False, timeout=30.0
        )
        pool.open(wait=True, timeout=30.0)
        with pool.connection() as conn:
            create_schema(conn, self.table_prefix + "entries", self._sql(_SCHEMA))
        return pool

    async def aclose(self) -> None:
        """Close the pool (waits for statements in flight); later calls raise ``RuntimeError``."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await trio.to_thread.run_sync(pool.close)

    async def __aenter__(self) -> PostgresSessionStore:
        await self._open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with trio.CancelScope(shield=True):
            await self.aclose()

    # -- the protocol -----------------------------------------------------------------------

    async def claim(self, key: SessionKey) -> int:
        """Take ``key`` over for this store: other stores' appends to it fail from now on."""
        sql = self._sql(_CLAIM)

        def work(conn: Connection[TupleRow]) -> int:
            row = conn.execute(sql, (key.project_key, key.session_id, _subpath(key))).fetchone()
            assert row is not None
            return int(row[0])

        epoch = await self._run(work)
        self._epochs[key] = epoch
        return epoch

    async def append(self, key: SessionKey, entries: Sequence[TranscriptEntry]) -> None:
        if not entries:
            return
        rows = [encode_entry(entry) for entry in entries]
        prompt = next((t for e in entries if (t := prompt_text(e)) is not None), None)
        names = (key.project_key, key.session_id, _subpath(key))
        params = {
            "n": len(rows),
            "mtime": entries[-1].timestamp,
            "created": entries[0].timestamp,
            "prompt": prompt,
            "p": names[0],
            "s": names[1],
            "sub": names[2],
        }
        advance, insert, exists = (
            self._sql(_ADVANCE),
            self._sql(
                "INSERT INTO {prefix}entries (project_key, session_id, subpath, seq, entry)"
                " VALUES (%s, %s, %s, %s, %s)"
            ),
            self._sql(
                "SELECT 1 FROM {prefix}heads"
                " WHERE project_key = %s AND session_id = %s AND subpath = %s"
            ),
        )

        def work(conn: Connection[TupleRow], epoch: int) -> _Outcome:
            row = conn.execute(advance, {**params, "epoch": epoch}).fetchone()
            if row is None:  # the fence held: the key was deleted, or another writer claimed it
                taken = conn.execute(exists, names).fetchone() is not None
                return "stale" if taken else "deleted"
            base = int(row[0])
            with conn.cursor() as cur:
                cur.executemany(insert, [(*names, base + i, data) for i, data in enumerate(rows)])
            return "written"

        for _ in range(2):  # a key deleted since this store claimed it is claimed once more
            epoch = self._epochs.get(key)
            if epoch is None:
                epoch = await self.claim(key)
            outcome = await self._run(functools.partial(work, epoch=epoch))
            if outcome == "written":
                return
            if outcome == "stale":
                raise StaleWriterError(
                    f"transcript {key.session_id}/{_subpath(key) or 'main'} is written by another"
                    " store now (it resumed the session elsewhere); these entries were not written"
                )
            self._epochs.pop(key, None)
        raise RuntimeError(f"transcript {key.session_id} was deleted while being appended to")

    async def load(self, key: SessionKey) -> list[TranscriptEntry] | None:
        report = await self.load_report(key)
        return None if report is None else report.entries

    async def load_report(self, key: SessionKey) -> LoadReport | None:
        """``load`` plus a report of any row that does not decode (file and row named)."""
        sql = self._sql(
            "SELECT entry FROM {prefix}entries WHERE project_key = %s AND session_id = %s"
            " AND subpath = %s ORDER BY seq"
        )

        def work(conn: Connection[TupleRow]) -> bytes | None:
            rows = conn.execute(sql, (key.project_key, key.session_id, _subpath(key))).fetchall()
            return b"".join(bytes(row[0]) for row in rows) if rows else None

        data = await self._run(work)
        if data is None:
            return None
        label = f"postgres:{key.project_key}/{key.session_id}/{_subpath(key) or 'main'}"
        return decode_transcript(label, data)

    async def delete(self, key: SessionKey) -> None:
        where = "project_key = %s AND session_id = %s"
        args: tuple[str, ...] = (key.project_key, key.session_id)
        if key.subpath:
            where += " AND subpath = %s"
            args = (*args, key.subpath)
        statements = [
            self._sql(f"DELETE FROM {{prefix}}entries WHERE {where}"),
            self._sql(f"DELETE FROM {{prefix}}heads WHERE {where}"),
        ]

        def work(conn: Connection[TupleRow]) -> None:
            for sql in statements:
                conn.execute(sql, args)

        await self._run(work)
        for known in [k for k in self._epochs if k == key or (not key.subpath and k.main() == key)]:
            del self._epochs[known]

    async def list_subkeys(self, key: SessionKey) -> list[str]:
        sql = self._sql(
            "SELECT subpath FROM {prefix}heads WHERE project_key = %s AND session_id = %s"
            " AND subpath <> '' AND next_seq > 0 ORDER BY subpath"
        )

        def work(conn: Connection[TupleRow]) -> list[str]:
            rows = conn.execute(sql, (key.project_key, key.session_id)).fetchall()
            return [str(row[0]) for row in rows]

        return await self._run(work)

    async def list_sessions(self, project_key: str) -> list[SessionInfo]:
        sql = self._sql(
            "SELECT session_id, mtime, created, first_prompt FROM {prefix}heads"
            " WHERE project_key = %s AND subpath = '' AND next_seq > 0"
            " ORDER BY mtime DESC, session_id"
        )

        def work(conn: Connection[TupleRow]) -> list[SessionInfo]:
            return [
                SessionInfo(
                    session_id=str(sid),
                    mtime=float(mtime),
                    first_prompt=None if prompt is None else str(prompt),
                    summary=summarize_prompt(None if prompt is None else str(prompt)),
                    created=None if created is None else float(created),
                )
                for sid, mtime, created, prompt in conn.execute(sql, (project_key,)).fetchall()
            ]

        return await self._run(work)


def create_schema(conn: Connection[TupleRow], last_table: str, ddl: str) -> None:
    """Run ``ddl`` unless ``last_table`` (the last one it creates) exists, in its own transaction.

    Skipping the DDL when the tables exist matters: even ``CREATE ... IF NOT EXISTS`` takes table
    locks, which deadlock against the row locks of processes already using them. The advisory lock
    makes concurrent first users create the tables one at a time.
    """
    if conn.execute("SELECT to_regclass(%s)", (last_table,)).fetchone() not in (None, (None,)):
        return
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (last_table,))
    conn.execute(ddl)
    conn.commit()
