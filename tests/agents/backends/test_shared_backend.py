"""The default path's sharing: one SSL context per process, one backend per Trio run, closed
when the run ends."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest
import trio

from agents import AgentOptions, query
from agents.backends import _shared
from agents.backends.anthropic import AnthropicBackend
from agents.testing.fake_api import FakeAnthropicServer
from agents.testing.scripted import Step, text


def _answer(request: Any) -> Step:
    return Step([text("ok")])


async def _default_query(cwd: Path) -> None:
    async for _ in query(prompt="hi", options=AgentOptions(cwd=str(cwd), tools=[])):
        pass


@pytest.fixture
def api_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    return monkeypatch


async def test_queries_of_one_run_share_one_connection(
    api_env: pytest.MonkeyPatch, project: Path
) -> None:
    async with FakeAnthropicServer(_answer) as server:
        api_env.setenv("ANTHROPIC_BASE_URL", server.base_url)
        for _ in range(3):
            await _default_query(project)
        assert len(server.requests) == 3
        assert server.connections_opened == 1


async def test_a_session_end_leaves_the_runs_backend_open(
    api_env: pytest.MonkeyPatch, project: Path
) -> None:
    async with FakeAnthropicServer(_answer) as server:
        api_env.setenv("ANTHROPIC_BASE_URL", server.base_url)
        await _default_query(project)
        backend = _shared.run_default_backend()
        assert backend._client is not None and not backend._client.is_closed()


def test_the_runs_backend_is_closed_when_the_run_ends(
    api_env: pytest.MonkeyPatch, project: Path
) -> None:
    clients: list[Any] = []

    async def main() -> None:
        async with FakeAnthropicServer(_answer) as server:
            api_env.setenv("ANTHROPIC_BASE_URL", server.base_url)
            await _default_query(project)
            clients.append(_shared.run_default_backend().client)

    trio.run(main)
    assert clients and clients[0].is_closed()


def test_each_run_has_its_own_default_backend(api_env: pytest.MonkeyPatch) -> None:
    async def main() -> AnthropicBackend:
        first = _shared.run_default_backend()
        assert _shared.run_default_backend() is first
        return first

    assert trio.run(main) is not trio.run(main)


async def test_a_changed_environment_gets_its_own_backend(api_env: pytest.MonkeyPatch) -> None:
    api_env.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
    first = _shared.run_default_backend()
    api_env.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:2")
    assert _shared.run_default_backend() is not first


async def test_closing_the_runs_backend_from_a_session_does_nothing(
    api_env: pytest.MonkeyPatch,
) -> None:
    backend = _shared.run_default_backend()
    client = backend.client
    await backend.aclose()
    assert backend.client is client and not client.is_closed()


def test_every_client_shares_the_processs_ssl_context(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[ssl.SSLContext] = []

    def create_ssl_context() -> ssl.SSLContext:
        made.append(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
        return made[-1]

    import httpx2

    monkeypatch.setattr(_shared, "_contexts", {})
    monkeypatch.setattr(httpx2, "create_ssl_context", create_ssl_context)
    AnthropicBackend(api_key="x").client  # noqa: B018
    AnthropicBackend(api_key="y").client  # noqa: B018
    assert len(made) == 1


def test_a_changed_ca_setting_gets_its_own_ssl_context(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx2

    monkeypatch.setattr(_shared, "_contexts", {})
    monkeypatch.setattr(httpx2, "create_ssl_context", lambda: object())
    first = _shared.shared_ssl_context()
    monkeypatch.setenv("SSL_CERT_DIR", "/elsewhere")
    assert _shared.shared_ssl_context() is not first
