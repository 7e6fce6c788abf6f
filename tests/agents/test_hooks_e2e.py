"""Hooks through the real loop: what each event sees and what its answer changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from agents import (
    AgentClient,
    AgentOptions,
    HookMatcher,
    ResultMessage,
    SystemMessage,
    UserMessage,
    create_sdk_mcp_server,
    tool,
)
from agents.hooks import HookContext
from agents.testing import ScriptedBackend, Step, text, tool_use
from agents.tools.base import SdkMcpServer

from .helpers import collect, result_of

Hook = Any
BASE_FIELDS = {"session_id", "transcript_path", "cwd", "hook_event_name", "permission_mode"}


def recorder(
    seen: list[dict[str, Any]], output: dict[str, Any] | None = None, *, sleep: float = 0.0
) -> Hook:
    """A hook that records its input (and tool_use_id) and returns ``output``."""

    async def hook(data: dict[str, Any], tool_use_id: str | None, _ctx: HookContext) -> Any:
        seen.append({**data, "_tool_use_id": tool_use_id})
        if sleep:
            await trio.sleep(sleep)
        return dict(output or {})

    return hook


def echo_server(calls: list[str] | None = None) -> SdkMcpServer:
    """``mcp__t__echo`` echoes ``x``; ``mcp__t__fail`` raises; ``mcp__t__NotebookEdit`` echoes."""

    def make(name: str) -> Any:
        @tool(name, f"{name} a value", {"x": str})
        async def handler(args: dict[str, Any]) -> dict[str, Any]:
            if calls is not None:
                calls.append(f"{name}:{args['x']}")
            if name == "fail":
                raise RuntimeError(f"boom {args['x']}")
            return {"content": [{"type": "text", "text": f"echo {args['x']}"}]}

        return handler

    return create_sdk_mcp_server("t", "1.0", [make("echo"), make("fail"), make("NotebookEdit")])


def options(
    project: Path, backend: ScriptedBackend, hooks: dict[str, list[HookMatcher]], **kw: Any
) -> AgentOptions:
    kw.setdefault("permission_mode", "bypassPermissions")
    return AgentOptions(
        cwd=str(project),
        backend=backend,
        hooks=hooks,
        mcp_servers={"t": echo_server(kw.pop("calls", None))},
        **kw,
    )


def informational(messages: list[Any]) -> list[str]:
    return [
        m.data["message"]
        for m in messages
        if isinstance(m, SystemMessage) and m.subtype == "informational"
    ]


def last_tool_result(backend: ScriptedBackend, request: int = 1) -> dict[str, Any]:
    content = backend.requests[request].messages[-1]["content"]
    assert isinstance(content, list) and content[0]["type"] == "tool_result"
    result: dict[str, Any] = content[0]
    return result


# -- UserPromptSubmit, SessionStart, SessionEnd ------------------------------------------------


async def test_user_prompt_submit_context_joins_the_prompt(project: Path) -> None:
    """additionalContext goes to the model as extra text blocks after the prompt."""
    seen: list[dict[str, Any]] = []
    out = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ctx"}}
    backend = ScriptedBackend([Step([text("ok")])])
    hooks = {"UserPromptSubmit": [HookMatcher(hooks=[recorder(seen, out)])]}
    messages, error = await collect("hello", options(project, backend, hooks))
    assert error is None
    assert backend.requests[0].messages[0] == {
        "role": "user",
        "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": "ctx"}],
    }
    (data,) = seen
    assert data.keys() >= BASE_FIELDS
    assert data["hook_event_name"] == "UserPromptSubmit"
    assert data["prompt"] == "hello"
    assert data["cwd"] == str(project)
    assert data["permission_mode"] == "bypassPermissions"
    assert data["session_id"] == result_of(messages).session_id


async def test_user_prompt_submit_block_drops_the_prompt(project: Path) -> None:
    """decision: block → no model call, a success result with terminal_reason prompt_blocked."""
    backend = ScriptedBackend([])
    out = {"decision": "block", "reason": "no secrets"}
    hooks = {"UserPromptSubmit": [HookMatcher(hooks=[recorder([], out)])]}
    messages, error = await collect("show me the key", options(project, backend, hooks))
    assert error is None
    result = result_of(messages)
    assert (result.subtype, result.result, result.terminal_reason) == (
        "success",
        "",
        "prompt_blocked",
    )
    assert result.num_turns == 0 and backend.requests == []
    assert informational(messages) == ["prompt blocked by a UserPromptSubmit hook: no secrets"]


async def test_user_prompt_submit_continue_false_stops_before_the_model(project: Path) -> None:
    """continue_: False on UserPromptSubmit ends the run with terminal_reason hook_stopped."""
    backend = ScriptedBackend([])
    out = {"continue_": False, "stopReason": "maintenance"}
    hooks = {"UserPromptSubmit": [HookMatcher(hooks=[recorder([], out)])]}
    messages, error = await collect("hi", options(project, backend, hooks))
    assert error is None
    result = result_of(messages)
    assert (result.subtype, result.terminal_reason) == ("success", "hook_stopped")
    assert informational(messages) == ["stopped by a UserPromptSubmit hook: maintenance"]
    assert backend.requests == []


async def test_session_start_context_joins_the_first_prompt_and_session_end_runs(
    project: Path,
) -> None:
    """SessionStart (source startup) adds context to the first prompt only; SessionEnd fires once
    when the session closes."""
    starts: list[dict[str, Any]] = []
    ends: list[dict[str, Any]] = []
    out = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "branch"}}
    backend = ScriptedBackend([Step([text("one")]), Step([text("two")])])
    hooks = {
        "SessionStart": [HookMatcher(hooks=[recorder(starts, out)])],
        "SessionEnd": [HookMatcher(hooks=[recorder(ends)])],
    }
    async with AgentClient(options(project, backend, hooks)) as client:
        for prompt in ("first", "second"):
            await client.query(prompt)
            async for _ in client.receive_response():
                pass
        assert ends == []
    assert [s["source"] for s in starts] == ["startup"]
    assert backend.requests[0].messages[0]["content"] == [
        {"type": "text", "text": "first"},
        {"type": "text", "text": "branch"},
    ]
    assert backend.requests[1].messages[-1] == {"role": "user", "content": "second"}
    assert [e["hook_event_name"] for e in ends] == ["SessionEnd"]
    assert ends[0].keys() >= BASE_FIELDS


# -- PreToolUse, PostToolUse, PostToolUseFailure --------------------------------------------------


async def test_tool_hook_context_reaches_the_model_next_to_the_result(project: Path) -> None:
    """PreToolUse and PostToolUse additionalContext are text blocks of the same tool_result."""

    def ctx(event: str, value: str) -> dict[str, Any]:
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": value}}

    post: list[dict[str, Any]] = []
    backend = ScriptedBackend(
        [Step([tool_use("mcp__t__echo", {"x": "a"}, id="t1")]), Step([text("done")])]
    )
    hooks = {
        "PreToolUse": [HookMatcher(hooks=[recorder([], ctx("PreToolUse", "pre"))])],
        "PostToolUse": [HookMatcher(hooks=[recorder(post, ctx("PostToolUse", "post"))])],
    }
    _, error = await collect("go", options(project, backend, hooks))
    assert error is None
    assert last_tool_result(backend)["content"] == [
        {"type": "text", "text": "echo a"},
        {"type": "text", "text": "pre"},
        {"type": "text", "text": "post"},
    ]
    (data,) = post
    assert data["tool_name"] == "mcp__t__echo"
    assert data["tool_input"] == {"x": "a"}
    assert data["tool_use_id"] == data["_tool_use_id"] == "t1"
    assert data["tool_response"] == [{"type": "text", "text": "echo a"}]


async def test_post_tool_use_updated_output_replaces_what_the_model_sees(project: Path) -> None:
    """updatedToolOutput replaces the tool's content in the history and the stream."""
    out = {
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": "[redacted]"}
    }
    backend = ScriptedBackend([Step([tool_use("mcp__t__echo", {"x": "key"})]), Step([text("ok")])])
    hooks = {"PostToolUse": [HookMatcher("mcp__t__echo", [recorder([], out)])]}
    messages, error = await collect("go", options(project, backend, hooks))
    assert error is None
    assert last_tool_result(backend)["content"] == "[redacted]"
    streamed = [m for m in messages if isinstance(m, UserMessage)]
    assert streamed[0].content[0].content == "[redacted]"  # type: ignore[union-attr]


