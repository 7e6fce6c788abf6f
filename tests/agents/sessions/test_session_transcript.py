"""Transcript recording, resume (also at a message), fork, and the session helpers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import trio

import agents.sessions
from agents.messages import AssistantMessage, SystemMessage, TextBlock, UserMessage
from agents.sessions import (
    FileSessionStore,
    InMemorySessionStore,
    SessionKey,
    SessionNotFoundError,
    SessionStore,
    Transcript,
    TranscriptEntry,
    active_branch,
    get_session_messages,
    history_from_entries,
    list_sessions,
    newest_session_id,
    project_key_for,
    truncate_at,
)


async def record_texts(transcript: Transcript, *texts: str) -> list[str]:
    return [(await transcript.record(UserMessage(content=t))).uuid for t in texts]


async def test_record_chains_entries_and_assigns_uuids() -> None:
    """Each entry's parent is the previous one; empty message uuids get a uuid4, kept ones stay."""
    store = InMemorySessionStore()
    transcript = Transcript(store, SessionKey("-p", "s"))
    first = await transcript.record(UserMessage(content="hi"))
    second = await transcript.record(AssistantMessage([TextBlock("yo")], "m", uuid="given"))
    third = await transcript.record(SystemMessage("informational"))
    assert first.parent_uuid is None and len(first.uuid) == 36
    assert isinstance(first.message, UserMessage) and first.message.uuid == first.uuid
    assert (second.uuid, second.parent_uuid) == ("given", first.uuid)
    assert third.parent_uuid == "given" and third.message == SystemMessage("informational")
    assert await store.load(transcript.key) == [first, second, third]
    assert first.session_id == "s" and first.agent_id == "main"


async def test_record_all_chains_entries_in_one_append(tmp_path: Path) -> None:
    """record_all appends its messages as chained entries, in a single store append."""
    appends: list[int] = []

    class CountingStore(FileSessionStore):
        def append_nowait(self, key: SessionKey, entries: Sequence[TranscriptEntry]) -> None:
            appends.append(len(entries))
            super().append_nowait(key, entries)

    async with CountingStore(tmp_path) as store:
        transcript = Transcript(store, SessionKey("-p", "s"))
        first = await transcript.record(UserMessage(content="go"))
        blocks = await transcript.record_all(
            [AssistantMessage([TextBlock(t)], "m", uuid=t) for t in ("a", "b", "c")]
        )
        assert [(e.uuid, e.parent_uuid) for e in blocks] == [
            ("a", first.uuid),
            ("b", "a"),
            ("c", "b"),
        ]
        assert await store.load(transcript.key) == [first, *blocks]
        assert appends == [1, 3]
        assert await transcript.record_all([]) == [] and appends == [1, 3]
        assert (await transcript.record(UserMessage(content="next"))).parent_uuid == "c"


async def test_resume_continues_the_chain() -> None:
    """A resumed transcript returns the history and appends after its last entry."""
    store = InMemorySessionStore()
    key = SessionKey("-p", "s")
    ids = await record_texts(Transcript(store, key), "a", "b")
    resumed, report = await Transcript.resume(store, key)
    assert [e.uuid for e in report.entries] == ids and report.errors == []
    entry = await resumed.record(UserMessage(content="c"))
    assert entry.parent_uuid == ids[-1]


async def test_resume_at_truncates_and_branches() -> None:
    """resume_session_at cuts after the named message; a later resume follows the new branch."""
    store = InMemorySessionStore()
    key = SessionKey("-p", "s")
    a, b, _c = await record_texts(Transcript(store, key), "a", "b", "c")
    resumed, report = await Transcript.resume(store, key, at=b)
    assert [e.uuid for e in report.entries] == [a, b]
    (d,) = await record_texts(resumed, "d")
    _, again = await Transcript.resume(store, key)
    assert [e.uuid for e in again.entries] == [a, b, d]
    assert history_from_entries(again.entries)[-1] == {"role": "user", "content": "d"}
    assert len(await store.load(key) or []) == 4  # the abandoned tail stays on disk


