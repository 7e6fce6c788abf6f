"""A turn runs without the cancel scopes of an interrupt only where nothing can interrupt it:
a ``query()`` whose calls a ``can_use_tool`` callback or a hook may deny with ``interrupt=True``
still ends the tool phase at that denial, in the main agent and in a subagent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents import (
    AgentDefinition,
    AgentOptions,
    HookMatcher,
    PermissionResultDeny,
    ResultError,
    ResultMessage,
    query,
)
from agents.testing import ScriptedBackend, Step, text, tool_use


async def _deny_and_interrupt(name: str, tool_input: dict[str, Any], context: Any) -> Any:
    return PermissionResultDeny(message="stop right there", interrupt=True)


async def _hook_denies_and_interrupts(
    data: dict[str, Any], tool_use_id: str | None, context: Any
) -> dict[str, Any]:
    decision = {"behavior": "deny", "message": "stop right there", "interrupt": True}
    return {
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}
    }


def _two_writes(prefix: str) -> Step:
    return Step(
        [
            tool_use("Bash", {"command": "echo one > one.txt"}, id=f"{prefix}1"),
            tool_use("Bash", {"command": "echo two > two.txt"}, id=f"{prefix}2"),
        ]
    )


async def _results(options: AgentOptions) -> list[ResultMessage]:
    results: list[ResultMessage] = []
    with pytest.raises(ResultError):
        async for message in query(prompt="go", options=options):
            if isinstance(message, ResultMessage):
                results.append(message)
    return results


@pytest.mark.parametrize("how", ["callback", "hook"])
async def test_a_query_denial_with_interrupt_ends_the_tool_phase(tmp_path: Path, how: str) -> None:
    """The denied call gets the denial, the next one is interrupted and never runs."""
    backend = ScriptedBackend([_two_writes("b"), Step([text("never")])])
    extra: dict[str, Any] = (
        {"can_use_tool": _deny_and_interrupt}
        if how == "callback"
        else {"hooks": {"PermissionRequest": [HookMatcher(None, [_hook_denies_and_interrupts])]}}
    )
    options = AgentOptions(cwd=str(tmp_path), backend=backend, **extra)
    [result] = await _results(options)
    assert (result.subtype, result.terminal_reason) == ("error_during_execution", "aborted_tools")
    assert [d["tool_use_id"] for d in result.permission_denials] == ["b1"]
    assert len(backend.requests) == 1  # the turn ended at the denial: no second request
    assert not (tmp_path / "one.txt").exists() and not (tmp_path / "two.txt").exists()


async def test_a_subagent_denial_with_interrupt_ends_its_tool_phase(tmp_path: Path) -> None:
    """In a subagent of a ``query()``: its second call is interrupted, never run, its turn ends
    as interrupted (not a crash), and the parent hears of it."""
    backend = ScriptedBackend(
        {
            "main": [
                Step([tool_use("Agent", {"description": "d", "prompt": "p",
                                         "subagent_type": "writer",
                                         "run_in_background": False})]),
                Step([text("done")]),
            ],
            "writer": [_two_writes("w"), Step([text("never")])],
        }
    )  # fmt: skip
    options = AgentOptions(
        cwd=str(tmp_path),
        backend=backend,
        can_use_tool=_deny_and_interrupt,
        agents={"writer": AgentDefinition(description="w", prompt="w", tools=["Bash"])},
    )
    results = []
    async for message in query(prompt="go", options=options):
        if isinstance(message, ResultMessage):
            results.append(message)
    assert results[-1].result == "done"
    assert [r.agent_type for r in backend.requests] == ["main", "writer", "main"]
    answer = backend.requests[2].messages[2]["content"][0]
    assert answer["is_error"] is True
    assert str(answer["content"]).endswith(
        "did not complete (error_during_execution: Interrupted by user)"
    )
    assert not (tmp_path / "one.txt").exists() and not (tmp_path / "two.txt").exists()
