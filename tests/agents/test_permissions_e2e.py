"""Permissions through the real loop: the evaluation order, denials, AskUserQuestion,
``auto`` mode's default classifier, ``set_permission_mode`` and tool removal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents import (
    AgentClient,
    AgentOptions,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    SystemMessage,
    ToolPermissionContext,
    create_sdk_mcp_server,
    tool,
)
from agents.hooks import HookContext
from agents.testing import ScriptedBackend, Step, text, tool_use
from agents.tools.ask import NO_ANSWER

from .helpers import collect, result_of

Answer = PermissionResultAllow | PermissionResultDeny


class Callback:
    """A ``can_use_tool`` that records its calls and gives a fixed answer."""

    def __init__(self, answer: Answer | None = None) -> None:
        self.answer = answer or PermissionResultAllow()
        self.calls: list[tuple[str, dict[str, Any], ToolPermissionContext]] = []

    async def __call__(
        self, name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> Answer:
        self.calls.append((name, tool_input, context))
        return self.answer


def pre_tool_use(decision: str) -> dict[str, list[HookMatcher]]:
    async def hook(_data: dict[str, Any], _id: str | None, _ctx: HookContext) -> dict[str, Any]:
        return {
            "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision}
        }

    return {"PreToolUse": [HookMatcher(hooks=[hook])]}


def bash_then_done(command: str = "echo hi", *, id: str = "b1") -> ScriptedBackend:
    return ScriptedBackend(
        [Step([tool_use("Bash", {"command": command}, id=id)]), Step([text("done")])]
    )


def answer_of(backend: ScriptedBackend, request: int = 1) -> dict[str, Any]:
    result: dict[str, Any] = backend.requests[request].messages[-1]["content"][0]
    assert result["type"] == "tool_result"
    return result


def denied_messages(messages: list[Any]) -> list[SystemMessage]:
    return [
        m for m in messages if isinstance(m, SystemMessage) and m.subtype == "permission_denied"
    ]


def opts(project: Path, backend: ScriptedBackend, **kw: Any) -> AgentOptions:
    return AgentOptions(cwd=str(project), backend=backend, **kw)


# -- the evaluation order: hooks, deny, ask, mode, allow, can_use_tool ---------------------------


async def test_hook_allow_does_not_skip_a_scoped_deny_rule(project: Path) -> None:
    """hook allow + deny rule Bash(rm *) → denied by the rule."""
    backend = bash_then_done("rm -rf build")
    options = opts(project, backend, hooks=pre_tool_use("allow"), disallowed_tools=["Bash(rm *)"])
    messages, error = await collect("clean", options)
    assert error is None
    answer = answer_of(backend)
    assert answer["is_error"] is True
    assert answer["content"] == "Permission to use Bash denied by rule 'Bash(rm *)'"
    assert result_of(messages).permission_denials == [
        {"tool_name": "Bash", "tool_use_id": "b1", "tool_input": {"command": "rm -rf build"}}
    ]


async def test_hook_ask_overrides_an_allow_rule(project: Path) -> None:
    """hook ask + allow rule Bash(echo *) → the callback is asked (and its yes runs the tool)."""
    backend = bash_then_done()
    callback = Callback()
    options = opts(
        project,
        backend,
        hooks=pre_tool_use("ask"),
        allowed_tools=["Bash(echo *)"],
        can_use_tool=callback,
    )
    _, error = await collect("say hi", options)
    assert error is None
    assert [c[0] for c in callback.calls] == ["Bash"]
    assert callback.calls[0][2].tool_use_id == "b1" and callback.calls[0][2].agent_id is None
    assert answer_of(backend)["content"].strip() == "hi"


async def test_dont_ask_never_calls_the_callback(project: Path) -> None:
    """dontAsk: what is not pre-approved is denied without asking."""
    backend = bash_then_done()
    callback = Callback()
    options = opts(project, backend, permission_mode="dontAsk", can_use_tool=callback)
    messages, _ = await collect("say hi", options)
    assert callback.calls == []
    assert "dontAsk" in answer_of(backend)["content"]
    assert len(result_of(messages).permission_denials) == 1


async def test_no_callback_in_default_mode_denies(project: Path) -> None:
    """default mode, no can_use_tool: denied, with a permission_denied message and an entry in
    permission_denials; the loop continues."""
    backend = bash_then_done()
    messages, error = await collect("say hi", opts(project, backend))
    assert error is None
    reason = "Permission to use Bash requires approval and no can_use_tool callback is set"
    assert answer_of(backend) == {
        "type": "tool_result",
        "tool_use_id": "b1",
        "content": reason,
        "is_error": True,
    }
    (message,) = denied_messages(messages)
    assert message.data == {
        "tool_name": "Bash",
        "tool_use_id": "b1",
        "reason": reason,
        "agent_id": "main",
    }
    result = result_of(messages)
    assert result.result == "done" and [d["tool_name"] for d in result.permission_denials] == [
        "Bash"
    ]


@pytest.mark.parametrize(
    "mode", ["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"]
)
async def test_an_input_failing_its_schema_is_a_validation_error_in_every_mode(
    project: Path, mode: str
) -> None:
    """A Read without ``file_path``: the result names the missing field, whatever the mode; no
    permission is asked (the callback never hears of it) and nothing counts as a denial."""
    backend = ScriptedBackend(
        [Step([tool_use("Read", {"path": "x.txt"}, id="r1")]), Step([text("done")])]
    )
    callback = Callback()
    options = opts(project, backend, permission_mode=mode, can_use_tool=callback)
    messages, error = await collect("read it", options)
    assert error is None
    answer = answer_of(backend)
    assert answer["is_error"] is True
    assert answer["content"].startswith("invalid input for Read: ")
    assert "file_path" in answer["content"]
    assert callback.calls == []
    assert denied_messages(messages) == []
    assert result_of(messages).permission_denials == []


async def test_bypass_permissions_honours_deny_rules(project: Path) -> None:
    backend = bash_then_done("rm x")
    options = opts(
        project, backend, permission_mode="bypassPermissions", disallowed_tools=["Bash(rm *)"]
    )
    messages, _ = await collect("go", options)
    assert "denied by rule" in answer_of(backend)["content"]
    assert len(denied_messages(messages)) == 1


async def test_bypass_permissions_honours_hook_denials(project: Path) -> None:
    backend = bash_then_done()
    options = opts(
        project, backend, permission_mode="bypassPermissions", hooks=pre_tool_use("deny")
    )
    messages, _ = await collect("go", options)
    assert answer_of(backend)["content"] == "Bash denied by PreToolUse hook"
    assert len(result_of(messages).permission_denials) == 1


async def test_bypass_permissions_runs_the_rest(project: Path) -> None:
    backend = bash_then_done()
    messages, _ = await collect("go", opts(project, backend, permission_mode="bypassPermissions"))
    assert answer_of(backend)["content"].strip() == "hi"
    assert result_of(messages).permission_denials == []


async def test_callback_updated_input_replaces_the_input(project: Path) -> None:
    backend = bash_then_done("echo original")
    callback = Callback(PermissionResultAllow(updated_input={"command": "echo rewritten"}))
    await collect("go", opts(project, backend, can_use_tool=callback))
    assert answer_of(backend)["content"].strip() == "rewritten"


async def test_notification_fires_before_the_callback_is_asked(project: Path) -> None:
    """Notification hooks (notification_type permission_prompt) run just before can_use_tool."""
    order: list[str] = []

    async def notified(data: dict[str, Any], _id: str | None, _ctx: HookContext) -> dict[str, Any]:
        order.append(f"notify:{data['notification_type']}:{data['message']}")
        return {}

    async def callback(name: str, _input: dict[str, Any], _ctx: ToolPermissionContext) -> Answer:
        order.append(f"ask:{name}")
        return PermissionResultAllow()

    backend = bash_then_done()
    hooks = {"Notification": [HookMatcher(hooks=[notified])]}
    await collect("go", opts(project, backend, hooks=hooks, can_use_tool=callback))
    assert order == [
        "notify:permission_prompt:Claude needs your permission to use Bash",
        "ask:Bash",
    ]


# -- a denial with interrupt ---------------------------------------------------------------------


async def test_deny_with_interrupt_ends_the_turn_and_keeps_the_transcript_valid(
    project: Path,
) -> None:
    """PermissionResultDeny(interrupt=True): the turn ends, every tool_use has a result, and the
    session takes the next prompt."""
    backend = ScriptedBackend(
        [
            Step(
                [
                    tool_use("Bash", {"command": "echo one"}, id="b1"),
                    tool_use("Bash", {"command": "echo two"}, id="b2"),
                ]
            ),
            Step([text("next")]),
        ]
    )
    callback = Callback(PermissionResultDeny(message="stop right there", interrupt=True))
    async with AgentClient(opts(project, backend, can_use_tool=callback)) as client:
        await client.query("go")
        first = [m async for m in client.receive_response()]
        await client.query("again")
        second = [m async for m in client.receive_response()]
    result = first[-1]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.terminal_reason) == ("error_during_execution", "aborted_tools")
    assert len(callback.calls) == 1
    assert [d["tool_use_id"] for d in result.permission_denials] == ["b1"]
    history = backend.requests[1].messages
    uses = [b["id"] for b in history[1]["content"] if b["type"] == "tool_use"]
    answers = history[2]["content"]
    assert [a["tool_use_id"] for a in answers] == uses == ["b1", "b2"]
    assert all(a["is_error"] for a in answers)
    assert [a["content"] for a in answers] == ["stop right there", "Interrupted by user"]
    assert history[3] == {"role": "user", "content": "again"}
    assert isinstance(second[-1], ResultMessage) and second[-1].result == "next"


# -- AskUserQuestion ------------------------------------------------------------------------------

QUESTION = {
    "questions": [
        {
            "question": "Which colour?",
            "header": "Colour",
            "options": [
                {"label": "Blue", "description": "cool"},
                {"label": "Red", "description": "warm"},
            ],
            "multiSelect": False,
        }
    ]
}


def ask_backend() -> ScriptedBackend:
    return ScriptedBackend(
        [Step([tool_use("AskUserQuestion", QUESTION, id="q1")]), Step([text("blue it is")])]
    )


async def test_ask_user_question_goes_to_the_callback_even_in_bypass_mode(project: Path) -> None:
    """The callback's updated_input carries the answers; the model gets them back."""
    calls: list[dict[str, Any]] = []

    async def answer(name: str, data: dict[str, Any], _ctx: ToolPermissionContext) -> Answer:
        calls.append(data)
        return PermissionResultAllow(updated_input={**data, "answers": {"Which colour?": "Blue"}})

    backend = ask_backend()
    options = opts(
        project,
        backend,
        tools=["AskUserQuestion"],
        permission_mode="bypassPermissions",
        can_use_tool=answer,
    )
    messages, error = await collect("pick", options)
    assert error is None
    assert calls == [QUESTION]
    content = answer_of(backend)["content"]
    assert '"Which colour?"="Blue"' in content
    assert result_of(messages).permission_denials == []


