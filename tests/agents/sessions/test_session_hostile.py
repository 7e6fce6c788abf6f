"""Transcripts a bad day or an attacker leaves behind: lines nested past the decoder's limit,
writes that fail half way, files that are not files, garbage where a history snapshot should be.
Each ends in a report or an error naming the file and what is wrong, never a crash or a hang."""

from __future__ import annotations

import contextlib
import io
import os
import resource
import signal
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.messages import AssistantMessage, TextBlock, UserMessage
from agents.sessions import (
    HISTORY_SNAPSHOT,
    FileSessionStore,
    SessionKey,
    Transcript,
    TranscriptEntry,
    decode_transcript,
    encode_entry,
    file_store,
    history_from_entries,
)
from agents.sessions.transcript import resumable

from .test_session_damage import api_rejects

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
    assert [e.message.content for e in report.entries if isinstance(e.message, UserMessage)] == [
        "first",
        "third",
        "fourth",
    ]
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


# -- garbage where a history snapshot should be ----------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def call(**fields: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "t1", "name": "Read", "input": {}, **fields}


PROMPT = {"role": "user", "content": "q"}
CONTENT = "expected a text or a list of content blocks, got"
BLOCK = "expected a content block (an object with a string type), got"
NOT_HISTORIES: list[tuple[Any, str]] = [
    ("abc", "messages: expected a list of messages, got 'abc'"),
    (None, "messages: expected a list of messages, got null"),
    ([1], "messages[0]: expected an object with a role and a content, got int"),
    ([{"role": "user"}], f"messages[0].content: {CONTENT} null"),
    ([{"role": "user", "content": 5}], f"messages[0].content: {CONTENT} int"),
    ([{"role": "user", "content": ""}], f"messages[0].content: {CONTENT} an empty text"),
    ([{"role": "user", "content": []}], f"messages[0].content: {CONTENT} an empty list"),
    ([{"role": "user", "content": [1]}], f"messages[0].content[0]: {BLOCK} int"),
    ([{"role": "system", "content": "x"}],
     "messages[0].role: expected 'user' or 'assistant', got 'system'"),
    ([PROMPT, {"role": "assistant", "content": [call(id=None)]}],
     "messages[1].content[0].id: expected a string, got null"),
    ([PROMPT, {"role": "assistant", "content": [call(input=[1])]}],
     "messages[1].content[0].input: expected an object, got list"),
    ([{"role": "user", "content": [{"type": "tool_result"}]}],
     "messages[0].content[0].tool_use_id: expected a string, got null"),
    ([PROMPT, {"role": "assistant", "content": [call(input={"x": nested(500)})]}],
     "messages[1]: nested more than 128 levels deep"),
]  # fmt: skip


@pytest.mark.parametrize(("messages", "problem"), NOT_HISTORIES, ids=[p for _, p in NOT_HISTORIES])
def test_a_history_snapshot_that_is_not_a_history_is_ignored_and_reported(
    messages: Any, problem: str
) -> None:
    """The history is rebuilt as if the snapshot were not there (from the entries before it, as
    before any compaction), one the API accepts, and the report names the entry and the field.
    Before, resume ended in a TypeError, KeyError or AttributeError (a RecursionError when
    nested 500 deep), or sent the API a history it refuses (a "system" role)."""
    before = chain(["hi"])
    answer = TranscriptEntry(
        uuid="a1", parent_uuid=before[-1].uuid, session_id="s", timestamp=2.0,
        message=AssistantMessage([TextBlock("hello")], "m", message_id="m1"),
    )  # fmt: skip
    snapshot = TranscriptEntry(
        uuid="snap", parent_uuid="a1", session_id="s", timestamp=3.0,
        kind=HISTORY_SNAPSHOT, data={"other": 1} if messages is None else {"messages": messages},
    )  # fmt: skip
    after = chain(["next"], parent="snap")
    lines = [encode_entry(e) for e in [*before, answer, snapshot, *after]]
    report = resumable(decode_transcript(LABEL, b"".join(lines)))
    history = history_from_entries(report.entries)
    assert history == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        {"role": "user", "content": "next"},
    ]
    assert api_rejects(history) is None
    assert report.errors == [
        f"{LABEL}: the history snapshot snap is not a history ({problem}); ignored it: the "
        "history is rebuilt from the entries before it"
    ]


class _Counting(io.BytesIO):
    """A file that counts the bytes read from it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data


def _line(timestamp: float, text: str) -> bytes:
    entry = TranscriptEntry(
        uuid=str(uuid.uuid4()), parent_uuid=None, session_id="s", timestamp=timestamp,
        message=UserMessage(content=text),
    )  # fmt: skip
    return encode_entry(entry)


def test_a_huge_last_line_gives_its_time_from_its_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """The listing's last activity is the last line's timestamp: a 64 MB last line was read in
    growing chunks (133 MB of reads) and decoded whole (about 94 ms holding the interpreter,
    even in a worker thread). Its start is now found reading back once, and its timestamp
    read from its head."""
    decoded: list[int] = []
    decoder = file_store._stamp_decoder

    class Watched:
        def decode(self, line: bytes) -> Any:
            decoded.append(len(line))
            return decoder.decode(line)

    monkeypatch.setattr(file_store, "_stamp_decoder", Watched())
    data = _line(1.0, "first") + _line(2.5, "x" * 64_000_000)
    f = _Counting(data)
    assert file_store._last_timestamp(f, len(data)) == 2.5
    assert f.bytes_read < len(data) + (1 << 20), f.bytes_read
    assert all(n <= 1 << 20 for n in decoded), decoded


def test_the_last_lines_time_is_found_wherever_it_is() -> None:
    """A long line whose timestamp is not at its head (another writer's field order) is
    decoded whole; a corrupt or blank last line gives the one before; no newline at the end
    too."""
    late = b'{"uuid":"u","parentUuid":null,"sessionId":"s","message":{"type":"user","content":"'
    late += b"y" * 2_000_000 + b'"},"timestamp":7.25}\n'
    assert file_store._last_timestamp(_Counting(late), len(late)) == 7.25
    for tail in (b'{"timestamp": 9, "uuid": [' + b"z" * 100_000 + b"\n", b"\n\n", b"  \n"):
        data = _line(3.0, "ok") + tail
        assert file_store._last_timestamp(_Counting(data), len(data)) == 3.0
    data = _line(4.0, "a") + _line(5.0, "b" * 100_000).rstrip(b"\n")
    assert file_store._last_timestamp(_Counting(data), len(data)) == 5.0
    assert file_store._last_timestamp(_Counting(b""), 0) is None
    data = _line(1.0, "a") + _line(2.0, "b") + _line(3.0, "c")
    assert file_store._last_timestamp(_Counting(data), len(data)) == 3.0
