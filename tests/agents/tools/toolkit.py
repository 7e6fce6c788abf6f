"""Helpers for the built-in tool tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import trio

from agents.tools.base import Tool, ToolContext, ToolOutput


async def call(tool: Tool, raw: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    """Validate ``raw`` as the loop does, then run the handler."""
    return await tool.handler(tool.validate(raw), ctx)


def printed_within_a_deadline(script: str, seconds: float = 60) -> str:
    """What ``script`` prints, run in a Python process of its own that must end within
    ``seconds`` (``subprocess.TimeoutExpired`` otherwise): for work that, broken, would hold
    the test's own process for minutes, where no virtual clock can cut it short."""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=seconds, check=True
    )
    return done.stdout.strip()


def text_of(out: ToolOutput) -> str:
    assert isinstance(out.content, str), out.content
    return out.content


def group_gone(pgid: int) -> bool:
    """No live process is left in group ``pgid``.

    Killed orphans are reparented to init, which may reap them late (zombies still count for
    ``killpg(pgid, 0)``), so on Linux a group whose members are all zombies counts as gone.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    if not os.path.isdir("/proc/self"):
        return False
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        state, group = fields[0], int(fields[2])
        if group == pgid and state not in ("Z", "X"):
            return False
    return True


async def wait_gone(pgid: int) -> bool:
    """The group disappears once the kernel has reaped its members (orphans go to init)."""
    for _ in range(100):
        if group_gone(pgid):
            return True
        await trio.sleep(0.01)
    return False
