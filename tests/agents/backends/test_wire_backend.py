"""WireBackend passes AnthropicBackend's HTTP conformance tests (retries, errors, caching headers,
partial messages, cancellation, keep-alive) against FakeAnthropicServer, without `anthropic`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agents.backends import wire
from agents.backends.wire import WireBackend
from agents.testing import FakeAnthropicServer
from agents.testing.scripted import Step, text
from tests.agents.backends import test_anthropic_backend as conformance
from tests.agents.backends.test_anthropic_backend import *  # noqa: F403  (the same tests, here)

# specific to the official client: it is built without retries of its own
del test_client_is_built_without_its_own_retries  # noqa: F821


@pytest.fixture(autouse=True, params=["h11", "httpx"])
def _wire_backend(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Every test of the module, collected here, runs on WireBackend, once on each of its
    transports: Trio sockets with h11 (no proxy configured) and httpx (a proxy configured)."""
    monkeypatch.setattr(conformance, "AnthropicBackend", WireBackend)
    proxied = request.param == "httpx"
    monkeypatch.setattr(wire, "_proxied", lambda: proxied)


async def headers_sent(backend_type: type) -> dict[str, str]:
    async with FakeAnthropicServer([Step([text("hi")])]) as server:
        backend = backend_type(api_key="sk-test", base_url=server.base_url)
        async with backend:
            await conformance.collect(backend.stream(conformance.request()))
    assert server.requests[0].body["stream"] is True
    return dict(server.requests[0].headers)


async def test_the_wire_backend_sends_the_headers_the_official_client_sends() -> None:
    from agents.backends.anthropic import AnthropicBackend

    official, wire = await headers_sent(AnthropicBackend), await headers_sent(WireBackend)
    for name in ("authorization", "anthropic-version", "content-type", "accept"):
        assert wire[name] == official[name], name
    assert wire["authorization"] == "Bearer sk-test"


async def test_an_auth_token_goes_as_a_bearer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok")
    async with FakeAnthropicServer([Step([text("hi")])]) as server:
        backend = WireBackend(base_url=server.base_url)
        async with backend:
            await conformance.collect(backend.stream(conformance.request()))
    assert server.requests[0].headers["authorization"] == "Bearer tok"


def test_the_wire_backend_never_imports_anthropic() -> None:
    code = (
        "import sys, agents.backends.wire, agents.cli, agents.cli_run\n"
        "print('anthropic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
