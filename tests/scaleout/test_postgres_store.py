"""PostgresSessionStore keeps transcripts in PostgreSQL: the store contract, fencing, durability."""

from __future__ import annotations

import uuid

import pytest
import trio

from agents.messages import AssistantMessage, TextBlock, UserMessage
from agents.sessions import SessionKey, TranscriptEntry
from agents.sessions.postgres import PostgresSessionStore, StaleWriterError
from agents.testing.store_conformance import CHECKS, run_check


def _key(subpath: str | None = None) -> SessionKey:
    return SessionKey(f"-pg-{uuid.uuid4().hex}", str(uuid.uuid4()), subpath)


def _entry(key: SessionKey, text: str, parent: str | None = None) -> TranscriptEntry:
    return TranscriptEntry(
        uuid=str(uuid.uuid4()),
        parent_uuid=parent,
        session_id=key.session_id,
        timestamp=1_700_000_000.0,
        message=UserMessage(content=text),
    )


@pytest.mark.parametrize("check", list(CHECKS))
async def test_postgres_store_conformance(check: str, postgres_dsn: str) -> None:
    """PostgresSessionStore passes each check of the shipped store conformance suite."""
    await run_check(check, lambda: PostgresSessionStore(postgres_dsn, max_connections=2))


async def test_a_stale_writer_is_fenced_off(postgres_dsn: str) -> None:
    """Once another store claims a key, the first store's appends fail and write nothing."""
    key = _key()
    async with (
        PostgresSessionStore(postgres_dsn) as first,
        PostgresSessionStore(postgres_dsn) as second,
    ):
        await first.append(key, [_entry(key, "one")])
        await second.claim(key)  # another host resumed the session
        await second.append(key, [_entry(key, "two")])
        with pytest.raises(StaleWriterError, match=r"written by another store now"):
            await first.append(key, [_entry(key, "stale")])
        texts = [e.message.content for e in await second.load(key) or [] if e.message]  # type: ignore[union-attr]
    assert texts == ["one", "two"]


async def test_concurrent_appends_by_one_writer_keep_every_entry(postgres_dsn: str) -> None:
    """Appends racing through several pooled connections neither lose nor duplicate entries."""
    key = _key("subagents/agent-main-x-1")
    async with PostgresSessionStore(postgres_dsn, max_connections=4) as store:
        await store.claim(key)
        async with trio.open_nursery() as nursery:
            for i in range(40):
                nursery.start_soon(store.append, key, [_entry(key, f"m{i}")])
        loaded = await store.load(key) or []
    texts = sorted(str(e.message.content) for e in loaded if isinstance(e.message, UserMessage))
    assert texts == sorted(f"m{i}" for i in range(40))


async def test_a_cancelled_append_lands_whole_or_not_at_all(postgres_dsn: str) -> None:
    """Cancelling an append mid-flight never leaves part of its entries behind."""
    key = _key()
    batch = [_entry(key, f"e{i}") for i in range(200)]
    async with PostgresSessionStore(postgres_dsn) as store:
        with trio.move_on_after(0.001):
            await store.append(key, batch)
        loaded = await store.load(key)
    assert loaded is None or len(loaded) == len(batch)


async def test_entries_survive_the_store_and_are_listed(postgres_dsn: str) -> None:
    """What one store wrote, a new store on the same database loads and lists."""
    key = _key()
    async with PostgresSessionStore(postgres_dsn) as store:
        await store.append(key, [_entry(key, "Summarize the repo")])
        reply = TranscriptEntry(
            uuid=str(uuid.uuid4()),
            parent_uuid=None,
            session_id=key.session_id,
            timestamp=1_700_000_001.0,
            message=AssistantMessage(content=[TextBlock("Done")], model="m"),
        )
        await store.append(key, [reply])
    async with PostgresSessionStore(postgres_dsn) as again:
        loaded = await again.load(key) or []
        sessions = await again.list_sessions(key.project_key)
    assert [type(e.message).__name__ for e in loaded] == ["UserMessage", "AssistantMessage"]
    assert [(s.session_id, s.summary, s.mtime) for s in sessions] == [
        (key.session_id, "Summarize the repo", 1_700_000_001.0)
    ]


async def test_bad_options_name_the_field() -> None:
    """Invalid constructor arguments are a ValueError naming the field and the value."""
    with pytest.raises(ValueError, match=r"^max_connections must be >= 1, got 0$"):
        PostgresSessionStore("postgresql://x", max_connections=0)
    with pytest.raises(ValueError, match=r"^table_prefix must be"):
        PostgresSessionStore("postgresql://x", table_prefix="x; DROP")
