"""The agent loop on a scripted backend: stream order, turns, limits, tool errors, scheduling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

import agents._assembly.query
from agents import (
    AgentOptions,
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolAnnotations,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from agents.backends.base import ContentBlockDelta
from agents.testing import Fault, ScriptedBackend, Step, text, tool_use, usage
from agents.tools.base import Tool, ToolContext, ToolOutput, ToolRegistry

from .helpers import collect, result_of, timed_tools

AUTH_TS = "export function login(user, pass) {\n  return user === pass; // BUG\n}\n"
AUTH_TEST = "test('login', () => expect(login('a', 'b')).toBe(true));\n"


def seed_backend(root: Path) -> ScriptedBackend:
    """The seed page's session: Bash → Read ×2 → Edit + Bash → final text (four turns)."""
    auth, test = str(root / "auth.ts"), str(root / "auth.test.ts")
    return ScriptedBackend(
        [
            Step([tool_use("Bash", {"command": "grep -c BUG auth.ts"})]),
            Step(
                [
                    tool_use("Read", {"file_path": auth}),
                    tool_use("Read", {"file_path": test}),
                ]
            ),
            Step(
                [
                    tool_use(
                        "Edit",
                        {
                            "file_path": auth,
                            "old_string": "user === pass; // BUG",
                            "new_string": "checkPassword(user, pass);",
                        },
                    ),
                    tool_use("Bash", {"command": "grep -c BUG auth.ts || echo fixed"}),
                ]
            ),
            Step([text("Fixed the authentication bug; all three tests now pass.")]),
        ]
    )


def seed_project(root: Path) -> None:
    (root / "auth.ts").write_text(AUTH_TS)
    (root / "auth.test.ts").write_text(AUTH_TEST)


async def test_seed_session_streams_in_spec_order(project: Path) -> None:
    """init, one AssistantMessage per block, one UserMessage per result, final text, 4 turns."""
    seed_project(project)
    backend = seed_backend(project)
    options = AgentOptions(cwd=str(project), backend=backend, permission_mode="bypassPermissions")
    messages, error = await collect("Fix the failing tests in auth.ts", options)
    assert error is None
    kinds = [type(m).__name__ for m in messages]
    assert kinds == [
        "SystemMessage",
        "AssistantMessage", "UserMessage",
        "AssistantMessage", "AssistantMessage", "UserMessage", "UserMessage",
        "AssistantMessage", "AssistantMessage", "UserMessage", "UserMessage",
        "AssistantMessage",
        "ResultMessage",
        "SystemMessage",  # trailing: the session's spend per agent
    ]  # fmt: skip
    assert isinstance(messages[-1], SystemMessage) and messages[-1].subtype == "session_summary"
    init = messages[0]
    assert isinstance(init, SystemMessage) and init.subtype == "init"
    assert {
        "session_id",
        "cwd",
        "model",
        "tools",
        "permission_mode",
        "agents",
        "mcp_servers",
    } <= set(init.data)
    reads = [m for m in messages[3:5] if isinstance(m, AssistantMessage)]
    assert reads[0].message_id == reads[1].message_id != ""
    result = result_of(messages)
    assert result.subtype == "success"
    assert result.num_turns == 4
    assert result.result == "Fixed the authentication bug; all three tests now pass."
    assert result.session_id == init.data["session_id"]
    assert "checkPassword" in (project / "auth.ts").read_text()
    backend.assert_consumed()


async def test_seed_session_with_max_turns_2_stops_before_the_edit(project: Path) -> None:
    """max_turns=2: error_max_turns after two turns, no edit, ResultError after the result."""
    seed_project(project)
    options = AgentOptions(
        cwd=str(project),
        backend=seed_backend(project),
        permission_mode="bypassPermissions",
        max_turns=2,
    )
    messages, error = await collect("Fix the failing tests in auth.ts", options)
    result = result_of(messages)
    assert result.subtype == "error_max_turns"
    assert result.num_turns == 2
    assert result.errors == ["Reached maximum number of turns (2)"]
    assert result.result is None and result.is_error
    assert (project / "auth.ts").read_text() == AUTH_TS
    assert error is not None
    assert str(error) == "Reached maximum number of turns (2)"
    assert error.subtype == "error_max_turns" and error.session_id == result.session_id


