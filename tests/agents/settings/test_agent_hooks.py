"""Settings-file ``agent`` hooks: a short-lived agent with Read, Grep and Glob decides
``{"ok", "reason"?}``; it runs on the session's backend and budget, bounded in time and turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from agents import AgentOptions, ResultMessage, ToolResultBlock, UserMessage
from agents.backends.base import ModelRequest
from agents.hooks import HookContext
from agents.settings import (
    AGENT_HOOK_MAX_TURNS,
    AgentHook,
    HookDecisionError,
    agent_hook,
    check_decision,
)
from agents.testing import ScriptedBackend, Step, text, tool_use
from agents.testing.scripted import usage
from tests.agents.helpers import collect

#: the scripted backend plays the hook's agent under this key (its agent type)
HOOK = "hook-agent"


def guard_writes(project: Path, **hook: Any) -> None:
    """A PreToolUse agent hook on Write in the project's settings."""
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"type": "agent", "prompt": "May this run? $ARGUMENTS", **hook}
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [entry]}]}}))


def options_for(project: Path, backend: ScriptedBackend, **more: Any) -> AgentOptions:
    return AgentOptions(
        backend=backend,
        cwd=str(project),
        setting_sources=["project"],
        permission_mode="bypassPermissions",
        **more,
    )


def writes(marker: Path) -> list[Step]:
    """The main agent writes ``marker``, then ends."""
    call = tool_use("Write", {"file_path": str(marker), "content": "x"})
    return [Step([call]), Step([text("done")])]


def tool_results(messages: list[Any]) -> list[ToolResultBlock]:
    return [
        b
        for m in messages
        if isinstance(m, UserMessage) and not isinstance(m.content, str)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]


def hook_requests(backend: ScriptedBackend) -> list[ModelRequest]:
    return [r for r in backend.requests if r.agent_type == HOOK]


async def test_ok_true_lets_the_tool_call_run(project: Path) -> None:
    guard_writes(project)
    marker = project / "written"
    backend = ScriptedBackend({"main": writes(marker), HOOK: [Step([text('{"ok": true}')])]})
    with trio.fail_after(30):
        _, error = await collect("go", options_for(project, backend))
    assert error is None
    assert marker.exists()
    (question,) = hook_requests(backend)
    assert str(marker) in question.messages[0]["content"]  # $ARGUMENTS: the hook input
    assert {t["name"] for t in question.tools} == {"Read", "Grep", "Glob"}
    backend.assert_consumed()


async def test_ok_false_denies_the_call_with_the_reason_after_reading_a_file(
    project: Path,
) -> None:
    guard_writes(project)
    (project / "POLICY.md").write_text("No new files today.\n")
    marker = project / "written"
    backend = ScriptedBackend(
        {
            "main": writes(marker),
            HOOK: [
                Step([tool_use("Read", {"file_path": str(project / "POLICY.md")})]),
                Step([text('{"ok": false, "reason": "the policy says no new files"}')]),
            ],
        }
    )
    with trio.fail_after(30):
        messages, error = await collect("go", options_for(project, backend))
    assert error is None
    assert not marker.exists()
    (block,) = tool_results(messages)
    assert block.is_error and "the policy says no new files" in str(block.content)
    _, second = hook_requests(backend)
    assert "No new files today." in json.dumps(second.messages[-1]["content"])
    backend.assert_consumed()


@pytest.mark.parametrize("where", ["denied", "outside"])
async def test_the_hook_agent_reads_under_the_sessions_rules(
    project: Path, tmp_path_factory: pytest.TempPathFactory, where: str
) -> None:
    """The hook agent's input is the model's tool call, so a prompt injection can steer it: its
    reads obey the session's deny rules and working directories (nobody is there to ask)."""
    guard_writes(project)
    settings = project / ".claude" / "settings.json"
    config = json.loads(settings.read_text())
    config["permissions"] = {"deny": ["Read(./secret.txt)"]}
    settings.write_text(json.dumps(config))
    if where == "denied":
        secret = project / "secret.txt"
    else:
        secret = tmp_path_factory.mktemp("elsewhere") / "key.txt"
    secret.write_text("hunter2\n")
    backend = ScriptedBackend(
        {
            "main": writes(project / "written"),
            HOOK: [
                Step([tool_use("Read", {"file_path": str(secret)})]),
                Step([text('{"ok": false, "reason": "no"}')]),
            ],
        }
    )
    with trio.fail_after(30):
        _, error = await collect("go", options_for(project, backend))
    assert error is None
    _, second = hook_requests(backend)
    answer = json.dumps(second.messages[-1]["content"])
    assert "hunter2" not in answer
    assert '"is_error": true' in answer
    backend.assert_consumed()


