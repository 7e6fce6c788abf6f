"""Scale-out: one budget tree across processes and hosts (PostgreSQL; the ``postgres`` extra).

``PostgresLedger`` is the shared ledger; ``agents.sessions.postgres.PostgresSessionStore`` keeps the
transcripts where any host can resume them.
"""

from __future__ import annotations

from agents.scaleout.ledger import PostgresLedger as PostgresLedger
from agents.scaleout.ledger import SharedReservation as SharedReservation
from agents.scaleout.ledger import open_postgres_ledger as open_postgres_ledger
from agents.scaleout.remote import SpawnQueueAgents as SpawnQueueAgents

__all__ = ["PostgresLedger", "SharedReservation", "SpawnQueueAgents", "open_postgres_ledger"]
