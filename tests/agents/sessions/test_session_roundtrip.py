"""Property tests: load(append(entries)) == entries for both stores; fork keeps the original."""

from __future__ import annotations

import tempfile
import uuid

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.messages import SystemMessage, decode_message, encode_message
from agents.sessions import (
    FileSessionStore,
    InMemorySessionStore,
    SessionKey,
    TranscriptEntry,
    decode_entry,
    encode_entry,
    fork_session,
)

from .strategies import conversations, messages, uuids

_settings = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(messages)
def test_message_codec_roundtrip(message: object) -> None:
    """Every generated message survives encode/decode unchanged (the strategy is sound)."""
    assert decode_message(encode_message(message)) == message  # type: ignore[arg-type]


@_settings
@given(conversations())
def test_entry_codec_roundtrip(entries: list[TranscriptEntry]) -> None:
    """Each entry encodes to exactly one newline-terminated line and decodes back equal."""
    for entry in entries:
        line = encode_entry(entry)
        assert line.endswith(b"\n") and b"\n" not in line[:-1]
        assert decode_entry(line) == entry


@_settings
@given(st.lists(conversations(max_size=6), min_size=1, max_size=4))
async def test_memory_store_roundtrip(batches: list[list[TranscriptEntry]]) -> None:
    """In memory: entries appended in several batches load back equal and in order."""
    store = InMemorySessionStore()
    key = SessionKey("-p", str(uuid.uuid4()))
    for batch in batches:
        await store.append(key, batch)
    assert await store.load(key) == [e for batch in batches for e in batch]


@_settings
@given(st.lists(conversations(max_size=6), min_size=1, max_size=4))
async def test_file_store_roundtrip(batches: list[list[TranscriptEntry]]) -> None:
    """On disk: entries appended in several batches load back equal, also from a fresh store."""
    with tempfile.TemporaryDirectory() as root:
        key = SessionKey("-p", str(uuid.uuid4()))
        expected = [e for batch in batches for e in batch]
        async with FileSessionStore(root) as store:
            for batch in batches:
                await store.append(key, batch)
            assert await store.load(key) == expected
        async with FileSessionStore(root) as fresh:
            report = await fresh.load_report(key)
        assert report is not None and report.errors == [] and report.entries == expected


@st.composite
def long_entries(draw: st.DrawFn) -> list[TranscriptEntry]:
    """One entry whose line is up to 100 kB long."""
    size = draw(st.integers(0, 100_000))
    message = SystemMessage(subtype="long", data={"text": "x" * size})
    return [TranscriptEntry(uuid=draw(uuids), parent_uuid=None, session_id="s", timestamp=1.0,
                            message=message)]  # fmt: skip


@_settings
@given(
    st.lists(
        st.tuples(st.integers(0, 2), conversations(max_size=4) | long_entries()),
        min_size=1,
        max_size=8,
    )
)
async def test_stores_hold_exactly_the_lines_of_each_entry_encoded_alone(
    appends: list[tuple[int, list[TranscriptEntry]]],
) -> None:
    """The file store encodes an append's lines in one call (``encode_lines``), the memory
    store each line onto the end of the transcript's buffer: each transcript still holds
    exactly the bytes of its entries each encoded alone by ``encode_entry``, in order, whatever
    the lengths of the lines written before, to it or to another transcript."""
    keys = [SessionKey("-p", f"s{n}") for n in range(3)]
    expected = {key: b"" for key in keys}
    memory = InMemorySessionStore()
    with tempfile.TemporaryDirectory() as root:
        async with FileSessionStore(root) as files:
            for n, entries in appends:
                key = keys[n]
                await memory.append(key, entries)
                await files.append(key, entries)
                expected[key] += b"".join(encode_entry(entry) for entry in entries)
            for key in keys:
                path = files.path_for(key)
                on_disk = path.read_bytes() if path.exists() else b""
                assert on_disk == expected[key]
                assert (memory.raw(key) or b"") == expected[key]


@_settings
@given(conversations(max_size=10))
async def test_fork_leaves_original_byte_identical(entries: list[TranscriptEntry]) -> None:
    """Forking copies every entry under the new id and never changes the original file."""
    with tempfile.TemporaryDirectory() as root:
        sid = entries[0].session_id
        key = SessionKey("-p", sid)
        async with FileSessionStore(root) as store:
            await store.append(key, entries)
            path = store.path_for(key)
            before = await trio.Path(path).read_bytes()
            new_id = str(uuid.uuid4())
            copied = await fork_session(store, key, new_id)
            assert await trio.Path(path).read_bytes() == before
            assert await store.load(key) == entries
            loaded = await store.load(SessionKey("-p", new_id))
        assert loaded == copied
        assert [e.uuid for e in copied] == [e.uuid for e in entries]
        assert all(e.session_id == new_id for e in copied)


@_settings
@given(conversations(max_size=4), st.integers(0, 2))
async def test_an_append_that_cannot_be_encoded_leaves_the_transcript_as_it_was(
    entries: list[TranscriptEntry], bad_at: int
) -> None:
    """An entry that cannot be encoded (a custom tool's result holding some object) fails its
    whole append in either store, and leaves the transcript as it was: no half line, and none
    of the append's other entries; what is appended next goes on from there."""
    key = SessionKey("-p", "s")
    good = entries[: len(entries) // 2]
    bad = SystemMessage(subtype="informational", data={"kept": "x" * 100, "object": object()})
    template = entries[-1]
    failing = [*entries[:bad_at], TranscriptEntry(
        uuid=str(uuid.uuid4()), parent_uuid=None, session_id=template.session_id,
        timestamp=template.timestamp, agent_id="main", message=bad,
    )]  # fmt: skip
    memory = InMemorySessionStore()
    with tempfile.TemporaryDirectory() as root:
        async with FileSessionStore(root) as files:
            for store in (memory, files):
                await store.append(key, good)
                with pytest.raises(TypeError, match="unsupported"):
                    await store.append(key, failing)
                await store.append(key, entries)
            expected = b"".join(encode_entry(entry) for entry in [*good, *entries])
            assert files.path_for(key).read_bytes() == expected
            assert memory.raw(key) == expected
