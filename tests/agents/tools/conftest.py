"""Fixtures for the built-in tool tests: a ToolContext rooted in ``tmp_path``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from agents.tools.base import ToolContext


@pytest.fixture
async def ctx(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[ToolContext]:
    """A context like the loop's; its cleanup callables run at teardown, as the agent's would."""
    context = ToolContext(
        cwd=str(tmp_path), agent_id="main", tool_use_id="t1", session_id="s", nursery=nursery
    )
    yield context
    with trio.CancelScope(shield=True):
        for cleanup in context.cleanup:
            await cleanup()
