"""``FileSessionStore``: the default store, JSON-lines files in a data directory.

Layout under ``root`` (default ``$TRIO_AGENTS_DATA_DIR/projects``, else
``~/.trio-agents/projects``)::

    <project_key>/<session_id>.jsonl                                main transcript
    <project_key>/<session_id>/subagents/agent-<id>.jsonl           one per subagent

Durability: every append is written with a single ``os.write`` of its whole lines (one per entry)
on an ``O_APPEND`` descriptor kept open per key, so it reaches the kernel before ``append``
returns and a process killed at any point (SIGKILL included) loses at most the lines being
written (a line cut short is reported on load). The write is done synchronously on the Trio
thread on purpose: a transcript line is small, one ``write(2)`` into the page cache costs
microseconds, and a thread hop would cost more than the write and would let two appends of the
same key interleave. Loading a large file (reading and decoding megabytes) and walking
directories go through ``trio.to_thread.run_sync``. Power loss is out of scope (no fsync).

When a descriptor is opened on a file whose last byte is not a newline (the previous writer died
mid-line), a newline is written first so the partial line stays a line of its own: it is reported
by ``load`` and the new entries are kept. For the same reason a write that fails (a full disk)
closes its key's descriptor: the next append reopens the file and so starts a new line.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

import attrs
import msgspec
import trio

from agents._regular import READ_FLAGS, NotRegularFile, open_regular
from agents.sessions.chunked import encode_in_pieces_into
from agents.sessions.entry import (
    LoadReport,
    TranscriptEntry,
    decode_entry,
    decode_transcript,
    depth_as_decode_error,
    encode_lines,
    is_large,
)
from agents.sessions.store import (
    SessionInfo,
    SessionKey,
    default_projects_dir,
    prompt_text,
    summarize_prompt,
)

__all__ = ["FileSessionStore"]

_SUFFIX = ".jsonl"
_INLINE_LOAD_BYTES = 64 * 1024  # below this, reading on the Trio thread beats a thread hop
_HEAD_BYTES = 256 * 1024  # how much of a file list_sessions reads to find the first prompt
#: without waiting (``O_NONBLOCK``): no effect on a regular file, and what is not one is refused
_OPEN_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _to_root(root: str | os.PathLike[str] | None) -> Path:
    return default_projects_dir() if root is None else Path(root).expanduser()


def _check_component(what: str, value: str) -> None:
    if not value or value in (".", "..") or "/" in value or "\\" in value or "\x00" in value:
        raise ValueError(f"{what} must be a single non-empty path component, got {value!r}")


@functools.lru_cache(maxsize=1024)
def _file_path(root: str, key: SessionKey) -> str:
    """Where ``key`` lives under ``root``; a pure function of both, so cached."""
    _check_component("project_key", key.project_key)
    _check_component("session_id", key.session_id)
    base = os.path.join(root, key.project_key)
    if key.subpath is None:
        return os.path.join(base, key.session_id + _SUFFIX)
    parts = key.subpath.split("/")
    for part in parts:
        _check_component("subpath component", part)
    return os.path.join(base, key.session_id, *parts[:-1], parts[-1] + _SUFFIX)


def _default_max_open_files() -> int:
    """How many transcript descriptors a store keeps open by default: a quarter of the process's
    descriptor limit (the rest is for tools, sockets and subprocesses), between 64 and 4096.

    Every live agent appends to its own transcript, so a tree of thousands of subagents needs
    that many descriptors open at once: a cache smaller than the live set would close and reopen
    files on nearly every append.
    """
    try:
        import resource
    except ImportError:  # not POSIX
        return 64
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(64, min(4096, soft // 4))


class _Stamp(msgspec.Struct):
    timestamp: float


_stamp_decoder = msgspec.json.Decoder(_Stamp)


@attrs.define(eq=False)
class FileSessionStore:
    """Transcripts as append-only JSON-lines files; see the module docstring.

    Open descriptors are cached per key (at most ``max_open_files``, by default a quarter of the
    process's descriptor limit, between 64 and 4096; least recently used closed first); close
    one with ``release(key)`` when its agent ends, all with ``aclose()`` or ``async with``::

        async with FileSessionStore() as store:
            await store.append(key, [entry])
            entries = await store.load(key)
    """

    root: Path = attrs.field(default=None, converter=_to_root)
    max_open_files: int = attrs.field(factory=_default_max_open_files)
    _fds: OrderedDict[SessionKey, int] = attrs.field(init=False, factory=OrderedDict)

    def __attrs_post_init__(self) -> None:
        if self.max_open_files < 1:
            raise ValueError(f"max_open_files must be >= 1, got {self.max_open_files}")

    # -- paths -----------------------------------------------------------------------------

    def path_for(self, key: SessionKey) -> Path:
        """The file holding ``key``'s transcript (it may not exist)."""
        return Path(self._path(key))

    def _path(self, key: SessionKey) -> str:
        # strings, not pathlib, and cached: this runs whenever a descriptor is (re)opened
        return _file_path(os.fspath(self.root), key)

    # -- writing ---------------------------------------------------------------------------

    async def append(self, key: SessionKey, entries: Sequence[TranscriptEntry]) -> None:
        """Write each entry as one line, all in one ``os.write`` (see the module docstring).

        Entries that may encode to more than ``LARGE_APPEND_BYTES`` (a huge tool result, a
        history snapshot, a fork's copy) are encoded and written in a worker thread, through a
        descriptor of their own, so the event loop keeps running meanwhile."""
        if is_large(entries):
            path = self._path(key)
            try:
                await trio.to_thread.run_sync(_append_blocking, path, list(entries))
            except BaseException:
                self._close_keys([key])  # see ``append_nowait``
                raise
            return
        self.append_nowait(key, entries)
        await trio.lowlevel.checkpoint()

    def append_nowait(self, key: SessionKey, entries: Sequence[TranscriptEntry]) -> None:
        """``append`` without the checkpoint: what the agent loop uses per message, since a
        scheduling round trip costs more than the write itself.

        A write that fails (a full disk, a file-size limit) may have written part of a line:
        the key's descriptor is closed then, so the next append reopens the file and starts a
        line of its own (see ``_open``) instead of continuing that part, which would make the
        next entry, and every entry after it, unreadable."""
        if entries:
            data = encode_lines(entries)
            fd = self._fd(key)
            try:
                _write_all(fd, data)
            except BaseException:
                self._close_keys([key])
                raise

    def _fd(self, key: SessionKey) -> int:
        fd = self._fds.get(key)
        if fd is not None:
            self._fds.move_to_end(key)
            return fd
        fd = _open(self._path(key))
        self._fds[key] = fd
        while len(self._fds) > self.max_open_files:
            _, old = self._fds.popitem(last=False)
            os.close(old)
        return fd

    def _close_keys(self, keys: list[SessionKey]) -> None:
        for key in keys:
            fd = self._fds.pop(key, None)
            if fd is not None:
                os.close(fd)

    def release(self, key: SessionKey) -> None:
        """Close ``key``'s descriptor, if open: its agent has ended and will append no more
        (a later append reopens it). Keeps the cache for the transcripts still being written."""
        self._close_keys([key])

    def close(self) -> None:
        """Close every cached descriptor; the store stays usable (they reopen on demand)."""
        self._close_keys(list(self._fds))

    async def aclose(self) -> None:
        """Close every cached descriptor (``close()`` as a checkpoint)."""
        self.close()
        await trio.lowlevel.checkpoint()

    async def __aenter__(self) -> FileSessionStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- reading ---------------------------------------------------------------------------

    async def load(self, key: SessionKey) -> list[TranscriptEntry] | None:
        """Every usable entry in order, or ``None`` if the session does not exist (see
        ``load_report`` for the lines that were skipped)."""
        report = await self.load_report(key)
        return None if report is None else report.entries

    async def load_report(self, key: SessionKey) -> LoadReport | None:
        """The entries plus one error per corrupt or truncated line, naming file and line."""
        path = self._path(key)
        try:
            fd = _open_regular(path, READ_FLAGS, "read")
        except FileNotFoundError:
            await trio.lowlevel.checkpoint()
            return None
        with os.fdopen(fd, "rb") as f:
            if os.fstat(fd).st_size < _INLINE_LOAD_BYTES:
                report = decode_transcript(path, f.read())
                await trio.lowlevel.checkpoint()
            else:
                report = await trio.to_thread.run_sync(_load_file, path, f)
        return report

    async def list_subkeys(self, key: SessionKey) -> list[str]:
        """Sorted subpaths (``subagents/agent-<id>``) stored under the key's session."""
        base = self.path_for(key.main()).with_suffix("")
        return await trio.to_thread.run_sync(_subkeys, base)

    async def list_sessions(self, project_key: str) -> list[SessionInfo]:
        """The project's sessions, newest activity first."""
        _check_component("project_key", project_key)
        return await trio.to_thread.run_sync(_list_sessions, self.root / project_key)

    async def delete(self, key: SessionKey) -> None:
        """Remove a transcript; a main key takes its subagent transcripts with it."""
        path = self.path_for(key)
        if key.subpath is None:
            self._close_keys(
                [
                    k
                    for k in self._fds
                    if (k.project_key, k.session_id) == (key.project_key, key.session_id)
                ]
            )
            await trio.to_thread.run_sync(_delete_session, path)
        else:
            self._close_keys([key])
            path.unlink(missing_ok=True)
            await trio.lowlevel.checkpoint()


def _open_regular(path: str, flags: int, verb: str) -> int:
    """``path`` opened with ``flags`` if it is a regular file (``agents._regular``); else an
    ``OSError`` naming the transcript and what it is, with nothing left open.

    A transcript is a file the store wrote, but its directory is the user's: a named pipe there
    would hold the event loop in ``open`` or ``write`` until some process came to the other
    end, and a device never ends (``/dev/zero``) or swallows everything (``/dev/null``)."""
    try:
        return open_regular(path, flags)[0]
    except NotRegularFile as exc:
        message = f"cannot {verb} transcript {path}: not a regular file ({exc.kind})"
        raise OSError(message) from None


def _open(path: str) -> int:
    """An append descriptor on ``path`` (directories made as needed), whose file ends with a
    newline: a line cut short by a dead writer is terminated first, so it stays a line of its
    own (reported on load) and the new entries are kept."""
    try:
        fd = _open_regular(path, _OPEN_FLAGS, "write")
    except FileNotFoundError:  # a new project, session or subagents directory
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = _open_regular(path, _OPEN_FLAGS, "write")
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            _write_all(fd, b"\n")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _append_blocking(path: str, entries: list[TranscriptEntry]) -> None:
    """Encode and append ``entries`` in one write on a descriptor of its own (in a thread; a huge
    entry by pieces, so the thread does not hold the interpreter for the whole encoding)."""
    buf = bytearray()
    for entry in entries:
        encode_in_pieces_into(entry, buf)
    fd = _open(path)
    try:
        _write_all(fd, buf)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes | bytearray) -> None:
    written = os.write(fd, data)
    if written == len(data):  # the usual case: a regular file takes the whole write
        return
    view = memoryview(data)[written:]
    while view:
        view = view[os.write(fd, view) :]


