"""Test doubles shipped with the library: scripted models, a fake Messages API server.

``ScriptedBackend`` plays scripted responses in-process (virtual time friendly);
``FakeAnthropicServer`` serves the same scripts over HTTP on 127.0.0.1 so tests can drive the real
``anthropic`` client. ``stdio_server_config()`` and ``open_http_server()`` start a real MCP server
(built with the ``mcp`` package) for ``mcp_servers``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .mcp_servers import open_http_server as open_http_server
from .mcp_servers import stdio_server_config as stdio_server_config
from .scripted import Fault as Fault
from .scripted import Script as Script
from .scripted import ScriptedBackend as ScriptedBackend
from .scripted import ScriptExhausted as ScriptExhausted
from .scripted import Step as Step
from .scripted import text as text
from .scripted import thinking as thinking
from .scripted import tool_use as tool_use
from .scripted import usage as usage

__all__ = [
    "FakeAnthropicServer",
    "Fault",
    "Script",
    "ScriptExhausted",
    "ScriptedBackend",
    "Step",
    "open_http_server",
    "stdio_server_config",
    "text",
    "thinking",
    "tool_use",
    "usage",
]

if TYPE_CHECKING:
    from .fake_api import FakeAnthropicServer as FakeAnthropicServer


def __getattr__(name: str) -> Any:
    # Loaded on first use, so ``python -m agents.testing.fake_api`` does not import itself twice.
    if name == "FakeAnthropicServer":
        from .fake_api import FakeAnthropicServer

        return FakeAnthropicServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