async def test_an_answer_that_is_not_a_decision_is_asked_for_again(project: Path) -> None:
    guard_writes(project)
    marker = project / "written"
    backend = ScriptedBackend(
        {
            "main": writes(marker),
            HOOK: [
                Step([text("Looks fine to me.")]),
                Step([text('{"ok": false, "reason": "on second thought, no"}')]),
            ],
        }
    )
    with trio.fail_after(30):
        messages, _ = await collect("go", options_for(project, backend))
    assert not marker.exists()
    assert "on second thought, no" in str(tool_results(messages)[0].content)
    _, again = hook_requests(backend)
    assert '{"ok": true}' in again.messages[-1]["content"]
    backend.assert_consumed()


# The timeouts are real (short) ones: the session reads its settings files in worker threads,
# during which an autojump clock would jump to the test's own deadline.


def test_an_agent_hook_waits_60_seconds_by_default() -> None:
    from agents.settings import shell_hook_matchers

    hooks = (
        AgentHook(event="Stop", matcher=None, prompt="?", source="t"),
        AgentHook(event="Stop", matcher=None, prompt="?", source="t", timeout=5.0),
    )
    matchers = shell_hook_matchers(hooks, "/", {}, run_agent=running(_result("success")))
    assert [m.timeout for m in matchers["Stop"]] == [60.0, 5.0]


async def test_a_hook_agent_past_its_timeout_is_cancelled_and_the_guarded_call_denied(
    project: Path,
) -> None:
    guard_writes(project, timeout=0.2)
    marker = project / "written"
    slow = Step([text('{"ok": true}')], latency=60)
    backend = ScriptedBackend({"main": writes(marker), HOOK: [slow]})
    start = trio.current_time()
    with trio.fail_after(30):
        messages, error = await collect("go", options_for(project, backend))
    assert error is None
    assert not marker.exists()  # a guard that did not answer never opens the gate
    assert trio.current_time() - start < 20
    (block,) = tool_results(messages)
    assert block.is_error and "timed out after 0.2s" in str(block.content)


async def test_a_stop_hook_agent_past_its_timeout_lets_the_agent_stop(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"type": "agent", "prompt": "Are the tests green?", "timeout": 0.2}
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [entry]}]}}))
    slow = Step([text('{"ok": false, "reason": "run them"}')], latency=60)
    backend = ScriptedBackend({"main": [Step([text("done")])], HOOK: [slow]})
    with trio.fail_after(30):
        messages, error = await collect("go", options_for(project, backend))
    assert error is None
    result = [m for m in messages if isinstance(m, ResultMessage)][-1]
    assert result.subtype == "success" and result.result == "done"


async def test_a_hook_agent_ends_at_its_turn_limit_without_deciding(project: Path) -> None:
    guard_writes(project)
    marker = project / "written"
    looking = [Step([tool_use("Glob", {"pattern": "*"})]) for _ in range(AGENT_HOOK_MAX_TURNS)]
    backend = ScriptedBackend({"main": writes(marker), HOOK: looking})
    with trio.fail_after(30):
        messages, error = await collect("go", options_for(project, backend))
    assert error is None
    assert not marker.exists()
    assert len(hook_requests(backend)) == AGENT_HOOK_MAX_TURNS
    (block,) = tool_results(messages)
    assert "the agent did not decide" in str(block.content)
    assert "maximum number of turns" in str(block.content)
    backend.assert_consumed()


async def _cost_with_hook_usage(project: Path, input_tokens: int) -> float:
    guard_writes(project)
    backend = ScriptedBackend(
        {
            "main": writes(project / "written"),
            HOOK: [Step([text('{"ok": true}')], usage=usage(input_tokens, 1))],
        }
    )
    with trio.fail_after(30):
        messages, error = await collect("go", options_for(project, backend))
    assert error is None
    return [m for m in messages if isinstance(m, ResultMessage)][-1].total_cost_usd or 0.0


async def test_the_hook_agents_responses_are_charged_to_the_session(project: Path) -> None:
    small = await _cost_with_hook_usage(project, 1)
    large = await _cost_with_hook_usage(project, 1_000_000)
    assert large - small > 0.5  # a million input tokens cost dollars on every model