def _load_file(path: str, f: BinaryIO) -> LoadReport:
    return decode_transcript(path, f.read())


def _subkeys(base: Path) -> list[str]:
    if not base.is_dir():
        return []
    return sorted(
        p.relative_to(base).as_posix()[: -len(_SUFFIX)]
        for p in base.rglob("*" + _SUFFIX)
        if p.is_file()
    )


def _delete_session(path: Path) -> None:
    path.unlink(missing_ok=True)
    shutil.rmtree(path.with_suffix(""), ignore_errors=True)


def _list_sessions(project_dir: Path) -> list[SessionInfo]:
    try:
        files = [e for e in os.scandir(project_dir) if e.name.endswith(_SUFFIX) and e.is_file()]
    except FileNotFoundError:
        return []
    infos = []
    for entry in files:
        try:
            infos.append(_file_info(entry.name[: -len(_SUFFIX)], Path(entry.path)))
        except OSError:
            continue  # deleted while listing
    infos.sort(key=lambda info: info.mtime, reverse=True)
    return infos


def _file_info(session_id: str, path: Path) -> SessionInfo:
    """Read the head (first prompt, creation time) and the tail (last activity) of a transcript."""
    with path.open("rb") as f:
        stat = os.fstat(f.fileno())
        head = f.read(_HEAD_BYTES)
        first_prompt = None
        created = None
        lines = head.split(b"\n")
        for line in lines[:-1] if len(head) == _HEAD_BYTES else lines:
            if not line.strip():
                continue
            try:
                entry = decode_entry(line)
            except (msgspec.DecodeError, msgspec.ValidationError):
                break
            if created is None:
                created = entry.timestamp
            first_prompt = prompt_text(entry)
            if first_prompt is not None:
                break
        last = _last_timestamp(f, stat.st_size)
    return SessionInfo(
        session_id=session_id,
        mtime=last if last is not None else stat.st_mtime,
        first_prompt=first_prompt,
        summary=summarize_prompt(first_prompt),
        created=created,
    )