async def test_ask_user_question_without_a_callback_says_no_one_can_answer(project: Path) -> None:
    backend = ask_backend()
    options = opts(project, backend, tools=["AskUserQuestion"], permission_mode="bypassPermissions")
    messages, error = await collect("pick", options)
    assert error is None
    answer = answer_of(backend)
    assert (answer["content"], answer["is_error"]) == (NO_ANSWER, True)
    assert result_of(messages).permission_denials == []


# -- auto mode's default classifier --------------------------------------------------------------


def auto_backend(verdict: str) -> ScriptedBackend:
    return ScriptedBackend(
        {
            "main": [
                Step([tool_use("Bash", {"command": "echo hi"}, id="b1")]),
                Step([text("done")]),
            ],
            "classifier": [Step([text(verdict)])],
        }
    )


@pytest.mark.parametrize(
    ("verdict", "asked", "outcome"),
    [
        ("yes", False, "hi"),
        ("No.", False, "Bash blocked by the auto-mode classifier"),
        ("maybe later", True, "hi"),
    ],
)
async def test_auto_mode_asks_the_backend_a_yes_no_question(
    project: Path, verdict: str, asked: bool, outcome: str
) -> None:
    """yes approves, no denies, anything else goes on to can_use_tool; the classifier call is
    charged to the session (model_usage) but not to the main agent's usage."""
    backend = auto_backend(verdict)
    callback = Callback()
    options = opts(project, backend, permission_mode="auto", can_use_tool=callback)
    messages, error = await collect("go", options)
    assert error is None
    assert bool(callback.calls) is asked
    assert answer_of(backend, 2)["content"].strip() == outcome
    (request,) = [r for r in backend.requests if r.purpose == "classifier"]
    assert "Tool: Bash" in request.messages[0]["content"]
    assert '"echo hi"' in request.messages[0]["content"]
    assert request.tools == []
    result = result_of(messages)
    (entry,) = result.model_usage.values()
    assert entry["output_tokens"] > result.usage["output_tokens"]


