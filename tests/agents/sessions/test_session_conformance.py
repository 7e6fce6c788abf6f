"""Both built-in stores pass the SessionStore conformance suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.sessions import FileSessionStore, InMemorySessionStore, SessionStore
from agents.testing.store_conformance import (
    CHECKS,
    check_session_store,
    run_check,
    session_store_conformance_tests,
)

test_in_memory_store_conformance = session_store_conformance_tests(InMemorySessionStore)


@pytest.mark.parametrize("check", list(CHECKS))
async def test_file_store_conformance(check: str, tmp_path: Path) -> None:
    """FileSessionStore passes each conformance check."""
    await run_check(check, lambda: FileSessionStore(tmp_path))


async def test_check_session_store_runs_everything_with_async_factory(tmp_path: Path) -> None:
    """check_session_store accepts a factory returning an awaitable and runs every check."""

    async def make() -> SessionStore:
        return FileSessionStore(tmp_path / "async")

    await check_session_store(make)


async def test_conformance_failure_names_the_check() -> None:
    """A store that loses entries fails with an AssertionError naming the check."""

    class Forgetful(InMemorySessionStore):
        async def load(self, key):  # type: ignore[no-untyped-def]
            entries = await super().load(key)
            return None if entries is None else entries[:-1]

    with pytest.raises(
        AssertionError, match=r"^session store conformance check 'append_load_order'"
    ):
        await run_check("append_load_order", Forgetful)