def _last_timestamp(f: BinaryIO, size: int) -> float | None:
    """The timestamp of the last decodable line, its lines walked from the end.

    A line of up to 1 MiB is decoded whole (one that cannot be is passed over). A longer one (a
    huge tool result) gives its timestamp from its head, where this store's entries write it
    (after the ids), unchecked beyond it: a 64 MB last line was read in growing chunks, 133 MB
    in all, and decoded whole, holding the interpreter about 94 ms even in a worker thread.
    Only a long line without its timestamp there is decoded whole."""
    end = size
    if end > 0:
        f.seek(end - 1)
        if f.read(1) == b"\n":  # (the newline that ends the last line: no block read for it)
            end -= 1
    while end > 0:
        newline = _previous_newline(f, end)
        start = newline + 1
        if end - start > _WHOLE_LINE:
            f.seek(start)
            head = _HEAD_STAMP.match(f.read(_STAMP_HEAD))
            if head is not None:
                return float(head.group(1))
        if end > start:
            f.seek(start)
            line = f.read(end - start)
            if line.strip():
                try:
                    with depth_as_decode_error():
                        return _stamp_decoder.decode(line).timestamp
                except (msgspec.DecodeError, msgspec.ValidationError):
                    pass
        end = newline
    return None


#: Lines up to this size are decoded whole for their timestamp (about a millisecond)
_WHOLE_LINE = 1 << 20
#: How much of a longer line's head is read for it
_STAMP_HEAD = 4096
#: An entry's head as this store writes it: its ids, then its timestamp (no nested object yet)
_HEAD_STAMP = re.compile(
    rb'\{(?:"(?:uuid|parentUuid|sessionId)":(?:"[^"\\]*+"|null),)*+'
    rb'"timestamp":(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)[,}]'
)
#: How far back one read looks for the start of a line
_TAIL_BLOCK = 1 << 20


def _previous_newline(f: BinaryIO, end: int) -> int:
    """The position of the last newline before ``end``, or -1: read backwards by blocks."""
    while end > 0:
        start = max(0, end - _TAIL_BLOCK)
        f.seek(start)
        found = f.read(end - start).rfind(b"\n")
        if found >= 0:
            return start + found
        end = start
    return -1
