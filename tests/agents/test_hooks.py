"""Hook matchers, concurrent execution, timeouts and output handling."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
import trio
import trio.testing

from agents.hooks import HOOK_EVENTS, HookContext, HookMatcher, HookResult, HookRunner
from agents.permissions import PermissionCheck, PermissionGate

Hook = Any


def returning(output: Any, log: list[str] | None = None, name: str = "") -> Hook:
    async def hook(input: dict[str, Any], tool_use_id: str | None, context: HookContext) -> Any:
        if log is not None:
            log.append(name or input["hook_event_name"])
        return output

    return hook


def decision(kind: str, reason: str = "") -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": kind,
            "permissionDecisionReason": reason,
        }
    }


async def run(
    hooks: dict[str, list[HookMatcher]],
    event: str = "PreToolUse",
    match: str | None = "Bash",
    **fields: Any,
) -> HookResult:
    return await HookRunner(hooks).run(
        event, {"session_id": "s", **fields}, match=match, tool_use_id="t1"
    )


def test_there_are_twelve_events() -> None:
    """HOOK_EVENTS lists the twelve hook events of the Agent SDK."""
    assert len(HOOK_EVENTS) == 12
    assert {"PreToolUse", "PermissionRequest", "SessionEnd"} <= set(HOOK_EVENTS)


@pytest.mark.parametrize(
    ("matcher", "name", "fires"),
    [
        (None, "Bash", True),
        ("", "Bash", True),
        ("*", "mcp__x__y", True),
        ("Bash", "Bash", True),
        ("Bash", "BashOutput", False),
        ("Write|Edit", "Write", True),
        ("Write|Edit", "Edit", True),
        ("Write|Edit", "NotebookEdit", False),
        ("Write, Edit", "Edit", True),
        (" Write | Edit ", "Write", True),
        ("Edit.*", "NotebookEdit", True),
        ("Edit.*", "Write", False),
        ("^mcp__github", "mcp__github__create_issue", True),
        ("^mcp__github", "Bash", False),
        ("general-purpose", "general-purpose", True),
    ],
)
async def test_matchers_select_hooks_by_name(matcher: str | None, name: str, fires: bool) -> None:
    """None/''/'*' match all; plain names and |/, lists are exact; the rest is a regex."""
    log: list[str] = []
    await run({"PreToolUse": [HookMatcher(matcher, [returning({}, log)])]}, match=name)
    assert bool(log) is fires


async def test_events_without_a_subject_run_every_hook() -> None:
    """With match=None (e.g. UserPromptSubmit) matchers are not consulted."""
    log: list[str] = []
    await run(
        {"UserPromptSubmit": [HookMatcher("Bash", [returning({}, log)])]},
        event="UserPromptSubmit",
        match=None,
    )
    assert log == ["UserPromptSubmit"]


async def test_hooks_get_the_input_with_the_event_name_and_tool_use_id() -> None:
    """Each callback gets the input plus hook_event_name, the tool_use_id and a HookContext."""
    seen: list[tuple[dict[str, Any], str | None, HookContext]] = []

    async def spy(
        input: dict[str, Any], tool_use_id: str | None, context: HookContext
    ) -> dict[str, Any]:
        seen.append((input, tool_use_id, context))
        input["mutated"] = True
        return {}

    await run({"PostToolUse": [HookMatcher(None, [spy, spy])]}, event="PostToolUse", tool_name="X")
    assert [s[0] for s in seen] == [
        {"session_id": "s", "tool_name": "X", "hook_event_name": "PostToolUse", "mutated": True}
    ] * 2
    assert [(s[1], s[2]) for s in seen] == [("t1", HookContext())] * 2


@pytest.mark.parametrize("order", [("allow", "deny"), ("deny", "allow")])
async def test_deny_wins_over_allow_whatever_the_order(order: tuple[str, str]) -> None:
    """Two PreToolUse hooks answering allow and deny combine to deny."""
    hooks = {"PreToolUse": [HookMatcher(None, [returning(decision(k, k)) for k in order])]}
    result = await run(hooks)
    assert (result.decision, result.reason) == ("deny", "deny")


@pytest.mark.parametrize(
    ("decisions", "winner"),
    [
        (["allow", "ask"], "ask"),
        (["ask", "defer"], "defer"),
        (["defer", "deny", "allow"], "deny"),
        (["allow", "allow"], "allow"),
        ([], None),
    ],
)
async def test_permission_decisions_combine_by_precedence(
    decisions: list[str], winner: str | None
) -> None:
    """Among hook outputs deny > defer > ask > allow."""
    hooks = {
        "PreToolUse": [
            HookMatcher(None, [returning(decision(d)) for d in decisions] + [returning({})])
        ]
    }
    assert (await run(hooks)).decision == winner


async def test_two_pre_tool_use_hooks_deny_the_call_through_the_gate(tmp_path: Any) -> None:
    """Through the gate, an allow hook and a deny hook in either order deny the call."""
    for order in (("allow", "deny"), ("deny", "allow")):
        runner = HookRunner(
            {
                "PreToolUse": [
                    HookMatcher("Bash", [returning(decision(order[0]))]),
                    HookMatcher(None, [returning(decision(order[1]))]),
                ]
            }
        )
        gate = PermissionGate(mode="bypassPermissions", hooks=runner, cwd=str(tmp_path))
        outcome = await gate.check(PermissionCheck("Bash", {"command": "ls"}, "t", False), {})
        assert (outcome.behavior, outcome.decided_by) == ("deny", "hook")


async def test_matching_hooks_run_concurrently(autojump_clock: trio.testing.MockClock) -> None:
    """Three hooks sleeping 10 s each finish in 10 s of (virtual) time, not 30."""

    async def slow(
        input: dict[str, Any], tool_use_id: str | None, context: HookContext
    ) -> dict[str, Any]:
        await trio.sleep(10)
        return {}

    start = trio.current_time()
    await run({"PreToolUse": [HookMatcher(None, [slow, slow]), HookMatcher("Bash", [slow])]})
    assert trio.current_time() - start == pytest.approx(10)


async def sleepy(
    input: dict[str, Any], tool_use_id: str | None, context: HookContext
) -> dict[str, Any]:
    await trio.sleep(10_000)
    return decision("allow")


async def test_a_hook_past_its_timeout_blocks_its_tool(
    autojump_clock: trio.testing.MockClock, tmp_path: Any
) -> None:
    """A PreToolUse hook sleeping past its matcher timeout denies the call, naming the hook."""
    runner = HookRunner({"PreToolUse": [HookMatcher("Bash", [sleepy], timeout=5)]})
    gate = PermissionGate(mode="bypassPermissions", hooks=runner, cwd=str(tmp_path))
    start = trio.current_time()
    outcome = await gate.check(PermissionCheck("Bash", {"command": "ls"}, "t", False), {})
    assert trio.current_time() - start == pytest.approx(5)
    assert (outcome.behavior, outcome.decided_by) == ("deny", "hook")
    assert outcome.message == "blocked: PreToolUse hook sleepy timed out after 5s"


@pytest.mark.parametrize(("event", "seconds"), [("PreToolUse", 600), ("UserPromptSubmit", 30)])
async def test_default_timeouts(
    event: str, seconds: float, autojump_clock: trio.testing.MockClock
) -> None:
    """Without a matcher timeout hooks get 600 s, UserPromptSubmit hooks 30 s."""
    start = trio.current_time()
    result = await run({event: [HookMatcher(None, [sleepy])]}, event=event)
    assert trio.current_time() - start == pytest.approx(seconds)
    assert result.errors == (f"{event} hook sleepy timed out after {seconds:g}s",)


async def test_continue_false_is_reported_as_stop() -> None:
    """continue_=False yields stop with the stopReason ('' if none)."""
    with_reason = await run(
        {"Stop": [HookMatcher(None, [returning({"continue_": False, "stopReason": "budget"})])]},
        event="Stop",
        match=None,
    )
    bare = await run(
        {"Stop": [HookMatcher(None, [returning({"continue": False})])]}, event="Stop", match=None
    )
    assert (with_reason.stop, bare.stop) == ("budget", "")
    assert (await run({"Stop": [HookMatcher(None, [returning({})])]}, event="Stop")).stop is None


async def test_async_outputs_are_ignored() -> None:
    """An output with async_=True counts as no opinion, whatever else it holds."""
    output = {"async_": True, "continue_": False, **decision("deny")}
    result = await run({"PreToolUse": [HookMatcher(None, [returning(output)])]})
    assert result == HookResult()


async def test_raising_hook_on_other_events_is_logged_and_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A PostToolUse hook that raises is logged on agents.hooks and the others still count."""

    async def broken(
        input: dict[str, Any], tool_use_id: str | None, context: HookContext
    ) -> dict[str, Any]:
        raise ValueError("boom")

    ok = returning({"systemMessage": "still here"})
    with caplog.at_level(logging.WARNING, logger="agents.hooks"):
        result = await run({"PostToolUse": [HookMatcher(None, [broken, ok])]}, event="PostToolUse")
    message = (
        "PostToolUse hook test_raising_hook_on_other_events_is_logged_and_ignored."
        "<locals>.broken raised ValueError: boom"
    )
    assert result.errors == (message,)
    assert result.system_messages == ("still here",)
    assert [r.getMessage() for r in caplog.records if r.name == "agents.hooks"] == [message]


