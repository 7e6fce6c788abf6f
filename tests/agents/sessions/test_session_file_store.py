"""FileSessionStore: layout, per-entry writes, and the reporting of corrupt or truncated lines."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest
import trio

from agents.messages import UserMessage
from agents.sessions import (
    FileSessionStore,
    InMemorySessionStore,
    SessionKey,
    TranscriptEntry,
    default_projects_dir,
    encode_entry,
    project_key_for,
    subagent_subpath,
)


def chain(session_id: str, texts: list[str], parent: str | None = None) -> list[TranscriptEntry]:
    out = []
    for i, text in enumerate(texts):
        entry = TranscriptEntry(
            uuid=str(uuid.uuid4()), parent_uuid=parent, session_id=session_id,
            timestamp=1_700_000_000.0 + i, message=UserMessage(content=text),
        )  # fmt: skip
        out.append(entry)
        parent = entry.uuid
    return out


def test_default_root_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The default root is $TRIO_AGENTS_DATA_DIR/projects, else ~/.trio-agents/projects."""
    monkeypatch.setenv("TRIO_AGENTS_DATA_DIR", str(tmp_path))
    assert FileSessionStore().root == tmp_path / "projects"
    monkeypatch.delenv("TRIO_AGENTS_DATA_DIR")
    assert default_projects_dir() == Path.home() / ".trio-agents" / "projects"


def test_project_key_and_subpath_names() -> None:
    """Project keys replace every non-alphanumeric character; subagent ids lose their slashes."""
    assert project_key_for("/home/me/my.repo_x") == "-home-me-my-repo-x"
    assert subagent_subpath("main/researcher-1") == "subagents/agent-main-researcher-1"
    long_a, long_b = project_key_for("/" + "a" * 300), project_key_for("/" + "a" * 301)
    assert len(long_a) == 200 and long_a != long_b


async def test_layout_on_disk(tmp_path: Path) -> None:
    """Main transcripts are <project>/<id>.jsonl, subagents <project>/<id>/subagents/*.jsonl."""
    store = FileSessionStore(tmp_path)
    key = SessionKey("-repo", "s1")
    sub = SessionKey("-repo", "s1", subagent_subpath("main/r-1"))
    await store.append(key, chain("s1", ["a"]))
    await store.append(sub, chain("s1", ["b"]))
    await store.aclose()
    assert (tmp_path / "-repo" / "s1.jsonl").is_file()
    assert (tmp_path / "-repo" / "s1" / "subagents" / "agent-main-r-1.jsonl").is_file()
    line = (tmp_path / "-repo" / "s1.jsonl").read_bytes()
    assert line.startswith(b'{"uuid":') and b'"parentUuid":null,"sessionId":"s1"' in line


@pytest.mark.parametrize(
    "key",
    [
        SessionKey("..", "s"),
        SessionKey("p", "a/b"),
        SessionKey("p", ""),
        SessionKey("p", "s", "x/../y"),
    ],
)
async def test_unsafe_keys_are_rejected(tmp_path: Path, key: SessionKey) -> None:
    """Key parts that could escape the root raise ValueError naming the part."""
    with pytest.raises(ValueError, match=r"must be a single non-empty path component"):
        await FileSessionStore(tmp_path).append(key, chain("s", ["x"]))


async def test_each_entry_is_on_disk_when_append_returns(tmp_path: Path) -> None:
    """After each append the file already holds every line (no buffering in the process)."""
    store = FileSessionStore(tmp_path)
    key = SessionKey("-p", "s")
    entries = chain("s", ["one", "two", "three"])
    for n, entry in enumerate(entries, start=1):
        await store.append(key, [entry])
        assert store.path_for(key).read_bytes() == b"".join(map(encode_entry, entries[:n]))
    await store.aclose()


async def test_descriptor_cache_is_bounded(tmp_path: Path) -> None:
    """At most max_open_files descriptors stay open; evicted keys reopen transparently."""
    store = FileSessionStore(tmp_path, max_open_files=2)
    keys = [SessionKey("-p", f"s{i}") for i in range(5)]
    for _ in range(2):
        for key in keys:
            await store.append(key, chain(key.session_id, ["x"]))
    assert len(store._fds) == 2
    for key in keys:
        assert len(await store.load(key) or []) == 2
    await store.aclose()
    assert not store._fds
    with pytest.raises(ValueError, match=r"^max_open_files must be >= 1, got 0$"):
        FileSessionStore(tmp_path, max_open_files=0)