async def test_max_turns_counts_the_final_text_turn(project: Path) -> None:
    """A two-turn session passes with max_turns=2 and fails with max_turns=1."""

    def backend() -> ScriptedBackend:
        return ScriptedBackend([Step([tool_use("Glob", {"pattern": "*"})]), Step([text("done")])])

    ok, _ = await collect("go", AgentOptions(cwd=str(project), backend=backend(), max_turns=2))
    assert result_of(ok).subtype == "success" and result_of(ok).num_turns == 2
    cut, err = await collect("go", AgentOptions(cwd=str(project), backend=backend(), max_turns=1))
    assert result_of(cut).subtype == "error_max_turns" and err is not None


def _failing_tools() -> Any:
    @tool("boom", "raises", {"x": int}, annotations=ToolAnnotations(readOnlyHint=True))
    async def boom(args: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("kaboom")

    @tool("typed", "needs an int", {"x": int}, annotations=ToolAnnotations(readOnlyHint=True))
    async def typed(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "ok"}]}

    return create_sdk_mcp_server("t", "1.0", [boom, typed])


async def test_a_tool_handler_gets_its_calls_context(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ToolContext a handler gets names its call, agent, session, model and cwd."""
    seen: list[ToolContext] = []

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        seen.append(ctx)
        return ToolOutput("ok")

    probe = Tool("Probe", "probe", {"type": "object"}, handler, read_only=True)
    build_registry = agents._assembly.query.build_registry

    def with_probe(options: AgentOptions) -> ToolRegistry:
        registry = build_registry(options)
        registry.add(probe)
        return registry

    monkeypatch.setattr(agents._assembly.query, "build_registry", with_probe)
    backend = ScriptedBackend([Step([tool_use("Probe", {}, id="toolu_probe")]), Step([text("ok")])])
    options = AgentOptions(cwd=str(project), backend=backend, tools=[])
    messages, error = await collect("go", options)
    assert error is None
    init = messages[0]
    assert isinstance(init, SystemMessage)
    [ctx] = seen
    assert (ctx.cwd, ctx.agent_id, ctx.tool_use_id, ctx.session_id, ctx.model) == (
        str(project),
        "main",
        "toolu_probe",
        init.data["session_id"],
        init.data["model"],
    )
    assert ctx.agent is not None and ctx.nursery is not None and ctx.complete is not None


async def test_tool_errors_become_error_results_and_the_loop_continues(project: Path) -> None:
    """A raising tool, an unknown tool and bad input each give an error result; then success."""
    backend = ScriptedBackend(
        [
            Step(
                [
                    tool_use("mcp__t__boom", {"x": 1}),
                    tool_use("Nope", {}),
                    tool_use("mcp__t__typed", {"x": "not an int"}),
                ]
            ),
            Step([text("recovered")]),
        ]
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, tools=[], mcp_servers={"t": _failing_tools()}
    )
    messages, error = await collect("go", options)
    assert error is None
    results = {
        b.tool_use_id: b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    }
    texts = [str(b.content) for b in results.values()]
    assert all(b.is_error for b in results.values())
    assert any("kaboom" in t for t in texts)
    assert any(t.startswith("No such tool available: Nope") for t in texts)
    assert any("invalid input for mcp__t__typed" in t and "$.x" in t for t in texts)
    assert result_of(messages).subtype == "success"
    # the model saw all three errors, in call order
    sent = backend.requests[1].messages[-1]["content"]
    assert [c["tool_use_id"] for c in sent] == list(results)


async def test_read_only_calls_overlap_and_mutating_calls_run_alone(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """[R, R, W, R, R] runs as {R, R} → W → {R, R}; results go back in call order."""
    log: list[tuple[str, str, float]] = []
    durations = {"r1": 2.0, "r2": 1.0, "w": 1.0, "r3": 1.0, "r4": 3.0}
    calls = [
        tool_use("mcp__t__look", {"key": "r1"}),
        tool_use("mcp__t__look", {"key": "r2"}),
        tool_use("mcp__t__poke", {"key": "w"}),
        tool_use("mcp__t__look", {"key": "r3"}),
        tool_use("mcp__t__look", {"key": "r4"}),
    ]
    backend = ScriptedBackend([Step(calls), Step([text("ok")])])
    options = AgentOptions(
        cwd=str(project),
        backend=backend,
        tools=[],
        mcp_servers={"t": timed_tools(log, durations)},
        permission_mode="bypassPermissions",
    )
    t0 = trio.current_time()
    messages, _ = await collect("go", options)
    times = {(k, e): t - t0 for k, e, t in log}
    assert times[("r1", "start")] == times[("r2", "start")] == 0
    assert times[("w", "start")] == 2.0 and times[("w", "end")] == 3.0
    assert times[("r3", "start")] == times[("r4", "start")] == 3.0
    # emitted as they finish: r2 before r1
    emitted = [
        m.content[0].content
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
    ]
    assert emitted.index([{"type": "text", "text": "look:r2"}]) < emitted.index(
        [{"type": "text", "text": "look:r1"}]
    )
    # fed back in call order
    fed = backend.requests[1].messages[-1]["content"]
    assert [c["tool_use_id"] for c in fed] == [c.id for c in calls]


async def test_partial_messages_precede_the_blocks_they_build(project: Path) -> None:
    """include_partial_messages: text deltas concatenate to the AssistantMessage that follows."""
    backend = ScriptedBackend([Step([text("hello "), text("world")])])
    options = AgentOptions(cwd=str(project), backend=backend, include_partial_messages=True)
    messages, _ = await collect("hi", options)
    events = [m for m in messages if isinstance(m, StreamEvent)]
    assert events[0].event["type"] == "message_start"
    deltas = "".join(
        e.event["delta"]["text"] for e in events if e.event["type"] == "content_block_delta"
    )
    assistant = [m for m in messages if isinstance(m, AssistantMessage)]
    assert deltas == "".join(
        b.text for m in assistant for b in m.content if isinstance(b, TextBlock)
    )
    assert messages.index(events[-1]) < messages.index(assistant[0])


async def test_retries_emit_api_retry_and_then_succeed(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """429 then 529 then success → two api_retry messages, then success."""
    backend = ScriptedBackend(
        [
            Step(fault=Fault(status=429, message="slow down", retry_after=3)),
            Step(fault=Fault(status=529, message="overloaded")),
            Step([text("fine")]),
        ]
    )
    messages, error = await collect("hi", AgentOptions(cwd=str(project), backend=backend))
    retries = [m for m in messages if isinstance(m, SystemMessage) and m.subtype == "api_retry"]
    assert [r.data["attempt"] for r in retries] == [1, 2]
    assert retries[0].data["delay_s"] >= 3
    assert "429" in retries[0].data["error"]
    assert error is None and result_of(messages).result == "fine"


async def test_a_cut_stream_is_retried_whole(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A stream dropped after three events is retried; only the complete response is kept."""
    backend = ScriptedBackend(
        [
            Step([text("partial answer")], fault=Fault(drop_after=3)),
            Step([tool_use("Glob", {"pattern": "*"})]),
            Step([text("complete")]),
        ]
    )
    messages, _ = await collect("hi", AgentOptions(cwd=str(project), backend=backend))
    assistant_texts = [
        b.text
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, TextBlock)
    ]
    assert assistant_texts == ["complete"]
    history = backend.requests[-1].messages
    assert all("partial answer" not in str(m) for m in history)


