"""The live tree in a real terminal: `agents demo` in tmux, read back as a person sees it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it as root)"
)


def test_agents_demo_draws_the_live_tree_in_a_terminal() -> None:
    """While it runs the screen shows agents at work and the budget bar; at the end, the ended
    tree, the tripped budget and why the second result has 0 turns — each once, drawn in place."""
    socket = f"agents-test-{os.getpid()}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    command = f"{sys.executable} -m agents.cli demo; sleep 60"
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "demo", "-x", "120", "-y", "45", command], check=True
    )
    screens: list[str] = []
    try:
        deadline = time.monotonic() + 60  # a real process on a shared machine: poll, bounded
        while time.monotonic() < deadline:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", "demo"], capture_output=True, text=True
            ).stdout
            if "result 2:" in screen and screens and screen == screens[-1]:
                break  # the demo has printed its last line and the screen is still
            screens.append(screen)
            time.sleep(0.1)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    final = screens[-1]
    assert "result 2:" in final, final
    assert any("running tools" in s or "thinking" in s for s in screens), screens
    assert any("budget ━" in s and "(100%)" not in s and "reached" not in s for s in screens)
    assert "budget: $0.08 for the whole tree" in final
    assert "└─ researcher-1  explain the store" in final
    assert "reached" in final and "stopped" in final and "done" in final
    headers = [line for line in final.splitlines() if line.startswith("agent ")]
    assert len(headers) == 1, final  # one tree, redrawn in place, not printed frame after frame
    assert "0 turns: the auditors' reports came back as a new prompt" in final


def test_agents_run_draws_its_tree_and_prints_the_answer_in_a_terminal(tmp_path: Path) -> None:
    """`agents run` on a terminal: the tree with the running Bash call and its elapsed time while
    it runs; then the ended tree on stderr and the answer on stdout, both on screen."""
    from agents.testing.scripted import Script, Step, text, tool_use

    script = Script.coerce(
        [
            Step([text("Let me wait."), tool_use("Bash", {"command": "sleep 1"})]),
            Step([text("All done: the answer is 42.")], token_latency=0.05),
        ]
    )
    (tmp_path / "script.json").write_bytes(script.to_json())
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agents.testing.fake_api",
            "--script",
            str(tmp_path / "script.json"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        command = (
            f"cd {tmp_path} && {sys.executable} -m agents.cli run hi --base-url {base_url} "
            "--allowed-tools 'Bash(sleep *)'; sleep 60"
        )
        screens = _screens(command, done="the answer is 42")
    finally:
        server.terminate()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()
    final = screens[-1]
    assert any("running tools" in s and "Bash sleep 1" in s for s in screens), screens
    assert "All done: the answer is 42." in final
    assert any(line.startswith("main ") and " done " in line for line in final.splitlines())
    assert "Traceback" not in final


def _screens(command: str, done: str) -> list[str]:
    """What tmux shows while ``command`` runs, until ``done`` is on a screen that stays still."""
    socket = f"agents-test-{os.getpid()}-run"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "t", "-x", "100", "-y", "40", command],
                   check=True)  # fmt: skip
    screens: list[str] = []
    try:
        deadline = time.monotonic() + 60  # a real process on a shared machine: poll, bounded
        while time.monotonic() < deadline:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", "t"], capture_output=True, text=True
            ).stdout
            if done in screen and screens and screen == screens[-1]:
                break
            screens.append(screen)
            time.sleep(0.1)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    return screens
