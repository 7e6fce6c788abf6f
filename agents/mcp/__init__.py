"""External MCP servers (stdio, streamable HTTP, SSE) through the official ``mcp`` package.

The ``mcp`` package is imported only when a server is actually connected, so sessions without
external servers do not pay for it.
"""

from __future__ import annotations

from ._config import HttpServerConfig as HttpServerConfig
from ._config import ServerConfig as ServerConfig
from ._config import StdioServerConfig as StdioServerConfig
from ._config import parse_server_config as parse_server_config
from ._manager import DEFAULT_CALL_TIMEOUT as DEFAULT_CALL_TIMEOUT
from ._manager import DEFAULT_CONNECT_TIMEOUT as DEFAULT_CONNECT_TIMEOUT
from ._manager import McpServers as McpServers
from ._manager import McpServerStatus as McpServerStatus
from ._manager import open_mcp_servers as open_mcp_servers
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
    "open_mcp_servers",
    "parse_server_config",
]