async def test_resume_errors_name_what_is_missing() -> None:
    """Resuming an unknown session or at an unknown uuid raises a precise error."""
    store = InMemorySessionStore()
    with pytest.raises(SessionNotFoundError, match=r"^no session 'nope' in project '-p'$"):
        await Transcript.resume(store, SessionKey("-p", "nope"))
    await record_texts(Transcript(store, SessionKey("-p", "s")), "a")
    pattern = r"^resume_session_at: no message with uuid 'x' in the transcript \(1 entries\)$"
    with pytest.raises(ValueError, match=pattern):
        await Transcript.resume(store, SessionKey("-p", "s"), at="x")


def test_active_branch_of_a_linear_transcript_is_unchanged() -> None:
    """active_branch and truncate_at on an empty or linear list behave as plain list operations."""
    assert active_branch([]) == []
    with pytest.raises(ValueError):
        truncate_at([], "x")


async def test_fork_copies_session_and_subagents_under_new_id(tmp_path: Path) -> None:
    """Fork keeps uuids, rebrands session ids, copies subagent transcripts, leaves the original."""
    async with FileSessionStore(tmp_path) as store:
        key = SessionKey("-p", "old")
        main = Transcript(store, key)
        await main.record(UserMessage(content="a", session_id="old"))
        sub = Transcript(store, SessionKey("-p", "old", "subagents/agent-main-r"), "main/r")
        await sub.record(UserMessage(content="sub"))
        before = store.path_for(key).read_bytes()
        forked = await main.fork("new")
        assert store.path_for(key).read_bytes() == before
        (entry,) = await store.load(forked.key) or []
        assert entry.session_id == "new" and entry.uuid == main.last_uuid
        assert isinstance(entry.message, UserMessage) and entry.message.session_id == "new"
        assert forked.last_uuid == main.last_uuid
        assert await store.list_subkeys(forked.key) == ["subagents/agent-main-r"]
        with pytest.raises(ValueError, match=r"^new_session_id must differ"):
            await main.fork("old")


async def test_public_helpers_use_the_default_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """list_sessions, get_session_messages and newest_session_id work on the default store."""
    monkeypatch.setenv("TRIO_AGENTS_DATA_DIR", str(tmp_path))
    cwd = tmp_path / "repo"
    for i, sid in enumerate(["older", "newer"]):
        entry = TranscriptEntry(
            uuid=f"u{i}", parent_uuid=None, session_id=sid, timestamp=1e9 + i,
            message=UserMessage(content=f"prompt {i}"),
        )  # fmt: skip
        async with FileSessionStore() as store:
            await store.append(SessionKey(project_key_for(cwd), sid), [entry])
    infos = await list_sessions(cwd)
    assert [i.session_id for i in infos] == ["newer", "older"]
    assert [i.first_prompt for i in infos] == ["prompt 1", "prompt 0"]
    messages = await get_session_messages("older", cwd)
    assert next(m.content for m in messages if isinstance(m, UserMessage)) == "prompt 0"
    assert await get_session_messages("missing", cwd) == []
    async with FileSessionStore() as store:
        assert await newest_session_id(store, project_key_for(cwd)) == "newer"
    assert await trio.Path(tmp_path / "projects" / project_key_for(cwd)).is_dir()


async def test_helpers_reject_a_store_without_listing() -> None:
    """A store without list_sessions makes list_sessions/newest_session_id raise TypeError."""

    class Minimal:
        async def append(self, key: SessionKey, entries: object) -> None: ...
        async def load(self, key: SessionKey) -> None: ...
        async def delete(self, key: SessionKey) -> None: ...
        async def list_subkeys(self, key: SessionKey) -> list[str]:
            return []

    store: SessionStore = Minimal()
    with pytest.raises(TypeError, match=r"^store Minimal does not implement list_sessions$"):
        await list_sessions("/x", store)
    with pytest.raises(TypeError):
        await newest_session_id(store, "-x")


def test_public_names_are_exported_once() -> None:
    """agents.sessions exports exactly its __all__, each name defined, none private."""
    names = agents.sessions.__all__
    assert len(names) == len(set(names))
    assert all(hasattr(agents.sessions, n) and not n.startswith("_") for n in names)
