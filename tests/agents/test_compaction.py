"""The context window: automatic and manual compaction, PreCompact, CLAUDE.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from agents import AgentOptions, HookMatcher, ResultMessage, SystemMessage
from agents._loop.compaction import NOT_ENOUGH_MESSAGES, SUMMARY_HEADER, cut_index, estimate_tokens
from agents.testing import ScriptedBackend, Step, text, tool_use, usage

from .helpers import collect, result_of, timed_tools

WINDOW = 1_000  # threshold 0.8 → 800 tokens
PRICING = {"small": {"input": 1.0, "output": 1.0, "context_window": WINDOW}}


def growing_script() -> dict[str, list[Step]]:
    """Three tool turns whose input grows past 800 tokens, then the final answer."""
    return {
        "main": [
            Step([tool_use("mcp__t__look", {"key": "a"})], usage=usage(300, 10)),
            Step([tool_use("mcp__t__look", {"key": "b"})], usage=usage(500, 10)),
            Step([tool_use("mcp__t__look", {"key": "c"})], usage=usage(900, 10)),
            Step([text("final answer")], usage=usage(200, 10)),
        ],
        "compact": [Step([text("the summary")], usage=usage(950, 40))],
    }


def small_options(project: Path, backend: ScriptedBackend, **kw: Any) -> AgentOptions:
    log: list[tuple[str, str, float]] = []
    return AgentOptions(
        cwd=str(project),
        backend=backend,
        tools=[],
        model="small",
        pricing=PRICING,
        mcp_servers={"t": timed_tools(log, {})},
        **kw,
    )


def boundaries(messages: list[Any]) -> list[SystemMessage]:
    return [m for m in messages if isinstance(m, SystemMessage) and m.subtype == "compact_boundary"]


async def test_a_growing_conversation_compacts_once_below_the_threshold(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Past 80% of the window: one summary request, compact_boundary, a small next request."""
    backend = ScriptedBackend(growing_script())
    messages, error = await collect("go", small_options(project, backend))
    assert error is None
    backend.assert_consumed()
    [boundary] = boundaries(messages)
    assert boundary.data["trigger"] == "auto"
    assert boundary.data["pre_tokens"] > 910  # 900 in + 10 out + the tool result since
    purposes = [r.purpose for r in backend.requests]
    assert purposes == ["turn", "turn", "turn", "compact", "turn"]
    summary_request, after = backend.requests[3], backend.requests[4]
    assert "detailed summary" in summary_request.messages[-1]["content"][-1]["text"]
    assert estimate_tokens(after.system, after.tools, after.messages) < 0.8 * WINDOW
    assert after.messages[0]["content"][0]["text"] == SUMMARY_HEADER + "the summary"
    # the latest exchange is kept whole: the call and its result
    assert after.messages[1]["content"][0]["type"] == "tool_use"
    assert after.messages[2]["content"][0]["type"] == "tool_result"
    assert len(after.messages) == 3
    # the summary request is charged like any response
    result = result_of(messages)
    assert result.model_usage["small"]["input_tokens"] == 300 + 500 + 900 + 950 + 200
    assert result.result == "final answer"


