"""Shared helpers for the agents tests: collecting a query, timed custom tools."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import trio

from agents import (
    AgentOptions,
    Message,
    ResultError,
    ResultMessage,
    ToolAnnotations,
    create_sdk_mcp_server,
    query,
    tool,
)
from agents.tools.base import SdkMcpServer


async def collect(prompt: str, options: AgentOptions) -> tuple[list[Message], ResultError | None]:
    """All messages of a single-shot query, and the ResultError it raised (if any)."""
    messages: list[Message] = []
    try:
        async for message in query(prompt=prompt, options=options):
            messages.append(message)
    except ResultError as exc:
        return messages, exc
    return messages, None


def result_of(messages: Sequence[Message]) -> ResultMessage:
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert results, "no ResultMessage in the stream"
    return results[-1]


def timed_tools(log: list[tuple[str, str, float]], durations: dict[str, float]) -> SdkMcpServer:
    """A server with a read-only ``look`` and a mutating ``poke`` tool that sleep (Trio time)
    and log ``(name, "start"|"end", time)`` so tests can check overlap."""

    def make(name: str, read_only: bool) -> Any:
        @tool(
            name,
            f"{name} something",
            {"key": str},
            annotations=ToolAnnotations(readOnlyHint=read_only),
        )
        async def handler(args: dict[str, Any]) -> dict[str, Any]:
            key = args["key"]
            log.append((key, "start", trio.current_time()))
            await trio.sleep(durations.get(key, 1.0))
            log.append((key, "end", trio.current_time()))
            return {"content": [{"type": "text", "text": f"{name}:{key}"}]}

        return handler

    return create_sdk_mcp_server("t", "1.0", [make("look", True), make("poke", False)])
