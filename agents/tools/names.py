"""Tool names as the Messages API takes them, and an MCP server's names made to fit.

The API refuses a whole request whose tool list has a name outside ``^[a-zA-Z0-9_-]{1,64}$``.
An MCP server's tool named ``files.read`` (MCP allows dots and slashes) or a long name under a
long server name would therefore end every request of the session with a 400, whatever the
prompt. An external server's names are made to fit, as Claude Code makes them
(``mcp__<server>__<tool>``, every other character an ``_``), and one still too long keeps its
first characters and a digest of the whole, so that two long names stay apart; a name given
here in code (``@tool``, ``create_sdk_mcp_server``) is refused instead, naming the rule, since
its author can change it.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["API_TOOL_NAME", "MAX_TOOL_NAME", "check_server_name", "mcp_tool_name"]

#: the longest tool name the Messages API takes
MAX_TOOL_NAME = 64
#: a tool name the Messages API takes (``fullmatch``)
API_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_OTHER = re.compile(r"[^A-Za-z0-9_-]")
_DIGEST = 8


def mcp_tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>`` with each character the API does not take as ``_``; past 64
    characters, its first 55 and 8 hex digits of the whole name's SHA-256."""
    name = _OTHER.sub("_", f"mcp__{server}__{tool}")
    if len(name) <= MAX_TOOL_NAME:
        return name
    digest = hashlib.sha256(f"mcp__{server}__{tool}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"{name[: MAX_TOOL_NAME - _DIGEST - 1]}_{digest[:_DIGEST]}"


#: A server name: letters, digits and dashes, in runs joined by single ``_``
_SERVER_NAME = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")


def check_server_name(key: object, table: str = "mcp_servers") -> None:
    """Refuse a server name (the key ``key`` of ``table``) that is not 1-64 letters, digits,
    ``-`` or single ``_`` between them, naming the rule.

    The name is its tools' prefix, ``mcp__<server>__<tool>``, and a rule ``mcp__github`` covers
    the tools whose name's server part, up to the first ``__``, is ``github``. A ``__`` in a
    name, or an ``_`` at its end or start, blurs where it ends: a server named ``github__evil``
    or ``github_`` made ``mcp__github__evil__x`` or ``mcp__github___x``, and the rule for the
    trusted ``github`` approved another server's tools."""
    if not isinstance(key, str) or not API_TOOL_NAME.fullmatch(key):
        raise ValueError(
            f"{table} key {key!r} must be 1-64 letters, digits, '_' or '-' "
            "(it becomes part of the tool names)"
        )
    if not _SERVER_NAME.fullmatch(key):
        raise ValueError(
            f"{table} key {key!r} must not hold '__' nor start or end with '_': tools are named "
            "mcp__<server>__<tool>, and such a name blurs where the server's part ends (a rule "
            "for one server would cover another's tools)"
        )
