"""A lean MCP client over a stdio server's pipes: JSON-RPC 2.0, one message a line, on msgspec.

Why not the ``mcp`` package's ``ClientSession`` here: it validates every message with pydantic
and hands each through memory channels and tasks of its own, about 0.6 ms of CPU per tool call,
and in a fan-out of read-only calls that CPU is on the critical path (ten calls, ten times).
Here a ``tools/call`` costs one encode, one line split, one decode into msgspec Structs, and one
wake-up of the waiting caller: responses are matched to callers by id, each waiting in a
one-shot slot, and everything queued in one scheduling step leaves in one pipe write (so a
fan-out's requests reach the server together). The handshake and the tool listing are not hot
and still go through the ``mcp`` package's types, so what is checked there is what the package
checks.

Failures the caller sees: :class:`RpcError` (the server answered with a JSON-RPC error) and
:class:`ConnectionLost` (the pipes closed, the server exited, or the client was closed); a line
that is not JSON-RPC, or a response to no pending request, is logged and noted in
``last_error`` and does not disturb the calls in flight.

A read of more than ``LONG_LINE_BYTES`` (a line of megabytes: a big tool result) is split and
decoded in a worker thread, its long string literals by pieces (``decode_long_line``): msgspec
holds the interpreter for a whole call, and one 100 MB result held the event loop for 400 ms
(the line split, the envelope, the result, each in one call). Its result is handed over
decoded (:class:`Decoded`) rather than raw; :func:`decode_call_result` and :func:`validated`
take either.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

import msgspec
import trio

from ..tools.base import ToolOutput

__all__ = [
    "LONG_LINE_BYTES",
    "ConnectionLost",
    "Decoded",
    "LineClient",
    "RpcError",
    "decode_call_result",
    "validated",
]

log = logging.getLogger(__name__)

_READ_SIZE = 1 << 16
#: Bytes of lines read at once past which they are decoded in a worker thread, by pieces.
LONG_LINE_BYTES = 1 << 20
_BLANK = re.compile(rb"\s*")
#: JSON-RPC error code of "method not found", the answer to a server request we do not serve.
_METHOD_NOT_FOUND = -32601

#: ``(event, request id)`` for the benchmark's ``--trace``: "queued", "written", "answered".
Tracer = Callable[[str, Any], None]


class RpcError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ConnectionLost(Exception):
    """The connection ended before the server answered."""


class _Error(msgspec.Struct):
    code: int = 0
    message: str = ""


class _Envelope(msgspec.Struct):
    """Any JSON-RPC message: a response (``id`` with ``result`` or ``error``), a request from
    the server (``id`` and ``method``) or a notification (``method`` alone)."""

    jsonrpc: str = ""
    id: int | str | None = None
    method: str | None = None
    result: msgspec.Raw = msgspec.Raw()
    error: _Error | None = None


class _LongEnvelope(msgspec.Struct):
    """:class:`_Envelope` for a long line: its result decoded (by pieces), not raw."""

    jsonrpc: str = ""
    id: int | str | None = None
    method: str | None = None
    result: Any = msgspec.UNSET
    error: _Error | None = None


class Decoded:
    """A result that came in a line too long to hand over raw: decoded already, in a worker
    thread (see the module's docstring)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


#: What a request answers: the raw JSON of its result, or the result decoded.
Result = msgspec.Raw | Decoded

_decode_envelope = msgspec.json.Decoder(_Envelope).decode
_long_envelope_decoder = msgspec.json.Decoder(_LongEnvelope)
_encode = msgspec.json.Encoder().encode


class _Slot:
    """Where one request's response lands: set once by the reader, read by the caller."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.result: Result | None = None
        self.error: Exception | None = None


class LineClient:
    """The client side of one connection; :meth:`serve` must run (in the owner's nursery) for
    requests to be written and answered. Requests may come from any number of tasks."""

    def __init__(
        self,
        receive: trio.abc.ReceiveStream,
        send: trio.abc.SendStream,
        *,
        name: str,
        on_notification: Callable[[str], None] | None = None,
        tracer: Tracer | None = None,
        max_line: int = 256 << 20,
    ) -> None:
        self._receive = receive
        self._send = send
        self.name = name
        self._on_notification = on_notification
        self._tracer = tracer
        self._max_line = max_line
        self._next_id = 0
        self._pending: dict[int, _Slot] = {}
        self._queue: list[bytes] = []
        self._wake = trio.Event()
        self._closed: str | None = None
        #: the last line that could not be used (kept to explain a failed handshake)
        self.last_error: str | None = None
        #: set once the connection has ended (either side closed it)
        self.ended = trio.Event()

    # -- requests -------------------------------------------------------------------------------

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Result:
        """The ``result`` of ``method``, raw (or :class:`Decoded` when it came in a long line);
        :class:`RpcError` or :class:`ConnectionLost`.
        Cancelled while waiting: the server is told (``notifications/cancelled``)."""
        if self._closed is not None:
            await trio.lowlevel.checkpoint()
            raise ConnectionLost(self._closed)
        self._next_id += 1
        key = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": key, "method": method}
        if params is not None:
            message["params"] = params
        slot = self._pending[key] = _Slot()
        self._put(_encode(message), key)
        try:
            await slot.done.wait()
        except trio.Cancelled:
            if self._pending.pop(key, None) is not None and self._closed is None:
                self.notify("notifications/cancelled", {"requestId": key, "reason": "cancelled"})
            raise
        if slot.error is not None:
            raise slot.error
        assert slot.result is not None
        return slot.result

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Queue a notification (sent with the next write)."""
        if self._closed is not None:
            return
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._put(_encode(message), None)

    def _put(self, line: bytes, key: Any) -> None:
        self._queue.append(line)
        if self._tracer is not None:
            self._tracer("queued", key)
        self._wake.set()

    # -- the connection's task ------------------------------------------------------------------

    async def serve(self) -> None:
        """Read and write until the stream ends (then every waiting request fails with
        :class:`ConnectionLost`); returns then, or raises only ``Cancelled``."""
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._write_loop, nursery.cancel_scope)
                await self._read_loop()
                nursery.cancel_scope.cancel()
        finally:
            self.close(f"MCP server {self.name!r} closed the connection")

    def close(self, reason: str) -> None:
        """Fail every waiting request with ``reason``; later requests fail at once."""
        if self._closed is None:
            self._closed = reason
        pending, self._pending = self._pending, {}
        for slot in pending.values():
            slot.error = ConnectionLost(self._closed)
            slot.done.set()
        self.ended.set()

    async def _write_loop(self, scope: trio.CancelScope) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await trio.lowlevel.checkpoint()  # the other tasks of this step queue theirs
            batch, self._queue = self._queue, []
            if not batch:
                continue
            data = b"\n".join(batch) + b"\n"
            try:
                await self._send.send_all(data)
            except (trio.ClosedResourceError, trio.BrokenResourceError, OSError):
                scope.cancel()  # the server is gone: end the connection, nothing hangs
                return
            if self._tracer is not None:
                for line in batch:
                    self._tracer("written", _peek_id(line))

    async def _read_loop(self) -> None:
        buffer = bytearray()
        while True:
            try:
                chunk = await self._receive.receive_some(_READ_SIZE)
            except (trio.ClosedResourceError, trio.BrokenResourceError, OSError):
                return
            if not chunk:
                return
            end = chunk.rfind(b"\n")
            if end < 0:
                buffer += chunk
                if len(buffer) > self._max_line:
                    self._closed = (
                        f"MCP server {self.name!r} sent a message longer than "
                        f"{self._max_line} bytes"
                    )
                    return
                continue
            if buffer:
                buffer += chunk[: end + 1]
                data: bytes | bytearray = buffer
                buffer = bytearray(chunk[end + 1 :])
            else:
                data = chunk[: end + 1]
                buffer += chunk[end + 1 :]
            if len(data) > LONG_LINE_BYTES:
                for decoded in await trio.to_thread.run_sync(_decode_lines, data):
                    self._route(decoded)
                continue
            for line in data.splitlines():
                if line.strip():
                    self._route(_decode_line(line))

    def _route(self, message: _Envelope | _LongEnvelope | str) -> None:
        """Hand a decoded message to its caller (or answer it); a string is why a line could
        not be used."""
        if isinstance(message, str):
            self._bad_line(message)
            return
        if message.method is not None:
            if message.id is None:
                if self._on_notification is not None:
                    self._on_notification(message.method)
            else:
                self._answer_server_request(message.id, message.method)
            return
        key = message.id
        slot = self._pending.pop(key, None) if isinstance(key, int) else None
        if slot is None:
            self._bad_line(f"a response to no pending request (id {key!r})")
            return
        if self._tracer is not None:
            self._tracer("answered", key)
        if message.error is not None:
            slot.error = RpcError(message.error.code, message.error.message)
        elif type(message) is _LongEnvelope:
            if message.result is msgspec.UNSET:
                slot.error = RpcError(0, "a response with neither result nor error")
            else:
                slot.result = Decoded(message.result)
        elif not message.result:
            slot.error = RpcError(0, "a response with neither result nor error")
        else:
            slot.result = message.result
        slot.done.set()

    def _answer_server_request(self, key: int | str, method: str) -> None:
        """A request from the server: ``ping`` is answered, anything else is not offered."""
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": key}
        if method == "ping":
            reply["result"] = {}
        else:
            reply["error"] = {"code": _METHOD_NOT_FOUND, "message": f"method not found: {method}"}
        if self._closed is None:
            self._put(_encode(reply), None)

    def _bad_line(self, what: str) -> None:
        self.last_error = what
        log.warning("MCP server %r sent %s", self.name, what)


def _decode_line(line: bytes | bytearray | memoryview) -> _Envelope | str:
    """One line's message, or why it is not one."""
    try:
        return _decode_envelope(line)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return f"a line that is not JSON-RPC ({exc}): {bytes(line[:80])!r}"
    except RecursionError:  # (the server's line: it may nest [ a million deep)
        return f"a line that is not JSON-RPC (nested too deeply to be read): {bytes(line[:80])!r}"


def _decode_lines(data: bytes | bytearray) -> list[_Envelope | _LongEnvelope | str]:
    """The messages of ``data``'s lines, as :meth:`LineClient._route` takes them, split as
    ``splitlines`` splits (at LF, CR and CRLF) without copying a long line whole in one call; a
    line over ``LONG_LINE_BYTES`` decoded by pieces (a worker thread runs this)."""
    from ..sessions.chunked import decode_long_line

    out: list[_Envelope | _LongEnvelope | str] = []
    start, size = 0, len(data)
    while start < size:
        end = data.find(b"\n", start)
        end = size if end < 0 else end
        if data.find(b"\r", start, end) >= 0:  # rare: let splitlines say where lines end
            lines: list[Any] = bytes(data[start:end]).splitlines()
        else:
            lines = [memoryview(data)[start:end]]
        for line in lines:
            if _BLANK.fullmatch(line):
                continue
            if len(line) <= LONG_LINE_BYTES:
                out.append(_decode_line(line))
                continue
            try:
                out.append(decode_long_line(line, _long_envelope_decoder))
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                out.append(f"a line that is not JSON-RPC ({exc}): {bytes(line[:80])!r}")
            except RecursionError:
                out.append(
                    "a line that is not JSON-RPC (nested too deeply to be read): "
                    f"{bytes(line[:80])!r}"
                )
        start = end + 1
    return out


def _peek_id(line: bytes) -> Any:
    try:
        return _decode_envelope(line).id
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


# -- tools/call results ----------------------------------------------------------------------------


class _Text(msgspec.Struct, tag="text", tag_field="type"):
    text: str


class _Image(msgspec.Struct, tag="image", tag_field="type"):
    data: str
    mimeType: str


class _Audio(msgspec.Struct, tag="audio", tag_field="type"):
    data: str
    mimeType: str


class _Link(msgspec.Struct, tag="resource_link", tag_field="type"):
    uri: str
    name: str


class _Contents(msgspec.Struct):
    uri: str
    mimeType: str | None = None
    text: str | None = None
    blob: str | None = None


class _Embedded(msgspec.Struct, tag="resource", tag_field="type"):
    resource: _Contents


class _CallToolResult(msgspec.Struct):
    content: list[_Text | _Image | _Audio | _Link | _Embedded] = []
    isError: bool = False
    structuredContent: dict[str, Any] | None = None


_decode_result = msgspec.json.Decoder(_CallToolResult).decode


def validated(model: Any, result: Result) -> Any:
    """``result`` validated as the ``mcp`` package's pydantic ``model`` (raw JSON, or the value
    a long line was decoded to)."""
    if isinstance(result, Decoded):
        return model.model_validate(result.value, by_name=False)
    return model.model_validate_json(bytes(result), by_name=False)


def decode_call_result(raw: Result) -> ToolOutput:
    """A ``tools/call`` result as Messages API content (``convert_result`` reads the ``mcp``
    package's type through it); a result that is not one raises ``msgspec.ValidationError``."""
    if isinstance(raw, Decoded):
        result = msgspec.convert(raw.value, _CallToolResult)
    else:
        result = _decode_result(raw)
    blocks: list[dict[str, Any]] = []
    for item in result.content:
        if type(item) is _Text:
            blocks.append({"type": "text", "text": item.text})
        elif isinstance(item, _Image):
            source = {"type": "base64", "media_type": item.mimeType, "data": item.data}
            blocks.append({"type": "image", "source": source})
        elif isinstance(item, _Embedded):
            res = item.resource
            if res.text is not None:
                blocks.append({"type": "text", "text": res.text})
            elif res.blob is not None:
                blocks.append(
                    {"type": "text", "text": f"[binary resource {res.uri} ({res.mimeType})]"}
                )
        elif isinstance(item, _Link):
            blocks.append({"type": "text", "text": f"[resource link: {item.uri} ({item.name})]"})
        elif isinstance(item, _Audio):
            blocks.append({"type": "text", "text": f"[audio content ({item.mimeType}) omitted]"})
    if not blocks and result.structuredContent is not None:
        blocks.append({"type": "text", "text": json.dumps(result.structuredContent)})
    return ToolOutput(content=blocks, is_error=result.isError)
