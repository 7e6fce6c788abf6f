"""The stdio transport for external MCP servers: a child process spoken to over its pipes.

:func:`open_stdio_process` does what the ``mcp`` package's ``stdio_client`` does to the process —
the server in a new session (its own process group), the safe default environment plus the
config's ``env``, and at the end stdin closed, then SIGTERM, then SIGKILL of the group, each step
bounded — and leaves the pipes to :class:`~agents.mcp._rpc.LineClient`. :func:`jsonrpc_line_streams`
is the line pump of the shipped test servers (``SessionMessage`` streams for the ``mcp``
package's server API, on Trio or asyncio through anyio): every request of one read handed on,
every answer queued in one step sent in one write. ``stdio_client`` hands its writer one
message at a time through a zero-buffer stream, and each write wakes the other side, which on a
busy machine takes the CPU before the next message is written: ten concurrent calls reached the
server over 20–50 ms.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from typing import Any, Protocol, TextIO

import anyio
import msgspec
import trio

from ..tools.containment import open_contained
from ._config import StdioServerConfig

__all__ = ["jsonrpc_line_streams", "open_stdio_process", "stop_process"]

#: Seconds the server has to exit once its stdin is closed, then after SIGTERM, then SIGKILL.
_EXIT_GRACE = 2.0
_READ_SIZE = 1 << 16
#: Messages parsed ahead of the reader (beyond this the pipe is not read: backpressure).
_READ_AHEAD = 64
#: Bytes a line may hold (the stdio client's limit for a server's line, the other way): a
#: longer one is handed on as a ValueError naming the limit, and the stream ends there.
MAX_LINE_BYTES = 256 << 20


@contextlib.asynccontextmanager
async def open_stdio_process(
    config: StdioServerConfig, errlog: TextIO | int
) -> AsyncIterator[trio.Process]:
    """Start the server (its pipes: ``stdin`` and ``stdout``, and ``stderr`` when ``errlog``
    is ``subprocess.PIPE``); stop the process when the block ends, however it ends (stdin
    closed, then SIGTERM, then SIGKILL of its group, bounded).

    It runs under the shells' keeper (:func:`~agents.tools.containment.open_contained`), which
    ends every process the server started when the server exits or is stopped: helpers that
    left its process group (``setsid``, a double fork) outlived the session."""
    from mcp.client.stdio import get_default_environment

    process = await open_contained(
        [config.command, *config.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env={**get_default_environment(), **config.env},
        cwd=config.cwd,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        yield process
    finally:
        with trio.CancelScope(shield=True):
            await stop_process(process)


class ByteReceiver(Protocol):
    """What the line pump reads: a Trio receive stream, or any object with its method."""

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray: ...


class ByteSender(Protocol):
    """What the line pump writes to: a Trio send stream, or any object with its method."""

    async def send_all(self, data: bytes | bytearray | memoryview) -> None: ...


#: A byte stream ended (on either backend: the pump runs on Trio and on asyncio, via anyio).
_STREAM_ERRORS = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    trio.ClosedResourceError,
    trio.BrokenResourceError,
    OSError,
)


@contextlib.asynccontextmanager
async def jsonrpc_line_streams(
    receive: ByteReceiver, send: ByteSender, *, max_line: int = MAX_LINE_BYTES
) -> AsyncIterator[tuple[Any, Any]]:
    """``(read, write)`` streams of ``SessionMessage`` over a byte stream pair speaking one
    JSON-RPC message a line, for a ``ClientSession`` or a server's ``run``: every complete line
    of a read is parsed (a parse error is handed on as the exception, as the ``mcp`` package's
    transports do) and queued for the reader — up to ``_READ_AHEAD`` messages — and everything
    written in one scheduling step goes out in one write. A line longer than ``max_line``
    bytes is handed on as a ValueError naming the limit, and the stream ends. Used by the
    shipped test servers (their stdin and stdout).

    The two ends are plain queues rather than anyio memory streams: a message queued is taken
    without a task switch (the reader of ten queued requests takes all ten in one go, so the
    server starts all ten before running any), and a response is encoded as it is handed over
    (a result, the hot case, by msgspec from the dict the server already dumped)."""
    reader = _LineReader()
    writer = _LineWriter()
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reader.pump, receive, max_line)
            tasks.start_soon(writer.pump, send, reader)
            try:
                yield reader, writer
            finally:
                tasks.cancel_scope.cancel()
    finally:
        reader.close()
        writer.close()


class _LineReader:
    """The read end: parsed messages (or parse errors) in arrival order, then end of stream."""

    def __init__(self) -> None:
        self._items: collections.deque[Any] = collections.deque()
        self._arrived = anyio.Event()
        self._taken = anyio.Event()
        self._ended = False

    async def pump(self, stream: ByteReceiver, max_line: int) -> None:
        """Each line read as a message (or the parse error, for the session); the pipe is not
        read while ``_READ_AHEAD`` messages wait (backpressure). A line split over reads is
        kept in a buffer that only grows, and is copied once, when its end comes (joining the
        buffer to each read, as before, copied a long line once a read: quadratic)."""
        from mcp.shared.message import SessionMessage
        from mcp.types import jsonrpc_message_adapter

        buffer = bytearray()
        try:
            while not self._ended:
                while len(self._items) >= _READ_AHEAD and not self._ended:
                    self._taken = anyio.Event()
                    await self._taken.wait()
                try:
                    chunk = await stream.receive_some(_READ_SIZE)
                except _STREAM_ERRORS:
                    return
                if not chunk:
                    return
                end = chunk.rfind(b"\n")
                if end < 0:
                    buffer += chunk
                    if len(buffer) > max_line:
                        self._items.append(_too_long(max_line))
                        return
                    continue
                buffer += memoryview(chunk)[:end]
                lines = buffer.split(b"\n")
                buffer = bytearray(memoryview(chunk)[end + 1 :])
                for line in lines:
                    if len(line) > max_line:
                        self._items.append(_too_long(max_line))
                        return
                    if not line.strip():
                        continue
                    item: Any
                    try:
                        item = SessionMessage(
                            jsonrpc_message_adapter.validate_json(line, by_name=False)
                        )
                    except ValueError as exc:
                        item = exc
                    self._items.append(item)
                self._arrived.set()
        finally:
            self.close()

    def close(self) -> None:
        """No more messages: the reader sees the end once it has taken those queued."""
        self._ended = True
        self._arrived.set()
        self._taken.set()

    async def peek(self) -> Any:
        """The next message without taking it (None at the end): how a server picks the
        protocol era from a client's first request."""
        while not self._items:
            if self._ended:
                return None
            self._arrived = anyio.Event()
            await self._arrived.wait()
        return self._items[0]

    async def receive(self) -> Any:
        while not self._items:
            if self._ended:
                await anyio.lowlevel.checkpoint()
                raise anyio.EndOfStream
            self._arrived = anyio.Event()
            await self._arrived.wait()
        item = self._items.popleft()  # no checkpoint: ten queued requests taken in one go
        if len(self._items) < _READ_AHEAD:
            self._taken.set()
        return item

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()

    async def __aenter__(self) -> _LineReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _too_long(max_line: int) -> ValueError:
    return ValueError(f"a line longer than {max_line} bytes (max_line): the stream ends here")