async def test_post_tool_use_failure_fires_for_error_results_with_the_error(
    project: Path,
) -> None:
    """A failing tool fires PostToolUseFailure (with ``error``), not PostToolUse."""
    ok: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    backend = ScriptedBackend([Step([tool_use("mcp__t__fail", {"x": "1"})]), Step([text("ok")])])
    hooks = {
        "PostToolUse": [HookMatcher(hooks=[recorder(ok)])],
        "PostToolUseFailure": [HookMatcher(hooks=[recorder(failed)])],
    }
    _, error = await collect("go", options(project, backend, hooks))
    assert error is None
    assert ok == []
    (data,) = failed
    assert data["hook_event_name"] == "PostToolUseFailure"
    assert data["tool_name"] == "mcp__t__fail"
    assert data["error"] == "RuntimeError: boom 1"
    assert last_tool_result(backend)["is_error"] is True


async def test_pre_tool_use_context_alone_reaches_the_model(project: Path) -> None:
    """With no PostToolUse hook, PreToolUse additionalContext still joins the tool result."""
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "pre"}}
    backend = ScriptedBackend([Step([tool_use("mcp__t__echo", {"x": "a"})]), Step([text("ok")])])
    hooks = {"PreToolUse": [HookMatcher(hooks=[recorder([], out)])]}
    _, error = await collect("go", options(project, backend, hooks))
    assert error is None
    assert last_tool_result(backend)["content"] == [
        {"type": "text", "text": "echo a"},
        {"type": "text", "text": "pre"},
    ]