@pytest.mark.parametrize(
    ("output", "error"),
    [
        (42, "expected a dict, got int"),
        ({"hookSpecificOutput": []}, "hookSpecificOutput must be a dict, got list"),
        ({"decision": "maybe"}, "unknown decision 'maybe' (expected 'block')"),
        (
            decision("perhaps"),
            "unknown permissionDecision 'perhaps' (expected one of allow, deny, ask, defer)",
        ),
        (
            {"hookSpecificOutput": {"hookEventName": "PostToolUse"}},
            "hookSpecificOutput.hookEventName is 'PostToolUse', expected 'PreToolUse'",
        ),
        ({"hookSpecificOutput": {"updatedInput": "rm"}}, "updatedInput must be a dict, got str"),
    ],
)
async def test_invalid_outputs_are_hook_errors(output: Any, error: str) -> None:
    """Outputs their event does not allow are errors naming the hook, never acted upon."""
    hook = returning(output)
    result = await run({"PreToolUse": [HookMatcher(None, [hook])]})
    assert result.decision is None
    assert result.errors == (
        f"PreToolUse hook {hook.__qualname__} returned an invalid output: {error}",
    )


async def test_none_output_means_no_opinion() -> None:
    """A hook that returns None (forgot `return {}`) has no opinion and is no error."""
    assert await run({"PreToolUse": [HookMatcher(None, [returning(None)])]}) == HookResult()


