"""One external MCP server's connection: its transport, its ``ClientSession``, its status.

A :class:`Connection` is driven by one task (:meth:`Connection.run`) in the owning manager's
nursery. That task opens the transport (a child process for stdio, an HTTP client otherwise),
performs the handshake and the tool listing under the connect timeout, then waits until the
server goes away or the manager stops it. Tool calls come from other tasks (the agents' tool
calls) and share the connection's :class:`McpClient`: over stdio our lean JSON-RPC client
(:mod:`agents.mcp._rpc`, the hot path of a fan-out), over HTTP and SSE the ``mcp`` package's
``ClientSession``; either correlates concurrent requests.

Status moves ``pending → connected | failed``; ``connected → failed`` when the server closes the
connection (process exit, bad stream); ``disabled`` when the manager switched it off. The error
text always names the server, so a tool result or an init message says which one broke.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import trio

from ..tools.base import ToolOutput
from ..tools.bodies import tls_context
from ._config import HttpServerConfig, ServerConfig, StdioServerConfig
from ._http import MAX_HTTP_MESSAGE_BYTES, cap_json_body, http_clients
from ._rpc import ConnectionLost, LineClient, RpcError, Tracer, decode_call_result, validated

if TYPE_CHECKING:
    from mcp.client.session import ClientSession
    from mcp.types import ListToolsResult
    from mcp.types import Tool as McpTool

__all__ = ["Connection", "ConnectionLost", "McpClient", "RpcError", "describe_error"]

#: The benchmark's ``--trace`` sets this: every stdio connection made after reports to it.
TRACER: Tracer | None = None


class McpClient(Protocol):
    """What a connection offers its callers, whatever the transport."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """The tool's result as content blocks; :class:`RpcError` when the server answered
        with an error, :class:`ConnectionLost` when the connection ended first."""
        ...

    async def list_page(self, cursor: str | None) -> ListToolsResult: ...


log = logging.getLogger(__name__)

#: Characters of a stdio server's stderr quoted in its error (the end, where the reason is).
_STDERR_TAIL = 600
_STDERR_LINES = 5
#: Bytes of the end of a stdio server's stderr read for that quote, and the most read when
#: what ends it is blank (the window doubles up to it): also what :class:`StderrTail` keeps
#: of the stream, which a server may fill with gigabytes.
_STDERR_WINDOW = 64 * 1024
_STDERR_WINDOW_MAX = 1 << 20
#: Bytes of a stdio server's stderr read at once, and the seconds between two reads.
_STDERR_READ = 1 << 16
_STDERR_PACE = 0.01


@attrs.define(eq=False)
class Connection:
    """The state of one server; written only by its own task and the manager that owns it."""

    name: str
    config: ServerConfig
    status: str = "pending"
    error: str | None = None
    client: McpClient | None = None
    listed: list[McpTool] = attrs.Factory(list)
    server_info: dict[str, str] | None = None
    #: set when the status leaves ``pending`` (connected or failed)
    settled: trio.Event = attrs.Factory(trio.Event)
    #: set when the task has ended and the transport is closed (the process reaped)
    done: trio.Event = attrs.Factory(trio.Event)
    #: set when the status becomes ``failed``
    lost: trio.Event = attrs.Factory(trio.Event)
    #: called with the server's name after a ``tools/list_changed`` re-listing changed ``listed``
    on_tools_changed: Callable[[str], None] | None = None
    #: set when the server announced a changed tool list that is not re-listed yet
    relist_pending: bool = False
    _relist: trio.Event = attrs.Factory(trio.Event)
    _relisted: trio.Event = attrs.Factory(trio.Event)
    _list_timeout: float = 30.0
    _scope: trio.CancelScope | None = None
    _stopping: bool = False
    _stderr: StderrTail | None = None
    _last_transport_error: str | None = None

    def stop(self) -> None:
        """Ask the task to close the connection (it does so shielded, within bounded waits)."""
        self._stopping = True
        if self._scope is not None:
            self._scope.cancel(reason=f"MCP server {self.name!r} stopped")

    async def run(self, connect_timeout: float) -> None:
        """Connect, list the tools, then hold the connection until it ends or is stopped."""
        stdio = isinstance(self.config, StdioServerConfig)
        with trio.CancelScope() as scope, _closing(StderrTail() if stdio else None) as stderr:
            self._scope = scope
            self._stderr = stderr
            if self._stopping:
                scope.cancel()
            try:
                await import_apart(STDIO_MODULES if stdio else HTTP_MODULES)
                await self._connect_and_serve(connect_timeout)
            except Exception as exc:
                when = "while connecting" if self.status == "pending" else "mid-session"
                self._fail(
                    f"MCP server {self.name!r} failed {when}: {describe_error(exc)}"
                    f"{self._stderr_tail()}"
                )
            finally:
                self.client = None
                if self.status == "pending":
                    self._fail(f"MCP server {self.name!r} was stopped before it connected")
                self.done.set()

    async def _connect_and_serve(self, connect_timeout: float) -> None:
        if isinstance(self.config, StdioServerConfig):
            await self._serve_stdio(self.config, connect_timeout)
            return
        from mcp.client.session import ClientSession

        closed = trio.Event()
        async with self._open_transport() as (read, write):
            watched = _WatchedStream(read, closed)
            async with ClientSession(watched, write, message_handler=self._on_message) as session:
                client = _SessionClient(session)

                async def initialize() -> dict[str, str]:
                    info = (await session.initialize()).server_info
                    return {"name": info.name, "version": info.version}

                await self._hold(client, initialize, closed, connect_timeout)

    async def _serve_stdio(self, config: StdioServerConfig, connect_timeout: float) -> None:
        """The server as a child process, spoken to by a :class:`LineClient` on its pipes."""
        from ._stdio import open_stdio_process, stop_process

        stderr = self._stderr
        assert stderr is not None
        async with open_stdio_process(config, subprocess.PIPE) as process:
            assert process.stdout is not None and process.stdin is not None
            assert process.stderr is not None
            lines = LineClient(
                process.stdout,
                process.stdin,
                name=self.name,
                on_notification=self._on_notification,
                tracer=TRACER,
            )
            client = _LineMcpClient(lines)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lines.serve)
                nursery.start_soon(stderr.drain, process.stderr)
                try:
                    await self._hold(client, client.initialize, lines.ended, connect_timeout)
                finally:
                    with trio.CancelScope(shield=True):
                        await stop_process(process)  # while the reader still drains its stdout
                    nursery.cancel_scope.cancel()
            if lines.last_error is not None:
                self._last_transport_error = lines.last_error

    async def _hold(
        self,
        client: McpClient,
        initialize: Callable[[], Any],
        closed: trio.Event,
        connect_timeout: float,
    ) -> None:
        """Handshake and list under the connect timeout; then serve until ``closed``."""
        with trio.move_on_after(connect_timeout) as deadline:
            server_info = await initialize()
            listed = await _list_tools(client)
        if deadline.cancelled_caught:
            reason = f"did not connect within {connect_timeout:g} s"
            last = self._last_transport_error or getattr(
                getattr(client, "lines", None), "last_error", None
            )
            if last:
                reason += f" (last transport error: {last})"
            self._fail(f"MCP server {self.name!r} {reason}{self._stderr_tail()}")
            return
        self.server_info = server_info
        self.listed = listed
        self.client = client
        self.status = "connected"
        self.settled.set()
        self._list_timeout = connect_timeout
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._relist_loop, client)
            await closed.wait()
            nursery.cancel_scope.cancel()
        self.client = None
        if not self._stopping:
            self._fail(f"MCP server {self.name!r} closed the connection{self._stderr_tail()}")

    @contextlib.asynccontextmanager
    async def _open_transport(self) -> AsyncIterator[tuple[Any, Any]]:
        config = self.config
        assert isinstance(config, HttpServerConfig)  # stdio is served by _serve_stdio
        make_client = http_clients(await tls_context())
        if config.type == "http":
            from mcp.client.streamable_http import streamable_http_client

            # (a server asked for no compression sends none: a compressed JSON body is refused)
            headers = {"accept-encoding": "identity", **config.headers}
            client = make_client(headers=headers)
            client.event_hooks = {"response": [cap_json_body]}
            async with (
                client,
                streamable_http_client(
                    config.url, http_client=client, max_sse_event_size=MAX_HTTP_MESSAGE_BYTES
                ) as streams,
            ):
                yield streams
        else:
            from mcp.client.sse import sse_client

            async with sse_client(
                config.url, headers=dict(config.headers) or None, httpx_client_factory=make_client
            ) as streams:
                yield streams

    async def _relist_loop(self, client: McpClient) -> None:
        """List the tools again each time the server says they changed (a burst of
        notifications is one listing); ``on_tools_changed`` only when the list really differs,
        so a server that announces changes that are none never touches the session's tools."""
        while True:
            await self._relist.wait()
            self._relist = trio.Event()
            listed: list[McpTool] | None = None
            with trio.move_on_after(self._list_timeout):
                try:
                    listed = await _list_tools(client)
                except Exception as exc:
                    log.warning("MCP server %r: re-listing tools failed: %s", self.name, exc)
            if listed is None:
                log.warning("MCP server %r: re-listing tools failed or timed out", self.name)
            elif _listing(listed) != _listing(self.listed):
                self.listed = listed
                if self.on_tools_changed is not None:
                    self.on_tools_changed(self.name)
            if not self._relist.is_set():
                self.relist_pending = False
                self._relisted.set()
                self._relisted = trio.Event()

    async def wait_relisted(self, seconds: float) -> None:
        """Until an announced tool list change has been listed (at most ``seconds``)."""
        if self.relist_pending:
            with trio.move_on_after(seconds):
                await self._relisted.wait()

    def _on_notification(self, method: str) -> None:
        """A server notification: a changed tool list is re-listed by the connection's task."""
        if method == "notifications/tools/list_changed":
            self.relist_pending = True
            self._relist.set()

    async def _on_message(self, message: Any) -> None:
        """Server notifications and transport faults reach a ``ClientSession`` here: a
        changed tool list is re-listed; a fault is kept to explain a failed connect."""
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._on_notification("notifications/tools/list_changed")
        elif isinstance(message, Exception):
            self._last_transport_error = describe_error(message)
            log.debug("MCP server %r: transport error %s", self.name, self._last_transport_error)
        await trio.lowlevel.checkpoint()

    def _fail(self, error: str) -> None:
        if self._stopping and self.status == "disabled":
            return
        self.status = "failed"
        self.error = error
        self.client = None
        self.settled.set()
        self.lost.set()

    def closed_error(self) -> str:
        """Why calls cannot reach this server now (for an error tool result)."""
        if self.status == "disabled":
            return f"MCP server {self.name!r} is disabled"
        if self.status == "pending":
            return f"MCP server {self.name!r} is still connecting"
        return self.error or f"MCP server {self.name!r} is not connected"

    def _stderr_tail(self) -> str:
        text = self._stderr.quote() if self._stderr is not None else ""
        return f"; its stderr ends with: {text}" if text else ""

    def disable(self) -> None:
        self.status = "disabled"
        self.error = None
        self.client = None
        self.settled.set()
        self.stop()


