"""A recording can_use_tool and a gate factory for pipeline tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from agents.hooks import HookMatcher, HookRunner
from agents.permissions import (
    Classifier,
    PermissionCheck,
    PermissionGate,
    PermissionOutcome,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    RuleSet,
    ToolPermissionContext,
)

READ_ONLY = {"Read", "Glob", "Grep", "WebFetch", "WebSearch", "ToolSearch", "TaskGet", "TaskList"}


@attrs.define
class Recorder:
    """A can_use_tool that records its calls and answers with a fixed result."""

    answer: PermissionResult = attrs.field(factory=PermissionResultAllow)
    calls: list[tuple[str, dict[str, Any], ToolPermissionContext]] = attrs.field(factory=list)

    async def __call__(
        self, name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        self.calls.append((name, tool_input, context))
        return self.answer


def make_gate(
    cwd: str,
    *,
    mode: str = "default",
    allow: Sequence[str] = (),
    deny: Sequence[str] = (),
    ask: Sequence[str] = (),
    callback: Recorder | None = None,
    hooks: dict[str, list[HookMatcher]] | None = None,
    classifier: Classifier | None = None,
    home: str = "/home/nobody-test",
    add_dirs: Sequence[str] = (),
) -> PermissionGate:
    return PermissionGate(
        mode=mode,
        rules=RuleSet.from_strings(allow=allow, deny=deny, ask=ask),
        can_use_tool=callback,
        hooks=HookRunner(hooks) if hooks is not None else None,
        cwd=cwd,
        add_dirs=add_dirs,
        home=home,
        classifier=classifier,
    )


async def decide(
    gate: PermissionGate, tool: str, tool_input: dict[str, Any], tool_use_id: str = "t1"
) -> PermissionOutcome:
    check = PermissionCheck(tool, tool_input, tool_use_id, read_only=tool in READ_ONLY)
    return await gate.check(check, {"session_id": "s1", "cwd": "/", "transcript_path": "/t"})


def hook_returning(output: dict[str, Any]) -> Any:
    async def hook(input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        return output

    return hook


def decision(kind: str, reason: str = "", **extra: Any) -> dict[str, Any]:
    """A PreToolUse hook output with a permission decision."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": kind,
            "permissionDecisionReason": reason,
            **extra,
        }
    }


async def decide_bash(cwd: str, command: str, **gate: Any) -> PermissionOutcome:
    """The outcome of ``command`` at a gate made by :func:`make_gate` with ``gate``; by default
    home is ``cwd`` and a callback refuses whatever it is asked."""
    gate.setdefault("callback", Recorder(PermissionResultDeny(message="no")))
    gate.setdefault("home", cwd)
    return await decide(make_gate(cwd, **gate), "Bash", {"command": command})


def refused(outcome: PermissionOutcome) -> bool:
    """Denied by a rule or handed to the callback: neither a rule nor a mode allowed it."""
    return outcome.behavior == "deny" or outcome.decided_by == "callback"