async def test_block_decisions_carry_their_reason() -> None:
    """Top-level decision 'block' + reason is reported for UserPromptSubmit/Stop/PreCompact."""
    for event in ("UserPromptSubmit", "Stop", "SubagentStop", "PreCompact"):
        result = await run(
            {event: [HookMatcher(None, [returning({"decision": "block", "reason": "not yet"})])]},
            event=event,
            match=None,
        )
        assert (result.block, result.block_reason, result.decision) == (True, "not yet", None)


async def test_legacy_block_on_pre_tool_use_denies() -> None:
    """On PreToolUse, the older top-level decision 'block' counts as a deny."""
    result = await run(
        {"PreToolUse": [HookMatcher(None, [returning({"decision": "block", "reason": "nope"})])]}
    )
    assert (result.decision, result.reason) == ("deny", "nope")


async def test_post_tool_use_outputs() -> None:
    """PostToolUse hooks may add context and replace the tool output."""
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "additionalContext": "note",
            "updatedToolOutput": {"content": "redacted"},
        }
    }
    result = await run(
        {"PostToolUse": [HookMatcher(None, [returning(output)])]}, event="PostToolUse"
    )
    assert (result.additional_context, result.updated_tool_output) == (
        ("note",),
        {"content": "redacted"},
    )


