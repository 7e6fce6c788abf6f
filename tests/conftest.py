"""Test-wide guards: no real network beyond 127.0.0.1, no writes outside tmp dirs."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import Phase, settings

# ``--hypothesis-profile=mutation`` (benchmarks/mutation.py): find a failure, do not shrink it
settings.register_profile("mutation", phases=[Phase.explicit, Phase.reuse, Phase.generate])

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if not loopback:
            raise OSError(f"tests may only connect to 127.0.0.1, not {host!r}")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _guard(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    monkeypatch.setenv("TRIO_AGENTS_DATA_DIR", str(tmp_path_factory.mktemp("agents-data")))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    yield


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory to run agents in."""
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def thread_calls(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The functions handed to ``trio.to_thread.run_sync`` from now on, in order (each still
    runs): for tests that some work goes to a worker thread, and other work does not."""
    calls: list[object] = []
    real = trio.to_thread.run_sync

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(fn)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(trio.to_thread, "run_sync", counted)
    return calls
