"""No process outlives its shell: nohup, setsid and double-forked descendants, and a SIGKILLed host.

These start real processes: every wait polls with a deadline.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest
import trio

from agents import AgentOptions
from agents.testing import ScriptedBackend, Step, text, tool_use
from agents.tools import containment
from agents.tools.base import ToolContext
from agents.tools.shell import bash_output_tool, bash_tool, kill_shell_tool

from ..helpers import collect, result_of
from .toolkit import call, text_of

pytestmark = pytest.mark.skipif(
    not containment.containment_available(), reason="process containment is Linux-only"
)

_REPO = Path(containment.__file__).resolve().parents[2]

#: Leaves three sleepers behind, each escaping the shell's process group or parentage in its own
#: way, and writes their pids to ``<name>.pid`` files in the working directory.
ESCAPES = (
    "setsid sleep 300 & echo $! > setsid.pid; "
    "nohup sleep 300 >/dev/null 2>&1 & echo $! > nohup.pid; "
    "( setsid sh -c 'echo $$ > double.pid; exec sleep 300' & ); "
    "while [ ! -s double.pid ]; do sleep 0.01; done"
)
ESCAPED = ("setsid", "nohup", "double")


def alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie (init may reap killed orphans late)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in (b"Z", b"X")


def pids(root: Path, names: tuple[str, ...]) -> dict[str, int]:
    return {name: int((root / f"{name}.pid").read_text()) for name in names}


async def all_gone(pids: dict[str, int], within: float) -> dict[str, int]:
    """The pids still alive after polling for ``within`` seconds (empty when all are gone)."""
    with trio.move_on_after(within):
        while any(alive(p) for p in pids.values()):
            await trio.sleep(0.01)
    return {name: pid for name, pid in pids.items() if alive(pid)}


async def test_descendants_escaping_the_group_end_with_the_session(project: Path) -> None:
    """After a session whose Bash ran setsid, nohup and double-forked sleeps, none is left."""
    backend = ScriptedBackend(
        [Step([tool_use("Bash", {"command": ESCAPES})]), Step([text("left them running")])]
    )
    options = AgentOptions(  # `setsid` runs what the analysis cannot see: no mode approves it
        cwd=str(project),
        backend=backend,
        permission_mode="bypassPermissions",
        allowed_tools=["Bash"],
    )
    messages, error = await collect("start sleepers", options)
    assert error is None and result_of(messages).result == "left them running"
    sleepers = pids(project, ESCAPED)
    assert await all_gone(sleepers, within=2.0) == {}


async def test_the_sleepers_do_run_during_the_session(ctx: ToolContext, tmp_path: Path) -> None:
    """The control: while the shell lives, its escaped descendants live too."""
    out = await call(bash_tool(), {"command": ESCAPES}, ctx)
    assert not out.is_error, text_of(out)
    assert all(alive(p) for p in pids(tmp_path, ESCAPED).values())


async def test_a_shell_that_exits_takes_its_descendants(ctx: ToolContext, tmp_path: Path) -> None:
    """`exit` in the persistent shell ends what it left running (a new shell starts next)."""
    out = await call(bash_tool(), {"command": f"{ESCAPES}; exit 3"}, ctx)
    assert "the shell exited with status 3" in text_of(out)
    assert await all_gone(pids(tmp_path, ESCAPED), within=2.0) == {}


async def test_timeout_kills_escaped_descendants(ctx: ToolContext, tmp_path: Path) -> None:
    """A command killed by its timeout takes its setsid and nohup children with it."""
    command = f"{ESCAPES}; sleep 300"
    with trio.fail_after(10):
        out = await call(bash_tool(), {"command": command, "timeout": 1500}, ctx)
    assert text_of(out).startswith("Command timed out")
    assert await all_gone(pids(tmp_path, ESCAPED), within=2.0) == {}


async def test_kill_shell_ends_a_background_shells_escaped_descendants(
    ctx: ToolContext, tmp_path: Path
) -> None:
    """KillShell on a background shell ends the setsid/nohup/double-forked sleeps it started."""
    command = f"{ESCAPES}; sleep 300"
    out = await call(bash_tool(), {"command": command, "run_in_background": True}, ctx)
    assert out.data is not None
    shell_id = out.data["backgroundTaskId"]
    with trio.fail_after(10):
        while (
            not all((tmp_path / f"{n}.pid").exists() for n in ESCAPED)
            or not (tmp_path / "double.pid").read_text()
        ):
            await trio.sleep(0.01)
    sleepers = pids(tmp_path, ESCAPED)
    assert all(alive(p) for p in sleepers.values())
    killed = await call(kill_shell_tool(), {"shell_id": shell_id}, ctx)
    assert text_of(killed).startswith("Successfully killed shell")
    assert await all_gone(sleepers, within=2.0) == {}
    status = text_of(await call(bash_output_tool(), {"bash_id": shell_id}, ctx))
    assert "<status>killed</status>" in status


async def test_exit_status_passes_through_the_keeper(ctx: ToolContext) -> None:
    """The keeper exits with its command's status, so the shell's exit code is reported."""
    out = await call(bash_tool(), {"command": "exit 7"}, ctx)
    assert "the shell exited with status 7" in text_of(out)


_HOST = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[2])
    import trio
    from agents import AgentOptions, query
    from agents.testing import ScriptedBackend, Step, text, tool_use

    COMMAND = sys.argv[3] + "; echo $$ > shell.pid; sleep 300 & echo $! > child.pid; " \\
        "touch ready; sleep 300"

    async def main():
        backend = ScriptedBackend([Step([tool_use("Bash", {"command": COMMAND})]),
                                   Step([text("never")])])
        options = AgentOptions(cwd=sys.argv[1], backend=backend,
                               permission_mode="bypassPermissions", allowed_tools=["Bash"])
        async for _ in query(prompt="go", options=options):
            pass

    trio.run(main)
    """
)


