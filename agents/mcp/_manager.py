"""The external MCP servers of a session: connected concurrently, owned by one nursery.

::

    async with open_mcp_servers({"fs": {"command": "mcp-fs"}, "api": {"type": "http", "url": u}},
                                connect_timeout=30) as servers:
        servers.status()     # [McpServerStatus(name="fs", status="connected"), ...]
        servers.tools()      # Tool objects named mcp__fs__read, ... (connected servers only)
        await servers.reconnect("api"); await servers.toggle("fs", enabled=False)

Every server connects in its own task, so a slow or failing one never holds the others back;
the block starts once each server has settled or ``startup_wait`` has passed (the rest stay
``pending`` and keep connecting until ``connect_timeout``). A call to a server that died or
hangs ends as an error result naming it — the death is noticed from the closed stream, the hang
by ``call_timeout`` — so a turn never waits on a broken server. When the block ends, however it
ends (cancellation included), every connection is closed and every server process is stopped
before ``open_mcp_servers`` returns.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import attrs
import trio

from ..tools.base import Tool, ToolOutput
from ._config import ServerConfig, parse_server_config
from ._connection import Connection, ConnectionLost, RpcError, describe_error
from ._tools import DEFAULT_MAX_OUTPUT_TOKENS, cap_output, make_tool

__all__ = ["McpServerStatus", "McpServers", "open_mcp_servers"]

log = logging.getLogger(__name__)

#: Seconds a server has to start and list its tools (Claude Code's ``MCP_TIMEOUT`` default).
DEFAULT_CONNECT_TIMEOUT = 30.0
#: Seconds one tool call may take before it is an error result naming the server.
DEFAULT_CALL_TIMEOUT = 300.0


@attrs.frozen
class McpServerStatus:
    """One server as ``mcp_server_status()`` and the init message report it."""

    name: str
    status: str  # "connected" | "failed" | "pending" | "disabled"
    error: str | None = None
    server_info: dict[str, str] | None = None
    tools: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape: ``{"name", "status", "error"?, "serverInfo"?, "tools"?}``."""
        out: dict[str, Any] = {"name": self.name, "status": self.status}
        if self.error is not None:
            out["error"] = self.error
        if self.server_info is not None:
            out["serverInfo"] = dict(self.server_info)
        if self.tools:
            out["tools"] = list(self.tools)
        return out