def stderr_tail(file: Any) -> str:
    """The last ``_STDERR_LINES`` lines of a binary ``file``'s stripped text, at most its last
    ``_STDERR_TAIL`` characters, read from its end: ``_STDERR_WINDOW`` bytes, twice as many
    each time that does not settle the quote, at most ``_STDERR_WINDOW_MAX``. A window that
    starts mid-line (or mid-character: up to 3 replacement characters) ends as the whole text
    does once text that is not blank comes before the quote, past the window's first line (or
    its first characters): the quote then comes from where the two agree."""
    size = file.seek(0, 2)
    window = _STDERR_WINDOW
    while True:
        start = max(0, size - window)
        file.seek(start)
        lines = file.read(size - start).decode("utf-8", "replace").strip().splitlines()
        tail = "\n".join(lines[-_STDERR_LINES:])
        # Past the window's first line (or its first characters) the text is the whole
        # text's, and something not blank there keeps the quote from the whole text's strip.
        if len(lines) > _STDERR_LINES:
            settled = any(line.strip() for line in lines[1:-_STDERR_LINES])
        else:
            settled = len(tail) > _STDERR_TAIL + 3 and bool(tail[3:-_STDERR_TAIL].strip())
        if start == 0 or settled or window >= _STDERR_WINDOW_MAX:
            return tail[-_STDERR_TAIL:]
        window *= 2


