"""Transcript entries: one JSON line per message, and the tolerant line decoder.

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
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import msgspec
from msgspec.structs import astuple

from agents.messages import (
    AssistantMessage,
    Message,
    ResultMessage,
    StreamEvent,
    ToolResultBlock,
    UserMessage,
)

__all__ = [
    "HISTORY_SNAPSHOT",
    "LARGE_APPEND_BYTES",
    "LoadReport",
    "TranscriptEntry",
    "check_entries",
    "decode_entry",
    "decode_transcript",
    "depth_as_decode_error",
    "encode_entry",
    "encode_entry_into",
    "encode_line_into",
    "encode_lines",
    "gc_paused",
    "is_large",
    "is_large_entry",
    "promote_young",
    "rough_size",
    "summary",
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


def encode_lines(entries: Sequence[TranscriptEntry]) -> bytes:
    """The lines of ``entries``, each with its newline (what ``encode_entry`` gives for each,
    joined), in one call: what the file store writes. (The bytes may hold more memory than
    their length: fine for a write, not for bytes that are kept.)"""
    return _encoder.encode_lines(entries)


#: an entry's JSON (without the newline) written into a bytearray, as one C call:
#: ``encode_line_into(entry, buf, -1)`` appends it to ``buf`` (the memory store's transcripts)
encode_line_into = _encoder.encode_into


#: Appends whose encoding may exceed this many bytes are encoded and written in a worker thread:
#: at about 1 GB/s for encoding and less for the write, a larger append would hold the event loop
#: for milliseconds on end (a 50 MB tool result: over 300 ms).
LARGE_APPEND_BYTES = 1 << 20
#: What one character of text counts in that estimate: a character JSON escapes takes up to 6
#: bytes and 10 ns, so a text of 1 Mi such characters held the loop over 20 ms; texts over 256 Ki
#: characters leave it.
_CHAR_BYTES = 4
#: What one container or scalar counts towards that estimate, at least (its JSON punctuation and
#: the encoder's work per item): it bounds the estimate's own walk to ``LARGE_APPEND_BYTES / 128``
#: items, a few milliseconds at worst, microseconds for an ordinary message.
_ITEM_BYTES = 128


def is_large(entries: Sequence[TranscriptEntry], limit: int = LARGE_APPEND_BYTES) -> bool:
    """Whether encoding ``entries`` may take more than ``limit`` bytes.

    Assistant messages and stream events are never large: one block of one response is bounded
    by the model's output limit. Tool results and prompts are measured — their texts by length,
    anything else by a walk that stops as soon as the estimate passes ``limit`` — and so are
    other messages and data entries (a history snapshot holds a whole history).
    """
    total = 0
    for entry in entries:
        total += _ITEM_BYTES  # the entry's own keys: uuids, session id, timestamp
        message = entry.message
        kind = type(message)
        if kind is AssistantMessage or kind is StreamEvent:
            if total > limit:
                return True
            continue
        if kind is UserMessage:
            user: UserMessage = message  # type: ignore[assignment]  # no cast(): a call per entry
            content = user.content
            if type(content) is str:
                total += _CHAR_BYTES * len(content)
            else:
                for block in content:
                    if type(block) is ToolResultBlock:
                        inner = block.content
                        if type(inner) is str:
                            total += _CHAR_BYTES * len(inner) + _ITEM_BYTES
                        elif type(inner) is list:  # content items: texts measured by length
                            total += _ITEM_BYTES + _items(inner, limit - total)
                        else:
                            total += rough_size(block, limit - total)
                    else:
                        total += rough_size(block, limit - total)
                    if total > limit:
                        return True
            if user.tool_use_result:
                total += _data_size(user.tool_use_result, limit - total)
        elif kind is ResultMessage:
            total += _result_size(message, limit - total)  # type: ignore[arg-type]
        else:
            total += rough_size(entry.data if message is None else message, limit - total)
        if total > limit:
            return True
    return False


def is_large_entry(entry: TranscriptEntry, limit: int = LARGE_APPEND_BYTES) -> bool:
    """``is_large([entry])``, without the list and the loop for the entries every agent
    records: a response's blocks, a prompt given as text."""
    message = entry.message
    kind = type(message)
    if kind is AssistantMessage or kind is StreamEvent:
        return limit < _ITEM_BYTES
    if kind is UserMessage:
        user: UserMessage = message  # type: ignore[assignment]  # no cast(): a call per entry
        content = user.content
        if type(content) is str:
            total = _ITEM_BYTES + _CHAR_BYTES * len(content)
        elif len(content) == 1 and type(block := content[0]) is ToolResultBlock:
            inner = block.content
            if type(inner) is str:
                total = 2 * _ITEM_BYTES + _CHAR_BYTES * len(inner)
            elif type(inner) is list:  # content items (an MCP tool's): as ``is_large`` counts
                total = 2 * _ITEM_BYTES + _items(inner, limit - _ITEM_BYTES)
            else:
                return is_large((entry,), limit)
        else:
            return is_large((entry,), limit)
        extra = user.tool_use_result
        if extra and total <= limit:
            total += _data_size(extra, limit - total)
        return total > limit
    if kind is ResultMessage:
        return _ITEM_BYTES + _result_size(message, limit - _ITEM_BYTES) > limit  # type: ignore[arg-type]
    return is_large((entry,), limit)


