"""``FakeAnthropicServer``: the Messages API on 127.0.0.1, playing a :class:`Script`.

It lets tests and benchmarks drive the *real* ``anthropic`` client — transport, auth headers, SSE
parsing, error mapping — with no internet. It plays the same scripts as
:class:`~agents.testing.ScriptedBackend` (it *is* one underneath: steps are picked by
``ScriptedBackend.next_step`` and turned into stream events by ``events_for``), so a session gives
the same messages on either backend::

    async with FakeAnthropicServer([Step([text("hi")])]) as server:
        backend = AnthropicBackend(api_key="test", base_url=server.base_url)
        ...
    assert server.requests[0].body["messages"][-1]["content"] == "hello"

Routing: every request plays the ``"main"`` steps unless it carries the ``x-agent-type`` header
(and ``x-agent-purpose`` for compaction/classifier calls), which ``AnthropicBackend`` sends when
constructed with ``send_agent_headers=True``. ``x-agent-id`` is recorded but not used.

Faults (``Step.fault``): ``status`` answers with that HTTP status and an Anthropic error body
(``{"type": "error", "error": {"type": "rate_limit_error", "message": ...}}``) plus
``retry-after`` when set; ``delay`` (and ``Step.latency``) sleep before the first byte;
``Step.token_latency`` pauses before each delta; ``drop_after`` sends that many events and closes
the connection mid-body. A request with no step left gets a 400 naming the exhausted agent
(non-retryable, like ``ScriptExhausted`` on the scripted backend).

Small HTTP/1.1 on Trio sockets, no dependency: keep-alive connections, ``content-length`` request
bodies, chunked SSE responses. Each response goes out in as few ``send_all`` calls as its pauses
allow, with ``TCP_NODELAY`` set, because small writes on loopback meet ~40 ms delayed-ACK stalls.

Standalone: ``python -m agents.testing.fake_api --script s.json [--port N]`` prints its base URL.
"""

from __future__ import annotations

import argparse
import contextlib
import http
import itertools
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import attrs
import msgspec
import trio

from ..backends.base import (
    BackendEvent,
    ContentBlockDelta,
    ContentBlockStart,
    MessageDelta,
    MessageStart,
    ModelRequest,
)
from ..tools.names import API_TOOL_NAME
from .scripted import Responder, Script, ScriptedBackend, ScriptExhausted, Step, events_for

