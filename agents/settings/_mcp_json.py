"""The project's ``.mcp.json``: Claude Code's project-scope MCP server configuration.

::

    {"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-fs", "."]},
                    "api": {"type": "http", "url": "${API_BASE:-https://example.com}/mcp",
                            "headers": {"Authorization": "Bearer ${API_TOKEN}"}}}}

Read when ``setting_sources`` includes ``"project"``; each entry is checked as an
``mcp_servers`` value is, and ``${VAR}`` / ``${VAR:-default}`` in ``command``, ``args``,
``env``, ``url`` and ``headers`` are replaced from the environment, as Claude Code does. A file
that is not JSON, or an entry of the wrong shape, is a :class:`SettingsError` naming the file and
the key (``mcpServers.fs.args``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._files import SettingsError, read_json

__all__ = ["load_mcp_json", "mcp_json_path"]

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def mcp_json_path(cwd: str) -> Path:
    return Path(cwd) / ".mcp.json"


def load_mcp_json(cwd: str, environ: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """The servers of ``<cwd>/.mcp.json`` (none when there is no file), variables expanded.

    Blocking: call it from a thread in async code."""
    from ..mcp import parse_server_config

    path = mcp_json_path(cwd)
    if not path.is_file():
        return {}
    data = read_json(path)
    servers = data.get("mcpServers", {})
    if not isinstance(servers, Mapping):
        raise SettingsError(f"{path}: mcpServers must be a JSON object, got {servers!r}")
    env = os.environ if environ is None else environ
    out: dict[str, dict[str, Any]] = {}
    for key, raw in servers.items():
        if isinstance(raw, Mapping):
            raw = {field: _expand(value, env, path, key) for field, value in raw.items()}
        try:
            parse_server_config(key, raw, table="mcpServers")
        except ValueError as exc:
            raise SettingsError(f"{path}: {exc}") from None
        out[key] = dict(raw)
    return out


def _expand(value: Any, env: Mapping[str, str], path: Path, key: str) -> Any:
    """``value`` with ``${VAR}`` and ``${VAR:-default}`` replaced, in strings, lists and dicts."""
    if isinstance(value, str):

        def one(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise SettingsError(f"{path}: mcpServers.{key}: environment variable {name} is not set")

        return _VARIABLE.sub(one, value)
    if isinstance(value, list):
        return [_expand(v, env, path, key) for v in value]
    if isinstance(value, Mapping):
        return {k: _expand(v, env, path, key) for k, v in value.items()}
    return value