@attrs.define(eq=False)
class McpServers:
    """The connection manager; made by :func:`open_mcp_servers`, used inside its block."""

    _nursery: trio.Nursery
    _configs: dict[str, ServerConfig]
    connect_timeout: float
    call_timeout: float
    max_output_tokens: int
    _connections: dict[str, Connection] = attrs.Factory(dict)
    _tools: dict[str, list[Tool]] = attrs.Factory(dict)
    _watchers: list[Callable[[str], None]] = attrs.Factory(list)

    def watch(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(server)`` whenever a server's tool list changed mid-session (its
        ``notifications/tools/list_changed``, re-listed); ``tools()`` already has the new set."""
        self._watchers.append(callback)

    def _tools_changed(self, name: str) -> None:
        self._tools.pop(name, None)
        for callback in self._watchers:
            callback(name)

    # -- reading ---------------------------------------------------------------------------------

    def names(self) -> list[str]:
        return list(self._configs)

    def status(self) -> list[McpServerStatus]:
        """Every server's status, in configuration order."""
        return [self._status(name) for name in self._configs]

    def tools(self) -> list[Tool]:
        """The tools of the connected servers, in configuration then listing order."""
        out: list[Tool] = []
        for name in self._configs:
            conn = self._connections.get(name)
            if conn is not None and conn.status == "connected":
                out.extend(self._tools_of(conn))
        return out

    def _status(self, name: str) -> McpServerStatus:
        conn = self._connections[name]
        tools = tuple(t.name for t in self._tools_of(conn)) if conn.status == "connected" else ()
        return McpServerStatus(
            name=name,
            status=conn.status,
            error=conn.error if conn.status == "failed" else None,
            server_info=conn.server_info if conn.status == "connected" else None,
            tools=tools,
        )

    def _tools_of(self, conn: Connection) -> list[Tool]:
        tools = self._tools.get(conn.name)
        if tools is None:
            tools = []
            seen: dict[str, str] = {}
            for listed in conn.listed:
                made = make_tool(conn.name, listed, self._caller(conn.name))
                if made.name in seen:  # two names made to fit the API came out the same
                    log.warning(
                        "MCP server %s: tool %r is offered as %s, as %r is: only the first is",
                        conn.name, listed.name, made.name, seen[made.name],
                    )  # fmt: skip
                    continue
                seen[made.name] = listed.name
                tools.append(made)
            self._tools[conn.name] = tools
        return tools

    # -- calling ---------------------------------------------------------------------------------

    def _caller(self, server: str) -> Any:
        async def call(tool: str, args: dict[str, Any]) -> ToolOutput:
            return await self.call(server, tool, args)

        return call

    async def call(self, server: str, tool: str, args: dict[str, Any]) -> ToolOutput:
        """Call ``tool`` on ``server``: its result, or an error result naming the server."""
        conn = self._connections.get(server)
        if conn is None:
            return ToolOutput.error(f"unknown MCP server {server!r}")
        client = conn.client
        if client is None or conn.status != "connected":
            return ToolOutput.error(f"{conn.closed_error()}; tool {tool!r} was not called")
        output: ToolOutput | None = None
        with trio.move_on_after(self.call_timeout):
            try:
                output = await client.call_tool(tool, args)
            except ConnectionLost as exc:
                return await self._lost(conn, tool, str(exc))
            except RpcError as exc:
                if conn.status != "connected":
                    return await self._lost(conn, tool)
                return ToolOutput.error(f"MCP server {server!r}, tool {tool!r}: {exc.message}")
            except Exception as exc:
                return ToolOutput.error(
                    f"MCP server {server!r}, tool {tool!r} failed: {describe_error(exc)}"
                )
        if output is None:
            return ToolOutput.error(
                f"MCP server {server!r} did not answer tool {tool!r} within "
                f"{self.call_timeout:g} s; the call was abandoned"
            )
        # A tool that changed the server's tool list: the change is in the very next request.
        if conn.relist_pending:
            await conn.wait_relisted(min(self.connect_timeout, self.call_timeout))
        return cap_output(output, self.max_output_tokens)

    @staticmethod
    async def _lost(conn: Connection, tool: str, reason: str = "") -> ToolOutput:
        """The error result of a call the connection's end cut short (the reason, once the
        connection's task has noticed it). A connection still up lost this call's own stream
        (over HTTP: an event over the ``mcp`` package's 1 MiB limit): its reason is given."""
        await _settle_briefly(conn)
        if conn.status != "connected":
            return ToolOutput.error(f"{conn.closed_error()}; tool {tool!r} did not complete")
        own = f"MCP server {conn.name!r} closed the connection"
        detail = f": {reason}" if reason and not reason.startswith(own) else ""
        return ToolOutput.error(f"{own} during tool {tool!r}{detail}")

    # -- changing --------------------------------------------------------------------------------

    async def reconnect(self, name: str) -> McpServerStatus:
        """Close ``name``'s connection (stopping its process) and connect it again."""
        self._check(name)
        await self._stop(name)
        await self._start(name)
        await self._connections[name].settled.wait()
        return self._status(name)

    async def toggle(self, name: str, enabled: bool) -> McpServerStatus:
        """Disable (close, calls fail naming it) or enable (connect again) ``name``."""
        self._check(name)
        conn = self._connections[name]
        if not enabled:
            if conn.status != "disabled":
                conn.disable()
                await conn.done.wait()
            return self._status(name)
        if conn.status == "disabled":
            await self._start(name)
            await self._connections[name].settled.wait()
        return self._status(name)

    def _check(self, name: str) -> None:
        if name not in self._configs:
            known = ", ".join(self._configs) or "none"
            raise ValueError(f"unknown MCP server {name!r} (configured: {known})")

    async def _start(self, name: str) -> None:
        conn = Connection(name=name, config=self._configs[name])
        conn.on_tools_changed = self._tools_changed
        self._connections[name] = conn
        self._tools.pop(name, None)
        self._nursery.start_soon(conn.run, self.connect_timeout, name=f"mcp-server:{name}")
        await trio.lowlevel.checkpoint()

    async def _stop(self, name: str) -> None:
        conn = self._connections.get(name)
        if conn is not None:
            conn.stop()
            await conn.done.wait()

    async def wait_settled(self, name: str | None = None) -> None:
        """Until ``name`` (default: every server) is connected, failed or disabled."""
        if name is not None:
            self._check(name)
            await self._connections[name].settled.wait()
            return
        for conn in list(self._connections.values()):
            await conn.settled.wait()

    def _stop_all(self) -> None:
        for conn in self._connections.values():
            conn.stop()


async def _settle_briefly(conn: Connection) -> None:
    """Let the connection's task notice the closed stream first, so the error says why."""
    with trio.move_on_after(0.5):
        await conn.lost.wait()


@contextlib.asynccontextmanager
async def open_mcp_servers(
    configs: Mapping[str, Any],
    *,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    startup_wait: float | None = None,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
) -> AsyncIterator[McpServers]:
    """Connect every server in ``configs`` concurrently; close them all when the block ends.

    ``startup_wait`` (default: ``connect_timeout``) bounds how long entering the block waits
    for the servers to settle. Invalid configs raise ``ValueError`` before anything starts.
    """
    for name, value in (("connect_timeout", connect_timeout), ("call_timeout", call_timeout)):
        if not value > 0:
            raise ValueError(f"{name} must be > 0 seconds, got {value!r}")
    if max_output_tokens < 1:
        raise ValueError(f"max_output_tokens must be >= 1, got {max_output_tokens!r}")
    parsed = {key: parse_server_config(key, raw) for key, raw in configs.items()}
    try:
        async with trio.open_nursery() as nursery:
            servers = McpServers(
                nursery=nursery,
                configs=parsed,
                connect_timeout=connect_timeout,
                call_timeout=call_timeout,
                max_output_tokens=max_output_tokens,
            )
            try:
                for name in parsed:
                    await servers._start(name)
                with trio.move_on_after(connect_timeout if startup_wait is None else startup_wait):
                    await servers.wait_settled()
                yield servers
            finally:
                servers._stop_all()
    except BaseExceptionGroup as group:
        raise_single(group)


def raise_single(group: BaseExceptionGroup[BaseException]) -> None:
    """Re-raise a nursery's only exception as itself (the block's own error, unwrapped)."""
    if len(group.exceptions) == 1:
        exc = group.exceptions[0]
        if isinstance(exc, BaseExceptionGroup):
            raise_single(exc)
        raise exc from None
    raise group
