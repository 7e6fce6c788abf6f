"""``WireBackend``: the Messages API on the wire, without the ``anthropic`` package.

``import anthropic`` costs 1.2–3 s on a small machine (its pydantic types), which a command-line
run pays before its first request (``agents run`` uses this backend for that reason). This
backend speaks the same protocol with what the runtime already has — Trio's sockets and TLS with
h11 for HTTP/1.1 (:mod:`agents.backends._h11`), or httpx when the environment names a proxy;
msgspec for the JSON and the SSE stream (the parser :class:`~agents.backends.AnthropicBackend`
uses) — and maps failures onto the same :mod:`agents.backends.base` errors, so the loop cannot
tell them apart. ``AnthropicBackend``'s conformance and acceptance tests run against it, on both
transports.

What it does not do, and ``AnthropicBackend`` (the official client) does: Bedrock, Vertex, and the
client's own configuration hooks. Credentials and endpoint are the usual ones:
``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``), sent as the official client sends them
(``Authorization: Bearer``, the same ``anthropic-version``), and ``ANTHROPIC_BASE_URL``::

    options = AgentOptions(backend=WireBackend(max_retries=3))
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from ._h11 import H11Pool, HTTPResponse, TransportError
from .anthropic import (
    AnthropicBackend,
    SSEParser,
    build_params,
    error_fields,
    feed_or_unwind,
    parse_retry_after,
    status_error,
)
from .base import APIConnectionError, BackendError, BackendEvent, ModelRequest

if TYPE_CHECKING:
    import httpx

__all__ = ["API_VERSION", "DEFAULT_BASE_URL", "WireBackend"]

#: the ``anthropic-version`` the official client (2.14) sends
API_VERSION = "2026-10-21"
DEFAULT_BASE_URL = "https://api.anthropic.com"
_CLOSE_TIMEOUT = 5.0
_encode = msgspec.json.Encoder().encode


class WireBackend(AnthropicBackend):
    """The Messages API over httpx: same requests, events and errors as ``AnthropicBackend``.

    Takes the same arguments except ``client`` (there is no official client to wrap).
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 10,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 32.0,
        timeout: float = 600.0,
        default_headers: Mapping[str, str] | None = None,
        *,
        send_agent_headers: bool = False,
    ) -> None:
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
            retry_max_delay=retry_max_delay,
            timeout=timeout,
            default_headers=default_headers,
            send_agent_headers=send_agent_headers,
        )
        self._http: httpx.AsyncClient | None = None
        self._pool: H11Pool | None = None

    def __repr__(self) -> str:
        return super().__repr__().replace("AnthropicBackend(", "WireBackend(", 1)

    @property
    def http(self) -> httpx.AsyncClient:
        """The httpx client (a connection pool), made on first use."""
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(
                base_url=self._base,
                timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 60.0)),
                headers=self._headers(),
            )
        return self._http

    @property
    def _base(self) -> str:
        return self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL

    def _headers(self) -> dict[str, str]:
        return {
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
            "accept": "application/json",
            "user-agent": "trio-agents (WireBackend)",
            **self.default_headers,
        }

    def _auth(self) -> dict[str, str]:
        # as the official client (2.x) does: the key or the token, as a bearer
        key = (
            self.api_key
            or os.environ.get("ANTHROPIC_API_KEY")
            or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        )
        if key:
            return {"authorization": f"Bearer {key}"}
        raise BackendError(
            "no credentials: set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN, or pass api_key="
        )

    async def aclose(self) -> None:
        """Close the connection pool (shielded, with its own deadline); the backend stays
        usable — the next request opens a new pool."""
        http, self._http = self._http, None
        pool, self._pool = self._pool, None
        with trio.CancelScope(shield=True) as scope:
            scope.relative_deadline = _CLOSE_TIMEOUT
            if http is not None:
                await http.aclose()
            if pool is not None:
                await pool.aclose()

    async def __aenter__(self) -> WireBackend:
        return self

    async def stream(self, request: ModelRequest) -> AsyncIterator[BackendEvent]:
        """Stream one response as event structs; raise :class:`BackendError` on any failure.

        Without a proxy in the environment the request goes over :mod:`agents.backends._h11`
        (Trio sockets and h11); with one, through httpx, which knows proxies.
        """
        headers = self._auth()
        headers.update(self._options(request).get("headers", {}))
        try:
            body = _encode({**build_params(request), "stream": True})
        except TypeError as exc:
            raise BackendError(f"request is not JSON-serializable: {exc}") from exc
        events = self._direct if not _proxied() else self._via_httpx
        async for event in events(body, headers, request.model):
            yield event

    async def _direct(
        self, body: bytes, headers: dict[str, str], model: str
    ) -> AsyncIterator[BackendEvent]:
        if self._pool is None:
            self._pool = H11Pool(self._base, self.timeout, min(self.timeout, 60.0))
        try:
            async with self._pool.stream(
                "/v1/messages", body, {**self._headers(), **headers}
            ) as resp:
                if resp.status_code >= 400:
                    raise await _status_failure(resp, model)
                parser = SSEParser(model, self.timeout)
                chunks = resp.aiter_bytes()
                async for chunk in chunks:
                    for event in await feed_or_unwind(parser, chunk, chunks):
                        yield event
                if not parser.stopped:
                    raise APIConnectionError("stream ended before message_stop")
        except TransportError as exc:
            if exc.timeout:
                raise APIConnectionError("request timed out") from None
            raise APIConnectionError(str(exc)) from exc

    async def _via_httpx(
        self, body: bytes, headers: dict[str, str], model: str
    ) -> AsyncIterator[BackendEvent]:
        import httpx

        http = self.http
        try:
            async with http.stream("POST", "/v1/messages", content=body, headers=headers) as resp:
                if resp.status_code >= 400:
                    raise await _status_failure(resp, model)
                parser = SSEParser(model, self.timeout)
                chunks = resp.aiter_bytes()
                async for chunk in chunks:
                    for event in await feed_or_unwind(parser, chunk, chunks):
                        yield event
                if not parser.stopped:
                    raise APIConnectionError("stream ended before message_stop")
        except httpx.TimeoutException:
            raise APIConnectionError("request timed out") from None
        except httpx.HTTPError as exc:
            raise APIConnectionError(f"stream interrupted ({exc!r})") from exc


_PROXY_VARIABLES = ("https_proxy", "http_proxy", "all_proxy")


def _proxied() -> bool:
    """Whether the environment names a proxy (then httpx, which knows proxies, carries it)."""
    return any(os.environ.get(v) or os.environ.get(v.upper()) for v in _PROXY_VARIABLES)


async def _status_failure(response: httpx.Response | HTTPResponse, model: str) -> BackendError:
    """The error an HTTP error status stands for, with the API's own message."""
    raw = await response.aread()
    try:
        body: Any = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        body = None
    kind, message = error_fields(body)
    text = message or raw.decode("utf-8", "replace").strip() or response.reason_phrase
    return status_error(
        response.status_code, kind, text, model, parse_retry_after(response.headers)
    )
