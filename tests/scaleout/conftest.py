"""Real PostgreSQL and Redis servers for the scale-out tests, started once per test session.

Each is a fresh server on a free 127.0.0.1 port (see ``agents.testing.servers``), stopped when the
session ends. A test module skips with the reason only when the server's package is not installed
(``.ci/run`` installs both).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from agents.testing.servers import ServerUnavailable, postgres_server, redis_server


def _serve(server: contextlib.AbstractContextManager[str]) -> Iterator[str]:
    """Enter ``server`` for the test session; skip (with the reason) when it is not installed."""
    try:
        address = server.__enter__()
    except ServerUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield address
    finally:
        server.__exit__(None, None, None)


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """The DSN of a PostgreSQL server private to this test session."""
    yield from _serve(postgres_server())


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a Redis server private to this test session."""
    yield from _serve(redis_server())