async def test_auto_mode_classifier_is_not_asked_for_pre_approved_calls(project: Path) -> None:
    backend = ScriptedBackend(
        {"main": [Step([tool_use("Bash", {"command": "echo hi"})]), Step([text("done")])]}
    )
    options = opts(project, backend, permission_mode="auto", allowed_tools=["Bash(echo *)"])
    _, error = await collect("go", options)
    assert error is None
    assert [r.purpose for r in backend.requests] == ["turn", "turn"]


# -- set_permission_mode, tool removal -------------------------------------------------------------


async def test_set_permission_mode_applies_from_the_next_call(project: Path) -> None:
    backend = ScriptedBackend(
        [
            Step([tool_use("Bash", {"command": "echo one"}, id="b1")]),
            Step([text("denied")]),
            Step([tool_use("Bash", {"command": "echo two"}, id="b2")]),
            Step([text("ran")]),
        ]
    )
    async with AgentClient(opts(project, backend)) as client:
        await client.query("first")
        first = [m async for m in client.receive_response()]
        await client.set_permission_mode("bypassPermissions")
        await client.query("second")
        second = [m async for m in client.receive_response()]
    assert isinstance(first[-1], ResultMessage) and len(first[-1].permission_denials) == 1
    assert isinstance(second[-1], ResultMessage) and second[-1].permission_denials == []
    assert answer_of(backend, 3)["content"].strip() == "two"