async def test_a_failure_hook_alone_fires_for_a_failing_tool(project: Path) -> None:
    """Only PostToolUseFailure set: it fires for an error result (and its context is kept)."""
    failed: list[dict[str, Any]] = []
    out = {
        "hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": "why"}
    }
    backend = ScriptedBackend([Step([tool_use("mcp__t__fail", {"x": "1"})]), Step([text("ok")])])
    hooks = {"PostToolUseFailure": [HookMatcher(hooks=[recorder(failed, out)])]}
    _, error = await collect("go", options(project, backend, hooks))
    assert error is None
    assert [d["tool_name"] for d in failed] == ["mcp__t__fail"]
    assert last_tool_result(backend)["content"][-1] == {"type": "text", "text": "why"}


async def test_continue_false_on_post_tool_use_stops_the_run(project: Path) -> None:
    """continue_: False after a tool: no further model call; success with hook_stopped."""
    out = {"continue_": False, "stopReason": "enough"}
    backend = ScriptedBackend(
        [Step([text("working"), tool_use("mcp__t__echo", {"x": "a"})]), Step([text("never")])]
    )
    hooks = {"PostToolUse": [HookMatcher(hooks=[recorder([], out)])]}
    messages, error = await collect("go", options(project, backend, hooks))
    assert error is None
    result = result_of(messages)
    assert (result.subtype, result.terminal_reason, result.result) == (
        "success",
        "hook_stopped",
        "working",
    )
    assert len(backend.requests) == 1 and backend.remaining() == {"main": 1}
    assert "stopped by a hook: enough" in informational(messages)


async def test_system_message_is_emitted_as_informational(project: Path) -> None:
    """systemMessage from any hook becomes SystemMessage(subtype="informational")."""
    backend = ScriptedBackend([Step([tool_use("mcp__t__echo", {"x": "a"})]), Step([text("ok")])])
    hooks = {
        "PreToolUse": [HookMatcher(hooks=[recorder([], {"systemMessage": "pre says hi"})])],
        "PostToolUse": [HookMatcher(hooks=[recorder([], {"systemMessage": "post says hi"})])],
    }
    messages, _ = await collect("go", options(project, backend, hooks))
    assert informational(messages) == ["pre says hi", "post says hi"]


@pytest.mark.parametrize("order", [("allow", "deny"), ("deny", "allow")])
async def test_two_pre_tool_use_hooks_allow_and_deny_deny_the_call(
    project: Path, order: tuple[str, str]
) -> None:
    """Whatever their order, allow + deny from two hooks is a denial (even in bypass mode)."""

    def decision(kind: str) -> dict[str, Any]:
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": kind,
                "permissionDecisionReason": f"hook says {kind}",
            }
        }

    calls: list[str] = []
    backend = ScriptedBackend([Step([tool_use("mcp__t__echo", {"x": "a"})]), Step([text("ok")])])
    hooks = {"PreToolUse": [HookMatcher(hooks=[recorder([], decision(k)) for k in order])]}
    messages, _ = await collect("go", options(project, backend, hooks, calls=calls))
    assert calls == []
    answer = last_tool_result(backend)
    assert (answer["content"], answer["is_error"]) == ("hook says deny", True)
    assert len(result_of(messages).permission_denials) == 1


