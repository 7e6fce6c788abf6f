"""Creating the scale-out tables once, safely, while other processes may be using them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow


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
