"""`agents run`'s flags, as complete as `claude -p`: each reaches the session, bad ones are one
line and exit status 2, and a flag whose feature is not built yet says what is missing."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import msgspec
import pytest
import trio

from agents.cli import _parser, main, version
from agents.cli_run import _session, build_options, parse_agents
from agents.testing import FakeAnthropicServer, ScriptedBackend
from agents.testing.scripted import Fault, Step, text, tool_use, usage

LOCAL = "http://127.0.0.1:9"  # nothing listens there: these runs must fail before connecting
SOME_SESSION = "12345678-1234-4678-8234-567812345678"


def run_args(*argv: str) -> argparse.Namespace:
    return _parser().parse_args(["run", "hi", *argv])


def one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    assert status == 2, captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    return lines[0]


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"{version()} (trio-agents)\n"
    assert version()[0].isdigit()


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--max-turns", "x"], "invalid int value: 'x'"),
        (["--permission-mode", "yolo"], "invalid choice: 'yolo'"),
        (["--budget-mode", "hard"], "invalid choice: 'hard'"),
        (["--max-turns", "0"], "max_turns must be >= 1, got 0"),
        (["--max-budget-usd", "-1"], "max_budget_usd must be >= 0"),
        (["--max-retries", "-1"], "--max-retries must be >= 0, got -1"),
        (["--cwd", "/no/such/dir"], "--cwd: '/no/such/dir' is not a directory"),
        (["--agents", "{nope"], "--agents: invalid JSON"),
        (["--agents", '{"r": {"description": "d"}}'], "'r' needs a string 'prompt'"),
        (["--agents", '{"r": {"description": "d", "prompt": "p", "colour": 1}}'], "'colour'"),
        (["--fork-session"], "fork_session=True needs resume"),
        (["--mcp-config", "/no/such/file.json"], "--mcp-config: cannot read"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["--session-id", "notauuid"], "session_id must be a UUID (8-4-4-4-12 hex digits)"),
        (["--session-id", "../../x"], "session_id must be a UUID"),
        (["--resume", "nope"], "resume must be a UUID (8-4-4-4-12 hex digits), got 'nope'"),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_status_2(
    flags: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_line_exit_2(["run", "hi", "--base-url", LOCAL, *flags], capsys)
    assert expected in line
    assert line.startswith("agents")


def test_resuming_a_session_the_project_does_not_have_is_one_line_and_exit_status_2(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not an "internal error" with a hint to read a traceback: the id was the user's."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    unknown = "00000000-0000-4000-8000-000000000000"
    flags = ["--base-url", LOCAL, "--cwd", str(project), "--resume", unknown]
    line = one_line_exit_2(["run", "hi", *flags], capsys)
    assert line.startswith(f"agents run: no session '{unknown}' in project "), line


@pytest.mark.parametrize("prompt", ["", " \n"])
def test_an_empty_prompt_is_one_line_and_exit_status_2(
    prompt: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    line = one_line_exit_2(["run", prompt, "--base-url", LOCAL], capsys)
    assert line == "agents run: prompt must not be empty (the model needs a user turn with text)"


def test_a_bad_log_level_in_the_environment_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIO_AGENTS_LOG", "loud")
    assert "TRIO_AGENTS_LOG='loud' is not a log level" in one_line_exit_2(
        ["run", "hi", "--base-url", LOCAL], capsys
    )


async def test_mcp_config_servers_reach_the_session(
    tmp_path: Path,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--mcp-config's servers are connected: the init message lists each with its status."""
    from agents.testing import stdio_server_config

    servers = {"demo": stdio_server_config(), "files": {"command": "/nonexistent/mcp-files"}}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    args = ("--mcp-config", str(config), "--output-format", "stream-json", "--no-live")
    with trio.fail_after(90):
        status, _ = await run_cli([Step([text("done")])], project, monkeypatch, *args)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    init = next(m for m in lines if m.get("subtype") == "init")
    data = init.get("data", init)
    assert status == 0
    assert [(s["name"], s["status"]) for s in data["mcp_servers"]] == [
        ("demo", "connected"),
        ("files", "failed"),
    ]


