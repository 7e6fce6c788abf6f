"""MCP servers for tests: a real one (stdio or streamable HTTP) and ones that misbehave on purpose.

The well-behaved server is built with the official ``mcp`` package's server API (its low-level
``Server``, with the tool list built once and no per-message tracing span, so that a call costs
little CPU in the server) and offers a few tools a test can lean on::

    echo{text}            read-only   returns text
    add{a, b}             mutating    returns a + b
    sleep{seconds}        read-only   sleeps, then returns "slept <seconds>"
    sleep_sync{seconds}   read-only   the same in a plain (sync) function
    big{chars}            read-only   returns that many characters
    fail{message}         mutating    raises (an error result)
    pid{}                 read-only   the server process's pid

Run it as a process, the way a user's configuration would::

    config = stdio_server_config()          # {"type": "stdio", "command": ..., "args": [...]}
    async with open_http_server() as config:  # {"type": "http", "url": "http://127.0.0.1:…/mcp"}
        options = AgentOptions(mcp_servers={"demo": config})

Misbehaving servers (stdio only, plain JSON-RPC without the SDK so they can break the rules):
``stdio_server_config(behaviour="bad-json")`` answers every request with a line that is not JSON;
``"exit-after-initialize"`` answers the handshake and exits when the next request comes;
``"hang-on-initialize"`` reads requests and never answers; ``"dynamic"`` changes its tool list
and says so with ``notifications/tools/list_changed`` (``grow{text}`` adds a tool named
``text``, ``retitle{text}`` redescribes ``grow``, ``spam`` announces ten changes that are none).
The real server's ``sleep`` tool is the tool that hangs (give it a long time).

Over stdio the server reads and writes its pipes without blocking (``stdio_transport="fast"``,
on anyio's asyncio backend, uvloop's loop when installed): every request of a read is
dispatched at once, each in its own task (a plain function in a worker thread), and the answers
queued meanwhile leave in one write; ``stdio_transport="mcp"`` uses the ``mcp`` package's own
``stdio_server`` instead (worker threads, one message per write).

Command line: ``python -m agents.testing._mcp_serve [stdio|http|sse] [--behaviour B] [--name N]
[--stdio-transport fast|mcp]``;
``http``/``sse`` print ``PORT <n>`` on stdout once they listen on 127.0.0.1.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

__all__ = ["BEHAVIOURS", "open_http_server", "stdio_server_config"]

#: The ways the stdio server can behave.
BEHAVIOURS = ("ok", "bad-json", "exit-after-initialize", "hang-on-initialize", "dynamic")

_MODULE = "agents.testing._mcp_serve"


def stdio_server_config(
    behaviour: str = "ok",
    name: str = "test",
    env: dict[str, str] | None = None,
    stdio_transport: str = "fast",
) -> dict[str, Any]:
    """An ``mcp_servers`` entry that starts this module's stdio server as a subprocess.

    ``stdio_transport``: ``"fast"`` (non-blocking pipes, every queued answer in one write) or
    ``"mcp"`` (the ``mcp`` package's ``stdio_server``, worker threads and a message a write:
    the benchmark's control)."""
    if behaviour not in BEHAVIOURS:
        raise ValueError(
            f"unknown behaviour {behaviour!r} (expected one of {', '.join(BEHAVIOURS)})"
        )
    if stdio_transport not in ("fast", "mcp"):
        raise ValueError(f"stdio_transport must be 'fast' or 'mcp', got {stdio_transport!r}")
    args = ["-m", _MODULE, "stdio", "--behaviour", behaviour, "--name", name]
    if stdio_transport != "fast":
        args += ["--stdio-transport", stdio_transport]
    config: dict[str, Any] = {"type": "stdio", "command": sys.executable, "args": args}
    if env:
        config["env"] = dict(env)
    return config


@asynccontextmanager
async def open_http_server(
    transport: str = "http", name: str = "test", headers: dict[str, str] | None = None
) -> AsyncIterator[dict[str, Any]]:
    """Start the server over streamable HTTP (or ``"sse"``; ``"http-json"``: streamable HTTP
    answering each request with a JSON response) on 127.0.0.1; yield its config.

    The server runs in a child process that is killed when the block ends, however it ends.
    """
    if transport not in ("http", "http-json", "sse"):
        raise ValueError(f"transport must be 'http', 'http-json' or 'sse', got {transport!r}")
    command = [sys.executable, "-m", _MODULE, transport, "--name", name]
    try:
        async with _open_server_process(command) as process:
            port = await _read_port(process)
            kind = "sse" if transport == "sse" else "http"
            path = "/mcp" if kind == "http" else "/sse"
            config: dict[str, Any] = {"type": kind, "url": f"http://127.0.0.1:{port}{path}"}
            if headers:
                config["headers"] = dict(headers)
            yield config
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise


@asynccontextmanager
async def _open_server_process(command: list[str]) -> AsyncIterator[trio.Process]:
    async with trio.open_nursery() as nursery:
        run = functools.partial(
            trio.run_process,
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            check=False,
        )
        process: trio.Process = await nursery.start(run)
        try:
            yield process
        finally:
            process.kill()
            nursery.cancel_scope.cancel()


async def _read_port(process: trio.Process) -> int:
    """The port the child prints once it listens (60 s: the mcp package is slow to import)."""
    assert process.stdout is not None
    buffer = b""
    with trio.fail_after(60):
        while b"\n" not in buffer:
            chunk = await process.stdout.receive_some()
            if not chunk:
                raise RuntimeError(
                    f"test MCP server exited before listening (code {process.poll()})"
                )
            buffer += chunk
    line = buffer.split(b"\n", 1)[0].decode()
    if not line.startswith("PORT "):
        raise RuntimeError(f"test MCP server printed {line!r} instead of its port")
    return int(line.split()[1])
