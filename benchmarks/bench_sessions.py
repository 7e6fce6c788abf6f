"""Benchmark: append N transcript entries one call at a time, then load them back.

Prints one JSON line per measurement::

    {"bench": "sessions", "store": "file", "op": "append", "entries": 100000,
     "seconds": 1.23, "entries_per_s": 81300.0, "bytes": 41000000}

The entries cycle through a realistic turn: a prompt, an assistant text block, a tool call, its
tool result (a few hundred bytes each) and a result message. ``append`` is one ``store.append``
call per entry, as the agent loop does (one write per entry for the file store, and one Trio
checkpoint per call); ``append_batch_100`` passes 100 entries per call (still one write per entry
for the file store), which separates the store's cost from the per-call checkpoint; ``load``
reads the whole session back; ``record`` is the agent loop's own path (``Transcript.record``: the
entry is built, chained and written without a scheduling round trip). ``--quick`` runs 2 000
entries for a smoke test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.messages import (
    AssistantMessage,
    Message,
    ResultMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from agents.sessions import (
    FileSessionStore,
    InMemorySessionStore,
    SessionKey,
    SessionStore,
    Transcript,
    TranscriptEntry,
)


def make_entries(n: int, session_id: str) -> list[TranscriptEntry]:
    """``n`` chained entries shaped like a tool-using conversation."""
    lorem = "The quick brown fox jumps over the lazy dog. " * 6
    out: list[TranscriptEntry] = []
    parent: str | None = None
    now = time.time()
    for i in range(n):
        message_uuid = str(uuid.uuid4())
        message: Message
        match i % 5:
            case 0:
                message = UserMessage(content=f"prompt {i}: {lorem}", uuid=message_uuid)
            case 1:
                message = AssistantMessage(
                    content=[TextBlock(lorem)], model="claude-sonnet-4-5", message_id=f"msg_{i}",
                    usage={"input_tokens": 1200, "output_tokens": 80}, uuid=message_uuid,
                )  # fmt: skip
            case 2:
                message = AssistantMessage(
                    content=[ToolUseBlock(f"toolu_{i}", "Read", {"file_path": f"/src/f{i}.py"})],
                    model="claude-sonnet-4-5", message_id=f"msg_{i - 1}", uuid=message_uuid,
                )  # fmt: skip
            case 3:
                message = UserMessage(
                    content=[ToolResultBlock(f"toolu_{i - 1}", lorem * 2)], uuid=message_uuid
                )
            case _:
                message = ResultMessage(
                    subtype="success", duration_ms=1000, duration_api_ms=800, is_error=False,
                    num_turns=2, session_id=session_id, total_cost_usd=0.0123, result=lorem,
                    usage={"input_tokens": 2400, "output_tokens": 160}, uuid=message_uuid,
                )  # fmt: skip
        entry = TranscriptEntry(
            uuid=message_uuid, parent_uuid=parent, session_id=session_id,
            timestamp=now + i * 1e-3, message=message,
        )  # fmt: skip
        out.append(entry)
        parent = message_uuid
    return out


BATCH = 100


def emit(store: str, op: str, n: int, seconds: float, nbytes: int | None = None) -> None:
    row: dict[str, object] = {
        "bench": "sessions",
        "store": store,
        "op": op,
        "entries": n,
        "seconds": round(seconds, 4),
        "entries_per_s": round(n / seconds, 1),
    }
    if nbytes is not None:
        row["bytes"] = nbytes
    print(json.dumps(row), flush=True)


async def run_store(name: str, store: SessionStore, entries: list[TranscriptEntry]) -> None:
    key = SessionKey("-bench", entries[0].session_id)
    start = time.perf_counter()
    for entry in entries:
        await store.append(key, [entry])
    emit(name, "append", len(entries), time.perf_counter() - start)
    batch_key = SessionKey("-bench", entries[0].session_id + "-batched")
    start = time.perf_counter()
    for i in range(0, len(entries), BATCH):
        await store.append(batch_key, entries[i : i + BATCH])
    emit(name, f"append_batch_{BATCH}", len(entries), time.perf_counter() - start)
    transcript = Transcript(store, SessionKey("-bench", entries[0].session_id + "-recorded"))
    messages = [e.message for e in entries if e.message is not None]
    start = time.perf_counter()
    for message in messages:
        await transcript.record(message)
    emit(name, "record", len(messages), time.perf_counter() - start)
    start = time.perf_counter()
    loaded = await store.load(key)
    elapsed = time.perf_counter() - start
    assert loaded == entries, "round-trip mismatch"
    nbytes = None
    if isinstance(store, FileSessionStore):
        nbytes = store.path_for(key).stat().st_size
    emit(name, "load", len(entries), elapsed, nbytes)


async def main(n: int) -> None:
    session_id = str(uuid.uuid4())
    entries = make_entries(n, session_id)
    await run_store("memory", InMemorySessionStore(), entries)
    with tempfile.TemporaryDirectory() as root:
        async with FileSessionStore(root) as store:
            await run_store("file", store, entries)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="2 000 entries (smoke test)")
    args = parser.parse_args()
    trio.run(main, 2_000 if args.quick else args.entries)
