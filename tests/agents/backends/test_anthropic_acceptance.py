"""Issue 3 acceptance: whole sessions through AnthropicBackend + FakeAnthropicServer.

Real sockets, real (tiny) time: retries use ``retry_base_delay=0.001``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from agents import (
    AgentOptions,
    AssistantMessage,
    Message,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolAnnotations,
    create_sdk_mcp_server,
    tool,
)
from agents.backends import AnthropicBackend
from agents.messages import encode_message
from agents.testing import FakeAnthropicServer, ScriptedBackend
from agents.testing.scripted import Fault, Step, text, tool_use, usage
from agents.tools.base import SdkMcpServer

from ..helpers import collect, result_of

EPHEMERAL = {"type": "ephemeral"}


def lookup_server() -> SdkMcpServer:
    """A read-only custom tool answering ``value of <key>``."""

    @tool("lookup", "Look a key up", {"key": str}, annotations=ToolAnnotations(readOnlyHint=True))
    async def lookup(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"value of {args['key']}"}]}

    return create_sdk_mcp_server("kv", "1.0", [lookup])


def two_turn_script() -> list[Step]:
    return [
        Step(
            [
                text("Looking up four keys."),
                *(tool_use("mcp__kv__lookup", {"key": k}, id=f"toolu_{k}") for k in "abcd"),
            ],
            usage=usage(1000, 60, cache_creation_input_tokens=800),
        ),
        Step([text("All four found.")], usage=usage(1100, 20, cache_read_input_tokens=800)),
    ]


def options(project: Path, backend: Any, **kw: Any) -> AgentOptions:
    return AgentOptions(
        backend=backend, cwd=project, mcp_servers={"kv": lookup_server()}, tools=[], **kw
    )


def fast_backend(server: FakeAnthropicServer, **kw: Any) -> AnthropicBackend:
    kw.setdefault("retry_base_delay", 0.001)
    kw.setdefault("retry_max_delay", 0.01)
    return AnthropicBackend(api_key="test-key", base_url=server.base_url, **kw)


_VOLATILE = {"uuid", "session_id", "message_id", "duration_ms", "duration_api_ms"}


def normalized(messages: list[Message]) -> list[Any]:
    """Messages as JSON with per-run values (ids, durations) removed, and each run of tool
    results sorted: concurrent tools report in the order they finish, the model in call order."""

    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items() if k not in _VOLATILE}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    out: list[Any] = []
    run: list[Any] = []
    for message in messages:
        item = scrub(msgspec.json.decode(encode_message(message)))
        if item["type"] == "user" and isinstance(item["content"], list):
            run.append(item)
            continue
        out += sorted(run, key=lambda m: str(m["content"][0].get("tool_use_id")))
        run = []
        out.append(item)
    return out + run


async def test_two_turn_parallel_tools_match_scripted_backend(project: Path) -> None:
    """Two turns with four parallel tool calls stream the same messages on both backends."""
    scripted_backend = ScriptedBackend(two_turn_script())
    scripted, _ = await collect("look them up", options(project, scripted_backend))
    async with FakeAnthropicServer(two_turn_script()) as server, fast_backend(server) as backend:
        real, error = await collect(
            "look them up",
            options(project, backend, effort="high", thinking={"type": "adaptive"}),
        )
    assert error is None
    assert normalized(real) == normalized(scripted)
    result = result_of(real)
    assert (result.subtype, result.num_turns, result.result) == ("success", 2, "All four found.")
    assert result.usage["cache_read_input_tokens"] == 800
    server.assert_consumed()

    first, second = (r.body for r in server.requests)
    results = second["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in results] == [f"toolu_{k}" for k in "abcd"]
    assert results[0]["content"] in ("value of a", [{"type": "text", "text": "value of a"}])
    for body in (first, second):
        assert body["system"][-1]["cache_control"] == EPHEMERAL
        assert body["tools"][-1]["cache_control"] == EPHEMERAL
        assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
        assert body["output_config"] == {"effort": "high"}
        assert body["thinking"] == {"type": "adaptive"}
    # Only the newest message carries the message breakpoint: the history is not mutated.
    assert all(
        "cache_control" not in block
        for message in second["messages"][:-1]
        for block in (message["content"] if isinstance(message["content"], list) else [])
    )


async def test_429_then_529_then_success_retries_twice(project: Path) -> None:
    """Two retryable failures give two api_retry messages, then success."""
    script = [
        Step(fault=Fault(status=429, message="rate limited", retry_after=0.002)),
        Step(fault=Fault(status=529, message="Overloaded")),
        Step([text("finally")]),
    ]
    async with FakeAnthropicServer(script) as server, fast_backend(server) as backend:
        messages, error = await collect("hi", options(project, backend))
    retries = [m for m in messages if isinstance(m, SystemMessage) and m.subtype == "api_retry"]
    assert [r.data["attempt"] for r in retries] == [1, 2]
    assert "429" in retries[0].data["error"] and "529" in retries[1].data["error"]
    assert retries[0].data["delay_s"] >= 0.002
    assert error is None
    assert result_of(messages).result == "finally"


async def test_stream_dropped_after_three_events_is_retried_whole(project: Path) -> None:
    """A cut stream is retried; the transcript holds only the complete response."""
    script = [
        Step([text("partial answer"), text("more")], fault=Fault(drop_after=3)),
        Step([text("complete answer")]),
    ]
    async with FakeAnthropicServer(script) as server, fast_backend(server) as backend:
        messages, error = await collect("hi", options(project, backend))
    assert error is None
    assistant_text = [
        b.text for m in messages if isinstance(m, AssistantMessage)
        for b in m.content if isinstance(b, TextBlock)
    ]
    assert assistant_text == ["complete answer"]
    assert sum(isinstance(m, SystemMessage) and m.subtype == "api_retry" for m in messages) == 1
    # The retried request carries no trace of the failed attempt.
    assert server.requests[1].body["messages"] == server.requests[0].body["messages"]


async def test_five_500s_with_two_retries_end_in_api_error(project: Path) -> None:
    """Exhausted retries end with error_during_execution naming the status."""
    script = [Step(fault=Fault(status=500, message="internal boom")) for _ in range(5)]
    async with (
        FakeAnthropicServer(script) as server,
        fast_backend(server, max_retries=2) as backend,
    ):
        messages, error = await collect("hi", options(project, backend))
    result = result_of(messages)
    assert (result.subtype, result.terminal_reason, result.is_error) == (
        "error_during_execution", "api_error", True,
    )
    assert result.errors and "500" in result.errors[0] and "internal boom" in result.errors[0]
    assert error is not None
    assert len(server.requests) == 3
    assert server.remaining() == {"main": 2}


async def test_400_is_not_retried(project: Path) -> None:
    """A 400 ends the run at once with error_during_execution."""
    script = [Step(fault=Fault(status=400, message="bad request body")), Step([text("unused")])]
    async with FakeAnthropicServer(script) as server, fast_backend(server) as backend:
        messages, _ = await collect("hi", options(project, backend))
    result = result_of(messages)
    assert (result.subtype, result.terminal_reason) == ("error_during_execution", "api_error")
    assert result.errors and "400" in result.errors[0]
    assert not any(isinstance(m, SystemMessage) and m.subtype == "api_retry" for m in messages)
    assert len(server.requests) == 1


async def test_partial_messages_build_each_assistant_message(project: Path) -> None:
    """Each response's text_deltas concatenate to its AssistantMessage text and come before it."""
    script = [
        Step([text("Checking."), tool_use("mcp__kv__lookup", {"key": "a"}, id="toolu_1")]),
        Step([text("The value "), text("is a.")]),
    ]
    async with FakeAnthropicServer(script) as server, fast_backend(server) as backend:
        messages, error = await collect(
            "hi", options(project, backend, include_partial_messages=True)
        )
    assert error is None
    pending = ""
    checked = 0
    for message in messages:
        if isinstance(message, StreamEvent):
            event = message.event
            if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
                pending += event["delta"]["text"]
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextBlock):
                    assert pending.startswith(block.text), "deltas must precede the message"
                    pending = pending[len(block.text):]
                    checked += 1
    assert checked == 3 and pending == ""
    assert any(isinstance(m, ResultMessage) for m in messages)
