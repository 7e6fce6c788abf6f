"""What the default path shares: one SSL context per process, one backend per Trio run.

``query()`` with no ``backend`` used to build an ``AnthropicBackend`` per query and close it at
the query's end: a new ``AsyncAnthropic`` client, a new SSL context (about 30 ms of CPU loading
the CA bundle) and a new TCP/TLS connection for every query. Now:

* the **SSL context** is made once per process (per ``SSL_CERT_FILE``/``SSL_CERT_DIR``, which
  decide what it trusts) and handed to every client this package builds. A context is
  configuration only — it holds no socket and belongs to no event loop — so it may outlive runs;
* the **default backend**, with its client and connection pool, is shared by the queries of one
  Trio run (per ``ANTHROPIC_API_KEY``/``ANTHROPIC_AUTH_TOKEN``/``ANTHROPIC_BASE_URL``, which the
  client reads when it is built). Its sockets belong to the run, so it never outlives it: a
  system task of the run closes it when the run's main task ends (Trio cancels system tasks
  then, and waits for them). A session closing "its" backend closes nothing: the run owns it.
"""

from __future__ import annotations

import logging
import os
import ssl

import trio

from .anthropic import AnthropicBackend

__all__ = ["run_default_backend", "shared_ssl_context"]

log = logging.getLogger("agents.backends")

_CLIENT_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")
_SSL_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR")

_contexts: dict[tuple[str | None, ...], ssl.SSLContext] = {}
_run_backends: trio.lowlevel.RunVar[_RunBackends] = trio.lowlevel.RunVar("agents_backends")


def shared_ssl_context() -> ssl.SSLContext:
    """The process's SSL context for the Messages API, as the client would build it itself."""
    key = tuple(os.environ.get(name) for name in _SSL_ENV)
    context = _contexts.get(key)
    if context is None:
        import httpx2

        context = _contexts[key] = httpx2.create_ssl_context()
    return context


class _RunBackends:
    """A run's default backends, by the client's environment; ``closed`` once the run ended."""

    __slots__ = ("by_env", "closed")

    def __init__(self) -> None:
        self.by_env: dict[tuple[str | None, ...], _RunBackend] = {}
        self.closed = False


class _RunBackend(AnthropicBackend):
    """The run's default backend: ``aclose`` is the run's, not a session's."""

    async def aclose(self) -> None:
        """Nothing: the queries of this run share the client; the run's end closes it."""

    async def close_at_run_end(self) -> None:
        await AnthropicBackend.aclose(self)


def run_default_backend() -> AnthropicBackend:
    """The current Trio run's default backend, made on first use (no I/O: the client and its
    connections are made on the first request).

    Once the run is ending (its shared backends closed), a session still starting gets a
    backend of its own, which the session closes itself as before."""
    key = tuple(os.environ.get(name) for name in _CLIENT_ENV)
    try:
        backends = _run_backends.get()
    except LookupError:
        backends = _RunBackends()
        _run_backends.set(backends)
        trio.lowlevel.spawn_system_task(
            _close_at_run_end, backends, name="agents: close the default backends"
        )
    if backends.closed:
        return AnthropicBackend()
    backend = backends.by_env.get(key)
    if backend is None:
        backend = backends.by_env[key] = _RunBackend()
    return backend


async def _close_at_run_end(backends: _RunBackends) -> None:
    """Wait for the run's end, then close its backends (each close is shielded, with a deadline).

    An error closing one is logged, not raised: a system task's error would crash the run."""
    try:
        await trio.sleep_forever()
    finally:
        backends.closed = True
        for backend in backends.by_env.values():
            try:
                await backend.close_at_run_end()
            except Exception:
                log.warning("closing the default backend failed", exc_info=True)
