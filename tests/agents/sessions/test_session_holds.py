"""Resuming, forking and recording long or huge transcripts leaves the event loop responsive.

The work is in worker threads (``test_session_off_loop.py``); these tests pin what a thread
alone does not fix: the cyclic GC walking what a resume built, the freeing of a long
transcript's entries, and msgspec holding the interpreter over one huge entry. Timings are
compared with a control measured in the same test (``holds.py``).
"""

from __future__ import annotations

import gc
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import agents.sessions.chunked
import agents.sessions.entry
import agents.sessions.history
from agents import AgentOptions
from agents._assembly.persist import start_session
from agents.messages import AssistantMessage, TextBlock, ToolResultBlock, UserMessage
from agents.sessions import (
    FileSessionStore,
    SessionKey,
    Transcript,
    TranscriptEntry,
    encode_entry,
    project_key_for,
    rebuild_history,
)
from agents.sessions.entry import gc_paused, is_large
from agents.testing.transcripts import tool_turns
from tests.agents.sessions.holds import best_hold, control_hold, thread_control_hold
from tests.agents.sessions.test_session_off_loop import threads_of

#: the id of the long session these tests resume (session ids are UUIDs)
LONG = "10000000-0000-4000-8000-00000000106e"


def young_ids() -> set[int]:
    return {id(o) for generation in (0, 1) for o in gc.get_objects(generation=generation)}


async def test_a_resumed_history_is_not_left_to_the_young_collections(tmp_path: Path) -> None:
    """What a long resume builds in its threads is aged at once: none of it is in the young
    generations, which the GC walks every few hundred allocations (on the event loop's thread
    too)."""
    store = FileSessionStore(tmp_path)
    key = SessionKey("-p", "s")
    await store.append(key, tool_turns(20_000))
    _, report = await Transcript.resume(store, key)
    history = await rebuild_history(report.entries)
    young = young_ids()
    assert id(report.entries) not in young
    assert not any(id(m) in young or id(m["content"]) in young for m in history)


def test_objects_the_application_froze_stay_frozen() -> None:
    """The ageing is skipped when the application keeps a frozen generation of its own."""
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused(True):
            built = [[i] for i in range(1000)]
        assert gc.get_freeze_count() == frozen and built
    finally:
        gc.unfreeze()


async def resumed_session(root: Path, entries: int) -> tuple[str, FileSessionStore]:
    store = FileSessionStore(root)
    cwd = str(root / "project")
    os.makedirs(cwd, exist_ok=True)
    await store.append(SessionKey(project_key_for(cwd), LONG), tool_turns(entries))
    return cwd, store


async def test_a_session_resuming_a_long_transcript_frees_its_entries_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the history is rebuilt, the entries are freed in a worker thread."""
    cwd, store = await resumed_session(tmp_path, 3000)
    seen = threads_of(monkeypatch, agents.sessions.history, "clear_in_slices")
    setup = await start_session(AgentOptions(cwd=cwd, resume=LONG), store, cwd, "next")
    assert len(setup.history) > 1000
    assert seen and threading.get_ident() not in seen


async def test_a_session_resuming_a_long_transcript_keeps_the_loop_responsive(
    tmp_path: Path,
) -> None:
    """Up to its first request, no step of a session resuming 60 000 entries holds the loop
    much longer than a thousand checkpoints do (before: a young collection over everything the
    resume built and the freeing of its entries, both in steps of the loop, 60–200 ms here)."""
    cwd, store = await resumed_session(tmp_path, 60_000)
    setups = []  # kept: freeing a history is the session's end, not its start

    async def resume() -> None:
        options = AgentOptions(cwd=cwd, resume=LONG)
        setups.append(await start_session(options, store, cwd, "next"))

    control = await control_hold()
    assert (await best_hold(resume)).step < 0.03 + 3 * control.step


async def test_forking_a_long_transcript_keeps_the_loop_responsive(tmp_path: Path) -> None:
    """No step of forking 60 000 entries (copying them under the new id) holds the loop much
    longer than a thousand checkpoints do (before: the copy was made on the loop)."""
    cwd, store = await resumed_session(tmp_path, 60_000)
    setups = []  # kept: freeing a history is the session's end, not its start

    async def fork() -> None:
        options = AgentOptions(cwd=cwd, resume=LONG, fork_session=True)
        setups.append(await start_session(options, store, cwd, f"fork{len(setups)}"))

    control = await control_hold()
    assert (await best_hold(fork)).step < 0.03 + 3 * control.step


def entry_of(message: Any = None, **fields: Any) -> TranscriptEntry:
    return TranscriptEntry(
        uuid="u", parent_uuid=None, session_id="s", timestamp=1.5, message=message, **fields
    )


PIECE_SHAPES = {
    "long_text": entry_of(UserMessage(content=[ToolResultBlock("t", 'a"\n\\é\x01' * 500)])),
    "long_prompt": entry_of(UserMessage(content="p" * 3000)),
    "many_blocks": entry_of(
        UserMessage(
            content=[ToolResultBlock(f"t{i}", [{"type": "text", "text": "b"}]) for i in range(300)]
        )
    ),
    "a_giant_among_small_items": entry_of(
        UserMessage(
            content=[
                ToolResultBlock("a", "x"),
                ToolResultBlock("b", "y" * 5000),
                ToolResultBlock("c", "z"),
            ],
            tool_use_result={"stdout": "o" * 2000, "items": list(range(500)), "n": None},
        )
    ),
    "history_snapshot": entry_of(
        kind="history_snapshot",
        data={
            "messages": [{"role": "user", "content": [{"type": "text", "text": "s" * 40}]}] * 200
        },
    ),
    "small": entry_of(AssistantMessage([TextBlock("hi")], "m", message_id="m1")),
}


@pytest.mark.parametrize("shape", PIECE_SHAPES)
def test_an_entry_encoded_in_pieces_is_the_line_one_call_writes(
    shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With pieces of 64 bytes, every shape (long texts with escapes, long lists, a big item
    among small ones, big fields of a struct, dicts) encodes to exactly the same bytes."""
    monkeypatch.setattr(agents.sessions.chunked, "PIECE_BYTES", 64)
    monkeypatch.setattr(agents.sessions.chunked, "_PIECE_CHARS", 32)
    entry = PIECE_SHAPES[shape]
    buf = bytearray()
    agents.sessions.chunked.encode_in_pieces_into(entry, buf)
    assert bytes(buf) == encode_entry(entry)


