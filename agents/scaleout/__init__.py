"""Scale-out: one budget tree across processes and hosts (PostgreSQL; the ``postgres`` extra).

``PostgresLedger`` is a tree's ledger in PostgreSQL; ``SharedLedger`` is a session's view of it,
the ledger the agent loop spends on (``AgentOptions(ledger=...)``, the same interface as the
in-process ``runtime.Ledger``); ``agents.sessions.postgres.PostgresSessionStore`` keeps the
transcripts where any host can resume them.
"""

from __future__ import annotations

from agents.scaleout.ledger import PostgresLedger as PostgresLedger
from agents.scaleout.ledger import SharedReservation as SharedReservation
from agents.scaleout.ledger import open_postgres_ledger as open_postgres_ledger
from agents.scaleout.remote import SpawnQueueAgents as SpawnQueueAgents
from agents.scaleout.shared import SharedLedger as SharedLedger
from agents.scaleout.shared import open_shared_ledger as open_shared_ledger

__all__ = [
    "PostgresLedger",
    "SharedLedger",
    "SharedReservation",
    "SpawnQueueAgents",
    "open_postgres_ledger",
    "open_shared_ledger",
]
