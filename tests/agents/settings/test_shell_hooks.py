"""Shell-command hooks speak Claude Code's protocol: JSON on stdin, exit 0 / 2, JSON on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from agents.hooks import HookContext
from agents.settings import shell_hook

CTX = HookContext()
INPUT = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}


async def test_the_hook_gets_its_input_as_json_on_stdin(project: Path) -> None:
    seen = project / "seen.json"
    hook = shell_hook(f"cat > {seen}", "PreToolUse", str(project), {})
    assert await hook(INPUT, "t1", CTX) == {}
    assert json.loads(seen.read_text()) == INPUT


async def test_json_on_stdout_is_the_hooks_output(project: Path) -> None:
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    hook = shell_hook(f"echo '{json.dumps(out)}'", "PreToolUse", str(project), {})
    assert await hook(INPUT, "t1", CTX) == out


async def test_exit_2_on_pre_tool_use_denies_with_stderr_as_reason(project: Path) -> None:
    hook = shell_hook("echo 'no rm here' >&2; exit 2", "PreToolUse", str(project), {})
    output = await hook(INPUT, "t1", CTX)
    assert output["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert output["hookSpecificOutput"]["permissionDecisionReason"] == "no rm here"


async def test_exit_2_on_stop_blocks_with_the_reason(project: Path) -> None:
    hook = shell_hook("echo 'run the tests first' >&2; exit 2", "Stop", str(project), {})
    assert await hook({}, None, CTX) == {"decision": "block", "reason": "run the tests first"}


async def test_other_exit_codes_do_not_block(project: Path) -> None:
    hook = shell_hook("echo oops >&2; exit 1", "PreToolUse", str(project), {})
    output = await hook(INPUT, "t1", CTX)
    assert "hookSpecificOutput" not in output
    assert (
        output["systemMessage"]
        == "PreToolUse hook command 'echo oops >&2; exit 1' failed with exit code 1: oops"
    )


async def test_plain_stdout_of_user_prompt_submit_is_added_context(project: Path) -> None:
    hook = shell_hook("echo 'today is Tuesday'", "UserPromptSubmit", str(project), {})
    output = await hook({"prompt": "hi"}, None, CTX)
    assert output == {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "today is Tuesday",
        }
    }


async def test_the_hook_runs_in_the_project_with_settings_env(project: Path) -> None:
    hook = shell_hook(
        'echo "{\\"systemMessage\\": \\"$PWD $CLAUDE_PROJECT_DIR $GREETING\\"}"',
        "Stop",
        str(project),
        {"GREETING": "hi"},
    )
    output = await hook({}, None, CTX)
    assert output == {"systemMessage": f"{project} {project} hi"}


async def test_a_cancelled_hook_kills_its_process_group(project: Path) -> None:
    marker = project / "survived"
    hook = shell_hook(f"(sleep 2; touch {marker}) & sleep 30", "Stop", str(project), {})
    with trio.move_on_after(0.5):
        await hook({}, None, CTX)
    await trio.sleep(2.5)  # a real process: give the orphan, were it alive, time to write
    assert not marker.exists()


async def test_endless_stdout_is_cut_to_the_limit_with_a_note_and_no_memory(project: Path) -> None:
    """A hook printing 64 MB keeps only the head of its output in memory (its peak is a few
    hundred KB, not the 64 MB it printed), and the context says it was cut, naming the limit."""
    import tracemalloc

    size = 64 << 20
    hook = shell_hook(
        f"head -c {size} /dev/zero | tr '\\0' a", "UserPromptSubmit", str(project), {}
    )
    tracemalloc.start()
    try:
        output = await hook({"prompt": "hi"}, None, CTX)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    context = output["hookSpecificOutput"]["additionalContext"]
    assert context == "a" * 10_000 + (
        f"\n... [hook output truncated: {size} bytes printed, the first 10000 characters kept]"
    )


async def test_json_output_over_the_limit_is_refused_naming_it(project: Path) -> None:
    big = json.dumps({"systemMessage": "x" * 20_000})
    script = project / "big.json"
    script.write_text(big)
    hook = shell_hook(f"cat {script}", "PreToolUse", str(project), {})
    output = await hook(INPUT, "t1", CTX)
    assert output == {
        "systemMessage": f"PreToolUse hook command 'cat {script}' printed {len(big)} bytes of "
        "JSON, over the 10000-character limit of a hook's output; it is ignored"
    }


async def test_a_long_blocking_reason_is_cut_with_a_note(project: Path) -> None:
    hook = shell_hook("head -c 100000 /dev/zero | tr '\\0' r >&2; exit 2", "Stop", str(project), {})
    output = await hook({}, None, CTX)
    assert output == {
        "decision": "block",
        "reason": "r" * 10_000
        + "\n... [hook output truncated: 100000 bytes printed, the first 10000 characters kept]",
    }


async def test_output_within_the_limit_is_not_noted(project: Path) -> None:
    hook = shell_hook("head -c 10000 /dev/zero | tr '\\0' a", "SessionStart", str(project), {})
    output = await hook({}, None, CTX)
    assert output["hookSpecificOutput"]["additionalContext"] == "a" * 10_000


async def test_what_a_hook_leaves_running_ends_with_it(project: Path) -> None:
    """A hook is a shell command, and no process a shell starts outlives it: a hook's `&`,
    `nohup` and `setsid` children were left running after the session (measured). They end
    when the hook does, and a child that kept the hook's output open no longer holds the hook
    until its timeout."""
    from ..tools.test_containment import ESCAPED, ESCAPES, all_gone, pids

    hook = shell_hook(f"{ESCAPES}; sleep 300 & echo $! > plain.pid", "Stop", str(project), {})
    with trio.fail_after(10):  # (a real process: the kept stdout would hold it 300 s)
        assert await hook({}, None, CTX) == {}
    left = pids(project, (*ESCAPED, "plain"))
    assert await all_gone(left, within=3.0) == {}
