"""Settings-file ``prompt`` hooks: the session's model answers ``{"ok", "reason"?}`` and a
``false`` blocks as a command's exit 2 does; the question is a request of its own, on the budget."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import example, given
from hypothesis import strategies as st

from agents import AgentOptions, ToolResultBlock, UserMessage
from agents.hooks import HookContext
from agents.settings import HookDecisionError, PromptHook, load_settings, prompt_hook
from agents.settings._prompt_hooks import parse_answer
from agents.testing import ScriptedBackend, Step, text, tool_use
from tests.agents.helpers import collect
from tests.agents.tools.toolkit import printed_within_a_deadline

CTX = HookContext()
INPUT = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "rm -r /"}}


def asking(answer: str | None) -> tuple[Any, list[tuple[str, str, str | None]]]:
    asked: list[tuple[str, str, str | None]] = []

    async def ask(prompt: str, system: str, model: str | None, hook_input: dict[str, Any]) -> Any:
        asked.append((prompt, system, model))
        await trio.lowlevel.checkpoint()
        return answer

    return ask, asked


def hook_of(prompt: str = "Is this safe? $ARGUMENTS", event: str = "PreToolUse") -> PromptHook:
    return PromptHook(event=event, matcher=None, prompt=prompt, source="test")


async def test_ok_true_lets_the_action_go_ahead() -> None:
    ask, _ = asking('{"ok": true}')
    assert await prompt_hook(hook_of(), ask)(INPUT, "t1", CTX) == {}


async def test_ok_false_denies_a_tool_call_with_the_reason() -> None:
    ask, _ = asking('Sure. {"ok": false, "reason": "it deletes everything"}')
    output = await prompt_hook(hook_of(), ask)(INPUT, "t1", CTX)
    specific = output["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert specific["permissionDecisionReason"] == "it deletes everything"


async def test_ok_false_blocks_a_stop() -> None:
    ask, _ = asking('{"ok": false, "reason": "the tests were not run"}')
    output = await prompt_hook(hook_of(event="Stop"), ask)({}, None, CTX)
    assert output == {"decision": "block", "reason": "the tests were not run"}


async def test_the_arguments_placeholder_is_the_hook_input_as_json() -> None:
    ask, asked = asking('{"ok": true}')
    await prompt_hook(hook_of("Judge: $ARGUMENTS."), ask)(INPUT, "t1", CTX)
    prompt = asked[0][0]
    assert prompt.startswith("Judge: {") and prompt.endswith("}.")
    assert json.loads(prompt[len("Judge: ") : -1]) == INPUT


async def test_without_a_placeholder_the_input_is_appended() -> None:
    ask, asked = asking('{"ok": true}')
    await prompt_hook(hook_of("Is it safe?"), ask)(INPUT, "t1", CTX)
    assert asked[0][0].startswith("Is it safe?") and '"rm -r /"' in asked[0][0]


@pytest.mark.parametrize(
    "answer",
    ["yes", '{"ok": "yes"}', "{not json}", '{"ok": ' + "[" * 100_000 + "]" * 100_000 + "}"],
)
async def test_an_unusable_answer_is_the_hooks_error(answer: str) -> None:
    """An error, which the hook runner turns into a denial before a tool runs and a
    non-blocking error elsewhere."""
    ask, _ = asking(answer)
    with pytest.raises(HookDecisionError, match=r"^PreToolUse prompt hook: the model's answer"):
        await prompt_hook(hook_of(), ask)(INPUT, "t1", CTX)


async def test_a_question_the_budget_refuses_is_the_hooks_error() -> None:
    ask, _ = asking(None)
    with pytest.raises(HookDecisionError, match="the budget has no room for the question"):
        await prompt_hook(hook_of(event="Stop"), ask)({}, None, CTX)


def test_prompt_hooks_are_read_from_settings(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"type": "prompt", "prompt": "Safe?", "model": "haiku", "timeout": 9}
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [entry]}]}}))
    (hook,) = load_settings(str(project), ["project"]).hooks
    assert hook == PromptHook(
        event="Stop", matcher=None, prompt="Safe?", source=str(path), model="haiku", timeout=9.0
    )


def test_a_prompt_hook_without_a_prompt_names_file_and_key(project: Path) -> None:
    from agents.settings import SettingsError

    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "prompt"}]}]}}))
    with pytest.raises(SettingsError, match=rf"^{path}: hooks\.Stop\[0\]\.hooks\[0\]\.prompt"):
        load_settings(str(project), ["project"])


async def test_a_settings_prompt_hook_asks_the_sessions_model_and_denies(project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    hook = {"type": "prompt", "prompt": "May this run? $ARGUMENTS"}
    settings.write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}})
    )
    backend = ScriptedBackend(
        {
            "main": [Step([tool_use("Bash", {"command": "echo hi"})]), Step([text("done")])],
            "hook": [Step([text('{"ok": false, "reason": "no shell today"}')])],
        }
    )
    options = AgentOptions(
        backend=backend,
        cwd=str(project),
        setting_sources=["project"],
        permission_mode="bypassPermissions",
    )
    with trio.fail_after(30):
        messages, error = await collect("go", options)
    assert error is None
    (block,) = [
        b
        for m in messages
        if isinstance(m, UserMessage)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert block.is_error and "no shell today" in str(block.content)
    (question,) = [r for r in backend.requests if r.purpose == "hook"]
    assert '"echo hi"' in question.messages[0]["content"]
    assert question.model == options.resolved_model
    backend.assert_consumed()


async def _cost_with_hook_usage(project: Path, input_tokens: int) -> float:
    from agents import ResultMessage
    from agents.testing.scripted import usage

    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    hook = {"type": "prompt", "prompt": "Done?"}
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [hook]}]}}))
    backend = ScriptedBackend(
        {
            "main": [Step([text("done")])],
            "hook": [Step([text('{"ok": true}')], usage=usage(input_tokens, 1))],
        }
    )
    options = AgentOptions(backend=backend, cwd=str(project), setting_sources=["project"])
    with trio.fail_after(30):
        messages, error = await collect("go", options)
    assert error is None
    return [m for m in messages if isinstance(m, ResultMessage)][-1].total_cost_usd or 0.0


async def test_the_hooks_question_is_charged_to_the_session(project: Path) -> None:
    small = await _cost_with_hook_usage(project, 1)
    large = await _cost_with_hook_usage(project, 1_000_000)
    assert large - small > 0.5  # a million input tokens cost dollars on every model


# -- the budget: the hook's question is a model request like any other ----------------------------

#: a hook prompt whose question alone costs more than the budgets below (its input is ~400 000
#: tokens at most, which reserve mode must book before sending it)
HUGE = "Is this fine? " + "x" * 400_000


def _settings(project: Path, event: str, prompt: str, matcher: str | None = None) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entry: dict[str, Any] = {"hooks": [{"type": "prompt", "prompt": prompt}]}
    if matcher is not None:
        entry["matcher"] = matcher
    path.write_text(json.dumps({"hooks": {event: [entry]}}))


def _writes(marker: Path) -> list[Step]:
    call = tool_use("Write", {"file_path": str(marker), "content": "x"})
    return [Step([call]), Step([text("done")])]


def _options(project: Path, backend: ScriptedBackend, **more: Any) -> AgentOptions:
    return AgentOptions(
        backend=backend,
        cwd=str(project),
        setting_sources=["project"],
        permission_mode="bypassPermissions",
        **more,
    )


async def test_a_guard_the_budget_cannot_pay_for_denies_the_call(project: Path) -> None:
    """Reserve mode: the question does not fit in what is left; nothing is sent for it, and
    the call it guards is denied (a guard that could not be asked never opens the gate)."""
    _settings(project, "PreToolUse", HUGE, matcher="Write")
    marker = project / "written"
    backend = ScriptedBackend({"main": _writes(marker), "hook": []})
    options = _options(project, backend, max_budget_usd=0.5, budget_mode="reserve")
    with trio.fail_after(30):
        messages, _ = await collect("go", options)
    assert not marker.exists()
    (block,) = [
        b
        for m in messages
        if isinstance(m, UserMessage) and not isinstance(m.content, str)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert block.is_error and "the budget has no room for the question" in str(block.content)
    assert [r for r in backend.requests if r.purpose == "hook"] == []


async def test_a_stop_hook_the_budget_cannot_pay_for_lets_the_agent_stop(project: Path) -> None:
    """Elsewhere the refusal is a non-blocking error: blocking the Stop would keep going an
    agent whose budget cannot pay for its hook's question."""
    from agents import ResultMessage

    _settings(project, "Stop", HUGE)
    backend = ScriptedBackend({"main": [Step([text("done")])], "hook": []})
    options = _options(project, backend, max_budget_usd=0.5, budget_mode="reserve")
    with trio.fail_after(30):
        messages, error = await collect("go", options)
    assert error is None
    result = [m for m in messages if isinstance(m, ResultMessage)][-1]
    assert (result.subtype, result.result) == ("success", "done")
    assert [r for r in backend.requests if r.purpose == "hook"] == []


