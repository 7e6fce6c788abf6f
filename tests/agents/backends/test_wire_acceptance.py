"""Whole sessions through WireBackend + FakeAnthropicServer: the acceptance tests of the
official-client backend (retries with their system messages, errors, caching breakpoints,
partial messages, subagents), run unchanged on the httpx wire path."""

from __future__ import annotations

import pytest

from agents.backends.wire import WireBackend
from tests.agents.backends import test_anthropic_acceptance as acceptance
from tests.agents.backends.test_anthropic_acceptance import *  # noqa: F403  (the same tests, here)


@pytest.fixture(autouse=True)
def _wire_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acceptance, "AnthropicBackend", WireBackend)
