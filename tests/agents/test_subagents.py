"""Subagents: the Agent tool, foreground and background, limits, ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from agents import (
    AgentDefinition,
    AgentOptions,
    AssistantMessage,
    PermissionResultDeny,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolPermissionContext,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from agents._assembly.query import build_registry
from agents.backends.base import ModelRequest
from agents.testing import ScriptedBackend, Step, text, tool_use

from .helpers import collect, result_of


def spawn(kind: str, background: bool = False, prompt: str = "do it") -> Any:
    return tool_use(
        "Agent",
        {"description": f"{kind} task", "prompt": prompt, "subagent_type": kind,
         "run_in_background": background},
    )  # fmt: skip


AGENTS = {
    "researcher": AgentDefinition(description="finds things", prompt="You research."),
    "auditor": AgentDefinition(description="checks things", prompt="You audit."),
}


def tool_results(messages: list[Any]) -> dict[str, ToolResultBlock]:
    return {
        b.tool_use_id: b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    }


async def test_foreground_subagent_returns_its_final_text(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """The Agent call waits for the child; its messages carry parent_tool_use_id; text returns."""
    call = spawn("researcher", prompt="look around")
    backend = ScriptedBackend(
        {
            "main": [Step([call]), Step([text("main done")])],
            "researcher": [
                Step([text("hmm"), tool_use("Glob", {"pattern": "*"})]),
                Step([text("found 0 files")]),
            ],
        }
    )
    options = AgentOptions(cwd=str(project), backend=backend, agents=AGENTS)
    messages, error = await collect("go", options)
    assert error is None
    child_uses = [
        m for m in messages
        if isinstance(m, AssistantMessage) and m.parent_tool_use_id == call.id
    ]  # fmt: skip
    assert [type(m.content[0]) for m in child_uses] == [ToolUseBlock]  # text not forwarded
    result = tool_results(messages)[call.id]
    assert result.content == [{"type": "text", "text": "found 0 files"}] and not result.is_error
    # the child started fresh: its own system prompt, the Agent prompt as first message
    child_request = next(r for r in backend.requests if r.agent_type == "researcher")
    assert child_request.system == [{"type": "text", "text": "You research."}]
    assert child_request.messages == [{"role": "user", "content": "look around"}]
    assert child_request.agent_id == "main/researcher-1"
    assert result_of(messages).subtype == "success"
    summary = messages[-1]
    assert isinstance(summary, SystemMessage) and summary.subtype == "session_summary"
    assert set(summary.data["cost_by_agent"]) == {"main", "main/researcher-1"}
    assert summary.data["turns_by_agent"] == {"main": 2, "main/researcher-1": 2}


async def test_forward_subagent_text_streams_the_childs_text(project: Path) -> None:
    """forward_subagent_text=True also streams the child's text blocks."""
    backend = ScriptedBackend(
        {"main": [Step([spawn("researcher")]), Step([text("ok")])],
         "researcher": [Step([text("child says hi")])]}
    )  # fmt: skip
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, forward_subagent_text=True
    )
    messages, _ = await collect("go", options)
    texts = [
        (m.parent_tool_use_id, b.text) for m in messages if isinstance(m, AssistantMessage)
        for b in m.content if isinstance(b, TextBlock)
    ]  # fmt: skip
    assert texts[0] == (backend.requests[0].messages and texts[0][0], "child says hi")
    assert texts[0][0] is not None and texts[-1] == (None, "ok")