#: The ``mcp`` package's modules a connection imports, by transport: imported first in a
#: worker thread (:func:`import_apart`).
STDIO_MODULES = ("mcp.client.stdio", "mcp.types", "mcp_types.version")
HTTP_MODULES = (
    "httpcore2",
    "httpx2",  # (imported by the HTTP client's transport when one is made)
    "mcp.client.session",
    "mcp.client.sse",
    "mcp.client.streamable_http",
    "mcp.shared._httpx_utils",
    "mcp.shared.exceptions",
    "mcp.types",
)


async def import_apart(modules: tuple[str, ...]) -> None:
    """Import those of ``modules`` not imported yet in a worker thread: the first ``import
    mcp`` took 0.5 s, one step of the event loop, every agent of the tree waiting. In the
    thread the interpreter still hands the loop its turn every few milliseconds."""
    missing = [name for name in modules if name not in sys.modules]
    if missing:
        await trio.to_thread.run_sync(_import_all, missing)


def _import_all(names: list[str]) -> None:
    """(A module that cannot be imported fails where the connection imports it, as before.)"""
    for name in names:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


class StderrTail:
    """The end of a stdio server's stderr, read from a pipe: the newest
    ``_STDERR_WINDOW_MAX`` bytes, the most a quote (:func:`stderr_tail`) reads, so the quote is
    the one the whole stream would give; older bytes are dropped as newer come, and nothing
    goes to disk. It went to a temporary file, which a server could grow without bound.

    The pipe is read at most once every ``_STDERR_PACE`` seconds, 64 KiB a read (about 6 MB/s):
    a server that logs faster waits on its pipe, and one that floods it costs the event loop
    a read each 10 ms, never a loop of reads."""

    def __init__(self) -> None:
        self._kept = bytearray()
        self._stream: Any = None

    def keep(self, data: bytes | bytearray) -> None:
        """``data`` appended, the oldest bytes beyond ``_STDERR_WINDOW_MAX`` dropped."""
        kept = self._kept
        kept += data
        excess = len(kept) - _STDERR_WINDOW_MAX
        if excess > 0:
            del kept[:excess]

    async def drain(self, stream: trio.abc.ReceiveStream) -> None:
        """Keep what ``stream`` (the server's stderr) brings until it ends, paced."""
        self._stream = stream
        while True:
            try:
                chunk = await stream.receive_some(_STDERR_READ)
            except (trio.ClosedResourceError, trio.BrokenResourceError, OSError):
                return
            if not chunk:
                return
            self.keep(chunk)
            await trio.sleep(_STDERR_PACE)

    def quote(self) -> str:
        """:func:`stderr_tail` of what was kept, after what the pipe holds now (at most
        ``_STDERR_WINDOW_MAX`` bytes, read without waiting: the last words of a server that
        just exited, which the paced reader has not taken yet)."""
        fileno = getattr(self._stream, "fileno", None)
        taken = 0
        while fileno is not None and taken < _STDERR_WINDOW_MAX:
            try:
                chunk = os.read(fileno(), _STDERR_READ)
            except (BlockingIOError, OSError, ValueError):
                break
            if not chunk:
                break
            self.keep(chunk)
            taken += len(chunk)
        return stderr_tail(io.BytesIO(self._kept))

    def close(self) -> None:
        """Close the pipe (its reader has ended, with the connection's task)."""
        stream, self._stream = self._stream, None
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


