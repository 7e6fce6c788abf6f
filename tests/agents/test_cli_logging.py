"""Logging: the `agents` loggers tell a session; --verbose and TRIO_AGENTS_LOG turn it on."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import trio

from agents import AgentOptions, query
from agents.cli import main
from agents.cockpit import EventLog
from agents.cockpit.logs import level_from_env
from agents.testing import FakeAnthropicServer, ScriptedBackend
from agents.testing.scripted import Fault, Step, text, tool_use, usage


async def logged(steps: list[Step], project: Path, caplog: pytest.LogCaptureFixture) -> str:
    events = EventLog(clock=trio.current_time)
    options = AgentOptions(backend=ScriptedBackend(steps), cwd=str(project))
    with caplog.at_level(logging.DEBUG, logger="agents"):
        async for message in query(prompt="hi", options=options):
            events.observe(message)
    return "\n".join(f"{r.levelname} {r.name}: {r.getMessage()}" for r in caplog.records)


async def test_the_event_log_tells_the_session_as_it_happens(
    project: Path, caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    steps = [
        Step(fault=Fault(status=529, message="Overloaded")),
        Step([tool_use("Glob", {"pattern": "*"})], usage=usage(2400, 180), latency=1.5),
        Step([text("done")]),
    ]
    log = await logged(steps, project, caplog)
    assert "INFO agents.events: session " in log and "started: model claude-opus-5-5" in log
    assert "WARNING agents.events: API 529, retrying in " in log and "(1/10): Overloaded" in log
    assert (
        "INFO agents.events: main: response msg_" in log
        and "2400 in (+0 cached) / 180 out tokens" in log
    )
    assert "DEBUG agents.events: main: calls Glob {'pattern': '*'}" in log
    assert "DEBUG agents.events: main: Glob done in " in log
    assert "INFO agents.events: result success after 2 turns" in log


async def test_the_event_log_costs_nothing_when_off(project: Path) -> None:
    """Below INFO nothing is formatted: the bookkeeping is skipped too."""
    events = EventLog()
    events.logger = logging.getLogger("agents.events.silent")
    events.logger.setLevel(logging.WARNING)
    steps = [Step([tool_use("Glob", {})]), Step([text("x")])]
    options = AgentOptions(backend=ScriptedBackend(steps), cwd=str(project))
    async for message in query(prompt="hi", options=options):
        events.observe(message)
    assert events._tools == {} and events._responses == set()


@pytest.mark.parametrize(
    ("value", "level"),
    [("", None), ("debug", logging.DEBUG), ("INFO", logging.INFO), ("15", 15)],
)
def test_log_level_from_the_environment(value: str, level: int | None) -> None:
    assert level_from_env({"TRIO_AGENTS_LOG": value}) == level


def test_an_unknown_log_level_names_the_variable() -> None:
    with pytest.raises(ValueError, match=r"^TRIO_AGENTS_LOG='loud' is not a log level"):
        level_from_env({"TRIO_AGENTS_LOG": "loud"})


async def run_cli(
    project: Path, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[int, FakeAnthropicServer]:
    monkeypatch.chdir(project)
    steps = [Step([tool_use("Glob", {"pattern": "*"})]), Step([text("ok")])]
    async with FakeAnthropicServer(steps) as server:
        argv = ["run", "hi", "--base-url", server.base_url, *args]
        status = await trio.to_thread.run_sync(main, argv)
    return status, server


async def test_verbose_logs_debug_lines_on_stderr(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _ = await run_cli(project, monkeypatch, "--verbose")
    captured = capsys.readouterr()
    assert (status, captured.out) == (0, "ok\n")
    assert " INFO agents.events: session " in captured.err
    assert " DEBUG agents.events: main: Glob done in " in captured.err
    # the handler goes with the run: nothing is left on the agents logger
    assert logging.getLogger("agents").handlers == []


async def test_the_environment_variable_turns_info_on(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRIO_AGENTS_LOG", "info")
    status, _ = await run_cli(project, monkeypatch)
    err = capsys.readouterr().err
    assert status == 0
    assert " INFO agents.events: main: response msg_" in err and " DEBUG " not in err


async def test_without_verbose_nothing_is_logged(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _ = await run_cli(project, monkeypatch)
    assert (status, capsys.readouterr().err) == (0, "")