async def test_a_hook_agent_the_budget_cannot_pay_for_denies_the_call(project: Path) -> None:
    """Reserve mode: the hook's first request (the whole hook input) does not fit in what is
    left; the call it guards is denied, and nothing is sent for the hook."""
    guard_writes(project)
    marker = project / "written"
    call = tool_use("Write", {"file_path": str(marker), "content": "x" * 400_000})
    backend = ScriptedBackend(
        {"main": [Step([call], usage=usage(10, 10)), Step([text("done")])], HOOK: []}
    )
    options = options_for(project, backend, max_budget_usd=0.5, budget_mode="reserve")
    with trio.fail_after(30):
        messages, _ = await collect("go", options)
    assert not marker.exists()
    (block,) = tool_results(messages)
    assert block.is_error and "the budget has no room" in str(block.content)
    assert hook_requests(backend) == []


# -- the callback on its own ----------------------------------------------------------------------


def _result(subtype: str, structured: Any = None, errors: list[str] | None = None) -> Any:
    return ResultMessage(
        subtype=subtype,  # type: ignore[arg-type]
        duration_ms=0,
        duration_api_ms=0,
        is_error=subtype != "success",
        num_turns=1,
        session_id="s",
        structured_output=structured,
        errors=errors,
    )


def running(result: ResultMessage) -> Any:
    async def run_agent(
        prompt: str, system: str, model: str | None, hook_input: dict[str, Any]
    ) -> ResultMessage:
        await trio.lowlevel.checkpoint()
        return result

    return run_agent


async def test_a_budget_refusal_is_the_hooks_error() -> None:
    hook = AgentHook(event="Stop", matcher=None, prompt="?", source="test")
    refused = _result("error_max_budget_usd", errors=["Reached maximum budget ($1)"])
    with pytest.raises(HookDecisionError, match="the budget has no room for the question"):
        await agent_hook(hook, running(refused))({}, None, HookContext())


async def test_a_run_that_did_not_decide_is_the_hooks_error() -> None:
    hook = AgentHook(event="Stop", matcher=None, prompt="?", source="test")
    failed = _result("error_during_execution", errors=["api error"])
    with pytest.raises(HookDecisionError, match=r"did not decide \(api error\)"):
        await agent_hook(hook, running(failed))({}, None, HookContext())


def test_the_decision_check_accepts_only_an_ok_object() -> None:
    assert check_decision('{"ok": true}') == ({"ok": True}, None)
    refusal = check_decision('So: {"ok": false, "reason": "r"}')
    assert refusal == ({"ok": False, "reason": "r"}, None)
    for bad in ("yes", '{"ok": "yes"}', "{not json}"):
        value, again = check_decision(bad)
        assert value is None and again is not None


async def test_a_hook_agent_response_that_trips_the_ledger_ends_the_run_on_the_budget(
    project: Path,
) -> None:
    """Soft cap: the hook agent's response is charged as it arrives; once it has tripped the
    ledger the agent stops, the guarded call never runs and the run ends on the budget."""
    guard_writes(project)
    marker = project / "written"
    dear = Step([tool_use("Glob", {"pattern": "*"})], usage=usage(1_000_000, 1))
    backend = ScriptedBackend({"main": writes(marker), HOOK: [dear]})
    with trio.fail_after(30):
        _, error = await collect("go", options_for(project, backend, max_budget_usd=0.5))
    assert not marker.exists()
    assert error is not None and error.subtype == "error_max_budget_usd"
    assert len(hook_requests(backend)) == 1  # no second response after the trip


async def test_each_hook_agent_has_an_agent_id_of_its_own(project: Path) -> None:
    """Two guarded calls: two hook agents, each charged under its own id (ids of one process
    share their beginning, so the id's short form is cut from its end)."""
    guard_writes(project)
    first, second = (
        tool_use("Write", {"file_path": str(project / n), "content": "x"}) for n in "ab"
    )
    backend = ScriptedBackend(
        {
            "main": [Step([first]), Step([second]), Step([text("done")])],
            HOOK: [Step([text('{"ok": true}')]), Step([text('{"ok": true}')])],
        }
    )
    with trio.fail_after(30):
        _, error = await collect("go", options_for(project, backend))
    assert error is None
    ids = [r.agent_id for r in hook_requests(backend)]
    assert len(ids) == 2 and ids[0] != ids[1], ids
