"""A small HTTP/1.1 client on Trio streams and h11, for :class:`~agents.backends.wire.WireBackend`.

httpx and httpcore cost a tenth of a second to import on a small machine; the wire path needs one
thing of them — POST a body, read a streamed response, keep the connection for the next request —
which h11 (the parser httpcore itself uses) and Trio's sockets and TLS do in a few lines. Used only
without a proxy in the environment; with one, the wire backend goes through httpx.

A connection goes back to the pool only when its response was read to the end; a response
abandoned half-way (a cancelled consumer) closes its connection, so the server sees it go. A
pooled connection that the server closed meanwhile is replaced once, before any response byte.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import attrs
import h11
import trio

__all__ = ["H11Pool", "HTTPResponse", "TransportError"]

_READ = 65536
_SSL_CONTEXT: ssl.SSLContext | None = None


class TransportError(Exception):
    """The connection failed or was cut; ``timeout`` tells a timed-out read or connect."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


def _ssl_context() -> ssl.SSLContext:
    """One verifying TLS context per process (loading the CA store is not free)."""
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        _SSL_CONTEXT = ssl.create_default_context()
    return _SSL_CONTEXT


@attrs.define(eq=False)
class _Connection:
    stream: trio.abc.Stream
    h11: h11.Connection = attrs.Factory(lambda: h11.Connection(h11.CLIENT))
    used: bool = False


@attrs.define(eq=False)
class HTTPResponse:
    """A response whose body is read as it arrives (:meth:`aiter_bytes`)."""

    status_code: int
    reason_phrase: str
    headers: dict[str, str]
    _pool: H11Pool
    _conn: _Connection
    _done: bool = False

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        while not self._done:
            event = await self._pool._next_event(self._conn)
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._done = True

    async def aread(self) -> bytes:
        return b"".join([chunk async for chunk in self.aiter_bytes()])


@attrs.define(eq=False)
class H11Pool:
    """Keep-alive connections to one origin (``http://host:port`` or ``https://host``)."""

    base_url: str
    timeout: float = 600.0
    connect_timeout: float = 60.0
    _idle: list[_Connection] = attrs.Factory(list)
    _scheme: str = ""
    _host: str = ""
    _port: int = 0
    _prefix: str = ""

    def __attrs_post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {self.base_url!r}")
        self._scheme, self._host = parts.scheme, parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._prefix = parts.path.rstrip("/")

    async def _connect(self) -> _Connection:
        try:
            with trio.fail_after(self.connect_timeout):
                stream: trio.abc.Stream = await trio.open_tcp_stream(self._host, self._port)
                if self._scheme == "https":
                    tls = trio.SSLStream(stream, _ssl_context(), server_hostname=self._host)
                    await tls.do_handshake()
                    stream = tls
        except trio.TooSlowError:
            raise TransportError("connect timed out", timeout=True) from None
        except (OSError, trio.BrokenResourceError, ssl.SSLError) as exc:
            raise TransportError(f"cannot connect to {self._host}:{self._port} ({exc!r})") from exc
        return _Connection(stream)

    async def _next_event(self, conn: _Connection) -> Any:
        while True:
            try:
                event = conn.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise TransportError(f"stream interrupted ({exc})") from exc
            if event is h11.NEED_DATA:
                with trio.move_on_after(self.timeout) as scope:
                    try:
                        data = await conn.stream.receive_some(_READ)
                    except (trio.BrokenResourceError, OSError, ssl.SSLError) as exc:
                        raise TransportError(f"connection lost ({exc!r})") from exc
                if scope.cancelled_caught:
                    raise TransportError("read timed out", timeout=True)
                try:
                    conn.h11.receive_data(bytes(data))
                except h11.RemoteProtocolError as exc:
                    raise TransportError(f"stream interrupted ({exc})") from exc
                continue
            if isinstance(event, h11.ConnectionClosed):
                raise TransportError("server closed the connection mid-response")
            return event

    @asynccontextmanager
    async def stream(
        self, path: str, body: bytes, headers: Mapping[str, str]
    ) -> AsyncIterator[HTTPResponse]:
        """POST ``body`` to ``path``; the response's body streams inside the block."""
        conn, response = await self._send(path, body, headers)
        try:
            yield response
        except BaseException:
            await trio.aclose_forcefully(conn.stream)
            raise
        if response._done and conn.h11.our_state is h11.DONE and conn.h11.their_state is h11.DONE:
            conn.h11.start_next_cycle()
            self._idle.append(conn)
        else:
            await trio.aclose_forcefully(conn.stream)

    async def _send(
        self, path: str, body: bytes, headers: Mapping[str, str]
    ) -> tuple[_Connection, HTTPResponse]:
        request = h11.Request(
            method="POST",
            target=self._prefix + path,
            headers=[("host", self._host), ("content-length", str(len(body))), *headers.items()],
        )
        while True:
            reused = bool(self._idle)
            conn = self._idle.pop() if reused else await self._connect()
            try:
                data = conn.h11.send(request) + conn.h11.send(h11.Data(data=body))
                data += conn.h11.send(h11.EndOfMessage())
                await conn.stream.send_all(data)
                event = await self._next_event(conn)
                while isinstance(event, h11.InformationalResponse):  # 100 Continue and the like
                    event = await self._next_event(conn)
            except (TransportError, trio.BrokenResourceError, OSError) as exc:
                await trio.aclose_forcefully(conn.stream)
                if reused:
                    continue  # the server closed the idle connection: once more on a new one
                if isinstance(exc, TransportError):
                    raise
                raise TransportError(f"connection lost ({exc!r})") from exc
            except BaseException:
                await trio.aclose_forcefully(conn.stream)
                raise
            assert isinstance(event, h11.Response)
            names = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in event.headers}
            response = HTTPResponse(
                event.status_code, event.reason.decode("latin-1"), names, self, conn
            )
            return conn, response

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            await trio.aclose_forcefully(conn.stream)