class _LineWriter:
    """The write end: each message encoded as it is sent, all those of a step in one write."""

    def __init__(self) -> None:
        self._lines: list[bytes] = []
        self._queued = anyio.Event()
        self._closed = False

    async def send(self, item: Any) -> None:
        if self._closed:
            await anyio.lowlevel.checkpoint()
            raise anyio.ClosedResourceError
        self._lines.append(_encode_message(item.message))
        self._queued.set()

    async def pump(self, stream: ByteSender, reader: _LineReader) -> None:
        while True:
            await self._queued.wait()
            self._queued = anyio.Event()
            await anyio.lowlevel.checkpoint()  # the other tasks of this step queue theirs
            data, self._lines = b"".join(self._lines), []
            if not data:
                if self._closed:
                    return
                continue
            try:
                await stream.send_all(data)
            except _STREAM_ERRORS:
                self._closed = True
                reader.close()  # the reading side sees the connection end, nothing hangs
                return

    def close(self) -> None:
        self._closed = True
        self._queued.set()

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()

    async def __aenter__(self) -> _LineWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


_encode_json = msgspec.json.Encoder().encode


def _encode_message(message: Any) -> bytes:
    """One message's line. A result (the hot case) from its fields — the server dumped the
    result to JSON types already — by msgspec; anything else, or a result msgspec cannot
    encode, as the ``mcp`` package's transports write it."""
    from mcp.types import JSONRPCResponse

    if type(message) is JSONRPCResponse:
        fields = {"jsonrpc": "2.0", "id": message.id, "result": message.result}
        try:
            return _encode_json(fields) + b"\n"
        except TypeError:
            pass
    line: str = message.model_dump_json(by_alias=True, exclude_unset=True)
    return line.encode() + b"\n"


async def stop_process(process: trio.Process) -> None:
    """Close stdin, wait; SIGTERM the group, wait; SIGKILL the group, wait: each bounded. Best
    called while something still reads the server's stdout (a server blocked writing to a full
    pipe would not see its stdin close); a second call returns at once."""
    if process.stdin is not None:
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError, OSError):
            await process.stdin.aclose()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        with trio.move_on_after(_EXIT_GRACE):
            await process.wait()
        if process.returncode is not None:
            break
    if process.stdout is not None:
        with contextlib.suppress(trio.ClosedResourceError, OSError):
            await process.stdout.aclose()