async def test_exhausted_retries_and_client_errors_end_with_api_error(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Five 500s with max_retries=2 and a 400 both end in error_during_execution/api_error."""
    backend = ScriptedBackend([Step(fault=Fault(status=500, message="boom"))] * 5, max_retries=2)
    messages, error = await collect("hi", AgentOptions(cwd=str(project), backend=backend))
    result = result_of(messages)
    assert result.subtype == "error_during_execution" and result.terminal_reason == "api_error"
    assert "500" in (result.errors or [""])[0]
    assert (
        len([m for m in messages if isinstance(m, SystemMessage) and m.subtype == "api_retry"]) == 2
    )
    assert error is not None

    bad = ScriptedBackend([Step(fault=Fault(status=400, message="bad request"))])
    messages, _ = await collect("hi", AgentOptions(cwd=str(project), backend=bad))
    assert not [m for m in messages if isinstance(m, SystemMessage) and m.subtype == "api_retry"]
    assert result_of(messages).errors == ["API error 400: bad request"]


class _InputJsonAs:
    """``scripted``'s responses with every tool input's JSON replaced by ``partial_json``."""

    def __init__(self, scripted: ScriptedBackend, partial_json: str) -> None:
        self.scripted = scripted
        self.partial_json = partial_json

    async def stream(self, request: Any) -> Any:
        async for event in self.scripted.stream(request):
            if isinstance(event, ContentBlockDelta) and event.delta["type"] == "input_json_delta":
                event = ContentBlockDelta(
                    event.index, {"type": "input_json_delta", "partial_json": self.partial_json}
                )
            yield event


async def test_malformed_tool_input_json_is_an_error_result(project: Path) -> None:
    """A tool_use whose input JSON is cut off gives an error result, not a crash."""

    def responder(request: Any) -> Step:
        if len(request.messages) == 1:
            return Step(
                [tool_use("Glob", {"pattern": "*"}, id="toolu_bad")], stop_reason="max_tokens"
            )
        return Step([text("ok")])

    # every tool input's JSON cut short, as a response stopped by max_tokens would be
    backend = _InputJsonAs(ScriptedBackend(responder), '{"pat')
    messages, _ = await collect("hi", AgentOptions(cwd=str(project), backend=backend))
    errors = [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert errors[0].is_error and "invalid tool input JSON" in str(errors[0].content)
    assert result_of(messages).subtype == "success"


async def test_tool_input_nested_too_deeply_is_an_error_result(project: Path) -> None:
    """A tool input nested past Python's recursion limit (the model's JSON: a prompt injection
    can ask for it) gives an error result naming the cause, not a RecursionError that ends
    the whole session."""

    def responder(request: Any) -> Step:
        if len(request.messages) == 1:
            return Step([tool_use("Glob", {"pattern": "*"}, id="toolu_deep")])
        return Step([text("ok")])

    deep = '{"pattern": "*", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    backend = _InputJsonAs(ScriptedBackend(responder), deep)
    messages, error = await collect("hi", AgentOptions(cwd=str(project), backend=backend))
    assert error is None
    errors = [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert errors[0].is_error
    assert "invalid tool input JSON (nested too deeply to be read)" in str(errors[0].content)
    assert result_of(messages).subtype == "success"


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
async def test_an_input_checked_in_a_process_runs_the_tool_or_is_its_error(
    project: Path, mode: str
) -> None:
    """A tool whose schema's regex could backtrack without bound (a quantified group): each
    call's input is checked in a process of its own, then the tool runs on a fitting one and a
    misfit is an error result with jsonschema's words, with the permission gate or without."""
    from agents import create_sdk_mcp_server, tool

    schema = {
        "type": "object",
        "properties": {"word": {"type": "string", "pattern": "^(ab|a)+$"}},
        "required": ["word"],
    }

    @tool("spell", "spell a word", schema)
    async def spell(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"spelled {args['word']}"}]}

    backend = ScriptedBackend(
        [
            Step(
                [
                    tool_use("mcp__t__spell", {"word": "abaab"}, id="toolu_fits"),
                    tool_use("mcp__t__spell", {"word": "abc"}, id="toolu_misfit"),
                ]
            ),
            Step([text("ok")]),
        ]
    )
    options = AgentOptions(
        cwd=str(project),
        backend=backend,
        mcp_servers={"t": create_sdk_mcp_server("t", "1.0", [spell])},
        allowed_tools=["mcp__t__spell"],
        permission_mode=mode,
    )
    with trio.fail_after(30):
        messages, error = await collect("hi", options)
    assert error is None
    results = {
        b.tool_use_id: b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    }
    assert not results["toolu_fits"].is_error
    assert "spelled abaab" in str(results["toolu_fits"].content)
    assert results["toolu_misfit"].is_error
    assert str(results["toolu_misfit"].content) == (
        "invalid input for mcp__t__spell: 'abc' does not match '^(ab|a)+$' - at `$.word`"
    )