def _data_size(data: Any, budget: int) -> int:
    """``rough_size(data, budget)``, counted the same way; a flat dict of texts and numbers (a
    tool's ``data``, such as the Agent tool's) without the walk's stack."""
    if type(data) is not dict:
        return rough_size(data, budget)
    total = _ITEM_BYTES * (len(data) + 1)
    if total > budget:  # as the walk: a huge dict's items are not looked at
        return total
    for value in data.values():
        kind = type(value)
        if kind is str:
            total += _ITEM_BYTES + _CHAR_BYTES * len(value)
        elif kind in _SCALARS:
            total += _ITEM_BYTES
        else:  # nested: walked whole
            return rough_size(data, budget)
    return total


_SCALARS = frozenset({int, float, bool, type(None)})

#: What a result's fixed fields count (ids, durations, flags, reasons, its usage's counts).
_RESULT_FIELDS_BYTES = 24 * _ITEM_BYTES
_NUMBERS = frozenset({int, float})


def _result_size(message: ResultMessage, budget: int) -> int:
    """The rough size of a ``ResultMessage`` (one per prompt of every agent): its fixed fields
    counted as a whole, its text by length, each model's usage by its name's length, and only
    the parts that can grow (errors, denials, structured output, a deferred call) walked."""
    total = _RESULT_FIELDS_BYTES
    result = message.result
    if result:
        total += _CHAR_BYTES * len(result)
    for model, counts in message.model_usage.items():
        total += _CHAR_BYTES * len(model) + _ITEM_BYTES
        if type(counts) is dict:
            # a loop, not ``_NUMBERS.issuperset(map(type, ...))``: that builds a set per call
            for value in counts.values():
                if type(value) not in _NUMBERS:
                    total += rough_size(counts, budget - total)
                    break
            else:
                total += (2 * _ITEM_BYTES) * len(counts)  # a key and a number each
        else:
            total += rough_size(counts, budget - total)
    errors, denials = message.errors, message.permission_denials
    output, deferred = message.structured_output, message.deferred_tool_use
    if errors or denials or output or deferred:  # as a rule none is (no loop over them then)
        for part in (errors, denials, output, deferred):
            if part and total <= budget:
                total += rough_size(part, budget - total)
    return total


