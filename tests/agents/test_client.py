"""AgentClient: queued prompts, interrupts, /clear, set_model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from agents import (
    AgentClient,
    AgentOptions,
    AssistantMessage,
    HookMatcher,
    Message,
    ResultMessage,
    query,
)
from agents.testing import Fault, ScriptedBackend, Step, text, tool_use, usage

from .helpers import timed_tools

PRICING = {"test-model": {"input": 1000.0, "output": 1000.0}}  # $0.001 per token


def client_options(project: Path, backend: ScriptedBackend, **kw: Any) -> AgentOptions:
    log: list[tuple[str, str, float]] = []
    kw.setdefault("mcp_servers", {"t": timed_tools(log, {"slow": 100, "quick": 1})})
    return AgentOptions(cwd=str(project), backend=backend, tools=[], **kw)


async def results(client: AgentClient, count: int) -> list[ResultMessage]:
    out: list[ResultMessage] = []
    async for message in client.receive_messages():
        if isinstance(message, ResultMessage):
            out.append(message)
            if len(out) == count:
                break
    return out


async def test_a_prompt_sent_while_one_runs_is_answered_next_and_sees_the_first(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """M2 queued during M1's tool: two results in order; M2's request carries M1."""
    backend = ScriptedBackend(
        [
            Step([tool_use("mcp__t__look", {"key": "quick"})]),
            Step([text("answer 1")]),
            Step([text("answer 2")]),
        ]
    )
    async with AgentClient(client_options(project, backend)) as client:
        await client.query("M1")
        async for message in client.receive_messages():
            if isinstance(message, AssistantMessage):
                await client.query("M2")  # M1's tool is running
                break
        first, second = await results(client, 2)
    assert (first.result, second.result) == ("answer 1", "answer 2")
    sent = backend.requests[2].messages
    assert sent[0] == {"role": "user", "content": "M1"}
    assert sent[3] == {"role": "assistant", "content": [{"type": "text", "text": "answer 1"}]}
    assert sent[4] == {"role": "user", "content": "M2"}


async def test_a_queued_prompt_gets_a_fresh_max_turns_allowance(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """M1 ends on max_turns=1; the queued M2 still gets its own turn."""
    backend = ScriptedBackend(
        [Step([tool_use("mcp__t__look", {"key": "quick"})]), Step([text("answer 2")])]
    )
    async with AgentClient(client_options(project, backend, max_turns=1)) as client:
        await client.query("M1")
        await client.query("M2")
        first, second = await results(client, 2)
    assert first.subtype == "error_max_turns" and first.num_turns == 1
    assert second.subtype == "success" and second.result == "answer 2"


async def test_interrupt_during_a_slow_tool_aborts_it_and_runs_the_next_prompt(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """interrupt() mid-tool: the tool is cancelled within virtual seconds, M1 is aborted_tools."""
    backend = ScriptedBackend(
        [Step([tool_use("mcp__t__look", {"key": "slow"})]), Step([text("answer 2")])]
    )
    async with AgentClient(client_options(project, backend)) as client:
        await client.query("M1")
        await client.query("M2")
        async for message in client.receive_messages():
            if isinstance(message, AssistantMessage):
                await trio.sleep(1)
                await client.interrupt()
                break
        started = trio.current_time()
        first, second = await results(client, 2)
    assert trio.current_time() - started < 1  # not the tool's 100 s
    assert first.subtype == "error_during_execution"
    assert first.terminal_reason == "aborted_tools" and first.is_error
    assert second.result == "answer 2"


async def test_interrupt_while_the_model_streams_ends_with_aborted_streaming(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    backend = ScriptedBackend([Step([text("too slow")], latency=60), Step([text("answer 2")])])
    async with AgentClient(client_options(project, backend)) as client:
        await client.query("M1")
        await client.query("M2")
        await trio.sleep(1)
        await client.interrupt()
        first, second = await results(client, 2)
    assert first.terminal_reason == "aborted_streaming"
    assert second.result == "answer 2"
    # the aborted response left nothing behind: M2 follows M1 directly
    assert backend.requests[1].messages == [
        {"role": "user", "content": "M1"},
        {"role": "user", "content": "M2"},
    ]


async def test_clear_starts_a_new_session_and_resets_totals_and_budget(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """/clear: new session id, empty history, cost 0, and a prompt over the old budget runs."""
    step = Step([text("ok")], usage=usage(10, 5))  # $0.015 each
    backend = ScriptedBackend([step, step])
    options = client_options(
        project, backend, model="test-model", pricing=PRICING, max_budget_usd=0.02
    )
    async with AgentClient(options) as client:
        old_id = client.session_id
        await client.query("M1")
        await client.query("/clear")
        await client.query("M2")
        first, cleared, second = await results(client, 3)
    assert first.subtype == "success" and first.total_cost_usd == 0.015
    assert cleared.subtype == "success" and cleared.session_id != old_id
    assert cleared.total_cost_usd == 0 and cleared.model_usage == {}
    assert second.subtype == "success" and second.session_id == cleared.session_id
    assert second.total_cost_usd == 0.015
    assert backend.requests[1].messages == [{"role": "user", "content": "M2"}]


async def test_without_clear_the_second_prompt_crosses_the_budget(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """The control case for /clear: the same prompts without it end on the budget."""
    step = Step([text("ok")], usage=usage(10, 5))
    backend = ScriptedBackend([step, step])
    options = client_options(
        project, backend, model="test-model", pricing=PRICING, max_budget_usd=0.02
    )
    async with AgentClient(options) as client:
        await client.query("M1")
        await client.query("M2")
        _, second = await results(client, 2)
    assert second.subtype == "error_max_budget_usd"


async def test_error_results_do_not_end_the_client(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """An api_error result, then the next prompt is answered as usual."""
    backend = ScriptedBackend([Step(fault=Fault(status=400)), Step([text("after the error")])])
    async with AgentClient(client_options(project, backend)) as client:
        await client.query("M1")
        await client.query("M2")
        first, second = await results(client, 2)
    assert first.subtype == "error_during_execution" and first.terminal_reason == "api_error"
    assert second.result == "after the error"


async def test_set_model_applies_to_the_next_request(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    backend = ScriptedBackend([Step([text("one")]), Step([text("two")])])
    async with AgentClient(client_options(project, backend)) as client:
        await client.query("M1")
        await results(client, 1)
        await client.set_model("haiku")
        await client.query("M2")
        await results(client, 1)
    assert backend.requests[0].model == "claude-opus-5-5"
    assert backend.requests[1].model == "claude-haiku-5-5"


async def test_set_model_is_checked_as_the_options_are(project: Path) -> None:
    """A model that is no string, or one with no price under a budget (it would cost nothing
    against the cap), is refused; the session keeps its model."""
    backend = ScriptedBackend([Step([text("one")])])
    async with AgentClient(client_options(project, backend, max_budget_usd=1.0)) as client:
        with pytest.raises(ValueError, match=r"^model must be a string, got 5$"):
            await client.set_model(5)  # type: ignore[arg-type]
        with pytest.raises(
            ValueError, match=r"^max_budget_usd set but no price for model 'free-9'; pass pricing=$"
        ):
            await client.set_model("free-9")
        await client.query("M1")
        await results(client, 1)
    assert backend.requests[0].model == "claude-opus-5-5"


async def test_a_prompt_that_is_neither_text_nor_a_stream_is_refused(project: Path) -> None:
    backend = ScriptedBackend([])
    async with AgentClient(client_options(project, backend)) as client:
        with pytest.raises(
            ValueError, match=r"^prompt must be a str or an async iterable, got int$"
        ):
            await client.query(5)  # type: ignore[arg-type]


@pytest.mark.parametrize("empty", ["", "  \n\t"])
async def test_an_empty_prompt_is_refused_before_any_request(project: Path, empty: str) -> None:
    """The Messages API refuses a user turn without text (a 400 after the connection, in the
    middle of the stream); said at once instead, by ``query()`` and by a client."""
    backend = ScriptedBackend([])
    message = r"^prompt must not be empty \(the model needs a user turn with text\)$"
    with pytest.raises(ValueError, match=message):
        async for _ in query(prompt=empty, options=client_options(project, backend)):
            pass
    async with AgentClient(client_options(project, backend)) as client:
        with pytest.raises(ValueError, match=message):
            await client.query(empty)
    assert backend.requests == []


async def test_query_with_an_async_iterable_answers_each_prompt(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """query(prompt=async_iterable) is the same streaming machinery, /clear included."""
    backend = ScriptedBackend([Step([text("one")]), Step([text("two")])])

    async def prompts() -> AsyncIterator[Any]:
        yield "M1"
        yield "/clear"
        yield {"type": "user", "message": {"role": "user", "content": "M2"}}

    out: list[Message] = []
    async for message in query(prompt=prompts(), options=client_options(project, backend)):
        out.append(message)
    found = [m for m in out if isinstance(m, ResultMessage)]
    assert [r.result for r in found] == ["one", "", "two"]
    assert found[0].session_id != found[2].session_id
    assert backend.requests[1].messages == [{"role": "user", "content": "M2"}]


async def test_clear_fires_session_start_with_a_new_transcript_path(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """SessionStart: source startup, then clear; each names its session's transcript file."""
    seen: list[dict[str, Any]] = []

    async def record(data: dict[str, Any], _id: str | None, _ctx: Any) -> dict[str, Any]:
        seen.append(data)
        return {}

    backend = ScriptedBackend([Step([text("one")]), Step([text("two")])])
    hooks = {"SessionStart": [HookMatcher(hooks=[record])]}
    async with AgentClient(client_options(project, backend, hooks=hooks)) as client:
        for prompt in ("M1", "/clear", "M2"):
            await client.query(prompt)
        first, _, second = await results(client, 3)
    assert [d["source"] for d in seen] == ["startup", "clear"]
    assert [d["session_id"] for d in seen] == [first.session_id, second.session_id]
    for data in seen:
        path = Path(data["transcript_path"])
        assert path.name == f"{data['session_id']}.jsonl"
        assert await trio.Path(path).is_file()
