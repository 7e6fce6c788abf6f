"""Bash, BashOutput, KillShell: persistence, merged output, caps, timeouts, kills, background."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
import trio

from agents.tools.base import ToolContext, ToolInputError
from agents.tools.shell import OUTPUT_CAP, bash_output_tool, bash_tool, kill_shell_tool

from .toolkit import call, text_of, wait_gone

BASH, OUTPUT, KILL = bash_tool(), bash_output_tool(), kill_shell_tool()


async def test_bash_runs_a_command(ctx: ToolContext) -> None:
    out = await call(BASH, {"command": "echo hello", "description": "say hello"}, ctx)
    assert text_of(out) == "hello"
    assert out.data is not None and out.data["exit_code"] == 0


async def test_bash_cd_persists(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "sub").mkdir()
    await call(BASH, {"command": "cd sub"}, ctx)
    out = await call(BASH, {"command": "pwd"}, ctx)
    assert text_of(out) == str(tmp_path / "sub")


async def test_bash_exports_persist(ctx: ToolContext) -> None:
    await call(BASH, {"command": "export AGENT_X=42; Y=7"}, ctx)
    out = await call(BASH, {"command": 'echo "$AGENT_X $Y"'}, ctx)
    assert text_of(out) == "42 7"


async def test_bash_merges_stdout_and_stderr_in_order(ctx: ToolContext) -> None:
    out = await call(BASH, {"command": "echo one; echo two >&2; echo three"}, ctx)
    assert text_of(out) == "one\ntwo\nthree"


async def test_bash_nonzero_exit_is_an_error_result(ctx: ToolContext) -> None:
    out = await call(BASH, {"command": "echo failing; exit_code() { return 3; }; exit_code"}, ctx)
    assert out.is_error
    assert text_of(out) == "Exit code 3\nfailing"


async def test_bash_syntax_error_keeps_the_shell_usable(ctx: ToolContext) -> None:
    out = await call(BASH, {"command": "if then fi 'unclosed"}, ctx)
    assert out.is_error
    assert "syntax error" in text_of(out) or "unexpected" in text_of(out)
    assert text_of(await call(BASH, {"command": "echo ok"}, ctx)) == "ok"


async def test_bash_commands_do_not_read_stdin(ctx: ToolContext) -> None:
    out = await call(BASH, {"command": "cat; echo after"}, ctx)
    assert text_of(out) == "after"


async def test_bash_multiline_and_heredoc(ctx: ToolContext) -> None:
    cmd = "cat <<'EOF'\nline $1\nEOF\nfor i in 1 2; do\n  echo $i\ndone"
    assert text_of(await call(BASH, {"command": cmd}, ctx)) == "line $1\n1\n2"


async def test_bash_output_is_capped_with_a_note(ctx: ToolContext) -> None:
    out = text_of(await call(BASH, {"command": "head -c 50000 /dev/zero | tr '\\0' x"}, ctx))
    assert out.startswith("x" * OUTPUT_CAP + "\n\n... [output truncated: 20000 more characters")


async def test_bash_huge_output_keeps_memory_bounded(ctx: ToolContext) -> None:
    out = text_of(await call(BASH, {"command": "yes | head -c 20000000; echo; echo tail"}, ctx))
    assert len(out) < OUTPUT_CAP + 200
    assert "output truncated: about" in out
    assert text_of(await call(BASH, {"command": "echo next"}, ctx)) == "next"


async def test_bash_exit_restarts_the_shell(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "d").mkdir()
    await call(BASH, {"command": "cd d"}, ctx)
    out = text_of(await call(BASH, {"command": "echo bye; exit 4"}, ctx))
    assert out.startswith("bye\n(the shell exited with status 4")
    assert text_of(await call(BASH, {"command": "pwd"}, ctx)) == str(tmp_path / "d")


async def test_bash_timeout_kills_the_process_group(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "d").mkdir()
    await call(BASH, {"command": "cd d"}, ctx)
    cmd = "echo $$ > ../shell.pid; sleep 30 & echo $! > ../sleep.pid; wait"
    with trio.fail_after(5):
        out = await call(BASH, {"command": cmd, "timeout": 300}, ctx)
    assert out.is_error
    assert text_of(out) == "Command timed out after 0.3s (the process was killed)"
    pgid = int((tmp_path / "shell.pid").read_text())
    sleep_pid = int((tmp_path / "sleep.pid").read_text())
    with contextlib.suppress(ProcessLookupError):
        assert os.getpgid(sleep_pid) == pgid  # the background job was in the killed group
    assert await wait_gone(pgid)
    # A fresh shell, in the directory the old one was in.
    assert text_of(await call(BASH, {"command": "pwd"}, ctx)) == str(tmp_path / "d")


async def test_bash_cancellation_kills_the_process_group(tmp_path: Path, ctx: ToolContext) -> None:
    pid_file = tmp_path / "shell.pid"
    with trio.move_on_after(0.3) as scope:
        await call(BASH, {"command": f"echo $$ > {pid_file}; sleep 30"}, ctx)
    assert scope.cancelled_caught
    pgid = int(pid_file.read_text())
    assert await wait_gone(pgid)
    assert text_of(await call(BASH, {"command": "echo again"}, ctx)) == "again"


async def test_bash_timeout_over_max_is_an_input_error() -> None:
    with pytest.raises(ToolInputError, match=r"<= 600000(\.0)? - at `\$\.timeout`"):
        BASH.validate({"command": "true", "timeout": 600_001})
    assert BASH.validate({"command": "true", "timeout": 600_000}).timeout == 600_000


# --- Background shells ----------------------------------------------------------------------


async def _read_until_done(shell_id: str, ctx: ToolContext) -> str:
    seen = ""
    with trio.fail_after(5):
        while True:
            out = text_of(await call(OUTPUT, {"bash_id": shell_id}, ctx))
            seen += out
            if "<status>running</status>" not in out:
                return seen
            await trio.sleep(0.02)


async def test_background_shell_reports_new_output_and_status(ctx: ToolContext) -> None:
    out = await call(
        BASH, {"command": "echo first; sleep 0.2; echo second", "run_in_background": True}, ctx
    )
    assert out.data is not None
    shell_id = out.data["backgroundTaskId"]
    assert shell_id in text_of(out)
    with trio.fail_after(5):
        while True:
            first = text_of(await call(OUTPUT, {"bash_id": shell_id}, ctx))
            if "first" in first:
                break
            await trio.sleep(0.02)
    assert "second" not in first
    rest = await _read_until_done(shell_id, ctx)
    assert "second" in rest and "first" not in rest
    assert "<status>completed</status>" in rest
    assert "<exit_code>0</exit_code>" in rest


async def test_background_shell_starts_in_the_shell_cwd(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "w").mkdir()
    await call(BASH, {"command": "cd w"}, ctx)
    out = await call(BASH, {"command": "pwd", "run_in_background": True}, ctx)
    assert out.data is not None
    assert str(tmp_path / "w") in await _read_until_done(out.data["backgroundTaskId"], ctx)


async def test_background_output_filter(ctx: ToolContext) -> None:
    out = await call(BASH, {"command": "printf 'a1\\nb2\\na3\\n'", "run_in_background": True}, ctx)
    assert out.data is not None
    shell_id = out.data["backgroundTaskId"]
    with trio.fail_after(5):
        await ctx.state["shell"].background[shell_id].done.wait()
    text = text_of(await call(OUTPUT, {"bash_id": shell_id, "filter": "^a"}, ctx))
    assert "a1\na3" in text and "b2" not in text


async def test_kill_shell_kills_the_group(tmp_path: Path, ctx: ToolContext) -> None:
    pid_file = tmp_path / "bg.pid"
    out = await call(
        BASH, {"command": f"echo $$ > {pid_file}; sleep 30", "run_in_background": True}, ctx
    )
    assert out.data is not None
    shell_id = out.data["backgroundTaskId"]
    with trio.fail_after(5):
        while not pid_file.exists() or not pid_file.read_text():
            await trio.sleep(0.01)
    killed = await call(KILL, {"shell_id": shell_id}, ctx)
    assert text_of(killed).startswith(f"Successfully killed shell: {shell_id}")
    assert await wait_gone(int(pid_file.read_text()))
    status = text_of(await call(OUTPUT, {"bash_id": shell_id}, ctx))
    assert "<status>killed</status>" in status
    again = await call(KILL, {"shell_id": shell_id}, ctx)
    assert again.is_error and "is not running (status: killed)" in text_of(again)


async def test_unknown_shell_ids_are_errors(ctx: ToolContext) -> None:
    out = await call(OUTPUT, {"bash_id": "bash_9"}, ctx)
    assert out.is_error and text_of(out).startswith("No shell found with ID: bash_9")
    out = await call(KILL, {"shell_id": "bash_9"}, ctx)
    assert out.is_error and text_of(out).startswith("No shell found with ID: bash_9")


async def test_cleanup_kills_every_shell(tmp_path: Path, nursery: trio.Nursery) -> None:
    ctx = ToolContext(
        cwd=str(tmp_path), agent_id="main", tool_use_id="t", session_id="s", nursery=nursery
    )
    await call(BASH, {"command": f"echo $$ > {tmp_path / 'fg.pid'}"}, ctx)
    await call(
        BASH,
        {"command": f"echo $$ > {tmp_path / 'bg.pid'}; sleep 30", "run_in_background": True},
        ctx,
    )
    with trio.fail_after(5):
        while not (tmp_path / "bg.pid").exists() or not (tmp_path / "bg.pid").read_text():
            await trio.sleep(0.01)
    assert len(ctx.cleanup) == 1
    for cleanup in ctx.cleanup:
        await cleanup()
    assert await wait_gone(int((tmp_path / "fg.pid").read_text()))
    assert await wait_gone(int((tmp_path / "bg.pid").read_text()))


async def test_background_needs_a_nursery(tmp_path: Path) -> None:
    ctx = ToolContext(cwd=str(tmp_path), agent_id="main", tool_use_id="t", session_id="s")
    out = await call(BASH, {"command": "true", "run_in_background": True}, ctx)
    assert out.is_error and "no nursery" in text_of(out)


class _Flood(trio.abc.ReceiveStream):
    """A pipe that always has 64 KiB to give (``yes``), for ``seconds`` of (virtual) time; it
    fails the test if it is read more often than once per 10 ms once 4 MiB wait unread."""

    def __init__(self, seconds: float) -> None:
        self.until = trio.current_time() + seconds
        self.reads: list[float] = []

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        await trio.lowlevel.checkpoint()
        now = trio.current_time()
        if now >= self.until:
            return b""
        self.reads.append(now)
        paced = self.reads[(4 << 20) // 65536 :]  # the reads once 4 MiB wait unread
        if len(paced) > 10 and now - paced[-11] < 0.095:
            raise AssertionError(f"read 11 times in {now - paced[-11]:.3f} s")
        return b"y\n" * 32768

    async def aclose(self) -> None:
        pass


async def test_a_flooding_background_shell_is_read_at_a_bounded_pace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A background command printing without end (``yes`` kept the event loop's thread 87 %
    busy reading output only to drop it): once 4 MiB wait unread, its pipe is read once per
    10 ms; the newest 4 MiB are kept, the rest counted as dropped."""
    from agents.tools.shell import _Background

    bg = _Background("bash_1", "yes", "/", {})
    flood = _Flood(seconds=2.0)
    await bg.drain(flood)
    assert 64 + 190 <= len(flood.reads) <= 64 + 201
    data, dropped = bg.take()
    assert len(data) == 4 << 20
    assert dropped == len(flood.reads) * 65536 - (4 << 20)


