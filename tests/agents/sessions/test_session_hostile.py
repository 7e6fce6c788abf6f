"""Transcripts a bad day or an attacker leaves behind: lines nested past the decoder's limit,
writes that fail half way, files that are not files, garbage where a history snapshot should be.
Each ends in a report or an error naming the file and what is wrong, never a crash or a hang."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import threading
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


# -- files that are not files ----------------------------------------------------------------------


@contextlib.contextmanager
def writer_after(fifo: Path, seconds: float) -> Iterator[None]:
    """Open ``fifo`` for writing after ``seconds`` (then close it), from a thread: a reader
    that waits for a writer is released, so a test of that bug fails instead of hanging."""
    done = threading.Event()

    def release() -> None:
        if not done.wait(seconds):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def plant(store: FileSessionStore, key: SessionKey, kind: str) -> None:
    path = store.path_for(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "a named pipe":
        os.mkfifo(path)
    elif kind == "a character device":
        path.symlink_to("/dev/null")
    else:
        path.mkdir()


KINDS = ["a named pipe", "a character device", "a directory"]


@pytest.mark.parametrize("kind", KINDS)
async def test_resuming_a_transcript_that_is_not_a_file_is_an_error_naming_it(
    tmp_path: Path, kind: str
) -> None:
    """Resume opens without waiting and reads regular files only. Before, a named pipe held
    the event loop until some process opened it for writing (the whole session hung), a
    device read as an empty session (``/dev/zero`` filled the memory), and a directory raised
    IsADirectoryError."""
    key = SessionKey("-p", "s")
    async with FileSessionStore(tmp_path) as store:
        plant(store, key, kind)
        path = store.path_for(key)
        with (
            writer_after(path, 5.0) if kind == "a named pipe" else contextlib.nullcontext(),
            pytest.raises(OSError) as raised,
        ):
            await Transcript.resume(store, key)
    assert str(raised.value) == f"cannot read transcript {path}: not a regular file ({kind})"


@pytest.mark.parametrize("kind", KINDS)
async def test_recording_into_a_transcript_that_is_not_a_file_is_an_error_naming_it(
    tmp_path: Path, kind: str
) -> None:
    """Before, entries written to a device were lost without a word, and a named pipe took
    64 KiB of them and then held the event loop in ``write`` for good."""
    key = SessionKey("-p", "s")
    async with FileSessionStore(tmp_path) as store:
        plant(store, key, kind)
        path = store.path_for(key)
        with pytest.raises(OSError) as raised:
            await Transcript(store, key).record(UserMessage(content="hi"))
    assert str(raised.value) == f"cannot write transcript {path}: not a regular file ({kind})"
