"""``InMemorySessionStore``: the ``SessionStore`` semantics without a disk, for tests and embedding.

It keeps each transcript as the encoded JSON-lines bytes the file store would write, not as live
objects, so it is a faithful model of persistence: what comes back from ``load`` went through the
same encoder and decoder, shares nothing with what was appended, and is subject to the same
rules (``append_raw`` lets a test plant a corrupt or truncated line). Each transcript is one
``bytearray`` that entries are encoded onto the end of, in place: no copy of a line, and no
object per line (a ``bytearray`` grows by a fraction of its size, so appends cost amortized
constant time; nor does the cycle collector track it, where a list of lines is one more object
for it per agent of a tree).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import trio

from agents.sessions.entry import (
    LoadReport,
    TranscriptEntry,
    decode_transcript,
    encode_entry_into,
    encode_line_into,
    is_large,
)
from agents.sessions.store import SessionInfo, SessionKey, session_info

__all__ = ["InMemorySessionStore"]

_INLINE_DECODE_BYTES = 64 * 1024

#: ``encode_line`` without its newline, bound once (see ``append_nowait``)
encode_into = encode_line_into


def _encode(entries: list[TranscriptEntry]) -> bytearray:
    buf = bytearray()
    for entry in entries:
        encode_entry_into(entry, buf)
    return buf


def _label(key: SessionKey) -> str:
    tail = f"/{key.subpath}" if key.subpath else ""
    return f"memory:{key.project_key}/{key.session_id}{tail}.jsonl"


@attrs.define(eq=False)
class InMemorySessionStore:
    """Transcripts held in memory as encoded bytes; same semantics as ``FileSessionStore``::

    store = InMemorySessionStore()
    await store.append(key, [entry])
    assert await store.load(key) == [entry]
    """

    #: each transcript's bytes (its lines, and what ``append_raw`` added)
    _data: dict[SessionKey, bytearray] = attrs.field(init=False, factory=dict)

    async def append(self, key: SessionKey, entries: Sequence[TranscriptEntry]) -> None:
        """Encode and append each entry as one line (large appends encode in a worker thread, as
        in the file store)."""
        if is_large(entries):
            encoded = await trio.to_thread.run_sync(_encode, list(entries))
            self._buffer(key).extend(encoded)
            return
        self.append_nowait(key, entries)
        await trio.lowlevel.checkpoint()

    def append_nowait(self, key: SessionKey, entries: Sequence[TranscriptEntry]) -> None:
        """``append`` without the checkpoint (see ``FileSessionStore.append_nowait``)."""
        if entries:
            data = self._data
            buf = data.get(key)
            if buf is None:  # not ``setdefault``: that makes a buffer per append
                buf = data[key] = bytearray()
            start = len(buf)
            try:
                for entry in entries:
                    # ``encode_line`` inlined, onto the end (offset -1) of the transcript's bytes
                    encode_into(entry, buf, -1)
                    buf += b"\n"
            except BaseException:
                # an entry that cannot be encoded: nothing of the append is kept (as the file
                # store, which encodes all the lines before writing), not half a line
                del buf[start:]
                raise

    def _buffer(self, key: SessionKey) -> bytearray:
        buf = self._data.get(key)
        if buf is None:
            buf = self._data[key] = bytearray()
        return buf

    def release(self, key: SessionKey) -> None:
        """Nothing is held per transcript (``FileSessionStore.release`` closes a descriptor):
        present so a transcript's end finds the method instead of an ``AttributeError``."""

    def append_raw(self, key: SessionKey, data: bytes) -> None:
        """Append raw bytes to a transcript, e.g. a truncated line, to exercise load reports."""
        self._buffer(key).extend(data)

    def raw(self, key: SessionKey) -> bytes | None:
        """The stored bytes of a transcript (what the file store would have on disk)."""
        buf = self._data.get(key)
        return None if buf is None else bytes(buf)

    async def load(self, key: SessionKey) -> list[TranscriptEntry] | None:
        """Every usable entry in order, or ``None`` if the session does not exist."""
        report = await self.load_report(key)
        return None if report is None else report.entries

    async def load_report(self, key: SessionKey) -> LoadReport | None:
        """The entries plus one error per line that could not be used, then a summary."""
        data = self.raw(key)
        if data is None or len(data) < _INLINE_DECODE_BYTES:
            await trio.lowlevel.checkpoint()
            return None if data is None else decode_transcript(_label(key), data)
        # decoding megabytes would stall the event loop, as reading a big file would
        return await trio.to_thread.run_sync(decode_transcript, _label(key), data)

    async def list_subkeys(self, key: SessionKey) -> list[str]:
        """Sorted subpaths stored under the key's session."""
        await trio.lowlevel.checkpoint()
        return sorted(
            k.subpath
            for k in self._data
            if k.subpath is not None
            and (k.project_key, k.session_id) == (key.project_key, key.session_id)
        )

    async def list_sessions(self, project_key: str) -> list[SessionInfo]:
        """The project's sessions, newest activity first."""
        await trio.lowlevel.checkpoint()
        infos = [
            session_info(k.session_id, decode_transcript(_label(k), bytes(v)).entries)
            for k, v in self._data.items()
            if k.project_key == project_key and k.subpath is None
        ]
        infos.sort(key=lambda info: info.mtime, reverse=True)
        return infos

    async def delete(self, key: SessionKey) -> None:
        """Remove a transcript; a main key takes its subagent transcripts with it."""
        await trio.lowlevel.checkpoint()
        if key.subpath is not None:
            self._data.pop(key, None)
            return
        for k in [
            k
            for k in self._data
            if (k.project_key, k.session_id) == (key.project_key, key.session_id)
        ]:
            del self._data[k]

    async def aclose(self) -> None:
        """Nothing to release; present so code can close any store the same way."""
        await trio.lowlevel.checkpoint()