async def test_a_question_that_trips_the_ledger_ends_the_run_on_the_budget(project: Path) -> None:
    """Soft cap: the answer is charged when it arrives; once its cost has tripped the ledger
    the guarded call never runs and the run ends on the budget, as after any response."""
    from agents.testing.scripted import usage

    _settings(project, "PreToolUse", "May it run?", matcher="Write")
    marker = project / "written"
    dear = Step([text('{"ok": true}')], usage=usage(1_000_000, 1))
    backend = ScriptedBackend({"main": _writes(marker), "hook": [dear]})
    with trio.fail_after(30):
        _, error = await collect("go", _options(project, backend, max_budget_usd=0.5))
    assert not marker.exists()
    assert error is not None and error.subtype == "error_max_budget_usd"


# -- the answer is a model's text: reading it never holds the event loop -------------------------

#: The object as it was found: a search for ``\{.*\}`` scans to the end of the answer from every
#: ``{`` when no ``}`` follows, quadratic in the answer (an agent hook's final answer may be
#: 32 000 tokens: 200 000 braces took 8 s). Kept as the reference.
_REFERENCE_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


@given(
    st.lists(st.sampled_from(["{", "}", '"ok"', ":", " true", "false", "\n", "x", '"'])).map(
        "".join
    )
)
@example('say {"ok": true} and {"ok": false}')
@example("}{")
def test_the_answer_is_read_as_the_regex_read_it(answer: str) -> None:
    """The verdict is the one the regex's first object gave, for any answer."""
    found = _REFERENCE_OBJECT.search(answer)
    expected = None
    if found is not None:
        try:
            data = json.loads(found.group(0))
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("ok"), bool):
            reason = data.get("reason")
            expected = (data["ok"], reason if isinstance(reason, str) else None)
    assert parse_answer(answer) == expected


def test_an_answer_of_opening_braces_is_read_at_once() -> None:
    """1 000 000 braces and no closing one (the regex: hours) are no verdict, at once."""
    script = (
        "from agents.settings._prompt_hooks import parse_answer\n"
        "print(parse_answer('{' * 1_000_000))"
    )
    assert printed_within_a_deadline(script, seconds=30) == "None"