async def test_an_input_a_hook_rewrote_is_checked_in_a_process_too(project: Path) -> None:
    """A PreToolUse hook's rewritten input, under a schema whose regex could backtrack without
    bound, is checked in a process of its own: a misfit is jsonschema's error result."""
    from agents import HookMatcher, create_sdk_mcp_server, tool

    schema = {"type": "object", "properties": {"word": {"type": "string", "pattern": "^(ab|a)+$"}}}

    @tool("spell", "spell a word", schema)
    async def spell(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"spelled {args['word']}"}]}

    async def rewrite(input: dict[str, Any], tool_use_id: str | None, context: Any) -> Any:
        word = input["tool_input"]["word"] + "c"
        return {
            "hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"word": word}}
        }

    backend = ScriptedBackend(
        [Step([tool_use("mcp__t__spell", {"word": "ab"}, id="toolu_1")]), Step([text("ok")])]
    )
    options = AgentOptions(
        cwd=str(project),
        backend=backend,
        mcp_servers={"t": create_sdk_mcp_server("t", "1.0", [spell])},
        hooks={"PreToolUse": [HookMatcher(hooks=[rewrite])]},
    )
    with trio.fail_after(30):
        messages, error = await collect("hi", options)
    assert error is None
    (result,) = [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert result.is_error
    assert str(result.content) == (
        "invalid input for mcp__t__spell: 'abc' does not match '^(ab|a)+$' - at `$.word`"
    )


async def test_unconsumed_and_exhausted_scripts_are_reported(project: Path) -> None:
    """A call past the script ends in an api_error naming the agent; leftovers are named."""
    backend = ScriptedBackend([Step([tool_use("Glob", {"pattern": "*"})])])
    messages, _ = await collect("hi", AgentOptions(cwd=str(project), backend=backend))
    assert (
        "script exhausted: no step left for agent 'main'" in (result_of(messages).errors or [""])[0]
    )
    spare = ScriptedBackend([Step([text("a")]), Step([text("b")])])
    await collect("hi", AgentOptions(cwd=str(project), backend=spare))
    with pytest.raises(AssertionError, match=r"^unconsumed scripted steps: \{'main': 1\}$"):
        spare.assert_consumed()


async def test_usage_and_cost_are_counted_once_per_response(project: Path) -> None:
    """usage sums the responses; cost follows the price table (claude-sonnet-4-5: $3/$15)."""
    backend = ScriptedBackend(
        [
            Step([text("a"), tool_use("Glob", {"pattern": "*"})], usage=usage(1_000_000, 0)),
            Step([text("b")], usage=usage(0, 100_000)),
        ]
    )
    options = AgentOptions(cwd=str(project), backend=backend, model="claude-sonnet-4-5")
    messages, _ = await collect("hi", options)
    result = result_of(messages)
    assert result.usage["input_tokens"] == 1_000_000 and result.usage["output_tokens"] == 100_000
    assert result.total_cost_usd == pytest.approx(3.0 + 1.5)
    assert result.model_usage["claude-sonnet-4-5"]["cost_usd"] == pytest.approx(4.5)
    assert result.stop_reason == "end_turn"


async def test_soft_budget_stops_tools_and_excludes_the_crossing_response(project: Path) -> None:
    """Crossing max_budget_usd: the response's tools don't run; error_max_budget_usd."""
    log: list[tuple[str, str, float]] = []
    backend = ScriptedBackend(
        [
            Step([tool_use("mcp__t__look", {"key": "a"})], usage=usage(100_000, 0)),
            Step([tool_use("mcp__t__look", {"key": "b"})], usage=usage(100_000, 0)),
        ]
    )
    options = AgentOptions(
        cwd=str(project),
        backend=backend,
        model="claude-sonnet-4-5",
        tools=[],
        mcp_servers={"t": timed_tools(log, {})},
        max_budget_usd=0.5,
    )
    messages, error = await collect("hi", options)
    result = result_of(messages)
    assert result.subtype == "error_max_budget_usd"
    assert result.errors == ["Reached maximum budget ($0.5)"]
    assert result.total_cost_usd == pytest.approx(0.6) and result.total_cost_usd >= 0.5
    assert result.usage["input_tokens"] == 100_000  # the crossing response is left out
    assert [k for k, e, _ in log if e == "start"] == ["a"]
    refused = [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock) and b.is_error
    ]
    assert refused and refused[0].content == "Budget limit reached"
    assert error is not None and error.subtype == "error_max_budget_usd"


