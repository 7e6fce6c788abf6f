"""A tool call's fast path (the gate passes it at once, no hooks: no coroutine of its own) and
what it must not skip: each test plants what the fast path leaves out — a deny or ask rule, a
PreToolUse or PostToolUse hook, a ``can_use_tool`` that rewrites the input, an input the
model sent broken — and fails if the fast path wrongly applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from agents import (
    AgentOptions,
    PermissionResultAllow,
    ToolAnnotations,
    ToolPermissionContext,
    create_sdk_mcp_server,
    tool,
)
from agents.hooks import HookContext, HookMatcher
from agents.messages import TextBlock, ThinkingBlock, ToolUseBlock
from agents.testing.scripted import ScriptedBackend, Step, text, tool_use

from .helpers import collect, result_of

NAME = "mcp__s__look"


def _server(seen: list[dict[str, Any]], read_only: bool = True) -> Any:
    @tool("look", "looks", {"key": str}, annotations=ToolAnnotations(readOnlyHint=read_only))
    async def look(args: dict[str, Any]) -> dict[str, Any]:
        seen.append(dict(args))
        return {"content": [{"type": "text", "text": f"saw {args['key']}"}]}

    return create_sdk_mcp_server("s", "1", [look])


def _backend(tool_input: dict[str, Any] | None = None) -> ScriptedBackend:
    return ScriptedBackend(
        [Step([tool_use(NAME, tool_input or {"key": "a"}, id="c1")]), Step([text("done")])]
    )


def _result(backend: ScriptedBackend) -> dict[str, Any]:
    block: dict[str, Any] = backend.requests[1].messages[-1]["content"][0]
    assert block["type"] == "tool_result" and block["tool_use_id"] == "c1"
    return block


def _opts(project: Path, backend: ScriptedBackend, seen: list[dict[str, Any]], **kw: Any) -> Any:
    return AgentOptions(
        cwd=str(project), backend=backend, tools=[], mcp_servers={"s": _server(seen)}, **kw
    )


async def test_the_fast_path_runs_a_read_only_call_with_nothing_configured(
    tmp_path: Path,
) -> None:
    seen: list[dict[str, Any]] = []
    backend = _backend()
    _, error = await collect("go", _opts(tmp_path, backend, seen))
    assert error is None and seen == [{"key": "a"}]
    assert _result(backend)["content"] == [{"type": "text", "text": "saw a"}]


async def test_a_deny_rule_on_a_read_only_tool_is_not_skipped(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    backend = _backend()
    await collect("go", _opts(tmp_path, backend, seen, disallowed_tools=[NAME]))
    assert seen == []
    assert _result(backend).get("is_error") is True


async def test_a_mode_that_approves_no_read_only_call_is_not_skipped(tmp_path: Path) -> None:
    """``dontAsk`` denies what no rule allows, read-only calls too: no fast pass there."""
    seen: list[dict[str, Any]] = []
    backend = _backend()
    options = _opts(tmp_path, backend, seen, permission_mode="dontAsk")
    messages, _ = await collect("go", options)
    assert seen == []
    assert _result(backend).get("is_error") is True
    assert result_of(messages).permission_denials[0]["tool_name"] == NAME


async def test_a_pre_tool_use_hook_is_not_skipped(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    fired: list[str] = []

    async def hook(data: dict[str, Any], _id: str | None, _ctx: HookContext) -> dict[str, Any]:
        fired.append(data["tool_name"])
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}

    backend = _backend()
    hooks = {"PreToolUse": [HookMatcher(hooks=[hook])]}
    await collect("go", _opts(tmp_path, backend, seen, hooks=hooks))
    assert fired == [NAME] and seen == []
    assert _result(backend).get("is_error") is True


async def test_a_post_tool_use_hook_sees_the_fast_paths_output(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    outputs: list[Any] = []

    async def hook(data: dict[str, Any], _id: str | None, _ctx: HookContext) -> dict[str, Any]:
        outputs.append(data["tool_response"])
        return {
            "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "noted"}
        }

    backend = _backend()
    hooks = {"PostToolUse": [HookMatcher(hooks=[hook])]}
    await collect("go", _opts(tmp_path, backend, seen, hooks=hooks))
    assert seen == [{"key": "a"}] and len(outputs) == 1
    assert {"type": "text", "text": "noted"} in _result(backend)["content"]


async def test_a_can_use_tool_rewrite_reaches_the_handler(tmp_path: Path) -> None:
    """A mutating tool goes to ``can_use_tool``; the input it returns is what runs."""
    seen: list[dict[str, Any]] = []

    async def callback(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow:
        return PermissionResultAllow(updated_input={"key": "rewritten"})

    backend = _backend()
    options = AgentOptions(
        cwd=str(tmp_path),
        backend=backend,
        tools=[],
        mcp_servers={"s": _server(seen, read_only=False)},
        can_use_tool=callback,
    )
    await collect("go", options)
    assert seen == [{"key": "rewritten"}]
    assert _result(backend)["content"] == [{"type": "text", "text": "saw rewritten"}]


async def test_an_input_that_fails_the_schema_never_runs(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    backend = _backend({"key": 3})
    await collect("go", _opts(tmp_path, backend, seen))
    assert seen == []
    result = _result(backend)
    assert result.get("is_error") is True and "key" in str(result["content"])


def _varied_server() -> Any:
    """Tools whose calls end each way a call can end: an output, an error output, a raise, an
    output over the cap."""

    def make(name: str, body: Any) -> Any:
        @tool(name, name, {"key": str}, annotations=ToolAnnotations(readOnlyHint=True))
        async def handler(args: dict[str, Any]) -> dict[str, Any]:
            return body(args["key"])  # type: ignore[no-any-return]

        return handler

    def boom(key: str) -> dict[str, Any]:
        raise ValueError(f"boom {key}")

    return create_sdk_mcp_server(
        "v",
        "1",
        [
            make("ok", lambda key: {"content": [{"type": "text", "text": f"ok {key}"}]}),
            make("err", lambda key: {"content": f"failed {key}", "is_error": True}),
            make("boom", boom),
            make("big", lambda key: {"content": [{"type": "text", "text": key * 100_001}]}),
        ],
    )


_VARYING = frozenset(
    {"uuid", "session_id", "duration_ms", "duration_api_ms", "timestamp", "cwd", "message_id"}
)


def _comparable(value: Any) -> Any:
    """A message (or request) as plain data without what differs between any two runs."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if k not in _VARYING}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


