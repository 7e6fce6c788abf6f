"""What reaches a terminal from a model, a server or a project's files cannot drive it.

A subagent's description, a tool call's command, an API error's text, a denial's reason, the
main agent's words and a settings file's bad value are all written to the user's terminal. Raw,
an escape sequence among them clears the screen, sets the window title, writes the clipboard
(OSC 52) or moves the cursor to overwrite a line; a carriage return or a newline forges a line
of our own ("permission denied" that never happened, or "all checks passed"); a bidirectional
override shows text in another order than it is. Each is written out as an escape instead
(``\\x1b``), as ``ls`` does on a terminal. What goes to a pipe (the result on stdout, for a
script) stays byte for byte what the model said.
"""

from __future__ import annotations

import io
import logging
import unicodedata
from pathlib import Path

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from agents import AgentOptions
from agents._demo import StreamPrinter
from agents.cli import main
from agents.cli_run import _session
from agents.cockpit import TreeState, render
from agents.cockpit.lines import printable
from agents.cockpit.logs import configure_logging
from agents.messages import (
    AssistantMessage,
    SystemMessage,
    TextBlock,
    ToolUseBlock,
)
from agents.testing import ScriptedBackend
from agents.testing.scripted import Fault, Step, text, tool_use

#: what an attacker writes: a title and a clipboard write (OSC), a screen clear (CSI), a bell,
#: a carriage return and a newline forging a line, a C1 CSI, a right-to-left override
ATTACK = "a\x1b]0;owned\x07b\x1b]52;c;ZWNobyBwd25lZA==\x07c\x1b[2Jd\rFAKE\nFORGED e\x9b31m f\u202eg"
#: characters that must never reach a terminal raw
DANGEROUS = {chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))} | {
    "\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))
}  # fmt: skip


def raw_controls(shown: str, *, lines: bool = False) -> set[str]:
    found = {c for c in shown if c in DANGEROUS}
    if not lines and "\n" in shown.rstrip("\n"):
        found.add("\n")
    return found


# -- the rule itself


def test_every_control_is_written_out_and_the_rest_kept() -> None:
    shown = printable(ATTACK)
    assert raw_controls(shown) == set()
    assert shown == (
        "a\\x1b]0;owned\\x07b\\x1b]52;c;ZWNobyBwd25lZA==\\x07c\\x1b[2Jd\\rFAKE\\nFORGED e\\x9b31m"
        " f\\u202eg"
    )
    plain = "plain words, tabs\tand ünïcödé 字 🙂"
    assert printable(plain) == plain


def test_a_text_block_keeps_its_lines() -> None:
    assert printable("one\r\ntwo\n\x1b[2Jthree\rfour", lines=True) == (
        "one\ntwo\n\\x1b[2Jthree\\rfour"
    )


@given(st.text())
def test_nothing_dangerous_survives(value: str) -> None:
    for lines in (False, True):
        shown = printable(value, lines=lines)
        assert raw_controls(shown, lines=lines) == set()
        # printable text (no control, format or separator character) passes unchanged
        if all(unicodedata.category(c)[0] not in "CZ" or c == " " for c in value):
            assert shown == value


@given(st.text())
def test_only_the_dangerous_characters_change(value: str) -> None:
    """The rest of the text is all there, in order (an escape only adds characters)."""
    shown = iter(printable(value))
    assert all(c in shown for c in value if c not in DANGEROUS and c != "\n")


# -- where it applies


@pytest.fixture
def spawn_attack() -> list[Step]:
    args = {"description": ATTACK, "prompt": "p", "subagent_type": "general-purpose"}
    return [Step([tool_use("Agent", args)]), Step([text("done")]), Step([text("ok")])]


async def run_text(
    steps: list[Step], project: Path, *, out: io.StringIO | None = None, **options: object
) -> tuple[int, str, str]:
    backend = ScriptedBackend(steps)
    opts = AgentOptions(backend=backend, cwd=str(project), **options)  # type: ignore[arg-type]
    out = out or io.StringIO()
    err = io.StringIO()
    status = await _session("hi", opts, "text", False, True, out, err)
    return status, out.getvalue(), err.getvalue()


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_progress_lines_write_a_subagents_description_out(
    spawn_attack: list[Step], project: Path
) -> None:
    status, _, err = await run_text(spawn_attack, project, permission_mode="bypassPermissions")
    assert status == 0
    (line,) = [x for x in err.splitlines() if "spawned" in x]
    assert raw_controls(err, lines=True) == set()
    assert "\\x1b]0;owned\\x07" in line and "\\nFORGED" in line
    assert not any(x.startswith("FORGED") or x.startswith("FAKE") for x in err.splitlines())


