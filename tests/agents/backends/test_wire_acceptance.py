"""Whole sessions through WireBackend + FakeAnthropicServer: the acceptance tests of the
official-client backend (retries with their system messages, errors, caching breakpoints,
partial messages, subagents), run unchanged on the wire path, over both its transports."""

from __future__ import annotations

import pytest

from agents.backends import wire
from agents.backends.wire import WireBackend
from tests.agents.backends import test_anthropic_acceptance as acceptance
from tests.agents.backends.test_anthropic_acceptance import *  # noqa: F403  (the same tests, here)


@pytest.fixture(autouse=True, params=["h11", "httpx"])
def _wire_backend(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Every test of the module, collected here, runs on WireBackend, once on each of its
    transports: Trio sockets with h11 (no proxy configured) and httpx (a proxy configured)."""
    monkeypatch.setattr(acceptance, "AnthropicBackend", WireBackend)
    proxied = request.param == "httpx"
    monkeypatch.setattr(wire, "_proxied", lambda: proxied)
