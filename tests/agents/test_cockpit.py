"""The live agent tree: rebuilt from the public message stream, drawn as a person sees it."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import trio
from rich.console import Console

import agents._demo as demo
from agents import AgentOptions, ResultError, query
from agents.cockpit import TreeState, open_live_tree, render
from agents.messages import (
    AssistantMessage,
    Message,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from agents.sessions import InMemorySessionStore

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def shown(renderable: object, width: int = 110) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


async def demo_messages(project: Path) -> list[Message]:
    """The demo's stream, in real time: its tools start real processes (ripgrep), which virtual
    time would overtake."""
    demo._write_project(project)
    options = AgentOptions(
        cwd=str(project),
        backend=demo.demo_backend(project, latency=0.05),
        model="claude-sonnet-4-5",
        agents=demo.AGENTS,
        max_budget_usd=0.08,
        session_store=InMemorySessionStore(),
    )
    messages: list[Message] = []
    with pytest.raises(ResultError):
        async for message in query(prompt="go", options=options):
            messages.append(message)
    return messages


def tool_use(call_id: str, name: str, parent: str | None = None, **args: object) -> Message:
    block = ToolUseBlock(id=call_id, name=name, input=dict(args))
    return AssistantMessage(
        content=[block], model="claude-sonnet-4-5", message_id=f"msg_{call_id}",
        parent_tool_use_id=parent, usage={"input_tokens": 1000, "output_tokens": 100},
    )  # fmt: skip


def tool_result(call_id: str, parent: str | None = None, **data: object) -> Message:
    return UserMessage(
        content=[ToolResultBlock(tool_use_id=call_id, content="ok")],
        parent_tool_use_id=parent,
        tool_use_result=dict(data) or None,
    )


async def test_every_agent_appears_with_its_status_turns_and_cost(project: Path) -> None:
    """Mid-run, the tree shows the main agent running its Agent call and each subagent."""
    messages = await demo_messages(project)
    state = TreeState(budget_usd=0.08)
    spawned = next(
        i for i, m in enumerate(messages)
        if isinstance(m, UserMessage) and m.parent_tool_use_id is not None
    )  # fmt: skip
    for message in messages[:spawned]:
        state.observe(message)
    text = shown(render(state))
    rows = {line.split()[0].strip("├└─ "): line for line in text.splitlines() if "$" in line}
    assert "running tools" in rows["main"] and "Agent researcher" in rows["main"]
    assert "security-auditor-1 (bg)" in text and "style-auditor-1 (bg)" in text
    assert re.search(r"└─ researcher +explain the store +running tools +1 +\$0\.0063", text)
    assert "of $0.0800" in text


async def test_the_tree_ends_with_the_streams_own_figures(project: Path) -> None:
    """After session_summary, the costs and turns are the ledger's, and the bar is full."""
    messages = await demo_messages(project)
    state = TreeState(budget_usd=0.08)
    for message in messages:
        state.observe(message)
    state.finish()
    summary = next(
        m for m in messages if isinstance(m, SystemMessage) and m.subtype == "session_summary"
    )
    text = shown(render(state, text=False))
    total = summary.data["total_cost_usd"]
    assert f"${total:.4f} of $0.0800 ({total / 0.08:.0%}) reached" in text
    assert re.search(r"main +stopped +2 ", text)
    assert re.search(r"└─ researcher-1 +explain the store +done +2 ", text)
    assert re.search(r"style-auditor-1 \(bg\) +style audit +stopped", text)
    for agent_id, cost in summary.data["cost_by_agent"].items():
        assert f"${cost:.4f}" in text, agent_id


def test_running_tool_calls_show_their_elapsed_time() -> None:
    now = [100.0]
    state = TreeState(clock=lambda: now[0])
    state.observe(SystemMessage(subtype="init", data={"session_id": "s", "model": "m"}))
    state.observe(tool_use("t1", "Read", file_path="/p/inventory/store.py"))
    state.observe(tool_use("t2", "Grep", pattern="TODO"))
    now[0] = 102.5
    text = shown(render(state))
    assert "Read store.py 2.5 s · Grep TODO 2.5 s" in text
    state.observe(tool_result("t1"))
    now[0] = 103.0
    text = shown(render(state))
    assert "Read" not in text and "Grep TODO 3.0 s" in text


def test_a_nested_subagent_is_drawn_under_its_parent() -> None:
    state = TreeState()
    state.observe(tool_use("a1", "Agent", subagent_type="researcher", description="dig"))
    state.observe(tool_use("a2", "Agent", parent="a1", subagent_type="reader", description="read"))
    state.observe(tool_use("r1", "Read", parent="a2", file_path="/x/y.py"))
    lines = [line for line in shown(render(state)).splitlines() if "$" in line]
    assert lines[1].startswith("└─ researcher  dig")
    assert lines[2].startswith("   └─ reader  read") and "Read y.py" in lines[2]


