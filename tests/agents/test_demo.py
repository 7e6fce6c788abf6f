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
    assert "├─ main/researcher-1" in text and "completed" in text
    assert "(tripped)" in text


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
    assert "(tripped)" not in text and "stopped" not in text and "failed" not in text
    assert text.count("[result] success") == 3


def test_cli_parses_demo_options() -> None:
    """`agents --help` style parsing rejects unknown commands with exit status 2."""
    try:
        main(["nope"])
    except SystemExit as exc:
        assert exc.code == 2
    else:  # pragma: no cover
        raise AssertionError("unknown command accepted")
