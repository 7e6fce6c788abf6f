"""OpenTelemetry: session → agent → turn → model request → tool call spans from the message stream,
with the GenAI semantic-convention attributes, cost and budget; nothing imported when off."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import trio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents import AgentDefinition, AgentOptions, query
from agents.otel import INSTALL_HINT, SpanObserver
from agents.testing import ScriptedBackend
from agents.testing.scripted import Step, text, tool_use, usage


async def traced(steps: object, project: Path, **options: object) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observer = SpanObserver(provider, budget_usd=options.get("max_budget_usd"))  # type: ignore[arg-type]
    opts = AgentOptions(backend=ScriptedBackend(steps), cwd=str(project), **options)  # type: ignore[arg-type]
    async for message in query(prompt="hi", options=opts):
        observer.observe(message)
    observer.close()
    return list(exporter.get_finished_spans())


def by_name(spans: list[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans}


def parent_of(span: ReadableSpan, spans: list[ReadableSpan]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    return next(s for s in spans if s.context.span_id == span.parent.span_id)


async def test_spans_nest_session_agent_turn_request_tool(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    steps = [
        Step([tool_use("Glob", {"pattern": "*"}, id="toolu_g")], usage=usage(1200, 80)),
        Step([text("done")], usage=usage(1500, 20)),
    ]
    spans = await traced(steps, project, model="claude-sonnet-4-5", max_budget_usd=1.0)
    names = by_name(spans)
    assert {"session", "invoke_agent main", "turn 1", "turn 2", "chat claude-sonnet-4-5",
            "execute_tool Glob"} <= set(names)  # fmt: skip
    tool = names["execute_tool Glob"]
    turn1 = parent_of(tool, spans)
    assert turn1 is not None and turn1.name == "turn 1"
    agent = parent_of(turn1, spans)
    assert agent is not None and agent.name == "invoke_agent main"
    session = parent_of(agent, spans)
    assert session is not None and session.name == "session" and session.parent is None
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert [parent_of(c, spans).name for c in chats] == ["turn 1", "turn 2"]  # type: ignore[union-attr]
    assert tool.attributes is not None and tool.attributes["gen_ai.tool.name"] == "Glob"
    assert tool.attributes["gen_ai.tool.call.id"] == "toolu_g"
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"


async def test_model_request_spans_carry_genai_attributes_and_cost(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    steps = [Step([text("done")], usage=usage(1000, 100, cache_read_input_tokens=500))]
    spans = await traced(steps, project, model="claude-sonnet-4-5", max_budget_usd=2.0)
    chat = by_name(spans)["chat claude-sonnet-4-5"]
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "anthropic"
    assert attributes["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert str(attributes["gen_ai.response.id"]).startswith("msg_")
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (
        1000, 100,
    )  # fmt: skip
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 500
    assert float(attributes["trio_agents.cost_usd"]) > 0  # type: ignore[arg-type]
    session = dict(by_name(spans)["session"].attributes or {})
    assert session["trio_agents.budget_usd"] == 2.0
    assert float(session["trio_agents.total_cost_usd"]) == pytest.approx(  # type: ignore[arg-type]
        attributes["trio_agents.cost_usd"]
    )
    assert str(session["gen_ai.conversation.id"])


async def test_a_subagent_is_an_agent_span_under_its_agent_call(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    steps = {
        "main": [
            Step([tool_use("Agent", {"description": "d", "prompt": "p", "subagent_type": "r"})]),
            Step([text("all done")]),
        ],
        "r": [Step([tool_use("Glob", {"pattern": "*"})]), Step([text("found nothing")])],
    }
    agents = {"r": AgentDefinition(description="reads", prompt="read", tools=["Glob"])}
    spans = await traced(steps, project, agents=agents)
    sub = by_name(spans)["invoke_agent r"]
    call = parent_of(sub, spans)
    assert call is not None and call.name == "execute_tool Agent"
    assert dict(sub.attributes or {})["gen_ai.agent.id"] == "main/r-1"
    assert dict(sub.attributes or {})["trio_agents.status"] == "completed"
    globs = [s for s in spans if s.name == "execute_tool Glob"]
    sub_turn = parent_of(globs[0], spans)
    assert sub_turn is not None and parent_of(sub_turn, spans) == sub
    assert all(s.end_time is not None and s.end_time >= s.start_time for s in spans)  # type: ignore[operator]


def test_nothing_of_opentelemetry_is_imported_without_tracing() -> None:
    code = (
        "import sys, agents, agents.cli, agents.cli_run, agents.cockpit, agents.otel\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_without_the_extra_the_observer_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ImportError, match=r"^OpenTelemetry spans need the \[otel\] extra"):
        SpanObserver()
    assert "pip install 'trio-agents[otel]'" in INSTALL_HINT


def test_the_otel_flag_without_the_extra_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agents.cli import main

    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    status = main(["run", "hi", "--base-url", "http://127.0.0.1:9", "--otel"])
    err = capsys.readouterr().err
    assert status == 2 and err == f"agents run: --otel: {INSTALL_HINT}\n"


async def test_the_run_command_closes_its_spans(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """`agents run --otel`'s session: every span ends, the session span last."""
    import io

    from agents.cli_run import _session

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    options = AgentOptions(backend=ScriptedBackend([Step([text("ok")])]), cwd=str(project))
    out = io.StringIO()
    status = await _session("hi", options, "text", False, True, out, io.StringIO(),
                            SpanObserver(provider))  # fmt: skip
    spans = exporter.get_finished_spans()
    assert (status, out.getvalue()) == (0, "ok\n")
    assert spans[-1].name == "session" and len(spans) == 4