def test_statuses_follow_the_stream() -> None:
    """thinking → running tools → waiting for background agents → done."""
    state = TreeState()
    state.observe(SystemMessage(subtype="init", data={"session_id": "s", "model": "m"}))
    assert state.main.status == "thinking"
    state.observe(tool_use("b", "Agent", subagent_type="auditor", run_in_background=True))
    assert state.main.status == "running tools"
    state.observe(SystemMessage(subtype="task_started", data={"task_id": "main/auditor-1",
                                                              "tool_use_id": "b"}))  # fmt: skip
    state.observe(tool_result("b", status="async_launched", agentId="main/auditor-1"))
    assert state.main.status == "thinking" and state.nodes["b"].status == "thinking"
    state.observe(ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1,
                                is_error=False, num_turns=2, session_id="s"))  # fmt: skip
    assert state.main.status == "waiting"
    state.observe(SystemMessage(subtype="task_progress", data={"tool_use_id": "b", "num_turns": 3,
                                                               "cost_usd": 0.5}))  # fmt: skip
    assert (state.nodes["b"].turns, state.nodes["b"].cost_usd) == (3, 0.5)
    state.observe(SystemMessage(subtype="task_notification", data={
        "task_id": "main/auditor-1", "tool_use_id": "b", "status": "completed"}))  # fmt: skip
    assert state.nodes["b"].status == "done"


def test_retries_and_denials_are_shown() -> None:
    state = TreeState()
    state.observe(SystemMessage(subtype="api_retry", data={
        "attempt": 3, "max_retries": 10, "error": "API error 529: Overloaded",
        "error_status": 529, "delay_s": 2.1}))  # fmt: skip
    state.observe(SystemMessage(subtype="permission_denied", data={
        "tool_name": "Bash", "reason": "no rule allows it", "agent_id": "main"}))  # fmt: skip
    text = shown(render(state))
    assert "API 529, retrying in 2.1 s (3/10)" in text.splitlines()[1]
    assert "API 529, retrying in 2.1 s (3/10): Overloaded" in text
    assert "permission denied: Bash (no rule allows it)" in text
    assert "(1 denied)" in text


def test_the_final_text_streams_below_the_tree() -> None:
    state = TreeState()

    def delta(text: str) -> dict[str, object]:
        return {"type": "content_block_delta", "delta": {"type": "text_delta", "text": text}}

    events = [
        {"type": "message_start", "message": {"id": "msg_1"}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        delta("Two "),
        delta("TODOs"),
    ]
    for event in events:
        state.observe(StreamEvent(uuid="u", session_id="s", event=event))
    assert shown(render(state)).rstrip().endswith("Two TODOs")
    # the whole block arriving afterwards is not written twice
    state.observe(AssistantMessage(content=[TextBlock("Two TODOs")], model="m", message_id="msg_1"))
    assert shown(render(state)).count("Two TODOs") == 1


def test_budget_bar_without_a_budget_says_so() -> None:
    assert "spent $0.0000 (no budget set)" in shown(render(TreeState()))


async def test_the_live_view_ticks_between_messages(autojump_clock: trio.testing.MockClock) -> None:
    """Elapsed times move on screen while no message arrives; the last frame stays."""
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=True, color_system=None)
    state = TreeState(clock=trio.current_time)
    async with open_live_tree(console, state) as view:
        view.observe(tool_use("t1", "Bash", command="make test"))
        await trio.sleep(1.25)
    frames = ANSI.sub("", out.getvalue())
    assert "Bash make test 0.0 s" in frames and "Bash make test 1.2 s" in frames
    assert frames.rstrip().splitlines()[-2].startswith("main")  # the last frame: the ended tree
    assert "stopped" not in frames.splitlines()[-3] and state.main.status == "done"


def test_demo_on_a_terminal_draws_the_live_tree() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    assert demo.run_demo(fast=True, out=out) == 0
    text = ANSI.sub("", out.getvalue())
    assert "\x1b[" in out.getvalue()  # drawn in place, not printed line by line
    assert "budget: $0.08 for the whole tree" in text.splitlines()[1]
    assert "researcher-1  explain the store" in text and "reached" in text
    assert "0 turns: the auditors' reports came back as a new prompt" in text


def test_rich_is_imported_only_for_the_live_view() -> None:
    """A run writing to a pipe never pays for rich (nor the CLI's start for anthropic)."""
    import subprocess
    import sys

    code = (
        "import sys, agents, agents.cli, agents.cli_run, agents.cockpit\n"
        "print([m for m in ('rich', 'anthropic', 'matplotlib') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