async def test_tool_use_blocks_carry_the_model_id(project: Path) -> None:
    """AssistantMessages name the model and carry ToolUseBlocks with their inputs."""
    backend = ScriptedBackend([Step([tool_use("Glob", {"pattern": "*.md"})]), Step([text("x")])])
    messages, _ = await collect(
        "hi", AgentOptions(cwd=str(project), backend=backend, model="haiku")
    )
    uses = [
        m
        for m in messages
        if isinstance(m, AssistantMessage) and isinstance(m.content[0], ToolUseBlock)
    ]
    assert uses[0].model == "claude-haiku-5-5"
    assert uses[0].content[0] == ToolUseBlock(
        id=uses[0].content[0].id, name="Glob", input={"pattern": "*.md"}
    )


async def test_streaming_prompts_each_get_a_result_without_raising(project: Path) -> None:
    """query(prompt=async_iterable) answers each prompt in turn and does not raise on errors."""
    backend = ScriptedBackend([Step([text("one")]), Step([tool_use("Glob", {"pattern": "*"})])])

    async def prompts() -> Any:
        yield "first"
        yield {"type": "user", "message": {"role": "user", "content": "second"}}

    options = AgentOptions(cwd=str(project), backend=backend, max_turns=1)
    results = [
        m async for m in query(prompt=prompts(), options=options) if isinstance(m, ResultMessage)
    ]
    assert [r.subtype for r in results] == ["success", "error_max_turns"]
    assert backend.requests[1].messages[2] == {"role": "user", "content": "second"}


