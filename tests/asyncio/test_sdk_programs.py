"""Programs in the Agent SDK's style, run under asyncio with only their import changed.

Each test is a small program as the SDK's documentation writes them (``ClaudeAgentOptions``,
``ClaudeSDKClient``, ``@tool`` and ``create_sdk_mcp_server``, hooks, ``can_use_tool``, agents,
``max_budget_usd``), its callbacks plain asyncio code, run with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path
from typing import Any

import pytest

from agents.asyncio import (
    AgentDefinition,
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultError,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolPermissionContext,
    ToolResultBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from agents.asyncio.types import HookContext, HookInput, HookJSONOutput
from agents.testing import ScriptedBackend, Step, text, tool_use, usage

from .conftest import assert_nothing_left, serving, wait_until_closed

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


def calculator(calls: list[dict[str, Any]]) -> Any:
    """An in-process MCP server whose ``add`` tool is asyncio code."""

    @tool("add", "Add two numbers", {"a": float, "b": float})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.001)  # an asyncio await: it runs on the caller's loop
        calls.append({**args, "request_id": request_id.get()})
        return {"content": [{"type": "text", "text": f"{args['a'] + args['b']:g}"}]}

    return create_sdk_mcp_server(name="calc", version="1.0.0", tools=[add])


def tool_results(messages: list[Any]) -> list[ToolResultBlock]:
    return [
        block
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for block in m.content
        if isinstance(block, ToolResultBlock)
    ]


def test_a_query_against_the_fake_api_server_runs_under_asyncio_run(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real anthropic client, configured by the environment as the SDK's is: the stream
    of the native query, in order, and its HTTP connection closed at the end."""
    with serving([Step([text("Hello from the fake API")])]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")

        async def main() -> list[Any]:
            options = ClaudeAgentOptions(cwd=str(project), tools=[])
            messages = [m async for m in query(prompt="Say hello", options=options)]
            assert_nothing_left()
            return messages

        messages = asyncio.run(main())
        assert wait_until_closed(server) == 0
        assert "Say hello" in str(server.requests[0].body["messages"])
    kinds = [type(m).__name__ for m in messages]
    assert kinds == ["SystemMessage", "AssistantMessage", "ResultMessage", "SystemMessage"]
    result = messages[2]
    assert isinstance(result, ResultMessage) and result.result == "Hello from the fake API"


def test_an_in_process_tool_handler_runs_on_the_loop_in_the_callers_context(
    project: Path,
) -> None:
    """@tool handler awaits asyncio and sees the context variables of the query's caller."""
    calls: list[dict[str, Any]] = []
    backend = ScriptedBackend(
        [Step([tool_use("mcp__calc__add", {"a": 2, "b": 3})]), Step([text("5")])]
    )

    async def main() -> list[Any]:
        request_id.set("req-7")
        options = ClaudeAgentOptions(
            cwd=str(project),
            tools=[],
            backend=backend,
            mcp_servers={"calc": calculator(calls)},
            allowed_tools=["mcp__calc__add"],
        )
        return [m async for m in query(prompt="2+3?", options=options)]

    messages = asyncio.run(main())
    assert calls == [{"a": 2, "b": 3, "request_id": "req-7"}]
    [result] = tool_results(messages)
    assert result.content == [{"type": "text", "text": "5"}] and not result.is_error


def test_a_pre_tool_use_hook_written_for_asyncio_denies_a_call(project: Path) -> None:
    """A PreToolUse hook (asyncio code) denies; a PostToolUse hook sees the allowed call."""
    seen: list[tuple[str, str]] = []
    backend = ScriptedBackend(
        [
            Step([tool_use("mcp__calc__add", {"a": 1, "b": 1}, id="t1")]),
            Step([tool_use("mcp__calc__add", {"a": 13, "b": 0}, id="t2")]),
            Step([text("done")]),
        ]
    )

    async def no_thirteen(
        input_data: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        await asyncio.sleep(0)
        seen.append(("pre", input_data["tool_name"]))
        if input_data["tool_input"].get("a") == 13:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "13 is unlucky",
                }
            }
        return {}

    async def audit(
        input_data: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        await asyncio.sleep(0)
        seen.append(("post", str(tool_use_id)))
        return {}

    async def main() -> list[Any]:
        options = ClaudeAgentOptions(
            cwd=str(project),
            tools=[],
            backend=backend,
            mcp_servers={"calc": calculator([])},
            allowed_tools=["mcp__calc__add"],
            hooks={
                "PreToolUse": [HookMatcher(matcher="mcp__calc__add", hooks=[no_thirteen])],
                "PostToolUse": [HookMatcher(hooks=[audit])],
            },
        )
        return [m async for m in query(prompt="add", options=options)]

    messages = asyncio.run(main())
    first, second = tool_results(messages)
    assert not first.is_error and second.is_error
    assert "13 is unlucky" in str(second.content)
    assert seen == [("pre", "mcp__calc__add"), ("post", "t1"), ("pre", "mcp__calc__add")]


def test_can_use_tool_waits_for_an_answer_from_another_asyncio_task(project: Path) -> None:
    """can_use_tool asks a reviewer task through an asyncio.Queue and returns its answer."""
    backend = ScriptedBackend(
        [
            Step([tool_use("mcp__calc__add", {"a": 1, "b": 2}, id="ok")]),
            Step([tool_use("mcp__calc__add", {"a": 5, "b": 5}, id="no")]),
            Step([text("done")]),
        ]
    )

    async def main() -> tuple[list[Any], list[str]]:
        questions: asyncio.Queue[tuple[str, dict[str, Any], asyncio.Future[bool]]] = (
            asyncio.Queue()
        )
        asked: list[str] = []

        async def reviewer() -> None:  # like a UI handler answering permission prompts
            while True:
                name, tool_input, answer = await questions.get()
                asked.append(name)
                answer.set_result(tool_input["a"] < 5)

        async def can_use_tool(
            tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
        ) -> PermissionResultAllow | PermissionResultDeny:
            answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            await questions.put((tool_name, tool_input, answer))
            if await answer:
                return PermissionResultAllow()
            return PermissionResultDeny(message="the reviewer said no")

        review = asyncio.create_task(reviewer())
        options = ClaudeAgentOptions(
            cwd=str(project),
            tools=[],
            backend=backend,
            mcp_servers={"calc": calculator([])},
            can_use_tool=can_use_tool,
        )

        async def prompts() -> Any:
            yield {"type": "user", "message": {"role": "user", "content": "add things"}}

        messages = [m async for m in query(prompt=prompts(), options=options)]
        review.cancel()
        return messages, asked

    messages, asked = asyncio.run(main())
    assert asked == ["mcp__calc__add", "mcp__calc__add"]
    allowed, denied = tool_results(messages)
    assert not allowed.is_error and denied.is_error
    assert "the reviewer said no" in str(denied.content)


def test_a_streaming_client_answers_two_prompts_with_receive_response(project: Path) -> None:
    """ClaudeSDKClient: query / receive_response twice; the second request carries the first."""
    backend = ScriptedBackend([Step([text("Paris")]), Step([text("About 2 million")])])

    async def main() -> list[str]:
        answers: list[str] = []
        options = ClaudeAgentOptions(cwd=str(project), tools=[], backend=backend)
        async with ClaudeSDKClient(options=options) as client:
            for question in ("Capital of France?", "Its population?"):
                await client.query(question)
                async for message in client.receive_response():
                    if isinstance(message, AssistantMessage):
                        for block in message.content:
                            if isinstance(block, TextBlock):
                                answers.append(block.text)
        assert_nothing_left()
        return answers

    assert asyncio.run(main()) == ["Paris", "About 2 million"]
    assert backend.requests[1].messages[:3] == [
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Paris"}]},
        {"role": "user", "content": "Its population?"},
    ]


def test_client_interrupt_cancels_the_running_tool_and_the_next_prompt_runs(
    project: Path,
) -> None:
    """interrupt() while an asyncio tool handler waits: the handler is cancelled, the turn ends
    aborted, and the next prompt is answered."""
    backend = ScriptedBackend(
        [Step([tool_use("mcp__slow__wait", {"key": "x"})]), Step([text("answer 2")])]
    )

    async def main() -> tuple[list[ResultMessage], list[str]]:
        events: list[str] = []
        started = asyncio.Event()

        @tool("wait", "Wait for a long time", {"key": str})
        async def wait(args: dict[str, Any]) -> dict[str, Any]:
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                events.append("handler cancelled")
                raise
            return {"content": "never"}

        options = ClaudeAgentOptions(
            cwd=str(project),
            tools=[],
            backend=backend,
            mcp_servers={"slow": create_sdk_mcp_server("slow", tools=[wait])},
            allowed_tools=["mcp__slow__wait"],
        )
        results: list[ResultMessage] = []
        async with ClaudeSDKClient(options) as client:
            await client.query("M1")
            await started.wait()
            await client.interrupt()
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    results.append(message)
            assert events == ["handler cancelled"]  # by the interrupt, before anything else
            await client.query("M2")
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    results.append(message)
        return results, events

    (first, second), events = asyncio.run(main())
    assert events == ["handler cancelled"]
    assert first.subtype == "error_during_execution" and first.terminal_reason == "aborted_tools"
    assert second.result == "answer 2"


def test_subagents_defined_with_agent_definition_run_from_asyncio(project: Path) -> None:
    """The model spawns a defined agent with the Agent tool; its answer comes back."""
    backend = ScriptedBackend(
        {
            "main": [
                Step(
                    [
                        tool_use(
                            "Agent",
                            {
                                "description": "review",
                                "prompt": "Review the code",
                                "subagent_type": "code-reviewer",
                            },
                        )
                    ]
                ),
                Step([text("The reviewer found nothing.")]),
            ],
            "code-reviewer": [Step([text("Looks good.")])],
        }
    )

    async def main() -> list[Any]:
        options = ClaudeAgentOptions(
            cwd=str(project),
            tools=["Agent"],
            backend=backend,
            permission_mode="bypassPermissions",
            agents={
                "code-reviewer": AgentDefinition(
                    description="Reviews code", prompt="You review code.", tools=[]
                )
            },
        )
        return [m async for m in query(prompt="Review this project", options=options)]

    messages = asyncio.run(main())
    [agent_result] = tool_results(messages)
    assert "Looks good." in str(agent_result.content)
    result = next(m for m in messages if isinstance(m, ResultMessage))
    assert result.result == "The reviewer found nothing."
    init = messages[0]
    assert isinstance(init, SystemMessage) and init.data["agents"] == ["code-reviewer"]


def test_max_budget_usd_ends_with_its_error_result_then_result_error(project: Path) -> None:
    """Over max_budget_usd: the error result is yielded, then ResultError is raised."""
    backend = ScriptedBackend(
        [
            Step([tool_use("mcp__calc__add", {"a": 1, "b": 1})], usage=usage(1000, 1000)),
            Step([text("unreachable")]),
        ]
    )

    async def main() -> tuple[list[Any], ResultError]:
        options = ClaudeAgentOptions(
            cwd=str(project),
            tools=[],
            model="test-model",
            backend=backend,
            mcp_servers={"calc": calculator([])},
            allowed_tools=["mcp__calc__add"],
            max_budget_usd=0.5,
            pricing={"test-model": {"input": 1000.0, "output": 1000.0}},
        )
        messages: list[Any] = []
        with pytest.raises(ResultError) as caught:
            async for message in query(prompt="spend", options=options):
                messages.append(message)
        return messages, caught.value

    messages, error = asyncio.run(main())
    result = next(m for m in messages if isinstance(m, ResultMessage))
    assert result.subtype == "error_max_budget_usd"
    assert error.subtype == "error_max_budget_usd" and error.result is result


def test_a_prompt_stream_from_an_asyncio_generator_feeds_a_query(project: Path) -> None:
    """An async generator of SDK user-message dicts (awaiting asyncio) is the streaming input."""
    backend = ScriptedBackend([Step([text("one")]), Step([text("two")])])

    async def main() -> list[str | None]:
        async def prompts() -> Any:
            for content in ("first", "second"):
                await asyncio.sleep(0.001)
                yield {"type": "user", "message": {"role": "user", "content": content}}

        options = ClaudeAgentOptions(cwd=str(project), tools=[], backend=backend)
        return [
            m.result
            async for m in query(prompt=prompts(), options=options)
            if isinstance(m, ResultMessage)
        ]

    assert asyncio.run(main()) == ["one", "two"]


class DictStore:
    """A session store written for asyncio: transcripts in a dict, each call awaiting the loop."""

    def __init__(self) -> None:
        self.entries: dict[Any, list[Any]] = {}
        self.calls: list[str] = []

    async def append(self, key: Any, entries: Any) -> None:
        await asyncio.sleep(0)
        self.calls.append("append")
        self.entries.setdefault(key, []).extend(entries)

    async def load(self, key: Any) -> list[Any] | None:
        await asyncio.sleep(0)
        self.calls.append("load")
        found = self.entries.get(key)
        return list(found) if found is not None else None

    async def delete(self, key: Any) -> None:
        await asyncio.sleep(0)
        self.entries.pop(key, None)

    async def list_subkeys(self, key: Any) -> list[str]:
        await asyncio.sleep(0)
        return []


def test_a_session_store_written_for_asyncio_records_and_resumes_a_session(
    project: Path,
) -> None:
    """session_store=<an asyncio store>: the transcript goes there; resume reads it back."""
    backend = ScriptedBackend([Step([text("first answer")]), Step([text("second answer")])])
    store = DictStore()

    async def main() -> str:
        options = ClaudeAgentOptions(
            cwd=str(project), tools=[], backend=backend, session_store=store
        )
        first = [m async for m in query(prompt="remember this", options=options)]
        session_id = next(m for m in first if isinstance(m, ResultMessage)).session_id
        resumed = ClaudeAgentOptions(
            cwd=str(project), tools=[], backend=backend, session_store=store, resume=session_id
        )
        async for _ in query(prompt="and now?", options=resumed):
            pass
        return session_id

    asyncio.run(main())
    assert "append" in store.calls and "load" in store.calls
    assert backend.requests[1].messages[:2] == [
        {"role": "user", "content": "remember this"},
        {"role": "assistant", "content": [{"type": "text", "text": "first answer"}]},
    ]