def _items(items: list[dict[str, Any]], budget: int) -> int:
    """The rough size of a tool result's content items: a text item (``{"type": "text",
    "text": ...}``, what most tools return) by its text's length, anything else walked."""
    total = 0
    for item in items:
        text = item.get("text") if type(item) is dict and len(item) == 2 else None
        if type(text) is str and item.get("type") == "text":
            total += _CHAR_BYTES * len(text) + 4 * _ITEM_BYTES  # at least what the walk counts
        else:
            total += rough_size(item, budget - total)
        if total > budget:
            break
    return total


def rough_size(root: Any, budget: int) -> int:
    """A rough size of the JSON for ``root`` (at least ``_ITEM_BYTES`` per item), given up once
    it passes ``budget``: a walk of at most ``budget / _ITEM_BYTES`` items."""
    total = 0
    stack = [root]
    pop, push = stack.pop, stack.extend
    while stack and total <= budget:
        item = pop()
        kind = type(item)
        total += _ITEM_BYTES
        if kind is str:
            total += _CHAR_BYTES * len(item)
        elif kind is dict:
            total += _ITEM_BYTES * len(item)
            if total <= budget:  # pushing a huge container's items would be work of its size
                push(item.values())
        elif kind is list:
            total += _ITEM_BYTES * len(item)
            if total <= budget:
                push(item)
        elif isinstance(item, msgspec.Struct):
            push(astuple(item))
    return total


def decode_entry(line: bytes | str) -> TranscriptEntry:
    """Decode one line; ``msgspec.ValidationError``/``DecodeError`` name the JSON path at fault
    (a line nested too deeply for the decoder is a ``DecodeError`` too)."""
    with depth_as_decode_error():
        return _decoder.decode(line)


@contextlib.contextmanager
def depth_as_decode_error() -> Iterator[None]:
    """Turn the decoder's ``RecursionError`` into a ``msgspec.DecodeError`` saying why.

    msgspec recurses once per level of nesting and gives up at Python's recursion limit with a
    ``RecursionError``: a line of ``[`` 100 000 deep in a transcript is corrupt like any other,
    not a crash of whatever reads it (resume, ``list_sessions``)."""
    try:
        yield
    except RecursionError:
        raise msgspec.DecodeError(
            "nested too deeply to decode: more levels of arrays and objects than the decoder's "
            "recursion limit"
        ) from None


@attrs.frozen
class LoadReport:
    """What loading a transcript found: the entries resume uses, and what it could not use.

    ``errors`` has one message per line that was dropped at its root — an unreadable line, a
    duplicate, an entry whose parent never appeared (a break in the chain) — each naming the
    transcript and the 1-based line, then one summary saying exactly how many entries were kept
    and dropped and why, e.g.::

        /data/p/s.jsonl:7: broken chain: the parent 3f.. of entry 9a.. is not on any line before
        it (lines are missing or out of order)
        /data/p/s.jsonl: kept 6 of 14 entries, dropped 8: 1 with a missing parent, 7 descending
        from dropped entries

    ``dropped`` counts the lines (readable or not) that were not used because of a fault, by
    reason in ``reasons``; with no fault it is 0 and ``errors`` is empty. ``unused`` counts good
    entries resume leaves aside on purpose (an abandoned branch, the tail after
    ``resume_session_at``). ``read`` is the number of non-blank lines (blank lines are ignored),
    so ``kept + dropped + unused == read``.
    """

    entries: list[TranscriptEntry]
    errors: list[str] = attrs.field(factory=list)
    dropped: int = 0
    read: int | None = None
    reasons: dict[str, int] = attrs.field(factory=dict)
    unused: int = 0
    #: the transcript the messages name (a file path, or a store's name for the key)
    label: str = ""

    @property
    def kept(self) -> int:
        """How many entries are used."""
        return len(self.entries)


