"""A connection to an MCP server over HTTP: what one message may take, and the client.

Over HTTP the ``mcp`` package parses each message on the event loop in one call, so a bound on a
message's bytes is what keeps the loop free; its client verifies servers with the one TLS
context the session makes in a worker thread.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any

import trio

__all__ = ["MAX_HTTP_MESSAGE_BYTES", "cap_json_body", "http_clients"]


#: Bytes one message from a server over HTTP may take: an event of its event stream (the ``mcp``
#: package's own limit, passed explicitly) or a JSON response's body, which the package read
#: whole, without a limit. Over stdio a line may take 256 MiB: a line over 1 MiB is decoded in a
#: worker thread, by pieces; over HTTP the package parses each message on the event loop in one
#: call (pydantic: 1 MiB 7 ms, 4 MiB 24 ms, 16 MiB 160 ms, 64 MiB 390 ms), so the limit is what
#: keeps the loop free.
MAX_HTTP_MESSAGE_BYTES = 1 << 20


async def cap_json_body(response: Any) -> None:
    """A response hook of the HTTP client: a JSON response's body is read here, up to
    :data:`MAX_HTTP_MESSAGE_BYTES`, and refused past it or compressed (a few KB of gzip can
    inflate to gigabytes); the package, which would have read it whole, then reads what was
    read, or fails on the refusal, which it returns as the request's error and the tool call
    as its result. Event streams are left to the package's per-event limit."""
    from ..tools.bodies import read_capped

    content_type = response.headers.get("content-type", "").lower()
    if not content_type.startswith("application/json"):
        await trio.lowlevel.checkpoint()
        return
    encoding = response.headers.get("content-encoding", "identity").lower()
    if encoding != "identity":
        await response.aclose()
        _refuse(
            response,
            f"a JSON response compressed ({encoding}) refused: its size once inflated is "
            f"unknown (MAX_HTTP_MESSAGE_BYTES={MAX_HTTP_MESSAGE_BYTES})",
        )
        return
    body, cut = await read_capped(response, MAX_HTTP_MESSAGE_BYTES)  # (stops by cancelling)
    if not cut:
        response._content = bytes(body)  # what ``aread`` returns once read
        return
    await response.aclose()
    _refuse(
        response,
        f"a JSON response longer than {MAX_HTTP_MESSAGE_BYTES} bytes (MAX_HTTP_MESSAGE_BYTES)",
    )


def _refuse(response: Any, message: str) -> None:
    """Make ``response``'s body a stream that fails with ``message`` when it is read."""
    import httpx2

    class Refused(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            await trio.lowlevel.checkpoint()
            raise httpx2.StreamError(message)
            yield b""  # (an async generator: it fails at its first step)

    response.stream = Refused()
    response.is_stream_consumed = False
    response.is_closed = False


def http_clients(tls: ssl.SSLContext) -> Callable[..., Any]:
    """The mcp package's ``create_mcp_http_client`` (its timeouts, no redirects followed),
    verifying servers with ``tls``, the session's one context made in a worker thread: a client
    made without one loads the certificate roots itself, 25-40 ms on the event loop for every
    connection over HTTP."""

    def make(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
        import httpx2
        from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

        if timeout is None:
            timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
        return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, verify=tls)

    return make