def test_mcp_config_must_hold_mcp_servers(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_exit_2(["run", "hi", "--base-url", LOCAL, "--mcp-config", '{"x": 1}'], capsys)
    assert 'expected {"mcpServers": {...}}' in line


async def test_settings_flag_applies_above_the_settings_files(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--settings is one more settings file, read whatever setting_sources say."""
    settings = '{"permissions": {"deny": ["Bash"]}}'
    args = ("--settings", settings, "--output-format", "stream-json", "--no-live")
    status, _ = await run_cli([Step([text("done")])], project, monkeypatch, *args)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    init = next(m for m in lines if m.get("subtype") == "init")
    assert status == 0
    assert "Bash" not in init.get("data", init)["tools"]


def test_settings_flag_must_be_a_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_exit_2(["run", "hi", "--base-url", LOCAL, "--settings", "[1]"], capsys)
    assert line.endswith("--settings: expected a JSON object, got '[1]'")


def test_agents_json_becomes_definitions() -> None:
    """Claude Code's camelCase keys and the SDK's snake_case both map onto AgentDefinition."""
    agents = parse_agents(
        '{"reviewer": {"description": "Reviews", "prompt": "Review.", "tools": ["Read"],'
        ' "disallowedTools": ["Bash"], "model": "haiku", "maxTurns": 3, "background": true}}'
    )
    reviewer = agents["reviewer"]
    assert (reviewer.description, reviewer.prompt, reviewer.tools) == (
        "Reviews",
        "Review.",
        ["Read"],
    )
    assert (reviewer.disallowed_tools, reviewer.model, reviewer.max_turns) == (["Bash"], "haiku", 3)
    assert reviewer.background is True


def test_agents_json_may_be_a_file(tmp_path: Path) -> None:
    path = tmp_path / "agents.json"
    path.write_text('{"r": {"description": "d", "prompt": "p"}}')
    assert list(parse_agents(str(path))) == ["r"]


def test_flags_reach_the_options(project: Path) -> None:
    args = run_args(
        "--cwd", str(project), "--resume", SOME_SESSION, "--fork-session",
        "--permission-mode", "plan",
        "--allowed-tools", "Read,Bash(git *)", "--disallowed-tools", "WebFetch",
        "--max-budget-usd", "0.5", "--budget-mode", "reserve", "--model", "sonnet",
        "--fallback-model", "haiku", "--effort", "low", "--tools", "Read Grep",
        "--add-dir", str(project),
    )  # fmt: skip
    options = build_options(args, ScriptedBackend([]))
    assert options.cwd == str(project)
    assert (options.resume, options.fork_session) == (SOME_SESSION, True)
    assert options.permission_mode == "plan"
    assert options.allowed_tools == ["Read", "Bash(git *)"]
    assert options.disallowed_tools == ["WebFetch"]
    assert (options.max_budget_usd, options.budget_mode) == (0.5, "reserve")
    assert (options.model, options.fallback_model, options.effort) == ("sonnet", "haiku", "low")
    assert options.tools == ["Read", "Grep"]
    assert options.add_dirs == [str(project)]


def test_continue_flag_continues_the_newest_session(project: Path) -> None:
    options = build_options(run_args("-c", "--cwd", str(project)), ScriptedBackend([]))
    assert options.continue_conversation is True


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--system-prompt", "Be terse."], "Be terse."),
        (["--system-prompt", "Be terse.", "--append-system-prompt", "Use French."],
         "Be terse.\n\nUse French."),
        (["--append-system-prompt", "Use French."],
         {"type": "preset", "preset": "claude_code", "append": "Use French."}),
    ],
)  # fmt: skip
def test_system_prompt_flags(flags: list[str], expected: object, project: Path) -> None:
    options = build_options(run_args("--cwd", str(project), *flags), ScriptedBackend([]))
    assert options.system_prompt == expected


def test_settings_flag_reaches_the_options(project: Path) -> None:
    options = build_options(run_args("--settings", '{"env": {"A": "1"}}'), ScriptedBackend([]))
    assert options.settings == {"env": {"A": "1"}}


# -- what text mode shows while it waits


async def session(
    steps: list[Step], project: Path, output_format: str = "text", **options: object
) -> tuple[int, str, str]:
    from agents import AgentOptions

    backend = ScriptedBackend(steps)
    opts = AgentOptions(backend=backend, cwd=str(project), **options)  # type: ignore[arg-type]
    out, err = io.StringIO(), io.StringIO()
    status = await _session("hi", opts, output_format, False, True, out, err)
    return status, out.getvalue(), err.getvalue()


async def test_text_mode_shows_each_retry_as_it_waits(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    steps = [Step(fault=Fault(status=529, message="Overloaded"))] * 2 + [Step([text("ok")])]
    status, out, err = await session(steps, project)
    assert (status, out) == (0, "ok\n")
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("API 529, retrying in 0.") and lines[0].endswith(
        " s (1/10): Overloaded"
    )
    assert lines[1].startswith("API 529, retrying in ") and "(2/10)" in lines[1]


async def test_text_mode_shows_permission_denials_and_lists_them(project: Path) -> None:
    steps = [Step([tool_use("Bash", {"command": "rm -rf build"})]), Step([text("could not")])]
    status, out, err = await session(steps, project)
    assert (status, out) == (0, "could not\n")
    assert err.splitlines()[0].startswith("permission denied: Bash (")
    assert "1 tool call(s) denied: Bash" in err.splitlines()[-1]


async def test_an_error_result_exits_1_with_its_errors_on_stderr(project: Path) -> None:
    steps = [Step([tool_use("Glob", {"pattern": "*"})]), Step([text("never")])]
    status, out, err = await session(steps, project, max_turns=1)
    assert (status, out) == (1, "")
    assert "agents run: error_max_turns: Reached maximum number of turns (1)" in err


# -- stream-json matches claude -p


async def test_stream_json_lines_have_claude_code_shapes(project: Path) -> None:
    steps = [
        Step([text("Looking."), tool_use("Glob", {"pattern": "*"}, id="toolu_g")],
             usage=usage(100, 10)),
        Step([text("Nothing here.")]),
    ]  # fmt: skip
    status, out, err = await session(steps, project, "stream-json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and err == ""
    init = lines[0]
    assert (init["type"], init["subtype"], init["permissionMode"]) == ("system", "init", "default")
    assert init["session_id"] and init["uuid"] and init["cwd"] == str(project)
    assistant = lines[1]
    assert assistant["type"] == "assistant" and assistant["parent_tool_use_id"] is None
    body = assistant["message"]
    assert (body["type"], body["role"], body["content"]) == (
        "message", "assistant", [{"type": "text", "text": "Looking."}],
    )  # fmt: skip
    assert body["usage"]["input_tokens"] == 100 and body["id"].startswith("msg_")
    user = next(m for m in lines if m["type"] == "user")
    assert user["message"]["role"] == "user"
    assert user["message"]["content"][0]["tool_use_id"] == "toolu_g"
    result = next(m for m in lines if m["type"] == "result")
    assert result["result"] == "Nothing here." and result["num_turns"] == 2
    assert "modelUsage" in result and "model_usage" not in result
    assert {m["session_id"] for m in lines} == {init["session_id"]}


# -- the real client: --max-retries and --resume over HTTP


async def run_cli(
    steps: list[Step], project: Path, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[int, FakeAnthropicServer]:
    monkeypatch.chdir(project)
    async with FakeAnthropicServer(steps) as server:
        argv = ["run", "hi", "--base-url", server.base_url, *args]
        status = await trio.to_thread.run_sync(main, argv)
    return status, server


async def test_max_retries_zero_fails_on_the_first_error(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = [Step(fault=Fault(status=529, message="Overloaded")), Step([text("late")])]
    status, server = await run_cli(steps, project, monkeypatch, "--max-retries", "0", "--no-live")
    captured = capsys.readouterr()
    assert status == 1 and len(server.requests) == 1
    assert "retrying" not in captured.err and "529" in captured.err


async def test_resume_carries_the_history_over(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _ = await run_cli([Step([text("first")])], project, monkeypatch, "--output-format",
                              "json")  # fmt: skip
    session_id = msgspec.json.decode(capsys.readouterr().out)["session_id"]
    assert status == 0
    status, server = await run_cli([Step([text("second")])], project, monkeypatch, "-r",
                                   session_id)  # fmt: skip
    assert (status, capsys.readouterr().out) == (0, "second\n")
    contents = [m["content"] for m in server.requests[0].body["messages"]]
    assert "first" in str(contents) and len(contents) == 3
