"""Tool names the Messages API takes: an external server's names are made to fit, a name given in
code that cannot fit is refused naming the rule.

The API refuses a whole request whose tool list has a name outside ``^[a-zA-Z0-9_-]{1,64}$``;
an MCP server's ``files.read`` (MCP allows the dot) ended every request of the session with a
400 before the client made it fit.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import AgentOptions, create_sdk_mcp_server, tool
from agents.backends.anthropic import AnthropicBackend
from agents.testing import FakeAnthropicServer, Step, text, tool_use
from agents.testing.mcp_servers import stdio_server_config
from agents.tools.names import API_TOOL_NAME, mcp_tool_name
from tests.agents.helpers import collect

from .test_mcp_e2e import BOUND, result_text, results

_KEYS = st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True)


@settings(max_examples=500, deadline=None)
@given(server=_KEYS, name=st.text(min_size=1, max_size=200))
def test_an_mcp_tool_name_always_fits_the_api(server: str, name: str) -> None:
    """Any server key and any tool name give a name the API takes; one that fits is kept."""
    made = mcp_tool_name(server, name)
    assert API_TOOL_NAME.fullmatch(made), made
    plain = f"mcp__{server}__{name}"
    if API_TOOL_NAME.fullmatch(plain):
        assert made == plain


@settings(max_examples=200, deadline=None)
@given(
    server=_KEYS,
    head=st.text(alphabet="ab", min_size=70, max_size=70),
    tails=st.lists(st.text(alphabet="xyz", max_size=5), min_size=2, max_size=2, unique=True),
)
def test_two_long_names_stay_apart(server: str, head: str, tails: list[str]) -> None:
    """Names cut at the API's length differ by their digest when their ends differ."""
    first, second = (mcp_tool_name(server, head + tail) for tail in tails)
    assert first != second


async def test_a_dotted_server_tool_is_called_through_the_http_api() -> None:
    """Through the real client and the fake API (which refuses a bad name as the API does)."""
    script = [
        Step([tool_use("mcp__demo__text_upper", {"text": "shout"})]),
        Step([text("done")]),
    ]
    async with FakeAnthropicServer(script) as server, AnthropicBackend(
        base_url=server.base_url, api_key="test", max_retries=0
    ) as backend:
        options = AgentOptions(
            backend=backend,
            mcp_servers={"demo": stdio_server_config()},
            allowed_tools=["mcp__demo"],
        )
        with trio.fail_after(BOUND):
            messages, error = await collect("go", options)
        sent = [t["name"] for t in server.requests[0].body["tools"]]
    assert error is None, error
    assert "mcp__demo__text_upper" in sent
    (result,) = results(messages)
    assert not result.is_error and result_text(result) == "SHOUT"


async def test_the_fake_api_refuses_a_name_the_api_refuses() -> None:
    """The conformance the test above rests on: a dotted name is a 400 naming the rule."""
    from agents.backends.base import APIStatusError, ModelRequest

    async with FakeAnthropicServer([Step([text("never")])]) as server, AnthropicBackend(
        base_url=server.base_url, api_key="test", max_retries=0
    ) as backend:
        request = ModelRequest(
            model="claude-sonnet-4-5",
            messages=[{"role": "user", "content": "hi"}],
            max_tokens=16,
            tools=[{"name": "mcp__demo__text.upper", "description": "d", "input_schema": {}}],
        )
        with pytest.raises(APIStatusError, match=r"tools\.0\.custom\.name"):
            async for _ in backend.stream(request):
                pass


@pytest.mark.parametrize("name", ["get.weather", "a b", "", "x" * 65, "é"])
def test_a_tool_named_in_code_outside_the_api_rule_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match=r"tool name must be 1 to 64 letters, digits"):
        tool(name, "d", {})


def test_an_in_process_server_whose_names_come_out_too_long_is_refused() -> None:
    @tool("t" * 50, "d", {})
    async def handler(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "x"}]}

    server = create_sdk_mcp_server("s", tools=[handler])
    with pytest.raises(ValueError, match=r"mcp_servers\['long_key'\]: the tool name the model"):
        server.as_tools("long_key")
    assert [t.name for t in server.as_tools("k")] == ["mcp__k__" + "t" * 50]