def test_a_deferred_verdict_always_carries_the_text_the_model_sees() -> None:
    """A gate's verdict that defers a call without a denial text cannot be made (the loop
    answers a deferral it cannot honour with that text)."""
    from agents._loop.contracts import Verdict

    with pytest.raises(ValueError, match="deferred Verdict needs denied"):
        Verdict(input={}, deferred=True)
    assert Verdict(input={}, denied="deferred", deferred=True).deferred


async def test_a_response_is_made_at_its_streams_first_event() -> None:
    """A builder holds no response while its agent waits for the model's first event; cut
    before it, what it has built is an empty response (nothing to charge), and it is not a
    finished one; a stream that starts without ``message_start`` still builds."""
    from agents._loop.response import ResponseBuilder
    from agents.backends.base import (
        APIConnectionError,
        ContentBlockStart,
        ContentBlockStop,
        MessageStop,
    )

    waiting = ResponseBuilder()
    assert waiting._response is None
    with pytest.raises(APIConnectionError, match="before message_stop"):
        waiting.finish()
    assert waiting.response.usage == {} and waiting.response.blocks == []

    async def headless() -> Any:
        yield ContentBlockStart(0, {"type": "text", "text": "hi"})
        yield ContentBlockStop(0)
        yield MessageStop()

    built = ResponseBuilder()
    await built.consume(headless())
    assert built.finish().text == "hi"


async def test_folding_a_stream_at_once_builds_what_feeding_it_event_by_event_builds() -> None:
    """``ResponseBuilder.consume`` (the block events' steps inlined) against ``feed``: every
    kind of block, a signature, a tool input split over deltas, one that is not JSON, an
    unknown delta and a backend's own event."""
    from agents._loop.response import ResponseBuilder
    from agents.backends.base import (
        ContentBlockStart,
        ContentBlockStop,
        MessageDelta,
        MessageStart,
        MessageStop,
    )
    from agents.backends.base import ModelRequest as Request
    from agents.messages import ThinkingBlock
    from agents.testing.scripted import events_for

    step = Step([ThinkingBlock("hm", "sig"), text("hi"), tool_use("Read", {"file_path": "/x"})])
    request = Request(model="m", messages=[], max_tokens=10)
    events: list[Any] = events_for(step, request, "msg_1")[:-2]  # up to the last block's stop
    events += [
        ContentBlockStart(3, {"type": "tool_use", "id": "t2", "name": "Glob", "input": {}}),
        ContentBlockDelta(3, {"type": "input_json_delta", "partial_json": '{"pat'}),
        ContentBlockDelta(3, {"type": "input_json_delta", "partial_json": 'tern": "*"}'}),
        ContentBlockStop(3),
        ContentBlockStart(4, {"type": "tool_use", "id": "t3", "name": "Glob", "input": {}}),
        ContentBlockDelta(4, {"type": "input_json_delta", "partial_json": "{not json"}),
        ContentBlockDelta(4, {"type": "mystery_delta"}),
        ContentBlockStop(4),
        ContentBlockStart(5, {"type": "redacted_thinking", "data": "x"}),
        ContentBlockStop(5),
        "a backend's own event",
        MessageDelta(delta={"stop_reason": "tool_use"}, usage={"output_tokens": 7}),
        MessageStop(),
    ]
    assert isinstance(events[0], MessageStart)

    async def stream() -> Any:
        for event in events:
            yield event

    one = ResponseBuilder()
    for event in events:
        one.feed(event)
    whole = ResponseBuilder()
    await whole.consume(stream())
    response = whole.finish()
    assert msgspec.structs.asdict(response) == msgspec.structs.asdict(one.finish())
    assert [b.id for b in response.tool_uses] == [b.id for b in step.content[2:]] + ["t2", "t3"]
    assert response.tool_uses[1].input == {"pattern": "*"} and "t3" in response.bad_inputs
    assert response.blocks[0] == ThinkingBlock("hm", "sig") and len(response.api_content) == 6
