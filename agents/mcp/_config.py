"""External MCP server configurations, in the shape Claude Code and the Agent SDK use.

``mcp_servers`` maps a key (the ``<server>`` in ``mcp__<server>__<tool>``) to one of::

    {"type": "stdio", "command": "npx", "args": [...], "env": {...}, "cwd": "..."}   # type optional
    {"type": "http",  "url": "https://…/mcp", "headers": {...}}                    # streamable HTTP
    {"type": "sse",   "url": "https://…/sse", "headers": {...}}

A dict without ``type`` but with ``command`` is stdio, as in ``.mcp.json`` files. Anything else
is a ``ValueError`` naming the key, the field and what is allowed, raised before any server starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from ..tools.names import check_server_name

__all__ = ["HttpServerConfig", "ServerConfig", "StdioServerConfig", "parse_server_config"]


@attrs.frozen
class StdioServerConfig:
    """A server run as a child process, spoken to over its stdin and stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)
    cwd: str | None = None
    type: str = "stdio"


@attrs.frozen
class HttpServerConfig:
    """A server reached over streamable HTTP (``type="http"``) or the older SSE transport."""

    url: str
    headers: Mapping[str, str] = attrs.field(factory=dict)
    type: str = "http"


ServerConfig = StdioServerConfig | HttpServerConfig

_FIELDS = {
    "stdio": {"type", "command", "args", "env", "cwd"},
    "http": {"type", "url", "headers"},
    "sse": {"type", "url", "headers"},
}


def parse_server_config(key: str, raw: Any, *, table: str = "mcp_servers") -> ServerConfig:
    """One ``mcp_servers`` value checked and typed; a ``ValueError`` names what is wrong.

    ``table`` names where the value came from in the message: ``mcp_servers['fs'].args`` for the
    option, ``mcpServers.fs.args`` for a ``.mcp.json`` file."""
    where = f"mcp_servers[{key!r}]" if table == "mcp_servers" else f"{table}.{key}"
    check_server_name(key, table)
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} must be a server config dict, got {type(raw).__name__}")
    kind = raw.get("type", "stdio" if "command" in raw else None)
    if kind not in _FIELDS:
        raise ValueError(f"{where}.type must be one of 'stdio', 'http', 'sse', got {kind!r}")
    unknown = sorted(set(raw) - _FIELDS[kind])
    if unknown:
        allowed = ", ".join(sorted(_FIELDS[kind]))
        raise ValueError(f"{where}: unknown field {unknown[0]!r} for type {kind!r} ({allowed})")
    if kind == "stdio":
        command = raw.get("command")
        if not isinstance(command, str) or not command:
            raise ValueError(f"{where}.command must be a non-empty string, got {command!r}")
        args = raw.get("args") or []
        if not isinstance(args, list | tuple) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"{where}.args must be a list of strings, got {args!r}")
        cwd = raw.get("cwd")
        if cwd is not None and not isinstance(cwd, str | os.PathLike):
            raise ValueError(f"{where}.cwd must be a path, got {cwd!r}")
        return StdioServerConfig(
            command=command,
            args=tuple(args),
            env=_str_map(where, "env", raw.get("env")),
            cwd=None if cwd is None else os.fspath(cwd),
        )
    url = raw.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"{where}.url must be an http:// or https:// URL, got {url!r}")
    return HttpServerConfig(
        url=url, headers=_str_map(where, "headers", raw.get("headers")), type=kind
    )


def _str_map(where: str, field: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{where}.{field} must be a dict of strings, got {value!r}")
    return dict(value)