@contextlib.contextmanager
def _closing(tail: StderrTail | None) -> Iterator[StderrTail | None]:
    try:
        yield tail
    finally:
        if tail is not None:
            tail.close()


async def _list_tools(client: McpClient) -> list[McpTool]:
    """Every tool the server lists, following pages (bounded: a server cannot page forever)."""
    tools: list[McpTool] = []
    cursor: str | None = None
    for _ in range(100):
        page = await client.list_page(cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


class _SessionClient:
    """An ``mcp`` ``ClientSession`` (the HTTP and SSE transports) as an :class:`McpClient`."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        from mcp.shared.exceptions import MCPError

        from ._tools import convert_result

        try:
            result = await self.session.call_tool(name, arguments)
        except MCPError as exc:
            if exc.error.code == _CONNECTION_CLOSED:
                raise ConnectionLost(exc.error.message) from exc
            raise RpcError(exc.error.code, exc.error.message) from exc
        return convert_result(result)

    async def list_page(self, cursor: str | None) -> ListToolsResult:
        from mcp.types import PaginatedRequestParams

        params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
        return await self.session.list_tools(params=params)


#: The ``mcp`` package's error code for a request cut short by the connection closing.
_CONNECTION_CLOSED = -32000


class _LineMcpClient:
    """A :class:`LineClient` as an :class:`McpClient`: the handshake and listings validated
    with the ``mcp`` package's types (not hot), ``tools/call`` decoded with msgspec (hot)."""

    def __init__(self, lines: LineClient) -> None:
        self.lines = lines

    async def initialize(self) -> dict[str, str]:
        """``initialize`` then ``notifications/initialized``, as ``ClientSession`` does."""
        from mcp.types import (
            ClientCapabilities,
            Implementation,
            InitializeRequestParams,
            InitializeResult,
        )
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

        params = InitializeRequestParams(
            protocol_version=LATEST_HANDSHAKE_VERSION,
            capabilities=ClientCapabilities(),
            client_info=Implementation(name="trio-agents", version=_version()),
        ).model_dump(by_alias=True, mode="json", exclude_none=True)
        raw = await self.lines.request("initialize", params)
        result: InitializeResult = validated(InitializeResult, raw)
        if result.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise RuntimeError(
                f"unsupported protocol version from the server: {result.protocol_version!r} "
                f"(supported: {', '.join(HANDSHAKE_PROTOCOL_VERSIONS)})"
            )
        self.lines.notify("notifications/initialized")
        info = result.server_info
        return {"name": info.name, "version": info.version}

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        raw = await self.lines.request("tools/call", {"name": name, "arguments": arguments})
        return decode_call_result(raw)

    async def list_page(self, cursor: str | None) -> ListToolsResult:
        from mcp.types import ListToolsResult

        raw = await self.lines.request("tools/list", None if cursor is None else {"cursor": cursor})
        listing: ListToolsResult = validated(ListToolsResult, raw)
        return listing


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trio-agents")
    except PackageNotFoundError:
        return "0"


def _listing(tools: list[McpTool]) -> list[dict[str, Any]]:
    """What of a listing the model sees: two listings equal here give the same definitions."""
    return [t.model_dump(mode="json", exclude_none=True) for t in tools]


def describe_error(exc: BaseException) -> str:
    """One line for an exception, looking inside exception groups (anyio's task groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _WatchedStream:
    """A transport's read stream that sets ``closed`` when it ends: how a dead server is noticed
    even while no call is waiting on it."""

    def __init__(self, inner: Any, closed: trio.Event) -> None:
        self._inner = inner
        self._closed = closed

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        import anyio

        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._closed.set()
            raise

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._closed.set()
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()
