"""Transcripts a bad day or an attacker leaves behind: lines nested past the decoder's limit,
writes that fail half way, files that are not files, garbage where a history snapshot should be.
Each ends in a report or an error naming the file and what is wrong, never a crash or a hang."""

from __future__ import annotations

import uuid
from pathlib import Path

from agents.messages import UserMessage
from agents.sessions import (
    FileSessionStore,
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
