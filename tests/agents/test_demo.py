"""`agents demo`: the README's first command keeps working and tells the story it promises."""

from __future__ import annotations

import io

from agents.cli import main


def test_demo_runs_a_hierarchy_whose_budget_trips() -> None:
    """The demo spawns foreground and background agents, trips its budget and prints the tree."""
    import agents._demo as demo

    out = io.StringIO()
    assert demo.run_demo(fast=True, out=out) == 0
    text = out.getvalue()
    assert "[init]" in text and "[spawn] researcher (foreground)" in text
    assert "[task_notification] main/style-auditor-1 stopped" in text
    assert "└─ researcher-1  explain the store" in text and " done " in text
    assert "(130%) reached" in text or "reached" in text.splitlines()[-2]


def test_demo_shows_its_budget_from_the_start() -> None:
    import agents._demo as demo

    out = io.StringIO()
    assert demo.run_demo(fast=True, out=out) == 0
    assert out.getvalue().splitlines()[1].startswith("budget: $0.08 for the whole tree (a soft cap")


def test_demo_explains_the_result_with_zero_turns() -> None:
    """The notification turn refused by the tripped budget says so under its result."""
    import agents._demo as demo

    out = io.StringIO()
    assert demo.run_demo(fast=True, out=out) == 0
    lines = out.getvalue().splitlines()
    i = next(i for i, line in enumerate(lines) if "error_max_budget_usd · 0 turns" in line)
    assert lines[i + 2].startswith("  ↳ 0 turns: the auditors' reports came back as a new prompt")


def test_demo_cuts_nothing_with_an_ellipsis() -> None:
    """Tool inputs and system messages are printed whole; long outputs say how many lines follow."""
    import agents._demo as demo

    out = io.StringIO()
    assert demo.run_demo(fast=True, out=out) == 0
    text = out.getvalue()
    assert "…" not in text
    assert '[tool_use] Grep pattern="TODO" output_mode="content" -n=true' in text
    assert "(+4 more lines)" in text


def test_demo_leaves_nothing_in_the_data_directory() -> None:
    """Its sessions belong to a temporary project: they go with it, not into the user's data."""
    import os
    from pathlib import Path

    import agents._demo as demo

    data = Path(os.environ["TRIO_AGENTS_DATA_DIR"])
    assert demo.run_demo(fast=True, out=io.StringIO()) == 0
    assert not data.exists() or not any(data.iterdir())


def test_demo_without_budget_completes(capsys: object) -> None:
    """With a large budget every agent finishes and nothing trips."""
    import agents._demo as demo

    out = io.StringIO()
    assert demo.run_demo(fast=True, budget=10.0, out=out) == 0
    text = out.getvalue()
    assert "reached" not in text and "stopped" not in text and "failed" not in text
    assert text.count("[result] success") == 3


def test_cli_parses_demo_options() -> None:
    """`agents --help` style parsing rejects unknown commands with exit status 2."""
    try:
        main(["nope"])
    except SystemExit as exc:
        assert exc.code == 2
    else:  # pragma: no cover
        raise AssertionError("unknown command accepted")