async def _run_varied(project: Path, **options: Any) -> tuple[Any, Any, Any]:
    calls: list[TextBlock | ThinkingBlock | ToolUseBlock] = [
        tool_use("mcp__v__ok", {"key": "a"}, id="c1"),
        tool_use("mcp__v__err", {"key": "b"}, id="c2"),
        tool_use("mcp__v__boom", {"key": "c"}, id="c3"),
        tool_use("mcp__v__big", {"key": "d"}, id="c4"),
        tool_use("mcp__v__ok", {"key": 5}, id="c5"),  # fails the schema
        tool_use("mcp__v__nope", {"key": "e"}, id="c6"),  # no such tool
    ]
    backend = ScriptedBackend([Step(calls), Step([text("done")])])
    opts = AgentOptions(
        cwd=str(project), backend=backend, tools=[], mcp_servers={"v": _varied_server()}, **options
    )
    messages, error = await collect("go", opts)
    assert error is None
    stream = _comparable([msgspec.to_builtins(m) for m in messages])
    # results are streamed as they finish, and a call through the gate's slow path finishes
    # later than one the gate passed at once: the results by call, the rest in order
    results = {m["content"][0]["tool_use_id"]: m for m in stream if m["type"] == "user"}
    others = [m for m in stream if m["type"] != "user"]
    assert len(results) == len(calls)
    return others, results, _comparable(backend.requests[1].messages)


async def test_the_fast_path_gives_what_the_slow_path_gives(tmp_path: Path) -> None:
    """The same calls through the fast path (nothing configured) and through the gate's slow
    path and PostToolUse (hooks registered that match none of these tools): the same messages
    streamed and the same results sent back to the model, in call order."""
    fast = await _run_varied(tmp_path)

    async def never(data: dict[str, Any], _id: str | None, _ctx: HookContext) -> dict[str, Any]:
        raise AssertionError("a hook for Bash fired on a custom tool")

    hooks = {
        event: [HookMatcher(matcher="Bash", hooks=[never])]
        for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure")
    }
    slow = await _run_varied(tmp_path, hooks=hooks)
    assert fast == slow
    results = fast[2][-1]["content"]
    assert [r.get("is_error", False) for r in results] == [False, True, True, False, True, True]
    assert "output truncated" in str(results[3]["content"])