def decode_transcript(label: str, data: bytes) -> LoadReport:
    """Decode a whole transcript, reporting each unusable line and logging it as a warning.

    The rule: an entry is used only if its whole chain is — every ``parent_uuid`` back to a root
    was used before it. So a line is dropped when it cannot be decoded (corrupt, or truncated by a
    crash), when it repeats an entry already used (same ``uuid``), when its parent never appeared
    before it (a break: lines deleted or moved), and when it descends from a dropped line. An
    entry written by a later process that resumed from the good part has a known parent and is
    kept; that is what makes "crash, resume, crash again" lose nothing but the lines in flight.
    For one fault in a linear transcript this is exactly "use the entries before it".
    """
    if not data:
        return LoadReport([], read=0, label=label)
    with gc_paused(len(data) >= _GC_PAUSE_BYTES):
        if data.endswith(b"\n"):
            try:  # fast path: C-level passes over a well-formed file, then the chain check
                with depth_as_decode_error():
                    entries = _decode_lines_in_chunks(data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                pass
            else:
                if _chain_is_whole(entries):
                    return LoadReport(entries, read=len(entries), label=label)
        return _decode_slow(label, data)


_GC_PAUSE_BYTES = 1 << 20
#: Lines are decoded this many bytes at a time: msgspec holds the GIL for a whole call, so a
#: transcript decoded in a worker thread in one call would stall the event loop's thread too.
_DECODE_CHUNK_BYTES = 1 << 20


def _decode_lines_in_chunks(data: bytes) -> list[TranscriptEntry]:
    """``decode_lines`` over ``data`` (ending with a newline), a chunk of whole lines at a time."""
    if len(data) <= _DECODE_CHUNK_BYTES:
        return _decoder.decode_lines(data)
    view = memoryview(data)
    entries: list[TranscriptEntry] = []
    start = 0
    while start < len(data):
        end = data.find(b"\n", min(start + _DECODE_CHUNK_BYTES, len(data)) - 1) + 1
        if end - start > 2 * _DECODE_CHUNK_BYTES:  # a line of megabytes in this chunk
            first = data.find(b"\n", start) + 1
            if first - start > _DECODE_CHUNK_BYTES:  # it is the first: by pieces
                entries.append(_decode_one(data[start : first - 1]))  # a copy, unless whole
                start = first
                continue
            end = data.rfind(b"\n", start, start + _DECODE_CHUNK_BYTES) + 1  # the lines before
        entries += _decoder.decode_lines(view[start:end])
        start = end
    return entries


def _decode_one(line: bytes | memoryview) -> TranscriptEntry:
    """One line; a line of megabytes by pieces (``chunked.decode_long_line``), since one
    msgspec call over it would hold the interpreter throughout."""
    with depth_as_decode_error():
        if len(line) <= _DECODE_CHUNK_BYTES:
            return _decoder.decode(line)
        from agents.sessions.chunked import decode_long_line  # it imports this module

        entry: TranscriptEntry = decode_long_line(line, _decoder)
        return entry


@contextlib.contextmanager
def gc_paused(pause: bool) -> Iterator[None]:
    """Postpone the cyclic GC while decoding a big transcript, then age what was built.

    Decoding allocates millions of containers, each allocation counting towards a collection that
    finds nothing (the new objects are all reachable); with the GC paused, loading 100 000 entries
    is about twice as fast. The pause is process-wide but short, and a GC disabled by the
    application stays disabled.

    At the end the young objects are moved to the oldest generation (:func:`promote_young`):
    otherwise the next young collection — in whatever thread allocates next, often the event
    loop's — walks all of them at once (100 000 resumed entries: 100–190 ms holding the
    interpreter).
    """
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        promote_young()
        gc.enable()


def promote_young() -> None:
    """Move every object the cyclic GC tracks into its oldest generation, in constant time.

    ``gc.freeze()`` moves all tracked objects to the permanent generation and ``gc.unfreeze()``
    moves the permanent generation back into the oldest one: the young collections, which run
    every few hundred allocations, no longer walk what a resume just built; only a full
    collection (rare: CPython runs one when the old generation has grown by a quarter since the
    last) looks at them, as at any long-lived object. Garbage among them is still collected then.
    Skipped when the application keeps objects frozen itself (``gc.get_freeze_count()``): they
    must stay frozen.
    """
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def _chain_is_whole(entries: list[TranscriptEntry]) -> bool:
    """Every entry's uuid is new and its parent (if any) came before it."""
    seen: set[str] = set()
    add = seen.add
    for entry in entries:
        parent = entry.parent_uuid
        if entry.uuid in seen or (parent is not None and parent not in seen):
            return False
        add(entry.uuid)
    return True


@attrs.define
class _ChainCheck:
    """Walks the lines of one transcript in order, keeping the entries whose chain is whole."""

    label: str
    entries: list[TranscriptEntry] = attrs.Factory(list)
    errors: list[str] = attrs.Factory(list)
    kept_at: dict[str, int] = attrs.Factory(dict)  # uuid -> line of the entries used
    dropped_uuids: set[str] = attrs.Factory(set)
    why: dict[str, int] = attrs.Factory(dict)  # reason -> lines dropped for it
    read: int = 0

    def drop(self, number: int, reason: str, message: str | None) -> None:
        self.why[reason] = self.why.get(reason, 0) + 1
        if message is not None:
            self.errors.append(f"{self.label}:{number}: {message}")

    def unreadable(self, number: int, message: str) -> None:
        self.read += 1
        self.drop(number, "unreadable", message)

    def entry(self, number: int, entry: TranscriptEntry) -> None:
        self.read += 1
        uuid, parent = entry.uuid, entry.parent_uuid
        if uuid in self.kept_at:
            self.drop(number, "duplicate", f"duplicate of line {self.kept_at[uuid]} (entry {uuid})")
        elif parent is not None and parent not in self.kept_at:
            self.dropped_uuids.add(uuid)
            if parent in self.dropped_uuids or self.why.get("unreadable"):
                # after an unreadable line, an unknown parent is most likely that line
                self.drop(number, "descending from dropped entries", None)
            else:
                self.drop(
                    number,
                    "with a missing parent",
                    f"broken chain: the parent {parent} of entry {uuid} is not on any line "
                    "before it (lines are missing or out of order)",
                )
        else:
            self.kept_at[uuid] = number
            self.entries.append(entry)

    def report(self) -> LoadReport:
        dropped = sum(self.why.values())
        errors = list(self.errors)
        if dropped:
            errors.append(f"{self.label}: " + summary(len(self.entries), self.read, self.why))
        for error in errors:
            logger.warning("transcript: %s", error)
        return LoadReport(
            self.entries, errors, dropped, self.read, dict(self.why), label=self.label
        )


def summary(kept: int, read: int, why: dict[str, int], unused: int = 0) -> str:
    """``kept 6 of 14 entries, dropped 8: 1 unreadable, 7 descending from dropped entries``."""
    reasons = ", ".join(f"{n} {reason}" for reason, n in why.items() if n)
    text = f"kept {kept} of {read} entries, dropped {sum(why.values())}: {reasons}"
    return f"{text}; {unused} not on the resumed branch" if unused else text


def _decode_slow(label: str, data: bytes) -> LoadReport:
    lines = data.split(b"\n")
    complete = data.endswith(b"\n")
    if complete:
        lines.pop()  # the empty string after the final newline
    check = _ChainCheck(label)
    last = len(lines)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = _decode_one(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            if number == last and not complete:
                why = "truncated line (no trailing newline: the writer died mid-line)"
            else:
                why = f"corrupt line ({exc})"
            check.unreadable(number, why)
            continue
        check.entry(number, entry)
    return check.report()


def check_entries(label: str, entries: list[TranscriptEntry]) -> LoadReport:
    """The chain check of :func:`decode_transcript` for entries a store loaded itself (a store
    without ``load_report``); "line" ``n`` is the ``n``-th entry."""
    if _chain_is_whole(entries):
        return LoadReport(entries, read=len(entries), label=label)
    check = _ChainCheck(label)
    for number, entry in enumerate(entries, start=1):
        check.entry(number, entry)
    return check.report()