async def test_a_hook_past_its_timeout_blocks_its_tool_and_the_turn_goes_on(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A PreToolUse hook sleeping past its matcher timeout denies the call with an error naming
    the hook; the other call of the turn runs and the loop continues (virtual time)."""
    calls: list[str] = []
    backend = ScriptedBackend(
        [
            Step(
                [
                    tool_use("mcp__t__echo", {"x": "slow"}),
                    tool_use("mcp__t__NotebookEdit", {"x": "fast"}),
                ]
            ),
            Step([text("carried on")]),
        ]
    )
    hooks = {
        "PreToolUse": [HookMatcher("mcp__t__echo", [recorder([], sleep=60)], timeout=5)],
    }
    t0 = trio.current_time()
    messages, error = await collect("go", options(project, backend, hooks, calls=calls))
    assert error is None
    assert calls == ["NotebookEdit:fast"]
    results = backend.requests[1].messages[-1]["content"]
    assert results[0]["is_error"] is True
    assert "timed out after 5s" in results[0]["content"]
    assert "hook" in results[0]["content"]
    assert results[1]["content"] == [{"type": "text", "text": "echo fast"}]
    assert result_of(messages).result == "carried on"
    assert trio.current_time() - t0 == pytest.approx(5)


@pytest.mark.parametrize(
    ("matcher", "fired"),
    [
        ("Write|Edit", ["Write", "Edit"]),
        ("Edit.*", ["Edit", "mcp__t__NotebookEdit"]),
    ],
)
async def test_matchers_select_tools_through_the_loop(
    project: Path, matcher: str, fired: list[str]
) -> None:
    """Write|Edit is an exact list (not NotebookEdit); Edit.* is a regex searched anywhere."""
    target = project / "f.txt"
    seen: list[dict[str, Any]] = []
    backend = ScriptedBackend(
        [
            Step([tool_use("Write", {"file_path": str(target), "content": "a b"})]),
            Step(
                [tool_use("Edit", {"file_path": str(target), "old_string": "a", "new_string": "c"})]
            ),
            Step([tool_use("mcp__t__NotebookEdit", {"x": "n"})]),
            Step([text("ok")]),
        ]
    )
    hooks = {"PreToolUse": [HookMatcher(matcher, [recorder(seen)])]}
    _, error = await collect("go", options(project, backend, hooks))
    assert error is None
    assert [s["tool_name"] for s in seen] == fired
    assert target.read_text() == "c b"


# -- Stop --------------------------------------------------------------------------------------


async def test_stop_block_keeps_the_agent_going_and_stops_after_eight(project: Path) -> None:
    """A Stop hook that always blocks: its reason is the next user turn, stop_hook_active is true
    on re-entry, and the ninth stop ends the run anyway."""
    seen: list[dict[str, Any]] = []
    out = {"decision": "block", "reason": "run the tests too"}
    backend = ScriptedBackend([Step([text(f"answer {n}")]) for n in range(9)])
    hooks = {"Stop": [HookMatcher(hooks=[recorder(seen, out)])]}
    messages, error = await collect("go", options(project, backend, hooks))
    assert error is None
    result = result_of(messages)
    assert (result.subtype, result.result, result.num_turns) == ("success", "answer 8", 9)
    assert [s["stop_hook_active"] for s in seen] == [False] + [True] * 8
    assert backend.requests[1].messages[-1] == {"role": "user", "content": "run the tests too"}
    assert len(backend.requests[8].messages) == 17
    assert informational(messages) == ["Stop hooks blocked 8 times in a row; stopping anyway"]


async def test_stop_without_block_ends_normally(project: Path) -> None:
    """A Stop hook with no opinion leaves the result alone."""
    seen: list[dict[str, Any]] = []
    backend = ScriptedBackend([Step([text("done")])])
    hooks = {"Stop": [HookMatcher(hooks=[recorder(seen)])]}
    messages, _ = await collect("go", options(project, backend, hooks))
    assert result_of(messages).result == "done"
    assert seen[0]["hook_event_name"] == "Stop" and seen[0]["stop_hook_active"] is False


# -- defer ---------------------------------------------------------------------------------------


def defer_hooks() -> dict[str, list[HookMatcher]]:
    out = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "defer",
            "permissionDecisionReason": "needs a human",
        }
    }
    return {"PreToolUse": [HookMatcher("mcp__t__echo", [recorder([], out)])]}


async def test_defer_with_one_call_ends_the_run_with_the_deferred_call(project: Path) -> None:
    """stop_reason tool_deferred, deferred_tool_use = {id, name, input}; the history stays valid."""
    calls: list[str] = []
    backend = ScriptedBackend(
        [Step([tool_use("mcp__t__echo", {"x": "a"}, id="d1")]), Step([text("next prompt")])]
    )
    opts = options(project, backend, defer_hooks(), calls=calls)
    async with AgentClient(opts) as client:
        await client.query("go")
        first = [m async for m in client.receive_response()]
        await client.query("what now?")
        second = [m async for m in client.receive_response()]
    result = first[-1]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.stop_reason, result.terminal_reason) == (
        "success",
        "tool_deferred",
        "tool_deferred",
    )
    assert result.deferred_tool_use == {"id": "d1", "name": "mcp__t__echo", "input": {"x": "a"}}
    assert result.permission_denials == [] and calls == []
    sent = backend.requests[1].messages
    assert sent[1]["content"][0]["type"] == "tool_use"
    assert sent[2]["content"][0]["tool_use_id"] == "d1"
    assert "deferred" in sent[2]["content"][0]["content"]
    assert isinstance(second[-1], ResultMessage) and second[-1].result == "next prompt"


async def test_defer_among_several_calls_is_a_denial(project: Path) -> None:
    """With two calls in the turn a deferral cannot end the turn: the call is denied, the other
    runs, and the loop goes on."""
    calls: list[str] = []
    backend = ScriptedBackend(
        [
            Step(
                [
                    tool_use("mcp__t__echo", {"x": "a"}),
                    tool_use("mcp__t__NotebookEdit", {"x": "b"}),
                ]
            ),
            Step([text("ok")]),
        ]
    )
    messages, error = await collect("go", options(project, backend, defer_hooks(), calls=calls))
    assert error is None
    result = result_of(messages)
    assert result.deferred_tool_use is None and result.result == "ok"
    assert calls == ["NotebookEdit:b"]
    assert [d["tool_name"] for d in result.permission_denials] == ["mcp__t__echo"]


async def test_subagent_stop_block_keeps_the_subagent_going(project: Path) -> None:
    """A subagent's loop fires SubagentStop (matched on its type) instead of Stop; a block gives
    it one more instruction."""
    from agents import AgentDefinition

    stops: list[dict[str, Any]] = []
    sub_stops: list[dict[str, Any]] = []

    async def block_once(data: dict[str, Any], _id: str | None, _ctx: HookContext) -> Any:
        sub_stops.append(data)
        return {} if data["stop_hook_active"] else {"decision": "block", "reason": "add a test"}

    backend = ScriptedBackend(
        {
            "main": [
                Step(
                    [
                        tool_use(
                            "Agent",
                            {"description": "fix", "prompt": "fix it", "subagent_type": "helper"},
                        )
                    ]
                ),
                Step([text("all done")]),
            ],
            "helper": [Step([text("fixed")]), Step([text("fixed and tested")])],
        }
    )
    hooks = {
        "Stop": [HookMatcher(hooks=[recorder(stops)])],
        "SubagentStop": [HookMatcher("helper", [block_once])],
    }
    agents = {"helper": AgentDefinition(description="helps", prompt="You help.")}
    messages, error = await collect("delegate", options(project, backend, hooks, agents=agents))
    assert error is None
    assert [s["stop_hook_active"] for s in sub_stops] == [False, True]
    assert sub_stops[0]["agent_type"] == "helper" and sub_stops[0]["agent_id"] != "main"
    helper_requests = [r for r in backend.requests if r.agent_type == "helper"]
    assert helper_requests[1].messages[-1] == {"role": "user", "content": "add a test"}
    assert len(stops) == 1 and "agent_id" not in stops[0]
    assert result_of(messages).result == "all done"