__all__ = ["FakeAnthropicServer", "RecordedRequest", "error_type_for", "message_from_events"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_MAX_HEAD = 64 * 1024
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


def error_type_for(status: int) -> str:
    """The Anthropic error ``type`` the real API sends with ``status`` (other 5xx: api_error)."""
    return _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def _reason(status: int) -> str:
    if status == 529:
        return "Overloaded"
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Error"


@attrs.define(eq=False)
class RecordedRequest:
    """One request as the server saw it; times are ``time.perf_counter()`` (real, for benchmarks).

    ``received_at`` is when the whole request had arrived, ``finished_at`` when the last byte of
    the answer was written (0.0 if the answer was cut or never finished).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float
    finished_at: float = 0.0


class _BadRequest(Exception):
    """The bytes on the wire were not an HTTP/1.1 request we understand."""


class _Dropped(Exception):
    """The script asked to cut the connection mid-response."""


def _sse(event: BackendEvent) -> bytes:
    data = _encode(event)
    payload = b"event: " + _TAGS[type(event)] + b"\ndata: " + data + b"\n\n"
    return b"%x\r\n%b\r\n" % (len(payload), payload)


_TAGS: dict[type[Any], bytes] = {
    cls: str(cls.__struct_config__.tag).encode()
    for cls in BackendEvent.__args__
}


def message_from_events(events: Sequence[BackendEvent]) -> dict[str, Any]:
    """The non-streaming ``Message`` JSON that the stream ``events`` build."""
    message: dict[str, Any] = {}
    content: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    for event in events:
        if isinstance(event, MessageStart):
            message = {**event.message, "usage": dict(event.message.get("usage", {}))}
        elif isinstance(event, ContentBlockStart):
            content.append(dict(event.content_block))
        elif isinstance(event, ContentBlockDelta):
            block, delta = content[event.index], event.delta
            kind = delta.get("type")
            if kind == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif kind == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta["thinking"]
            elif kind == "signature_delta":
                block["signature"] = delta["signature"]
            elif kind == "input_json_delta":
                partial[event.index] = partial.get(event.index, "") + delta["partial_json"]
        elif isinstance(event, MessageDelta):
            message.update(event.delta)
            message["usage"].update(event.usage)
    for index, text in partial.items():
        content[index]["input"] = _decode(text) if text else {}
    message["content"] = content
    return message


def _bad_tool_name(body: Mapping[str, Any]) -> str | None:
    """The API's refusal of a custom tool whose name it does not take, as the real one refuses
    the whole request; None if every name is good (server tools have names of their own)."""
    tools = body.get("tools")
    for index, spec in enumerate(tools if isinstance(tools, list) else ()):
        if isinstance(spec, dict) and spec.get("type", "custom") == "custom":
            name = spec.get("name")
            if not isinstance(name, str) or not API_TOOL_NAME.fullmatch(name):
                return (
                    f"tools.{index}.custom.name: String should match pattern "
                    f"'^[a-zA-Z0-9_-]{{1,64}}$' (got {name!r})"
                )
    return None


def _request_from_body(body: Mapping[str, Any], headers: Mapping[str, str]) -> ModelRequest:
    system = body.get("system") or []
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    return ModelRequest(
        model=str(body.get("model", "")),
        messages=list(body.get("messages") or []),
        max_tokens=int(body.get("max_tokens") or 0),
        system=list(system),
        tools=list(body.get("tools") or []),
        thinking=body.get("thinking"),
        effort=(body.get("output_config") or {}).get("effort"),
        agent_id=headers.get("x-agent-id", "main"),
        agent_type=headers.get("x-agent-type", "main"),
        purpose=headers.get("x-agent-purpose", "turn"),
    )


@attrs.define(eq=False)
class FakeAnthropicServer:
    """A Messages API server playing ``script``; see the module docstring.

    Use ``async with FakeAnthropicServer(script) as server`` (it runs in a nursery it owns and
    stops on exit), or ``await nursery.start(server.serve)`` to run it in yours.
    """

    script: Script | Sequence[Step] | Mapping[str, Sequence[Step]] | Responder
    port: int = 0
    host: str = "127.0.0.1"
    requests: list[RecordedRequest] = attrs.field(factory=list, init=False)
    connections_opened: int = attrs.field(default=0, init=False)
    connections_closed: int = attrs.field(default=0, init=False)
    _backend: ScriptedBackend = attrs.field(init=False)
    _ids: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1), init=False)
    _stack: contextlib.AsyncExitStack | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        self._backend = ScriptedBackend(self.script)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``: pass it as ``AnthropicBackend(base_url=...)``."""
        return f"http://{self.host}:{self.port}"

    @property
    def open_connections(self) -> int:
        """Client connections currently open (tests check that cancelled streams get closed)."""
        return self.connections_opened - self.connections_closed

    def remaining(self) -> dict[str, int]:
        """Steps not yet played, per agent."""
        return self._backend.remaining()

    def assert_consumed(self) -> None:
        """Raise ``AssertionError`` naming the agents whose steps were not all played."""
        self._backend.assert_consumed()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen and serve until cancelled; ``.port`` is set when ``task_status.started()``."""
        listeners = await trio.open_tcp_listeners(self.port, host=self.host)
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle, listeners)
            task_status.started()

    async def __aenter__(self) -> FakeAnthropicServer:
        if self._stack is not None:
            raise RuntimeError("FakeAnthropicServer is already running")
        async with contextlib.AsyncExitStack() as stack:
            nursery = await stack.enter_async_context(trio.open_nursery())
            stack.callback(nursery.cancel_scope.cancel)
            await nursery.start(self.serve)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        stack, self._stack = self._stack, None
        assert stack is not None
        return await stack.__aexit__(exc_type, exc, tb)

    # -- connection handling ------------------------------------------------------------------

    async def _handle(self, stream: trio.SocketStream) -> None:
        stream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connections_opened += 1
        buffer = bytearray()
        try:
            while True:
                try:
                    head = await self._read_request(stream, buffer)
                except _BadRequest as exc:
                    await stream.send_all(_error_response(400, str(exc), close=True))
                    return
                if head is None:
                    return
                if not await self._respond(stream, buffer, *head):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError, _Dropped):
            pass
        finally:
            self.connections_closed += 1
            await trio.aclose_forcefully(stream)

    async def _read_request(
        self, stream: trio.SocketStream, buffer: bytearray
    ) -> tuple[str, str, dict[str, str], bytes] | None:
        while (end := buffer.find(b"\r\n\r\n")) < 0:
            if len(buffer) > _MAX_HEAD:
                raise _BadRequest(f"request head larger than {_MAX_HEAD} bytes")
            chunk = await stream.receive_some(65536)
            if not chunk:
                if buffer:
                    raise _BadRequest("connection closed inside a request head")
                return None
            buffer += chunk
        lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
        del buffer[: end + 4]
        try:
            method, target, _version = lines[0].split(" ", 2)
        except ValueError:
            raise _BadRequest(f"malformed request line {lines[0]!r}") from None
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            raise _BadRequest("chunked request bodies are not supported; send content-length")
        length = int(headers.get("content-length") or 0)
        while len(buffer) < length:
            chunk = await stream.receive_some(max(65536, length - len(buffer)))
            if not chunk:
                raise _BadRequest("connection closed inside a request body")
            buffer += chunk
        body = bytes(buffer[:length])
        del buffer[:length]
        return method, target, headers, body

    async def _respond(
        self,
        stream: trio.SocketStream,
        buffer: bytearray,
        method: str,
        target: str,
        headers: dict[str, str],
        raw: bytes,
    ) -> bool:
        """Answer one request; return whether the connection stays open."""
        keep_alive = headers.get("connection", "").lower() != "close"
        path = target.partition("?")[0]
        if method != "POST" or path != "/v1/messages":
            await stream.send_all(
                _error_response(404, f"{method} {path} not found", close=not keep_alive)
            )
            return keep_alive
        try:
            body = _decode(raw) if raw else {}
        except msgspec.DecodeError as exc:
            body = None
            message = f"request body is not JSON: {exc}"
        record = RecordedRequest(method, path, headers, body, time.perf_counter())
        self.requests.append(record)
        if not isinstance(body, dict):
            if body is not None:
                message = "request body must be a JSON object"
            await stream.send_all(_error_response(400, message, close=not keep_alive))
            return keep_alive
        bad_name = _bad_tool_name(body)
        if bad_name is not None:
            await stream.send_all(_error_response(400, bad_name, close=not keep_alive))
            return keep_alive
        request = _request_from_body(body, headers)
        try:
            step = self._backend.next_step(request)
        except ScriptExhausted as exc:
            await stream.send_all(_error_response(400, exc.message, close=not keep_alive))
            return keep_alive
        fault = step.fault
        wait = step.latency + (fault.delay if fault is not None else 0.0)
        if wait:
            await trio.sleep(wait)
        if fault is not None and fault.status is not None:
            await stream.send_all(
                _error_response(
                    fault.status, fault.message, retry_after=fault.retry_after, close=not keep_alive
                )
            )
            record.finished_at = time.perf_counter()
            return keep_alive
        events = events_for(step, request, f"msg_fake_{next(self._ids):06d}")
        if not body.get("stream"):
            await stream.send_all(
                _response(200, "application/json", _encode(message_from_events(events)),
                          close=not keep_alive)
            )
        else:
            drop = fault.drop_after if fault is not None else None
            await self._stream_events(stream, buffer, events, step.token_latency, drop, keep_alive)
        record.finished_at = time.perf_counter()
        return keep_alive

    async def _stream_events(
        self,
        stream: trio.SocketStream,
        buffer: bytearray,
        events: list[BackendEvent],
        token_latency: float,
        drop_after: int | None,
        keep_alive: bool,
    ) -> None:
        pending = bytearray(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
            b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n"
            b"request-id: req_fake_%d\r\n%b\r\n"
            % (len(self.requests), b"" if keep_alive else b"connection: close\r\n")
        )
        for n, event in enumerate(events):
            if drop_after is not None and n >= drop_after:
                await stream.send_all(pending)
                raise _Dropped
            if token_latency and isinstance(event, ContentBlockDelta):
                if pending:
                    await stream.send_all(pending)
                    pending.clear()
                await _pause(stream, buffer, token_latency)
            pending += _sse(event)
        pending += b"0\r\n\r\n"
        await stream.send_all(pending)


async def _pause(stream: trio.SocketStream, buffer: bytearray, seconds: float) -> None:
    """Sleep between events, but notice at once when the client hangs up (a cancelled stream)."""
    with trio.move_on_after(seconds):
        while True:
            data = await stream.receive_some(65536)
            if not data:
                raise _Dropped
            buffer += data


def _response(
    status: int,
    content_type: str,
    body: bytes,
    *,
    close: bool = False,
    extra: Sequence[tuple[str, str]] = (),
) -> bytes:
    head = [f"HTTP/1.1 {status} {_reason(status)}", f"content-type: {content_type}",
            f"content-length: {len(body)}", "request-id: req_fake"]
    head += [f"{name}: {value}" for name, value in extra]
    if close:
        head.append("connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def _error_response(
    status: int, message: str, *, retry_after: float | None = None, close: bool = False
) -> bytes:
    body = _encode({"type": "error", "error": {"type": error_type_for(status), "message": message}})
    extra: list[tuple[str, str]] = []
    if retry_after is not None:
        extra.append(("retry-after", f"{retry_after:g}"))
        extra.append(("retry-after-ms", f"{retry_after * 1000:g}"))
    return _response(status, "application/json", body, close=close, extra=extra)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.testing.fake_api --script s.json [--port N]``: serve until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m agents.testing.fake_api",
        description="Serve a scripted fake Anthropic Messages API on 127.0.0.1.",
    )
    parser.add_argument("--script", required=True, help="a Script as JSON (Script.to_json)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free one)")
    args = parser.parse_args(argv)
    with open(args.script, "rb") as f:
        script = Script.from_json(f.read())
    server = FakeAnthropicServer(script, port=args.port)

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve)
            print(server.base_url, flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        trio.run(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
