"""Transcripts a bad day or an attacker leaves behind: lines nested past the decoder's limit,
writes that fail half way, files that are not files, garbage where a history snapshot should be.
Each ends in a report or an error naming the file and what is wrong, never a crash or a hang."""

from __future__ import annotations

import contextlib
import resource
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.messages import UserMessage
from agents.sessions import (
    FileSessionStore,
    SessionKey,
    Transcript,
    TranscriptEntry,
    decode_transcript,
    encode_entry,
)

LABEL = "/p/s.jsonl"


def chain(texts: list[str], parent: str | None = None) -> list[TranscriptEntry]:
    out = []
    for i, text in enumerate(texts):
        entry = TranscriptEntry(
            uuid=str(uuid.uuid4()), parent_uuid=parent, session_id="s",
            timestamp=1_700_000_000.0 + i, message=UserMessage(content=text),
        )  # fmt: skip
        out.append(entry)
        parent = entry.uuid
    return out


def nested_line(depth: int) -> bytes:
    """An entry whose data nests ``depth`` arrays: past the decoder's recursion limit."""
    return (
        b'{"uuid":"deep","parentUuid":null,"sessionId":"s","timestamp":1,"data":{"x":'
        + b"[" * depth
        + b"]" * depth
        + b"}}\n"
    )


# -- lines nested too deeply to decode -------------------------------------------------------------


def test_a_line_nested_too_deeply_to_decode_is_reported_as_corrupt() -> None:
    """The decoder's RecursionError is a corrupt line like any other, with its line number: it
    ended resume (and the session) with a RecursionError."""
    entries = chain(["one", "two"])
    data = encode_entry(entries[0]) + nested_line(100_000) + encode_entry(entries[1])
    report = decode_transcript(LABEL, data)
    assert report.entries == entries
    assert report.errors[0].startswith(f"{LABEL}:2: corrupt line (nested too deeply to decode")
    assert report.errors[-1] == f"{LABEL}: kept 2 of 3 entries, dropped 1: 1 unreadable"


async def test_listing_sessions_skips_lines_nested_too_deeply_to_decode(tmp_path: Path) -> None:
    """A session whose first or last line is nested too deeply is still listed, its times read
    from its other lines; before, one such file made list_sessions and
    continue_conversation raise RecursionError for the whole project."""
    project = tmp_path / "-p"
    project.mkdir()
    entries = chain(["hello", "bye"])
    (project / "first.jsonl").write_bytes(nested_line(100_000) + encode_entry(entries[0]))
    (project / "last.jsonl").write_bytes(encode_entry(entries[1]) + nested_line(100_000))
    async with FileSessionStore(tmp_path) as store:
        infos = {info.session_id: info for info in await store.list_sessions("-p")}
    assert infos["first"].mtime == entries[0].timestamp
    assert infos["last"].first_prompt == "bye"
    assert infos["last"].mtime == entries[1].timestamp


# -- writes that fail half way ---------------------------------------------------------------------


@contextlib.contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Files of this process cannot grow past ``limit`` bytes (a full disk, as the kernel makes
    it): a write that crosses it is cut there, and the next one fails with EFBIG."""
    assert signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN  # Python ignores it
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)


@pytest.mark.parametrize("size", [200, 3 << 20], ids=["small entry", "huge entry"])
async def test_entries_written_after_a_failed_write_are_kept(tmp_path: Path, size: int) -> None:
    """A write the disk cut short leaves part of a line; the entries recorded once there is room
    again start on a line of their own. Before, they were glued to that part on the cached
    descriptor, so they and everything after them were dropped as descending from a corrupt
    line: nothing but the first entry resumed."""
    key = SessionKey("-p", "s")
    async with FileSessionStore(tmp_path) as store:
        transcript = Transcript(store, key)
        await transcript.record(UserMessage(content="first"))
        with (
            file_size_limit(store.path_for(key).stat().st_size + 100),
            pytest.raises(OSError, match="File too large"),
        ):
            await transcript.record(UserMessage(content="x" * size))
        await transcript.record(UserMessage(content="third"))
        await transcript.record(UserMessage(content="fourth"))
        _, report = await Transcript.resume(store, key)
    assert [e.message.content for e in report.entries if e.message] == ["first", "third", "fourth"]
    assert report.errors[0].startswith(f"{store.path_for(key)}:2: corrupt line (")
    assert report.errors[-1].endswith(": kept 3 of 4 entries, dropped 1: 1 unreadable")
