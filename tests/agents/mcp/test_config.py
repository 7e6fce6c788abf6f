"""Server configurations are checked before anything starts; results convert and cap in tokens."""

from __future__ import annotations

import pytest

from agents.mcp import HttpServerConfig, StdioServerConfig, parse_server_config
from agents.mcp._tools import cap_output
from agents.tools.base import ToolOutput


def test_command_without_type_is_stdio() -> None:
    config = parse_server_config("fs", {"command": "mcp-fs", "args": ["--root", "/"]})
    assert config == StdioServerConfig(command="mcp-fs", args=("--root", "/"))


def test_http_and_sse_keep_their_type_and_headers() -> None:
    http = parse_server_config(
        "api", {"type": "http", "url": "http://x/mcp", "headers": {"A": "b"}}
    )
    sse = parse_server_config("old", {"type": "sse", "url": "https://x/sse"})
    assert http == HttpServerConfig(url="http://x/mcp", headers={"A": "b"}, type="http")
    assert sse.type == "sse"


@pytest.mark.parametrize(
    ("key", "raw", "message"),
    [
        ("a b", {"command": "x"}, r"^mcp_servers key 'a b' must be 1-64 letters"),
        ("s", {"type": "ws", "url": "x"}, r"^mcp_servers\['s'\]\.type must be one of"),
        ("s", {"type": "stdio"}, r"^mcp_servers\['s'\]\.command must be a non-empty string"),
        ("s", {"command": "x", "args": "y"}, r"^mcp_servers\['s'\]\.args must be a list"),
        ("s", {"command": "x", "env": {"A": 1}}, r"^mcp_servers\['s'\]\.env must be a dict"),
        ("s", {"type": "http", "url": "ftp://x"}, r"^mcp_servers\['s'\]\.url must be an http"),
        ("s", {"type": "http", "url": "http://x", "command": "y"}, r"unknown field 'command'"),
        ("s", "npx server", r"^mcp_servers\['s'\] must be a server config dict, got str$"),
    ],
)
def test_malformed_config_is_a_value_error_naming_the_field(
    key: str, raw: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        parse_server_config(key, raw)


def test_output_within_the_cap_is_unchanged() -> None:
    output = ToolOutput(content=[{"type": "text", "text": "x" * 400}])
    assert cap_output(output, max_tokens=100) is output


def test_output_over_the_cap_is_cut_with_a_note_in_tokens() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}
    output = ToolOutput(
        content=[{"type": "text", "text": "a" * 300}, image, {"type": "text", "text": "b" * 300}]
    )
    capped = cap_output(output, max_tokens=100)
    assert isinstance(capped.content, list)
    texts = [b["text"] for b in capped.content if b["type"] == "text"]
    assert "".join(texts[:-1]) == "a" * 300 + "b" * 100
    assert image in capped.content
    assert texts[-1] == (
        "[output truncated: the MCP tool's output is larger than 100 tokens; "
        "200 more characters (about 50 tokens) not shown]"
    )
