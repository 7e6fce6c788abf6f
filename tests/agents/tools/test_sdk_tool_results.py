"""What an in-process tool returns reaches the model as Messages API blocks, or as an error.

The Agent SDK's tools return MCP's shapes (an image as ``data`` and ``mimeType``, embedded
resources, links); each is converted as an external MCP server's result is. Anything else — an
item that is no dict, a text that is no string, an unknown type — is an error result naming
the item, and the loop goes on: it never reaches the request (the API would refuse it whole)
and never breaks the loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import AgentOptions, ResultMessage, create_sdk_mcp_server, query, tool
from agents.mcp._rpc import decode_call_result
from agents.testing import ScriptedBackend, Step, text, tool_use
from agents.tools._sdk_content import _converted, sdk_blocks
from agents.tools.base import NO_CONTEXT


async def run_tool_returning(result: Any, cwd: Path) -> tuple[dict[str, Any], ResultMessage]:
    """One call of a tool whose handler returns ``result``; the tool result the model got."""

    @tool("t", "returns what the test gives", {})
    async def handler(args: dict[str, Any]) -> Any:
        return result

    backend = ScriptedBackend([Step([tool_use("mcp__s__t", {}, id="c1")]), Step([text("done")])])
    options = AgentOptions(
        cwd=str(cwd),
        backend=backend,
        mcp_servers={"s": create_sdk_mcp_server("s", "1", [handler])},
        permission_mode="bypassPermissions",
    )
    results = [m async for m in query(prompt="go", options=options) if isinstance(m, ResultMessage)]
    (final,) = results
    block: dict[str, Any] = backend.requests[1].messages[-1]["content"][0]
    assert block["type"] == "tool_result"
    return block, final


MALFORMED = [
    ({"content": [1, 2]}, "content[0] of type int; expected a dict with 'type'"),
    ({"content": [{"type": "text", "text": 5}]}, "content[0].text of type int; expected a str"),
    ({"content": [{"type": "text"}]}, "content[0].text of type NoneType; expected a str"),
    ({"content": [{"type": "image"}]}, "content[0]: an image needs 'data' and 'mimeType'"),
    ({"content": [{"text": "x", "kind": "text"}]}, "content[0] of type None; expected one of"),
    ({"content": [{"type": "video", "url": "u"}]}, "content[0] of type 'video'; expected one of"),
    ({"content": [{"type": "resource"}]}, "content[0]: a resource needs a 'resource' dict"),
    ({"content": [{"type": "document"}]}, "content[0]: a document needs a 'source' dict"),
    ({"content": 5}, "content of type int; expected a list of content items"),
    ({"content": [{"type": "text", "text": "ok"}, None]}, "content[1] of type NoneType"),
]


@pytest.mark.parametrize(("result", "error"), MALFORMED)
async def test_a_malformed_result_is_an_error_result_and_the_loop_goes_on(
    result: Any, error: str, tmp_path: Path
) -> None:
    block, final = await run_tool_returning(result, tmp_path)
    assert block["is_error"] is True
    assert block["content"].startswith(f"tool mcp__s__t returned {error}"), block
    assert final.subtype == "success"


async def test_an_mcp_image_reaches_the_model_as_an_api_image(tmp_path: Path) -> None:
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    block, _ = await run_tool_returning({"content": [image]}, tmp_path)
    source = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    assert block["content"] == [{"type": "image", "source": source}]


async def test_an_api_image_and_a_text_with_mcp_annotations_reach_the_model_as_api_blocks(
    tmp_path: Path,
) -> None:
    source = {"type": "url", "url": "https://example.com/a.png"}
    items = [
        {"type": "image", "source": source},
        {"type": "text", "text": "hi", "annotations": {"priority": 1}, "_meta": {}},
    ]
    block, _ = await run_tool_returning({"content": items}, tmp_path)
    assert block["content"] == [
        {"type": "image", "source": source},
        {"type": "text", "text": "hi"},
    ]


_texts = st.text(max_size=8)
MCP_ITEMS = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, _texts),
    st.builds(
        lambda t, extra: {"type": "text", "text": t, **extra},
        _texts,
        st.fixed_dictionaries({}, optional={"annotations": st.just({"priority": 0.5})}),
    ),
    st.builds(lambda d, m: {"type": "image", "data": d, "mimeType": m}, _texts, _texts),
    st.builds(lambda d, m: {"type": "audio", "data": d, "mimeType": m}, _texts, _texts),
    st.builds(lambda u, n: {"type": "resource_link", "uri": u, "name": n}, _texts, _texts),
    st.builds(
        lambda u, body, m: {"type": "resource", "resource": {"uri": u, **body, "mimeType": m}},
        _texts,
        st.one_of(
            st.builds(lambda t: {"text": t}, _texts),
            st.builds(lambda b: {"blob": b}, _texts),
            st.just({}),
        ),
        _texts,
    ),
)


@given(items=st.lists(MCP_ITEMS, max_size=5))
def test_mcp_items_convert_as_an_external_servers_result(items: list[dict[str, Any]]) -> None:
    """The in-process conversion and the MCP client's agree on every MCP content item."""
    external = decode_call_result(msgspec.Raw(msgspec.json.encode({"content": items})))
    assert sdk_blocks(items) == external.content


#: dicts near a plain text item: a field missing, of another type, or one too many
TEXTISH = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["text", "text", "image", None]),
        "text": st.one_of(_texts, _texts, st.integers()),
        "kind": st.just("text"),
    },
)


@settings(max_examples=600)
@given(items=st.lists(st.one_of(TEXTISH, MCP_ITEMS, st.integers()), max_size=4))
def test_the_plain_text_shortcut_answers_as_the_item_by_item_conversion(
    items: list[Any],
) -> None:
    assert sdk_blocks(items) == _converted(items)


@settings(max_examples=300)
@given(item=st.one_of(TEXTISH, MCP_ITEMS, st.integers()), is_error=st.booleans())
def test_the_wrappers_one_item_shortcut_answers_as_the_conversion(
    item: Any, is_error: bool
) -> None:
    """An in-process tool returning one content item: what the wrapper makes of it at once is
    what the conversion makes of it."""

    @tool("t", "returns the item", {})
    async def handler(args: dict[str, Any]) -> Any:
        return {"content": [item], "is_error": is_error}

    (wrapped,) = create_sdk_mcp_server("s", "1", [handler]).as_tools("s")
    output = trio.run(wrapped.handler, {}, NO_CONTEXT)
    expected = sdk_blocks([item])
    if isinstance(expected, str):
        assert (output.content, output.is_error) == (f"tool mcp__s__t returned {expected}", True)
    else:
        assert (output.content, output.is_error) == (expected, is_error)
