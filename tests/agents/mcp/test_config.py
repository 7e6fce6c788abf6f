"""Server configurations are checked before anything starts; results convert and cap in tokens."""

from __future__ import annotations

import pytest

from agents import AgentOptions, create_sdk_mcp_server
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


# -- a server's name is its tools' prefix: it must say where it ends


@pytest.mark.parametrize("key", ["github__evil", "github_", "_github", "a___b", "git__hub__x"])
def test_a_server_name_that_blurs_where_it_ends_is_refused(key: str) -> None:
    """Tools are named ``mcp__<server>__<tool>``, and a rule ``mcp__github`` covers the tools
    whose name's server part is ``github``. A server named ``github__evil`` (or ``github_``)
    made ``mcp__github__evil__x`` (``mcp__github___x``): the rule for the trusted ``github``
    approved another server's tools. Such a name is refused, wherever it is given."""
    wanted = rf"key {key!r} .*'__'"
    with pytest.raises(ValueError, match=wanted):
        parse_server_config(key, {"command": "x"})
    with pytest.raises(ValueError, match=wanted):
        parse_server_config(key, {"command": "x"}, table="mcpServers")
    with pytest.raises(ValueError, match=wanted):
        AgentOptions(mcp_servers={key: {"command": "x"}})
    with pytest.raises(ValueError, match=wanted):
        AgentOptions(mcp_servers={key: create_sdk_mcp_server(key)})


def test_names_with_single_underscores_and_dashes_are_kept() -> None:
    for key in ("my_server", "brave-search", "a_b_c", "x-"):
        parse_server_config(key, {"command": "x"})
        AgentOptions(mcp_servers={key: create_sdk_mcp_server(key)})


async def test_a_rule_for_one_server_never_covers_anothers_tools() -> None:
    """The rule side of the same seam: ``mcp__github`` covers ``mcp__github__x`` only."""
    from agents.permissions import RuleSet

    rules = RuleSet.from_strings(allow=["mcp__github"])
    assert rules.match("allow", "mcp__github__create_issue", {}, cwd="/", home="/h") is not None
    assert rules.match("allow", "mcp__githubx__create_issue", {}, cwd="/", home="/h") is None
