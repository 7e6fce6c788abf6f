"""Helpers for the asyncio tests: a fake Messages API server in its own thread, leftover checks.

These tests are written as an asyncio user writes them: plain test functions that call
``asyncio.run`` (pytest-trio's ``trio_mode`` owns ``async def`` tests). The fake server is
someone else's process as far as the program is concerned: it runs under its own ``trio.run``
in a thread, and the program reaches it over 127.0.0.1 with the real ``anthropic`` client.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
import trio

from agents.testing import FakeAnthropicServer, Step


@contextmanager
def serving(script: Sequence[Step] | dict[str, Sequence[Step]]) -> Iterator[FakeAnthropicServer]:
    """A :class:`FakeAnthropicServer` playing ``script`` in a thread, for the block's duration."""
    server = FakeAnthropicServer(script)
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            state["token"] = trio.lowlevel.current_trio_token()
            state["cancel"] = nursery.cancel_scope.cancel
            await nursery.start(server.serve)
            ready.set()

    def run() -> None:
        try:
            trio.run(main)
        except BaseException as exc:  # reported by the test below
            state["error"] = exc
            ready.set()

    thread = threading.Thread(target=run, name="fake anthropic server")
    thread.start()
    ready.wait(10)
    try:
        assert "error" not in state, state.get("error")
        yield server
    finally:
        trio.from_thread.run_sync(state["cancel"], trio_token=state["token"])
        thread.join(10)


def wait_until_closed(server: FakeAnthropicServer, seconds: float = 5.0) -> int:
    """The server's open connections once they are 0 or ``seconds`` have passed: its thread
    notices a client's close on its own time."""
    deadline = time.monotonic() + seconds
    while server.open_connections and time.monotonic() < deadline:
        time.sleep(0.01)
    return server.open_connections


def leftover_tasks() -> set[asyncio.Task[Any]]:
    """Tasks of the running loop other than the caller's."""
    return asyncio.all_tasks() - {asyncio.current_task()}


def assert_nothing_left() -> None:
    """No task but the caller's on the loop, and no Trio run left in this thread."""
    assert leftover_tasks() == set()
    assert not trio.lowlevel.in_trio_run()


@pytest.fixture(autouse=True)
def _no_trio_run_left() -> Iterator[None]:
    """Every test ends with no Trio guest run left in the thread."""
    yield
    assert not trio.lowlevel.in_trio_run()