async def test_background_shells_past_the_limit_are_refused_naming_it(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each background shell may keep 4 MiB and a process: past MAX_BACKGROUND_SHELLS running
    at once (here 2), one more is refused naming the limit and the running ones; once one is
    killed, the next starts."""
    from agents.tools import shell

    monkeypatch.setattr(shell, "MAX_BACKGROUND_SHELLS", 2)
    for _ in range(2):
        out = await call(BASH, {"command": "sleep 30", "run_in_background": True}, ctx)
        assert not out.is_error
    refused = await call(BASH, {"command": "sleep 30", "run_in_background": True}, ctx)
    assert refused.is_error
    assert text_of(refused) == (
        "Too many background shells: at most 2 run at once (MAX_BACKGROUND_SHELLS; running: "
        "bash_1, bash_2). Stop one with KillShell, or wait for one to finish."
    )
    await call(KILL, {"shell_id": "bash_1"}, ctx)
    started = await call(BASH, {"command": "sleep 30", "run_in_background": True}, ctx)
    assert started.data == {"backgroundTaskId": "bash_3"}


async def test_commands_get_the_default_sigpipe_and_sigxfsz(ctx: ToolContext) -> None:
    """A command runs with SIGPIPE and SIGXFSZ at their defaults, as from a terminal: the
    Python processes between the agent and the shell (the keeper, the cutter) ignore them, and
    an ignored signal stays ignored across ``exec``, so ``yes | head -1`` printed "Broken pipe"
    and ended with 1 instead of dying of SIGPIPE (141)."""
    script = 'yes | head -1; echo "status ${PIPESTATUS[0]}"; trap -p PIPE XFSZ'
    out = await call(BASH, {"command": script}, ctx)
    assert text_of(out) == "y\nstatus 141"
    shell = await call(BASH, {"command": script, "run_in_background": True}, ctx)
    assert shell.data is not None
    done = await _read_until_done(shell.data["backgroundTaskId"], ctx)
    # (read in pieces: the output may come over several reads)
    assert "status 141" in done and "Broken pipe" not in done and "trap" not in done


async def test_a_background_shell_killed_by_sigkill_says_so(ctx: ToolContext) -> None:
    """The keeper mirrors a command's death by its signal by dying of it too; for SIGKILL,
    whose handler cannot be set, resetting it first raised, and the shell read as exit 1."""
    shell = await call(BASH, {"command": "echo up; kill -9 $$", "run_in_background": True}, ctx)
    assert shell.data is not None
    done = await _read_until_done(shell.data["backgroundTaskId"], ctx)
    assert "up" in done and "<exit_code>-9</exit_code>" in done, done
