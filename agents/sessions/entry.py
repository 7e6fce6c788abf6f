"""Transcript entries: one JSON line per message, and the tolerant line decoder (SPEC C1, E3).

A transcript is a JSON-lines file of :class:`TranscriptEntry` objects. Each entry wraps one
:data:`~agents.messages.Message` exactly as it was streamed (so a transcript is lossless), plus the
bookkeeping that resume needs: its own ``uuid``, the ``parent_uuid`` of the entry recorded before it
by the same agent, the ``session_id``, a wall-clock ``timestamp`` and the ``agent_id``.

On disk the entry's own keys are camelCase like Claude Code's transcripts (``uuid``,
``parentUuid``, ``sessionId``, ``timestamp``, ``message``); the nested message keeps the
``stream-json`` shape of :mod:`agents.messages`::

    {"uuid":"9f..","parentUuid":null,"sessionId":"4c..","timestamp":1767139200.5,"agentId":"main",
     "message":{"type":"user","content":"Summarize this project"}}

Entries that are not messages (``kind`` set, ``message`` None) carry bookkeeping such as an API
history snapshot written by compaction; new fields only ever get defaults (schema evolution).
"""

from __future__ import annotations

import contextlib
import gc
import logging
from collections.abc import Iterator
from typing import Any

import attrs
import msgspec

from agents.messages import Message

__all__ = [
    "HISTORY_SNAPSHOT",
    "LoadReport",
    "TranscriptEntry",
    "decode_entry",
    "decode_transcript",
    "encode_entry",
    "encode_entry_into",
]

logger = logging.getLogger("agents.sessions")

#: ``kind`` of an entry whose ``data["messages"]`` replaces the API history rebuilt so far (written
#: after compaction: the summary plus the kept exchange). See ``history_from_entries``.
HISTORY_SNAPSHOT = "history_snapshot"


class TranscriptEntry(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, rename="camel", gc=False
):
    """One line of a session transcript.

    ``parent_uuid`` links each entry to the previous one recorded by the same agent, so a branch
    (``resume_session_at``) can be told from the abandoned tail and a corrupt line's descendants can
    be dropped. Example::

        TranscriptEntry(uuid=str(uuid4()), parent_uuid=None, session_id=sid,
                        timestamp=time.time(), message=UserMessage(content="hi"))
    """

    uuid: str
    parent_uuid: str | None
    session_id: str
    timestamp: float
    agent_id: str = "main"
    message: Message | None = None
    kind: str | None = None
    data: dict[str, Any] = {}


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(TranscriptEntry)


def encode_entry(entry: TranscriptEntry) -> bytes:
    """Encode an entry as one JSON line, trailing newline included."""
    buf = bytearray()
    _encoder.encode_into(entry, buf)
    buf += b"\n"
    return bytes(buf)


def encode_entry_into(entry: TranscriptEntry, buf: bytearray) -> None:
    """Append an entry's line (with its newline) to ``buf``: the allocation-light path of stores."""
    _encoder.encode_into(entry, buf, -1)
    buf += b"\n"


def decode_entry(line: bytes | str) -> TranscriptEntry:
    """Decode one line; ``msgspec.ValidationError``/``DecodeError`` name the JSON path at fault."""
    return _decoder.decode(line)


@attrs.frozen
class LoadReport:
    """What ``load`` found: the usable entries and one message per line it could not use (E3).

    Each error names the transcript and the 1-based line number, and says which entries resume
    uses instead, e.g. ``/data/p/s.jsonl:17: truncated line (no trailing newline: the writer died
    mid-line); using the 16 entries before it``.
    """

    entries: list[TranscriptEntry]
    errors: list[str] = attrs.field(factory=list)


def decode_transcript(label: str, data: bytes) -> LoadReport:
    """Decode a whole transcript, reporting each unusable line and logging it as a warning.

    Rule for a bad line (corrupt, or truncated by a crash): it is skipped, and so is every later
    entry that descends from it (``parent_uuid`` not among the entries kept). An entry written by a
    later process that resumed from the good prefix has a known parent and is kept; that is what
    makes "crash, resume, crash again" lose nothing but the lines in flight. For a single corruption
    in a linear transcript this is exactly "use the entries before it".
    """
    if not data:
        return LoadReport([])
    with _gc_paused(len(data) >= _GC_PAUSE_BYTES):
        if data.endswith(b"\n"):
            try:  # fast path: one C-level pass over a well-formed file
                return LoadReport(_decoder.decode_lines(data))
            except (msgspec.DecodeError, msgspec.ValidationError):
                pass
        return _decode_slow(label, data)


_GC_PAUSE_BYTES = 1 << 20


@contextlib.contextmanager
def _gc_paused(pause: bool) -> Iterator[None]:
    """Postpone the cyclic GC while decoding a big transcript.

    Decoding allocates millions of containers, each allocation counting towards a collection that
    finds nothing (the new objects are all reachable); with the GC paused, loading 100 000 entries
    is about twice as fast. The pause is process-wide but short, and a GC disabled by the
    application stays disabled.
    """
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _decode_slow(label: str, data: bytes) -> LoadReport:
    lines = data.split(b"\n")
    complete = data.endswith(b"\n")
    if complete:
        lines.pop()  # the empty string after the final newline
    entries: list[TranscriptEntry] = []
    errors: list[str] = []
    known: set[str] = set()
    bad_at: int | None = None  # 1-based number of the first bad line
    dropped = 0
    last = len(lines)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = _decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            if number == last and not complete:
                why = "truncated line (no trailing newline: the writer died mid-line)"
            else:
                why = f"corrupt line ({exc})"
            errors.append(f"{label}:{number}: {why}; using the {len(entries)} entries before it")
            if bad_at is None:
                bad_at = number
            continue
        if bad_at is not None and entry.parent_uuid is not None and entry.parent_uuid not in known:
            dropped += 1
            continue
        entries.append(entry)
        known.add(entry.uuid)
    if dropped:
        errors.append(
            f"{label}: dropped {dropped} later entries that descend from the bad line {bad_at}"
        )
    for error in errors:
        logger.warning("transcript: %s", error)
    return LoadReport(entries, errors)
