"""`agents run`: the key check, and sessions against FakeAnthropicServer in each output format.

The CLI calls ``trio.run`` itself, so each session runs in a worker thread while the fake server
runs in the test's own Trio loop.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
import trio

from agents.cli import main
from agents.cli_run import split_tool_rules
from agents.testing import FakeAnthropicServer
from agents.testing.scripted import Fault, Step, text, tool_use


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)


def test_run_without_a_key_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    """No ANTHROPIC_API_KEY: one line on stderr naming it and `agents demo`, exit status 2."""
    assert main(["run", "hello"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert "ANTHROPIC_API_KEY" in lines[0] and "agents demo" in lines[0]


def test_remote_base_url_still_needs_a_key(capsys: pytest.CaptureFixture[str]) -> None:
    """Only a base URL on this machine waives the key."""
    assert main(["run", "hello", "--base-url", "https://proxy.example.com"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_split_tool_rules_keeps_specifiers_whole() -> None:
    """Commas and spaces separate rules, except inside a rule's parentheses."""
    assert split_tool_rules("Read,Grep  Bash(npm run *), WebFetch(domain:x.com)") == [
        "Read", "Grep", "Bash(npm run *)", "WebFetch(domain:x.com)",
    ]
    assert split_tool_rules("") == []


async def run_cli(
    steps: list[Step], project: Path, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[int, FakeAnthropicServer]:
    monkeypatch.chdir(project)
    async with FakeAnthropicServer(steps) as server:
        argv = ["run", "Summarize the README", "--base-url", server.base_url, *args]
        status = await trio.to_thread.run_sync(main, argv)
    return status, server


async def test_run_text_output_prints_the_result(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--output-format text prints the final answer and exits 0."""
    status, server = await run_cli(
        [Step([text("It is a tiny project.")])], project, monkeypatch, "--model", "claude-sonnet-5"
    )
    captured = capsys.readouterr()
    assert (status, captured.out, captured.err) == (0, "It is a tiny project.\n", "")
    assert server.requests[0].body["model"] == "claude-sonnet-5"
    assert server.requests[0].headers["authorization"].startswith("Bearer ")


async def test_run_json_output_is_the_result_message(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--output-format json prints the ResultMessage as one JSON object."""
    status, _ = await run_cli(
        [Step([text("Done.")])], project, monkeypatch, "--output-format", "json", "--max-turns", "3"
    )
    out = capsys.readouterr().out
    assert status == 0
    result = msgspec.json.decode(out)
    assert (result["type"], result["subtype"], result["result"]) == ("result", "success", "Done.")
    assert len(out.splitlines()) == 1


async def test_run_stream_json_output_is_one_message_per_line(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--output-format stream-json prints every message, partial events included, one per line."""
    (project / "README.md").write_text("# demo\n")
    steps = [
        Step([tool_use("Read", {"file_path": str(project / "README.md")}, id="toolu_r")]),
        Step([text("A demo.")]),
    ]
    status, server = await run_cli(
        steps, project, monkeypatch,
        "--output-format", "stream-json", "--include-partial-messages", "--allowed-tools", "Read",
    )
    lines = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert status == 0
    types = [m["type"] for m in lines]
    assert types[0] == "system" and lines[0]["subtype"] == "init"
    result = next(m for m in reversed(lines) if m["type"] == "result")
    assert result["result"] == "A demo."
    assert types[-1] == "system" and lines[-1]["subtype"] == "session_summary"
    assert "stream_event" in types and "user" in types
    tool_results = server.requests[1].body["messages"][-1]["content"]
    assert tool_results[0]["tool_use_id"] == "toolu_r"
    assert "# demo" in str(tool_results[0]["content"])


async def test_run_error_result_goes_to_stderr_with_status_1(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error result prints its errors on stderr and exits 1."""
    status, _ = await run_cli(
        [Step(fault=Fault(status=400, message="bad request body"))], project, monkeypatch
    )
    captured = capsys.readouterr()
    assert status == 1
    assert captured.out == ""
    assert "error_during_execution" in captured.err and "400" in captured.err
