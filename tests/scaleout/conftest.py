"""Real PostgreSQL and Redis servers for the scale-out tests, started once per test session.

Each is a fresh server on a free 127.0.0.1 port (see ``agents.testing.servers``), stopped when the
session ends. A test module skips with the reason only when the server's package is not installed
(``.ci/run`` installs both).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agents.testing.servers import ServerUnavailable, postgres_server, redis_server


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """The DSN of a PostgreSQL server private to this test session."""
    try:
        server = postgres_server()
        dsn = server.__enter__()
    except ServerUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield dsn
    finally:
        server.__exit__(None, None, None)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a Redis server private to this test session."""
    try:
        server = redis_server()
        url = server.__enter__()
    except ServerUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield url
    finally:
        server.__exit__(None, None, None)