async def test_recording_a_huge_entry_lets_the_loop_run_while_it_is_encoded(
    tmp_path: Path,
) -> None:
    """Recording a 20 MB tool result of characters JSON escapes keeps the watchdog about as
    punctual as plain Python in a worker thread does (before: one msgspec call held the
    interpreter for the whole encoding, 170–350 ms here)."""
    store = FileSessionStore(tmp_path)
    message = UserMessage(content=[ToolResultBlock("t", 'a"\n\\' * 5_000_000)])

    async def record() -> None:
        await Transcript(store, SessionKey("-p", "s")).record(message)

    control = await thread_control_hold()
    assert (await best_hold(record)).late < 0.05 + 2 * control.late


def test_sizing_an_entry_of_a_huge_list_is_bounded_work() -> None:
    """Whether a 2-million-message history snapshot is large is known without touching its
    messages (before: they were all copied onto the walk's stack, on the event loop)."""
    data = {"messages": [{"role": "user", "content": "s"} for _ in range(2_000_000)]}
    entry = entry_of(kind="history_snapshot", data=data)
    times = []
    for _ in range(5):
        started = time.perf_counter()
        assert is_large([entry])
        times.append(time.perf_counter() - started)
    assert min(times) < 0.002


LONG_TEXTS = {
    "plain": "x" * 3000,
    "escapes": 'a"\n\\/\x01\t' * 300,
    "surrogate_pairs": "😀" * 800,
    "mixed": ("é😀" + '"\\' + "z" * 13) * 200,
}


@pytest.mark.parametrize("kind", LONG_TEXTS)
def test_a_long_line_decoded_by_pieces_is_the_entry_one_call_decodes(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With tiny pieces and windows, a transcript with long lines (long texts of every kind of
    character: escapes, surrogate pairs cut across windows) decodes to the same entries."""
    monkeypatch.setattr(agents.sessions.entry, "_DECODE_CHUNK_BYTES", 256)
    monkeypatch.setattr(agents.sessions.chunked, "_LONG_LITERAL", 64)
    monkeypatch.setattr(agents.sessions.chunked, "_SCAN_WINDOW", 7)
    text = LONG_TEXTS[kind]
    entries = [
        TranscriptEntry(
            uuid=f"u{i}",
            parent_uuid=f"u{i - 1}" if i else None,
            session_id="s",
            timestamp=float(i),
            message=UserMessage(
                content=[ToolResultBlock("t", text), ToolResultBlock("t2", "short")],
                tool_use_result={"stdout": text, "n": i},
            )
            if i % 2
            else UserMessage(content=text if i else "first"),
        )
        for i in range(4)
    ]
    data = b"".join(encode_entry(e) for e in entries)
    assert agents.sessions.entry.decode_transcript("t", data).entries == entries


async def test_resuming_a_huge_line_lets_the_loop_run_while_it_is_decoded(
    tmp_path: Path,
) -> None:
    """Resuming a transcript whose one line is a 30 MB prompt of emoji leaves the watchdog far
    less late than one msgspec call over the line did (350–370 ms here). What remains is
    copying the line and joining the text's pieces into one string: single C calls, about
    100 ms on this loaded host."""
    store = FileSessionStore(tmp_path)
    key = SessionKey("-p", "s")
    await Transcript(store, key).record(UserMessage(content="😀" * 7_500_000))

    async def resume() -> None:
        await Transcript.resume(store, key)

    control = await thread_control_hold()
    assert (await best_hold(resume)).late < 0.15 + 2 * control.late


async def test_a_session_that_resumed_a_long_transcript_frees_its_history_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the session's end its history (a million objects for 100 000 resumed messages, half a
    second to free on the loop) is emptied in a worker thread, a slice at a time."""
    from agents import query
    from agents.testing import ScriptedBackend, Step, text

    cwd, store = await resumed_session(tmp_path, 12_000)  # past the inline limit at the end
    freed: list[tuple[int, int, bool]] = []  # thread, items, whether they are API messages
    original = agents.sessions.history.clear_in_slices

    def noting(items: list[Any]) -> None:
        api = bool(items) and isinstance(items[0], dict) and "role" in items[0]
        freed.append((threading.get_ident(), len(items), api))
        original(items)

    monkeypatch.setattr(agents.sessions.history, "clear_in_slices", noting)
    options = AgentOptions(
        cwd=cwd,
        resume=LONG,
        session_store=store,
        backend=ScriptedBackend({"main": [Step([text("again")])]}),
    )
    messages = [m async for m in query(prompt="once more", options=options)]
    assert messages
    histories = [(thread, n) for thread, n, api in freed if api]
    assert histories, "the history was freed on the event loop"
    assert all(thread != threading.get_ident() for thread, _ in histories)
    assert max(n for _, n in histories) > 4000