async def test_sigkill_of_the_host_ends_its_shell_and_children_within_a_second(
    tmp_path: Path,
) -> None:
    """kill -9 of the Python process mid-session: its shell and all its children are gone in 1 s."""
    script = tmp_path / "host.py"
    script.write_text(_HOST)
    work = tmp_path / "work"
    work.mkdir()
    host = await trio.lowlevel.open_process(
        [sys.executable, str(script), str(work), str(_REPO), ESCAPES]
    )
    try:
        with trio.fail_after(60):  # a cold interpreter importing agents on a busy machine
            while not (work / "ready").exists():
                await trio.sleep(0.02)
        processes = pids(work, ("shell", "child", *ESCAPED))
        assert all(alive(p) for p in processes.values())
        host.send_signal(signal.SIGKILL)
        with trio.fail_after(5):
            await host.wait()
        assert await all_gone(processes, within=1.0) == {}
    finally:
        if host.returncode is None:
            host.kill()
            with trio.CancelScope(shield=True):
                await host.wait()


async def test_without_containment_shells_still_run_and_a_warning_is_logged(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Off Linux the shell runs in its own session, with one warning naming what is lost."""
    monkeypatch.setattr(containment, "containment_available", lambda: False)
    monkeypatch.setattr(containment, "_warned", False)
    with caplog.at_level(logging.WARNING, logger="agents.tools"):
        out = await call(bash_tool(), {"command": "echo plain"}, ctx)
        await call(bash_tool(), {"command": "echo twice", "run_in_background": True}, ctx)
    assert text_of(out) == "plain"
    warnings = [r.getMessage() for r in caplog.records if "containment" in r.getMessage()]
    assert len(warnings) == 1
    assert "outlive the session" in warnings[0]
    assert os.getpid() > 0


def test_the_keeper_looks_twice_before_deciding_no_descendant_is_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A descendant whose parent was exiting shows up under the keeper only a moment later:
    one scan that finds nothing does not end the search; the next one's find is killed."""
    import agents.tools._contain as keeper

    scans = iter([[], [4242], [], []])
    killed: list[int] = []
    monkeypatch.setattr(keeper, "descendants", lambda me: next(scans))
    monkeypatch.setattr(keeper, "_reap_all", lambda: [])
    monkeypatch.setattr(keeper.os, "killpg", lambda group, sig: None)
    monkeypatch.setattr(keeper.os, "kill", lambda pid, sig: killed.append(pid))
    keeper.kill_tree(1, 2)
    assert killed == [4242]