async def test_a_background_agents_progress_follows_the_responses_that_call_tools_only(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """``task_progress`` after each response that goes on to run tools; the response that ends
    the agent's run reports nothing before its ``task_notification``, which says more (its
    turns and cost): an agent of one answer streams ``task_started``, ``task_notification``."""
    calls = [spawn("auditor", background=True), spawn("researcher", background=True)]
    backend = ScriptedBackend(
        {
            "main": [Step(calls), Step([text("main done")]), *[Step([text("seen")])] * 2],
            "auditor": [Step([tool_use("Glob", {"pattern": "*"})]), Step([text("ok!")])],
            "researcher": [Step([text("found")])],
        }
    )
    options = AgentOptions(cwd=str(project), backend=backend, agents=AGENTS)
    messages, error = await collect("go", options)
    assert error is None
    kinds: dict[str, list[str]] = {}
    for m in messages:
        if isinstance(m, SystemMessage) and m.subtype.startswith("task_"):
            kinds.setdefault(m.data["task_id"], []).append(m.subtype)
    assert kinds == {
        "main/auditor-1": ["task_started", "task_progress", "task_notification"],
        "main/researcher-1": ["task_started", "task_notification"],
    }


async def test_background_subagent_notifies_its_parent_with_a_turn_of_its_own(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """run_in_background: async_launched at once, task_* messages, an injected notification turn."""
    call = spawn("auditor", background=True)
    backend = ScriptedBackend(
        {
            "main": [Step([call]), Step([text("main done")]), Step([text("audit seen")])],
            "auditor": [Step([tool_use("Glob", {"pattern": "*"})], latency=5), Step([text("ok!")])],
        }
    )
    options = AgentOptions(cwd=str(project), backend=backend, agents=AGENTS)
    messages, error = await collect("go", options)
    assert error is None
    launched = tool_results(messages)[call.id]
    assert isinstance(launched.content, str) and "main/auditor-1" in launched.content
    subtypes = [m.subtype for m in messages if isinstance(m, SystemMessage)]
    assert subtypes.index("task_started") < subtypes.index("task_progress")
    assert subtypes.index("task_progress") < subtypes.index("task_notification")
    note = next(
        m for m in messages if isinstance(m, SystemMessage) and m.subtype == "task_notification"
    )
    assert note.data["status"] == "completed" and note.data["task_id"] == "main/auditor-1"
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert [r.result for r in results] == ["main done", "audit seen"]
    injected = backend.requests[-1].messages[-1]
    assert injected["role"] == "user" and "<task-notification>" in injected["content"]
    assert "<result>ok!</result>" in injected["content"]
    backend.assert_consumed()


async def test_depth_limit_removes_the_agent_tool_at_the_bottom(project: Path) -> None:
    """With max_subagent_depth=1, the child's tool list has no Agent tool."""
    backend = ScriptedBackend(
        {"main": [Step([spawn("researcher")]), Step([text("done")])],
         "researcher": [Step([text("leaf")])]}
    )  # fmt: skip
    options = AgentOptions(cwd=str(project), backend=backend, agents=AGENTS, max_subagent_depth=1)
    await collect("go", options)
    main_tools = {t["name"] for t in backend.requests[0].tools}
    child_tools = {t["name"] for t in backend.requests[1].tools}
    assert "Agent" in main_tools and "Agent" not in child_tools
    assert "AskUserQuestion" in main_tools and "AskUserQuestion" not in child_tools
    none = AgentOptions(cwd=str(project), backend=backend, agents=AGENTS, max_subagent_depth=0)
    assert "Agent" not in build_registry(none).names()


async def test_the_21st_concurrent_spawn_is_refused(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Twenty background agents run; the 21st spawn gets 'Concurrent subagent limit reached'."""
    calls = [spawn("auditor", background=True) for _ in range(21)]

    def respond(request: ModelRequest) -> Step:
        if request.agent_type == "auditor":
            return Step([text("done")], latency=10)
        return Step(calls) if len(request.messages) == 1 else Step([text("noted")])

    options = AgentOptions(cwd=str(project), backend=ScriptedBackend(respond), agents=AGENTS)
    messages, _ = await collect("go", options)
    results = tool_results(messages)
    refused = [r for r in results.values() if r.is_error]
    assert [r.content for r in refused] == ["Concurrent subagent limit reached"]
    assert results[calls[-1].id].is_error
    notes = [
        m for m in messages if isinstance(m, SystemMessage) and m.subtype == "task_notification"
    ]
    assert len(notes) == 20  # one each, though main answers them in as few turns as it can


async def test_notifications_queued_behind_a_busy_parent_share_one_turn(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Children finishing while the main agent is busy are answered in one injected turn,
    in the order they finished; a notification that finds the parent idle gets its own turn."""
    calls = [spawn("auditor", background=True, prompt=f"job {i}") for i in range(3)]
    late = spawn("researcher", background=True)
    backend = ScriptedBackend(
        {
            # main is busy (a 10 s response) while the three auditors finish at t=1, 2, 3
            "main": [Step([*calls, late]), Step([text("thinking")], latency=10),
                     Step([text("three seen")]), Step([text("late seen")])],
            "auditor": [Step([text("a")], latency=1), Step([text("b")], latency=2),
                        Step([text("c")], latency=3)],
            "researcher": [Step([text("r")], latency=20)],
        }
    )  # fmt: skip
    options = AgentOptions(cwd=str(project), backend=backend, agents=AGENTS)
    messages, error = await collect("go", options)
    assert error is None
    backend.assert_consumed()
    results = [m.result for m in messages if isinstance(m, ResultMessage)]
    assert results == ["thinking", "three seen", "late seen"]
    main = [r for r in backend.requests if r.agent_type == "main"]
    batch = main[2].messages[-1]["content"]
    assert batch.count("<task-notification>") == 3
    assert [batch.index(f"<result>{r}</result>") for r in "abc"] == sorted(
        batch.index(f"<result>{r}</result>") for r in "abc"
    )
    single = main[3].messages[-1]["content"]
    assert single.count("<task-notification>") == 1 and "<result>r</result>" in single


async def test_a_subagents_permission_request_names_the_agent(project: Path) -> None:
    """can_use_tool sees ToolPermissionContext.agent_id for a call made inside a subagent."""
    seen: list[ToolPermissionContext] = []

    async def deny(name: str, args: dict[str, Any], ctx: ToolPermissionContext) -> Any:
        seen.append(ctx)
        return PermissionResultDeny(message="not here")

    backend = ScriptedBackend(
        {
            "main": [Step([spawn("researcher")]), Step([text("done")])],
            "researcher": [
                Step([tool_use("Write", {"file_path": str(project / "x"), "content": "x"})]),
                Step([text("could not write")]),
            ],
        }
    )
    options = AgentOptions(cwd=str(project), backend=backend, agents=AGENTS, can_use_tool=deny)
    messages, _ = await collect("go", options)
    assert [c.agent_id for c in seen] == ["main/researcher-1"]
    denied = [
        m for m in messages if isinstance(m, SystemMessage) and m.subtype == "permission_denied"
    ]
    assert denied[0].data["agent_id"] == "main/researcher-1"
    assert not (project / "x").exists()


async def test_unknown_subagent_type_is_an_error_result(project: Path) -> None:
    """An Agent call naming no known type lists the available ones."""
    call = spawn("wizard")
    backend = ScriptedBackend([Step([call]), Step([text("ok")])])
    messages, _ = await collect(
        "go", AgentOptions(cwd=str(project), backend=backend, agents=AGENTS)
    )
    assert tool_results(messages)[call.id].content == (
        "unknown subagent_type 'wizard' (available: general-purpose, researcher, auditor)"
    )


async def test_under_a_budget_the_model_cannot_spawn_an_agent_on_an_unpriced_model(
    project: Path,
) -> None:
    """A model with no price would cost nothing against the cap: the Agent call's model must
    have one, or the call is an error result and nothing is spawned."""
    call = tool_use(
        "Agent",
        {"description": "d", "prompt": "p", "subagent_type": "researcher", "model": "free-9"},
    )
    priced = tool_use(
        "Agent",
        {"description": "d", "prompt": "p", "subagent_type": "researcher", "model": "haiku"},
    )
    backend = ScriptedBackend(
        {"main": [Step([call]), Step([priced]), Step([text("ok")])],
         "researcher": [Step([text("found")])]}
    )  # fmt: skip
    messages, _ = await collect(
        "go", AgentOptions(cwd=str(project), backend=backend, agents=AGENTS, max_budget_usd=5.0)
    )
    refused = tool_results(messages)[call.id]
    assert refused.is_error
    assert refused.content == (
        "model 'free-9' has no price, and this session has a budget: a spend that cannot be "
        "priced cannot be held to it (pass pricing= to price it)"
    )
    assert [r.model for r in backend.requests if r.agent_type == "researcher"] == [
        "claude-haiku-5-5"
    ]


async def test_definition_model_and_max_turns_apply(project: Path) -> None:
    """A definition's model alias and max_turns govern the child."""
    agents = {"quick": AgentDefinition(description="d", prompt="p", model="haiku", max_turns=1)}
    call = spawn("quick")
    backend = ScriptedBackend(
        {"main": [Step([call]), Step([text("ok")])],
         "quick": [Step([tool_use("Glob", {"pattern": "*"})]), Step([text("never")])]}
    )  # fmt: skip
    messages, _ = await collect(
        "go", AgentOptions(cwd=str(project), backend=backend, agents=agents)
    )
    child = next(r for r in backend.requests if r.agent_type == "quick")
    assert child.model == "claude-haiku-5-5"
    result = tool_results(messages)[call.id]
    assert result.is_error and "error_max_turns" in str(result.content)


@pytest.mark.parametrize("background", [False, True])
async def test_cancelling_the_query_cancels_the_subtree(
    project: Path, autojump_clock: trio.testing.MockClock, background: bool
) -> None:
    """Cancelling the consumer tears down children mid-response: no task is left."""
    from .test_cancellation import live_tasks

    backend = ScriptedBackend(
        {"main": [Step([spawn("researcher", background=background)]),
                  Step([text("x")], latency=50)],
         "researcher": [Step([text("slow")], latency=100)]}
    )  # fmt: skip
    before = live_tasks()
    with trio.move_on_after(10):
        async for _ in __import__("agents").query(
            prompt="go", options=AgentOptions(cwd=str(project), backend=backend, agents=AGENTS)
        ):
            pass
    assert live_tasks() == before


async def test_agents_spawned_from_code_share_the_tree_and_the_ledger(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """client.spawn(): named agents fed from Python, on the session's supervisor and ledger."""
    from agents import AgentClient
    from agents.testing import usage

    backend = ScriptedBackend(
        {
            "researcher": [Step([text("r1")], usage=usage(1_000, 0), latency=2),
                           Step([text("r2")], usage=usage(2_000, 0))],
            "auditor": [Step([text("a1")], usage=usage(500, 0), latency=1)],
        }
    )  # fmt: skip
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, model="m",
        pricing={"m": {"input": 1.0, "output": 1.0}},
    )  # fmt: skip
    async with AgentClient(options) as client:
        researcher = await client.spawn("researcher")
        auditor = await client.spawn("auditor")
        assert (researcher.agent_id, auditor.agent_id) == ("main/researcher-1", "main/auditor-1")
        answers: dict[str, str | None] = {}
        t0 = trio.current_time()
        async with trio.open_nursery() as nursery:
            for agent, prompt in ((researcher, "find"), (auditor, "check")):

                async def ask(agent: Any = agent, prompt: str = prompt) -> None:
                    answers[agent.agent_id] = (await agent.ask(prompt)).result

                nursery.start_soon(ask)
        assert trio.current_time() - t0 == 2  # they ran concurrently
        assert answers == {"main/researcher-1": "r1", "main/auditor-1": "a1"}
        again = await researcher.ask("more")
        assert again.result == "r2"
        assert backend.requests[-1].messages[:2] == [
            {"role": "user", "content": "find"},
            {"role": "assistant", "content": [{"type": "text", "text": "r1"}]},
        ]
        spend = client.spend()
        assert spend["cost_by_agent"] == pytest.approx(
            {"main/researcher-1": 0.003, "main/auditor-1": 0.0005}
        )
        assert client.statistics().live_actors == 3
    assert client.statistics().live_actors == 0


async def test_stop_task_cancels_a_background_agent(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """stop_task(id): the background agent stops; its notification says 'stopped'."""
    from agents import AgentClient

    backend = ScriptedBackend(
        {"main": [Step([spawn("auditor", background=True)]), Step([text("launched")]),
                  Step([text("it stopped")])],
         "auditor": [Step([text("never")], latency=100)]}
    )  # fmt: skip
    options = AgentOptions(cwd=str(project), backend=backend, agents=AGENTS)
    async with AgentClient(options) as client:
        await client.query("go")
        statuses = []
        async for message in client.receive_messages():
            if isinstance(message, SystemMessage) and message.subtype == "task_started":
                await client.stop_task(message.data["task_id"])
            if isinstance(message, SystemMessage) and message.subtype == "task_notification":
                statuses.append(message.data["status"])
            if isinstance(message, ResultMessage) and message.result == "it stopped":
                break
        assert statuses == ["stopped"]
        assert trio.current_time() < 100
        with pytest.raises(ValueError, match=r"^no running task 'main/nobody-1'$"):
            await client.stop_task("main/nobody-1")


async def test_a_subagent_has_its_own_transcript_and_start_hook(project: Path) -> None:
    """Each subagent records to subagents/agent-<id>; SubagentStart fires with its type."""
    from agents import HookMatcher, get_session_messages
    from agents.sessions import InMemorySessionStore

    started: list[tuple[str | None, str | None]] = []

    async def on_start(data: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        started.append((data.get("agent_id"), data.get("agent_type")))
        return {}

    store = InMemorySessionStore()
    backend = ScriptedBackend(
        {"main": [Step([spawn("researcher", prompt="dig")]), Step([text("ok")])],
         "researcher": [Step([text("dug")])]}
    )  # fmt: skip
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, session_store=store,
        hooks={"SubagentStart": [HookMatcher(matcher="researcher", hooks=[on_start])]},
    )  # fmt: skip
    messages, _ = await collect("go", options)
    assert started == [("main/researcher-1", "researcher")]
    session_id = result_of(messages).session_id
    main_log = await get_session_messages(session_id, cwd=str(project), store=store)
    assert any(isinstance(m, ResultMessage) for m in main_log)
    from agents.sessions import SessionKey, project_key_for, subagent_subpath

    key = SessionKey(
        project_key_for(str(project)), session_id, subagent_subpath("main/researcher-1")
    )
    entries = await store.load(key)
    assert entries is not None
    prompts = [e.message for e in entries if isinstance(e.message, UserMessage)]
    assert prompts[0].content == "dig"
    assert any(isinstance(e.message, ResultMessage) for e in entries)


async def test_an_ended_subagent_gives_its_transcript_descriptor_back(project: Path) -> None:
    """Only live agents hold transcript files open (a big tree would run out of descriptors)."""
    from agents.sessions import FileSessionStore

    backend = ScriptedBackend(
        {"main": [Step([spawn("researcher"), spawn("auditor")]), Step([text("ok")])],
         "researcher": [Step([text("r")])], "auditor": [Step([text("a")])]}
    )  # fmt: skip
    async with FileSessionStore(project / "data") as store:
        options = AgentOptions(
            cwd=str(project), backend=backend, agents=AGENTS, session_store=store
        )
        await collect("go", options)
        assert [key.subpath for key in store._fds] == [None]  # the main transcript only
        written = sorted(p.name for p in (project / "data").rglob("agent-*"))
        assert len(written) == 2


async def test_no_notification_is_lost_while_the_spawner_is_busy_for_long(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """100 children finish during a minute-long response of their spawner (more than its
    mailbox holds, for longer than any send would wait): every one is heard, in one turn."""
    calls = [spawn("auditor", background=True, prompt=f"job {i}") for i in range(100)]

    def respond(request: ModelRequest) -> Step:
        if request.agent_type == "auditor":
            return Step([text(request.messages[0]["content"])], latency=1)
        turn = sum(m["role"] == "assistant" for m in request.messages)
        return [Step(calls), Step([text("busy")], latency=60)][turn] if turn < 2 else Step(
            [text("all heard")]
        )

    backend = ScriptedBackend(respond)
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, max_concurrent_subagents=100,
    )  # fmt: skip
    messages, error = await collect("go", options)
    assert error is None
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert [r.result for r in results] == ["busy", "all heard"]
    [turn] = [r for r in backend.requests if r.agent_type == "main"][2:]
    heard = turn.messages[-1]["content"]
    assert all(f"<result>job {i}</result>" in heard for i in range(100))


@pytest.mark.parametrize("mode", ["default", "dontAsk", "bypassPermissions"])
async def test_agent_type_rules_govern_spawns_in_every_mode(project: Path, mode: str) -> None:
    """Spawning needs no permission (in any mode), but an ``Agent(type)`` deny rule still
    refuses that type: the gate's shortcut for permission-free tools must not skip it."""
    backend = ScriptedBackend(
        {"main": [Step([spawn("researcher"), spawn("auditor"), spawn("general-purpose")]),
                  Step([text("ok")])],
         "researcher": [Step([text("r")])], "general-purpose": [Step([text("g")])]}
    )  # fmt: skip
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=AGENTS, permission_mode=mode,
        disallowed_tools=["Agent(auditor)"], allowed_tools=[],
    )  # fmt: skip
    messages, _ = await collect("go", options)
    results = list(tool_results(messages).values())
    assert [r.is_error for r in results] == [None, True, None]
    assert "Agent(auditor)" in str(results[1].content)
    backend.assert_consumed()


async def test_an_agent_cancelled_with_a_parent_the_interrupt_cut_is_reported_stopped(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A background agent started by a foreground subagent that an interrupt cuts ends with
    it: its notification says 'stopped', not that it crashed."""
    from agents import AgentClient

    backend = ScriptedBackend(
        {"main": [Step([spawn("researcher")]), Step([text("cut")])],
         "researcher": [Step([spawn("auditor", background=True)]),
                        Step([text("late")], latency=50)],
         "auditor": [Step([text("never")], latency=100)]}
    )  # fmt: skip
    options = AgentOptions(cwd=str(project), backend=backend, agents=AGENTS)
    notes: list[dict[str, Any]] = []
    async with AgentClient(options) as client:
        await client.query("go")
        with trio.move_on_after(200):
            async for message in client.receive_messages():
                started = isinstance(message, SystemMessage) and message.subtype == "task_started"
                if started and message.data.get("task_id", "").endswith("auditor-1"):
                    await trio.sleep(1)
                    await client.interrupt()
                if isinstance(message, SystemMessage) and message.subtype == "task_notification":
                    notes.append(message.data)
                    break
    assert [(n["status"], n["summary"]) for n in notes] == [
        ("stopped", "stopped before finishing")
    ]
    assert trio.current_time() < 100


async def test_agents_of_a_type_share_one_system_prompt_list(project: Path) -> None:
    """Children of one type with no other system blocks send one shared system list (an object
    less per agent of a tree), with the definition's prompt; the requests never change it."""
    backend = ScriptedBackend(
        {"main": [Step([spawn("researcher"), spawn("researcher"), spawn("auditor")]),
                  Step([text("ok")])],
         "researcher": [Step([text("r1")]), Step([text("r2")])],
         "auditor": [Step([text("a")])]}
    )  # fmt: skip
    options = AgentOptions(cwd=str(project), backend=backend, agents=AGENTS)
    _, error = await collect("go", options)
    assert error is None
    systems = {r.agent_id: r.system for r in backend.requests if r.agent_type != "main"}
    first, second = systems["main/researcher-1"], systems["main/researcher-2"]
    assert first is second and first == [{"type": "text", "text": "You research."}]
    assert systems["main/auditor-1"] == [{"type": "text", "text": "You audit."}]