async def test_truncated_last_line_is_reported_and_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A line cut short by a crash is reported with file and line; the entries before it load."""
    store = FileSessionStore(tmp_path)
    key = SessionKey("-p", "s")
    entries = chain("s", ["a", "b", "c"])
    await store.append(key, entries)
    await store.aclose()
    path = store.path_for(key)
    with path.open("ab") as f:
        f.write(encode_entry(chain("s", ["lost"], entries[-1].uuid)[0])[:25])
    with caplog.at_level(logging.WARNING, logger="agents.sessions"):
        report = await FileSessionStore(tmp_path).load_report(key)
    assert report is not None
    assert report.entries == entries
    assert report.errors == [
        f"{path}:4: truncated line (no trailing newline: the writer died mid-line); "
        "using the 3 entries before it"
    ]
    assert f"{path}:4: truncated line" in caplog.text


async def test_append_after_a_crash_keeps_new_entries(tmp_path: Path) -> None:
    """Appending after a truncated line starts a new line; resumed entries survive later loads."""
    key = SessionKey("-p", "s")
    entries = chain("s", ["a", "b"])
    async with FileSessionStore(tmp_path) as store:
        await store.append(key, entries)
    path = FileSessionStore(tmp_path).path_for(key)
    with path.open("ab") as f:
        f.write(b'{"uuid":"half')
    resumed = chain("s", ["c", "d"], parent=entries[-1].uuid)
    async with FileSessionStore(tmp_path) as store:
        await store.append(key, resumed)
        report = await store.load_report(key)
    assert report is not None
    assert report.entries == entries + resumed
    assert len(report.errors) == 1 and report.errors[0].startswith(f"{path}:3: corrupt line (")


async def test_corrupt_middle_line_drops_its_descendants(tmp_path: Path) -> None:
    """A corrupt line in a linear transcript: resume uses the entries before it, and says so."""
    key = SessionKey("-p", "s")
    entries = chain("s", ["a", "b", "c", "d", "e"])
    lines = [encode_entry(e) for e in entries]
    lines[2] = b'{"uuid": 42, "garbage": true}\n'
    store = FileSessionStore(tmp_path)
    path = store.path_for(key)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(lines))
    report = await store.load_report(key)
    assert report is not None
    assert report.entries == entries[:2]
    assert report.errors[0].startswith(f"{path}:3: corrupt line (Expected `str`, got `int`")
    assert report.errors[0].endswith("; using the 2 entries before it")
    assert report.errors[1] == f"{path}: dropped 2 later entries that descend from the bad line 3"
    assert await store.load(key) == entries[:2]


async def test_memory_store_reports_like_the_file_store() -> None:
    """InMemorySessionStore reports planted corrupt bytes the same way."""
    store = InMemorySessionStore()
    key = SessionKey("-p", "s")
    entries = chain("s", ["a"])
    await store.append(key, entries)
    store.append_raw(key, b"{not json")
    report = await store.load_report(key)
    assert report is not None and report.entries == entries
    assert report.errors == [
        "memory:-p/s.jsonl:2: truncated line (no trailing newline: the writer died mid-line); "
        "using the 1 entries before it"
    ]
    assert store.raw(key) == encode_entry(entries[0]) + b"{not json"


async def test_large_file_loads_through_a_thread(tmp_path: Path) -> None:
    """A transcript over the inline threshold loads (via trio.to_thread) with every entry."""
    key = SessionKey("-p", "s")
    entries = chain("s", [f"prompt {i} " + "z" * 200 for i in range(2000)])
    async with FileSessionStore(tmp_path) as store:
        await store.append(key, entries)
        assert (await trio.Path(store.path_for(key)).stat()).st_size > 64 * 1024
        assert await store.load(key) == entries


async def test_list_sessions_summarizes_first_prompt(tmp_path: Path) -> None:
    """list_sessions gives first prompt, a one-line summary, creation and last-activity times."""
    key = SessionKey("-p", "s")
    long_prompt = "Summarize\nthis   project " + "please " * 30
    entries = chain("s", [long_prompt, "second"])
    async with FileSessionStore(tmp_path) as store:
        await store.append(key, entries)
        (info,) = await store.list_sessions("-p")
    assert info.session_id == "s"
    assert info.first_prompt == long_prompt
    assert info.summary.startswith("Summarize this project please") and len(info.summary) == 80
    assert info.summary.endswith("…")
    assert (info.created, info.mtime) == (entries[0].timestamp, entries[1].timestamp)


async def test_release_closes_one_descriptor_and_a_later_append_reopens_it(
    tmp_path: Path,
) -> None:
    """An ended agent's transcript gives its descriptor back; the file stays appendable."""
    store = FileSessionStore(tmp_path)
    done, live = SessionKey("-p", "s1", "subagents/agent-a"), SessionKey("-p", "s1")
    for key in (done, live):
        await store.append(key, chain(key.session_id, ["x"]))
    store.release(done)
    store.release(done)  # idempotent
    assert list(store._fds) == [live]
    await store.append(done, chain("s1", ["y"]))
    assert [e.message.content for e in await store.load(done) or []] == ["x", "y"]
    await store.aclose()


def test_the_default_descriptor_cache_fits_a_large_tree(tmp_path: Path) -> None:
    """By default the cache holds at least 64 descriptors and at most a quarter of the limit."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    size = FileSessionStore(tmp_path).max_open_files
    assert 64 <= size <= 4096
    if soft != resource.RLIM_INFINITY and soft >= 256:
        assert size <= soft // 4