async def test_an_api_errors_text_is_written_out(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    steps = [Step(fault=Fault(status=529, message=ATTACK)), Step([text("ok")])]
    status, _, err = await run_text(steps, project)
    assert status == 0
    assert raw_controls(err, lines=True) == set()
    assert "\\x1b[2J" in err


async def test_a_denied_commands_text_is_written_out(project: Path) -> None:
    steps = [Step([tool_use("Bash", {"command": f"echo {ATTACK}"})]), Step([text("no")])]
    status, _, err = await run_text(steps, project)
    assert status == 0
    assert "permission denied" in err
    assert raw_controls(err, lines=True) == set()


async def test_an_error_results_text_is_written_out(project: Path) -> None:
    steps = [Step(fault=Fault(status=400, message=ATTACK))]
    status, _, err = await run_text(steps, project)
    assert status == 1
    assert "agents run: error_during_execution" in err
    assert raw_controls(err, lines=True) == set()
    assert "\\x1b]52;" in err


async def test_the_result_on_a_terminal_is_written_out(project: Path) -> None:
    status, out, _ = await run_text([Step([text(ATTACK)])], project, out=Terminal())
    assert status == 0
    assert raw_controls(out, lines=True) == set()
    assert out == printable(ATTACK, lines=True) + "\n"
    assert "FORGED" in out.splitlines()[1]  # the model's own newline is kept


async def test_the_result_through_a_pipe_is_byte_for_byte(project: Path) -> None:
    status, out, _ = await run_text([Step([text(ATTACK)])], project)
    assert (status, out) == (0, ATTACK + "\n")


def test_the_live_tree_writes_everything_out() -> None:
    state = TreeState()
    spawn = ToolUseBlock(
        id="t1", name="Agent",
        input={"description": ATTACK, "prompt": "p", "subagent_type": f"x{ATTACK}"},
    )  # fmt: skip
    bash = ToolUseBlock(id="t2", name="Bash", input={"command": ATTACK})
    for block in (spawn, bash):
        state.observe(AssistantMessage(content=[block], model="m", message_id=f"m{block.id}"))
    state.observe(AssistantMessage(content=[TextBlock(ATTACK)], model="m", message_id="m3"))
    state.observe(
        SystemMessage(
            subtype="api_retry",
            data={
                "attempt": 1,
                "max_retries": 3,
                "error": ATTACK,
                "error_status": 529,
                "delay_s": 1.0,
            },
        )
    )
    state.observe(SystemMessage(subtype="permission_denied", data={
        "tool_name": ATTACK, "reason": ATTACK, "agent_id": "main"}))  # fmt: skip
    state.observe(SystemMessage(subtype="budget_overrun", data={"agent_id": ATTACK}))
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, color_system=None, width=400)
    console.print(render(state))
    shown = buf.getvalue()
    assert "\\x1b" in shown
    assert raw_controls(shown, lines=True) == set(), repr(shown)


def test_the_demo_printer_writes_everything_out() -> None:
    out = io.StringIO()
    printer = StreamPrinter(out)
    block = ToolUseBlock(
        id="t1", name="Agent", input={"description": ATTACK, "subagent_type": ATTACK}
    )
    printer(AssistantMessage(content=[block], model="m", message_id="m1"))
    printer(AssistantMessage(content=[TextBlock(ATTACK)], model="m", message_id="m2"))
    assert "\\x1b" in out.getvalue()
    assert raw_controls(out.getvalue(), lines=True) == set()


def test_log_lines_write_everything_out() -> None:
    stream = io.StringIO()
    handler = configure_logging(logging.WARNING, stream)
    try:
        logging.getLogger("agents.test").warning("tool said %s", ATTACK)
    finally:
        logging.getLogger("agents").removeHandler(handler)
    assert "\\x1b]0;owned" in stream.getvalue()
    assert raw_controls(stream.getvalue(), lines=True) == set()


def test_an_error_line_writes_everything_out(capsys: pytest.CaptureFixture[str]) -> None:
    """A bad value named in an error (here a settings entry's name) is written out."""
    settings = '{"env": {"\\u001b]0;owned\\u0007\\nFORGED": [1]}}'
    try:
        status = main(["run", "hi", "--base-url", "http://127.0.0.1:9", "--settings", settings])
    except SystemExit as exc:
        status = exc.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert status == 2, err
    assert len(err.splitlines()) == 1, err
    assert raw_controls(err, lines=True) == set()
    assert "\\x1b]0;owned" in err
