"""Property tests: what ``Transcript.record`` and ``record_all`` build and store, against a plain
construction of each entry (both build their entries inline, and ``record`` skips the size
check for a response's blocks)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.messages import AssistantMessage, Message, SystemMessage, TextBlock, UserMessage
from agents.sessions import InMemorySessionStore, SessionKey, Transcript, TranscriptEntry
from agents.sessions.entry import LARGE_APPEND_BYTES, encode_entry, is_large, is_large_entry

from .strategies import messages

_settings = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_BIG = "x" * (LARGE_APPEND_BYTES // 4 + 1)
#: messages past the size limit: a prompt (measured) and a response's block (never large)
huge = st.sampled_from([UserMessage(content=_BIG), AssistantMessage([TextBlock(_BIG)], "m")])


def without_uuid(message: Message) -> Message:
    return message if type(message) is SystemMessage else msgspec.structs.replace(message, uuid="")


#: messages, some with an empty uuid (the transcript gives them one), some past the size limit
recorded = st.lists(st.one_of(messages, messages.map(without_uuid), huge), min_size=1, max_size=8)


class RouteNotingStore(InMemorySessionStore):
    """Notes, for each entry, whether it came through ``append_nowait`` or ``append``."""

    routes: list[tuple[str, str]]

    def append_nowait(self, key: SessionKey, entries: Sequence[TranscriptEntry]) -> None:
        self.routes += [("nowait", e.uuid) for e in entries]
        super().append_nowait(key, entries)

    async def append(self, key: SessionKey, entries: Sequence[TranscriptEntry]) -> None:
        self.routes += [("append", e.uuid) for e in entries]
        await super().append(key, entries)


def check_entries(
    entries: list[TranscriptEntry], given: list[Message], parent: str | None, agent_id: str
) -> None:
    """Each entry is the plain construction for its message: the message's uuid kept, or a
    fresh one given to the entry and (but for a ``SystemMessage``, which has no uuid field) to
    the message; chained from ``parent``; the key's session; the transcript's agent."""
    assert len(entries) == len(given)
    for entry, message in zip(entries, given, strict=True):
        own = getattr(message, "uuid", "")
        if own:
            assert entry.uuid == own and entry.message == message
        else:
            assert len(entry.uuid) == 36
            expected = (
                message
                if type(message) is SystemMessage
                else msgspec.structs.replace(message, uuid=entry.uuid)
            )
            assert entry.message == expected
        assert entry == TranscriptEntry(
            uuid=entry.uuid, parent_uuid=parent, session_id="s", timestamp=entry.timestamp,
            agent_id=agent_id, message=entry.message,
        )  # fmt: skip
        parent = entry.uuid


@_settings
@given(recorded, st.sampled_from(["main", "main/worker-1/leaf-2"]), st.none() | st.just("u0"))
async def test_record_and_record_all_build_each_entry_as_a_plain_construction(
    given: list[Message], agent_id: str, last_uuid: str | None
) -> None:
    """One message at a time or all in one call, the entries are those of the plain
    construction, stored as returned; ``record`` takes the store's ``append_nowait`` exactly
    when ``is_large_entry`` says the entry is small, ``record_all`` when ``is_large`` says the
    batch is."""
    one_by_one = RouteNotingStore()
    one_by_one.routes = []
    single = Transcript(one_by_one, SessionKey("-p", "s"), agent_id, last_uuid)
    before = time.time()
    entries = [await single.record(message) for message in given]
    assert all(before <= e.timestamp <= time.time() for e in entries)
    check_entries(entries, given, last_uuid, agent_id)
    assert single.last_uuid == entries[-1].uuid
    assert one_by_one.raw(single.key) == b"".join(map(encode_entry, entries))
    assert one_by_one.routes == [
        ("append" if is_large_entry(e) else "nowait", e.uuid) for e in entries
    ]

    batched = RouteNotingStore()
    batched.routes = []
    together = Transcript(batched, SessionKey("-p", "s"), agent_id, last_uuid)
    entries = await together.record_all(given)
    check_entries(entries, given, last_uuid, agent_id)
    assert together.last_uuid == entries[-1].uuid
    assert batched.raw(together.key) == b"".join(map(encode_entry, entries))
    route = "append" if is_large(entries) else "nowait"
    assert batched.routes == [(route, e.uuid) for e in entries]