async def test_updated_input_comes_from_the_winning_hook() -> None:
    """When hooks disagree, the rewrite offered by a hook with the winning decision is used."""
    first = {"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"a": 1}}}
    second = {"hookSpecificOutput": {"permissionDecision": "ask", "updatedInput": {"a": 2}}}
    result = await run({"PreToolUse": [HookMatcher(None, [returning(first), returning(second)])]})
    assert (result.decision, result.updated_input) == ("ask", {"a": 2})


async def test_permission_request_decisions_are_parsed() -> None:
    """PermissionRequest hooks answer with decision.behavior, message and interrupt."""
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "no", "interrupt": True},
        }
    }
    result = await run(
        {"PermissionRequest": [HookMatcher(None, [returning(output)])]}, event="PermissionRequest"
    )
    assert (result.decision, result.reason, result.interrupt) == ("deny", "no", True)


async def test_unmatched_event_returns_an_empty_result() -> None:
    """An event with no matching hooks has no opinion; has() tells registered events apart."""
    runner = HookRunner({"PreToolUse": [HookMatcher("Write", [returning(decision("deny"))])]})
    assert await runner.run("PreToolUse", {}, match="Bash") == HookResult()
    assert await runner.run("Stop", {}) == HookResult()
    assert (runner.has("PreToolUse"), runner.has("Stop")) == (True, False)
    assert not HookRunner(None).has("PreToolUse")


def test_unknown_event_is_rejected_naming_the_valid_ones() -> None:
    """A misspelt event name fails at construction with the list of events."""
    expected = f"unknown hook event 'PreToolUs' (expected one of {', '.join(HOOK_EVENTS)})"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        HookRunner({"PreToolUs": [HookMatcher()]})


async def test_run_rejects_an_unknown_event() -> None:
    """run() with an unknown event name is a ValueError, not silence."""
    with pytest.raises(ValueError, match=r"^unknown hook event 'Nope' \(expected one of .*\)$"):
        await HookRunner(None).run("Nope", {})


def test_non_matcher_entries_are_rejected() -> None:
    """Each entry must be a HookMatcher."""
    with pytest.raises(ValueError, match=r"^hooks\['Stop'\]\[0\] must be a HookMatcher, got dict$"):
        HookRunner({"Stop": [{"hooks": []}]})  # type: ignore[list-item]


def test_invalid_regex_matcher_is_rejected() -> None:
    """A matcher that is neither a name list nor a valid regex fails at construction."""
    with pytest.raises(ValueError, match=r"^invalid hook matcher 'Edit\(': .*$"):
        HookRunner({"PreToolUse": [HookMatcher("Edit(")]})


@pytest.mark.parametrize("timeout", [0, -1.5])
def test_non_positive_timeout_is_rejected(timeout: float) -> None:
    """A matcher timeout must be positive."""
    with pytest.raises(
        ValueError, match=rf"^HookMatcher.timeout must be > 0 seconds, got {timeout}$"
    ):
        HookMatcher(timeout=timeout)


def test_non_callable_hooks_are_rejected() -> None:
    """Hooks must be callables."""
    with pytest.raises(
        ValueError, match=r"^HookMatcher.hooks\[0\] must be an async callable, got str$"
    ):
        HookMatcher(hooks=["not a hook"])  # type: ignore[list-item]
