"""The ``mcp`` package is first imported in a worker thread, not on the event loop (the first
``import mcp`` took 0.5 s, one step of the loop): in a fresh interpreter, connecting a server
over each transport and calling a tool imports no module of the package on the loop's thread."""

from __future__ import annotations

import pytest

from tests.agents.tools.toolkit import printed_within_a_deadline

_SCRIPT = """
import importlib.abc, sys, threading
import trio
from agents.mcp import open_mcp_servers
from agents.testing.mcp_servers import open_http_server, stdio_server_config

on_the_loop = []

class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mcp", "mcp_types") and threading.current_thread() is LOOP:
            on_the_loop.append(name)
        return None

async def main(transport):
    async with open_http_server(transport) if transport != "stdio" else _stdio() as config:
        assert "mcp" not in sys.modules or transport != "stdio"
        sys.meta_path.insert(0, Watch())
        async with open_mcp_servers({"s": config}) as servers:
            assert servers.status()[0].status == "connected", servers.status()
            out = await servers.call("s", "echo", {"text": "hi"})
            assert not out.is_error, out
    print(sorted(set(on_the_loop)))

class _stdio:
    async def __aenter__(self): return stdio_server_config()
    async def __aexit__(self, *exc): pass

LOOP = threading.current_thread()
trio.run(main, sys.argv[1])
"""


@pytest.mark.parametrize("transport", ["stdio", "http", "sse"])
def test_connecting_imports_no_module_of_the_mcp_package_on_the_event_loop(
    transport: str,
) -> None:
    script = f"import sys; sys.argv[1:] = [{transport!r}]\n" + _SCRIPT
    assert printed_within_a_deadline(script, seconds=60) == "[]"


_TLS_SCRIPT = """
import ssl, sys, threading
import trio
from agents.mcp import open_mcp_servers
from agents.testing.mcp_servers import open_http_server

on_the_loop = []
for name in ("load_verify_locations", "load_default_certs"):
    real = getattr(ssl.SSLContext, name)
    def spy(self, *args, _real=real, _name=name, **kwargs):
        if threading.current_thread() is LOOP:
            on_the_loop.append(_name)
        return _real(self, *args, **kwargs)
    setattr(ssl.SSLContext, name, spy)

async def main(transport):
    async with open_http_server(transport) as config:
        for _ in range(2):  # the second connection too
            async with open_mcp_servers({"s": config}) as servers:
                assert servers.status()[0].status == "connected", servers.status()
                out = await servers.call("s", "echo", {"text": "hi"})
                assert not out.is_error, out
    print(sorted(set(on_the_loop)))

LOOP = threading.current_thread()
trio.run(main, sys.argv[1])
"""


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_connecting_over_http_loads_no_certificates_on_the_event_loop(transport: str) -> None:
    """A connection's HTTP client verifies with the session's one TLS context, made in a worker
    thread (the mcp package's client loaded the roots itself, 25-40 ms on the loop, every
    connection)."""
    script = f"import sys; sys.argv[1:] = [{transport!r}]\n" + _TLS_SCRIPT
    assert printed_within_a_deadline(script, seconds=60) == "[]"