async def test_set_permission_mode_rejects_unknown_modes(project: Path) -> None:
    async with AgentClient(opts(project, ScriptedBackend([]))) as client:
        with pytest.raises(ValueError, match=r"^unknown permission_mode 'yolo'"):
            await client.set_permission_mode("yolo")


async def test_bare_deny_rules_remove_tools_from_the_model(project: Path) -> None:
    """``Bash`` and ``mcp__t`` (a whole server) disappear from the tool list; a scoped rule
    such as ``Read(./secret)`` does not remove Read."""

    @tool("ping", "ping", {})
    async def ping(_args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "pong"}]}

    backend = ScriptedBackend([Step([text("ok")])])
    options = opts(
        project,
        backend,
        tools=["Bash", "Read", "Glob"],
        mcp_servers={"t": create_sdk_mcp_server("t", "1", [ping])},
        disallowed_tools=["Bash", "mcp__t", "Read(./secret)"],
    )
    messages, _ = await collect("hi", options)
    names = [t["name"] for t in backend.requests[0].tools]
    assert names == ["Read", "Glob"]
    init = messages[0]
    assert isinstance(init, SystemMessage) and init.data["tools"] == names


# -- subagents: their mode, their id in hook inputs ----------------------------------------------


async def test_a_subagents_calls_carry_its_agent_id_to_hooks_and_the_callback(
    project: Path,
) -> None:
    """Inside a subagent, can_use_tool's context has agent_id and tool hooks see agent_id and
    agent_type; the main agent's own calls have neither."""
    from agents import AgentDefinition

    seen: list[dict[str, Any]] = []

    async def hook(data: dict[str, Any], _id: str | None, _ctx: HookContext) -> dict[str, Any]:
        seen.append(data)
        return {}

    backend = ScriptedBackend(
        {
            "main": [
                Step(
                    [
                        tool_use(
                            "Agent",
                            {
                                "description": "say hi",
                                "prompt": "say hi",
                                "subagent_type": "helper",
                            },
                        )
                    ]
                ),
                Step([text("all done")]),
            ],
            "helper": [
                Step([tool_use("Bash", {"command": "echo sub"}, id="s1")]),
                Step([text("said hi")]),
            ],
        }
    )
    callback = Callback()
    options = opts(
        project,
        backend,
        agents={"helper": AgentDefinition(description="helps", prompt="You help.")},
        can_use_tool=callback,
        hooks={"PreToolUse": [HookMatcher(hooks=[hook])]},
    )
    messages, error = await collect("delegate", options)
    assert error is None
    assert [(name, ctx.tool_use_id) for name, _, ctx in callback.calls] == [("Bash", "s1")]
    agent_id = callback.calls[0][2].agent_id
    assert agent_id is not None and agent_id != "main"
    by_tool = {d["tool_name"]: d for d in seen}
    assert "agent_id" not in by_tool["Agent"]
    assert (by_tool["Bash"]["agent_id"], by_tool["Bash"]["agent_type"]) == (agent_id, "helper")
    assert result_of(messages).result == "all done"


async def test_a_rule_naming_an_unknown_tool_is_a_warning(project: Path) -> None:
    """An unknown tool name in a rule warns at startup; known names and aliases do not."""
    import warnings

    from agents import query

    def run(rules: list[str]) -> Any:
        return query(
            prompt="hi",
            options=AgentOptions(
                cwd=str(project), backend=ScriptedBackend([Step([text("ok")])]), allowed_tools=rules
            ),
        )

    with pytest.warns(UserWarning, match=r"^permission rule Grepp: unknown tool 'Grepp'$"):
        async for _ in run(["Grepp"]):
            pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        async for _ in run(["Task(researcher)", "Bash(npm *)", "mcp__srv", "NotebookEdit"]):
            pass