async def test_resume_after_compaction_rebuilds_the_compacted_history(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    backend = ScriptedBackend(growing_script())
    messages, _ = await collect("go", small_options(project, backend))
    sid = result_of(messages).session_id
    after = backend.requests[4].messages
    again = ScriptedBackend([Step([text("resumed")], usage=usage(100, 5))])
    await collect("next", small_options(project, again, resume=sid))
    assert again.requests[0].messages == [
        *after,
        {"role": "assistant", "content": [{"type": "text", "text": "final answer"}]},
        {"role": "user", "content": "next"},
    ]


async def test_a_pre_compact_block_skips_compaction(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """PreCompact (trigger auto) returning decision block: no summary, no boundary."""
    seen: list[dict[str, Any]] = []

    async def block(data: dict[str, Any], _id: str | None, _ctx: Any) -> dict[str, Any]:
        seen.append(data)
        return {"decision": "block", "reason": "keep everything"}

    backend = ScriptedBackend(growing_script())
    options = small_options(project, backend, hooks={"PreCompact": [HookMatcher(hooks=[block])]})
    messages, _ = await collect("go", options)
    assert boundaries(messages) == []
    assert [r.purpose for r in backend.requests] == ["turn"] * 4
    assert backend.remaining() == {"compact": 1}
    assert seen and seen[0]["trigger"] == "auto" and seen[0]["hook_event_name"] == "PreCompact"
    assert seen[0]["custom_instructions"] is None


async def test_compact_on_a_fresh_session_has_not_enough_messages(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    backend = ScriptedBackend([])
    messages, error = await collect("/compact", small_options(project, backend))
    assert error is None
    result = result_of(messages)
    assert result.subtype == "success" and result.result == NOT_ENOUGH_MESSAGES
    assert backend.requests == []


async def test_manual_compact_summarizes_with_the_instructions(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """/compact <instructions> after two exchanges: trigger manual, the last exchange kept."""
    backend = ScriptedBackend(
        {
            "main": [Step([text("one")]), Step([text("two")]), Step([text("three")])],
            "compact": [Step([text("S")])],
        }
    )

    async def prompts() -> Any:
        for prompt in ("first", "second", "/compact focus on names", "third"):
            yield prompt

    from agents import query

    messages = [m async for m in query(prompt=prompts(), options=small_options(project, backend))]
    [boundary] = boundaries(messages)
    assert boundary.data["trigger"] == "manual"
    results = [m.result for m in messages if isinstance(m, ResultMessage)]
    assert results == ["one", "two", "Conversation compacted.", "three"]
    instruction = backend.requests[2].messages[-1]["content"][-1]["text"]
    assert instruction.endswith("Additional instructions: focus on names")
    assert backend.requests[3].messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": SUMMARY_HEADER + "S"},
                {"type": "text", "text": "second"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "two"}]},
        {"role": "user", "content": "third"},
    ]


@pytest.mark.parametrize(
    ("roles", "cut"),
    [
        ([], 0),
        (["p", "a"], 0),
        (["p", "a", "p", "a"], 2),
        (["p", "a", "r", "a"], 3),
        (["p", "a", "r", "a", "r"], 3),
        (["p", "a", "r"], 0),
        (["p", "a", "p"], 2),
    ],
)
def test_the_cut_never_separates_a_call_from_its_result(roles: list[str], cut: int) -> None:
    """p = prompt, a = assistant, r = tool results."""
    shapes = {
        "p": {"role": "user", "content": "x"},
        "a": {"role": "assistant", "content": [{"type": "text", "text": "y"}]},
        "r": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
    }
    assert cut_index([shapes[r] for r in roles]) == cut


# -- CLAUDE.md -------------------------------------------------------------------------------------


def system_texts(backend: ScriptedBackend) -> list[str]:
    return [b["text"] for b in backend.requests[0].system]


async def test_claude_md_is_loaded_from_cwd_and_parents_per_setting_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = tmp_path / "repo"
    cwd = parent / "pkg"
    cwd.mkdir(parents=True)
    (parent / "CLAUDE.md").write_text("outer rules")
    (cwd / "CLAUDE.md").write_text("inner rules")
    (cwd / "CLAUDE.local.md").write_text("my local notes")
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "CLAUDE.md").write_text("user prefs")
    monkeypatch.setenv("HOME", str(home))

    async def texts(sources: list[str] | None) -> list[str]:
        backend = ScriptedBackend([Step([text("ok")])])
        await collect("hi", AgentOptions(cwd=str(cwd), backend=backend, setting_sources=sources))
        return system_texts(backend)[1:]  # after the system prompt

    assert await texts(None) == []
    project = await texts(["project"])
    assert [t.rsplit("\n", 1)[-1] for t in project] == ["outer rules", "inner rules"]
    assert str(parent / "CLAUDE.md") in project[0]
    every = await texts(["user", "project", "local"])
    assert [t.rsplit("\n", 1)[-1] for t in every] == [
        "user prefs",
        "outer rules",
        "inner rules",
        "my local notes",
    ]


async def test_compaction_keeps_claude_md_in_the_system_prefix(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    (project / "CLAUDE.md").write_text("always use tabs")
    backend = ScriptedBackend(growing_script())
    await collect("go", small_options(project, backend, setting_sources=["project"]))
    assert backend.requests[4].system == backend.requests[0].system
    assert backend.requests[4].system[-1]["text"].endswith("always use tabs")
