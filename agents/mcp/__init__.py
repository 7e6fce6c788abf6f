"""External MCP servers (stdio, streamable HTTP, SSE) through the official ``mcp`` package.

The ``mcp`` package is imported only when a server is actually connected, and this package's
modules on first use of their names, so sessions without external servers pay for neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._config import HttpServerConfig as HttpServerConfig
    from ._config import ServerConfig as ServerConfig
    from ._config import StdioServerConfig as StdioServerConfig
    from ._config import parse_server_config as parse_server_config
    from ._manager import DEFAULT_CALL_TIMEOUT as DEFAULT_CALL_TIMEOUT
    from ._manager import DEFAULT_CONNECT_TIMEOUT as DEFAULT_CONNECT_TIMEOUT
    from ._manager import McpServers as McpServers
    from ._manager import McpServerStatus as McpServerStatus
    from ._manager import open_mcp_servers as open_mcp_servers
    from ._stdio import jsonrpc_line_streams as jsonrpc_line_streams
    from ._tools import DEFAULT_MAX_OUTPUT_TOKENS as DEFAULT_MAX_OUTPUT_TOKENS

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "HttpServerConfig",
    "McpServerStatus",
    "McpServers",
    "ServerConfig",
    "StdioServerConfig",
    "jsonrpc_line_streams",
    "open_mcp_servers",
    "parse_server_config",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DEFAULT_CALL_TIMEOUT": "._manager",
        "DEFAULT_CONNECT_TIMEOUT": "._manager",
        "DEFAULT_MAX_OUTPUT_TOKENS": "._tools",
        "HttpServerConfig": "._config",
        "McpServerStatus": "._manager",
        "McpServers": "._manager",
        "ServerConfig": "._config",
        "StdioServerConfig": "._config",
        "jsonrpc_line_streams": "._stdio",
        "open_mcp_servers": "._manager",
        "parse_server_config": "._config",
    },
)
