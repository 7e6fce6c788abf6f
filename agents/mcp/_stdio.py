"""The stdio transport for external MCP servers: a child process spoken to over its pipes.

:func:`open_stdio_process` does what the ``mcp`` package's ``stdio_client`` does to the process —
the server in a new session (its own process group), the safe default environment plus the
config's ``env``, and at the end stdin closed, then SIGTERM, then SIGKILL of the group, each step
bounded — and leaves the pipes to :class:`~agents.mcp._rpc.LineClient`. :func:`jsonrpc_line_streams`
is the line pump of the shipped test servers (``SessionMessage`` streams for the ``mcp``
package's server API): every request of one read handed on, every answer queued in one step sent
in one write. ``stdio_client`` hands its writer one message at a time through a zero-buffer
stream, and each write wakes the other side, which on a busy machine takes the CPU before the
next message is written: ten concurrent calls reached the server over 20–50 ms.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from typing import Any, TextIO

import trio

from ._config import StdioServerConfig

__all__ = ["jsonrpc_line_streams", "open_stdio_process", "stop_process"]

#: Seconds the server has to exit once its stdin is closed, then after SIGTERM, then SIGKILL.
_EXIT_GRACE = 2.0
_READ_SIZE = 1 << 16
#: Messages parsed ahead of the reader (beyond this the pipe is not read: backpressure).
_READ_AHEAD = 64


@contextlib.asynccontextmanager
async def open_stdio_process(
    config: StdioServerConfig, errlog: TextIO
) -> AsyncIterator[trio.Process]:
    """Start the server (its pipes: ``stdin`` and ``stdout``); stop the process when the block
    ends, however it ends (stdin closed, then SIGTERM, then SIGKILL of its group, bounded)."""
    from mcp.client.stdio import get_default_environment

    process = await trio.lowlevel.open_process(
        [config.command, *config.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env={**get_default_environment(), **config.env},
        cwd=config.cwd,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        yield process
    finally:
        with trio.CancelScope(shield=True):
            await stop_process(process)


@contextlib.asynccontextmanager
async def jsonrpc_line_streams(
    receive: trio.abc.ReceiveStream, send: trio.abc.SendStream
) -> AsyncIterator[tuple[Any, Any]]:
    """``(read, write)`` streams of ``SessionMessage`` over a byte stream pair speaking one
    JSON-RPC message a line, for a ``ClientSession`` or a server's ``run``: every complete line
    of a read is parsed (a parse error is handed on as the exception, as the ``mcp`` package's
    transports do) and queued for the reader — up to ``_READ_AHEAD`` messages, so the ten
    requests of a fan-out cost one hand-over, not ten task switches — and everything queued to
    write goes out in one write. Used by the shipped test servers (their stdin and stdout)."""
    import anyio

    read_send, read_receive = anyio.create_memory_object_stream[Any](_READ_AHEAD)
    write_send, write_receive = anyio.create_memory_object_stream[Any](math.inf)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_read, receive, read_send)
            nursery.start_soon(_write, send, write_receive, read_send)
            try:
                yield read_receive, write_send
            finally:
                nursery.cancel_scope.cancel()
    finally:
        for stream in (read_send, read_receive, write_send, write_receive):
            stream.close()


async def _read(stream: trio.abc.ReceiveStream, into: Any) -> None:
    """Each line read as a message (or the parse error, for the session)."""
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    buffer = b""
    with into:
        while True:
            try:
                chunk = await stream.receive_some(_READ_SIZE)
            except (trio.ClosedResourceError, trio.BrokenResourceError, OSError):
                return
            if not chunk:
                return
            lines = (buffer + chunk).split(b"\n")
            buffer = lines.pop()
            for line in lines:
                if not line.strip():
                    continue
                item: Any
                try:
                    message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                    item = SessionMessage(message)
                except ValueError as exc:
                    item = exc
                try:
                    await into.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return


async def _write(stream: trio.abc.SendStream, source: Any, read_send: Any) -> None:
    """Everything queued, in one write: the messages of one step go out together."""
    import anyio

    with source:
        async for first in source:
            batch = [first]
            await trio.lowlevel.checkpoint()  # the other tasks of this step queue theirs
            while True:
                try:
                    batch.append(source.receive_nowait())
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
            data = b"".join(
                m.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                for m in batch
            )
            try:
                await stream.send_all(data)
            except (trio.ClosedResourceError, trio.BrokenResourceError, OSError):
                read_send.close()  # the reader's side sees the connection end, nothing hangs
                return


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
