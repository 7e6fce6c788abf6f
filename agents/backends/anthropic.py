"""``AnthropicBackend``: the Messages API through the official ``anthropic`` client.

The client does transport, auth, headers and error classification; this module adds what the agent
loop needs on top:

* **request building** from a :class:`ModelRequest`: ``effort`` and ``output_format`` go to
  ``output_config``, ``thinking`` passes through, and prompt-caching breakpoints
  (``cache_control: {"type": "ephemeral"}``) go on the last system block, the last tool definition
  and the last content block of the last message, so the stable prefix is cached; on copies —
  the loop keeps its lists across turns;
* **fast streaming**: the response is read through ``with_streaming_response`` and its SSE parsed
  here with msgspec straight into the loop's event structs. The client's own stream builds a
  pydantic model per event, about a third of a millisecond per response for nothing;
* **error mapping** onto :mod:`agents.backends.base`: HTTP statuses → :class:`APIStatusError` with
  ``retry_after`` from ``retry-after-ms``/``retry-after``, an unknown model →
  :class:`ModelNotAvailable`,
  transport failures and streams cut before ``message_stop`` → :class:`APIConnectionError`, an
  ``error`` event mid-stream → :class:`APIStatusError` with the status of its type (529 for
  ``overloaded_error``).

Retries are the loop's job (backoff, jitter, ``api_retry`` messages): the client is built with
``max_retries=0`` and the policy is exposed as ``max_retries``/``retry_base_delay``/
``retry_max_delay`` attributes the loop reads.

``anthropic`` costs over a second to import, so it is imported on first use, never by
``import agents``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import msgspec
import trio

from .base import (
    APIConnectionError,
    APIStatusError,
    BackendError,
    BackendEvent,
    MessageStop,
    ModelNotAvailable,
    ModelRequest,
)

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicBackend", "build_params"]

#: The API feature deferred tool definitions (``defer_loading``) and ``tool_reference`` blocks
#: belong to; sent only on requests that carry a deferred tool.
TOOL_SEARCH_BETA = "advanced-tool-use-2025-11-20"

CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}
_CLOSE_TIMEOUT = 5.0

# The API's error ``type`` → the HTTP status it comes with (for ``error`` events mid-stream).
_STATUS_FOR_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_EVENT_NAMES = frozenset(
    {
        b"message_start",
        b"content_block_start",
        b"content_block_delta",
        b"content_block_stop",
        b"message_delta",
        b"message_stop",
    }
)
_UNCACHEABLE_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_encode = msgspec.json.Encoder().encode
_event_decoder: msgspec.json.Decoder[BackendEvent] = msgspec.json.Decoder(BackendEvent)


def _with_breakpoint(block: Mapping[str, Any]) -> dict[str, Any]:
    return {**block, "cache_control": CACHE_CONTROL}


def _cacheable(block: Any) -> bool:
    if not isinstance(block, Mapping) or block.get("type") in _UNCACHEABLE_BLOCKS:
        return False
    return not (block.get("type") == "text" and not block.get("text"))


def _mark_last(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` with a breakpoint on the last one; copies only the list and that item."""
    last = items[-1]
    if "cache_control" in last:
        return items
    return [*items[:-1], _with_breakpoint(last)]


def _mark_last_message(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with a breakpoint on the last cacheable block of the last message."""
    if not messages:
        return messages
    last = messages[-1]
    content = last.get("content")
    if isinstance(content, str):
        if not content:
            return messages
        new_content: list[Any] = [_with_breakpoint({"type": "text", "text": content})]
    elif isinstance(content, list):
        for i in range(len(content) - 1, -1, -1):
            block = content[i]
            if _cacheable(block):
                if "cache_control" in block:
                    return messages
                new_content = [*content[:i], _with_breakpoint(block), *content[i + 1 :]]
                break
        else:
            return messages
    else:
        return messages
    return [*messages[:-1], {**last, "content": new_content}]


def build_params(request: ModelRequest) -> dict[str, Any]:
    """The ``messages.create`` keyword arguments for ``request`` (without ``stream``).

    The request's own lists are never mutated: a breakpoint is placed on a copy of the block it
    marks, inside a shallow copy of the list holding it.
    """
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": _mark_last_message(request.messages),
    }
    if request.system:
        params["system"] = _mark_last(request.system)
    if request.tools:
        params["tools"] = _mark_last(request.tools)
    if request.thinking is not None:
        params["thinking"] = request.thinking
    output_config: dict[str, Any] = {}
    if request.effort is not None:
        output_config["effort"] = request.effort
    if request.output_format is not None:
        output_config["format"] = request.output_format
    if output_config:
        params["output_config"] = output_config
    return params


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``retry-after`` (seconds or an HTTP date)."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils  # only for a Retry-After given as an HTTP date (rare)

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_fields(body: object) -> tuple[str | None, str | None]:
    """``(type, message)`` of an Anthropic error body ``{"type": "error", "error": {...}}``."""
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            kind, message = error.get("type"), error.get("message")
            return (
                kind if isinstance(kind, str) else None,
                message if isinstance(message, str) else None,
            )
    return None, None


def _status_error(
    status: int, kind: str | None, message: str, model: str, retry_after: float | None
) -> BackendError:
    if status == 404 and kind in (None, "not_found_error") and "model" in message.lower():
        return ModelNotAvailable(model, message)
    return APIStatusError(status, message, retry_after=retry_after)


def _map_client_error(exc: anthropic.AnthropicError, model: str) -> BackendError:
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        kind, message = _error_fields(exc.body)
        return _status_error(
            exc.status_code,
            kind or exc.type,
            message or exc.api_message or exc.message,
            model,
            parse_retry_after(exc.response.headers),
        )
    if isinstance(exc, anthropic.APITimeoutError):
        return APIConnectionError("request timed out")
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__
        return APIConnectionError(f"{exc.message} ({cause!r})" if cause else exc.message)
    return BackendError(f"anthropic client error: {exc}")


def run_default_backend() -> AnthropicBackend:
    """The current Trio run's shared default backend (``query()`` with no backend), made on
    first use and closed when the run ends; see ``agents.backends._shared``."""
    from ._shared import run_default_backend as for_this_run

    return for_this_run()


class AnthropicBackend:
    """The default backend: Claude through ``anthropic.AsyncAnthropic``, streaming.

    ``api_key``/``base_url`` default to ``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL`` (the client's
    own resolution). ``max_retries``, ``retry_base_delay`` and ``retry_max_delay`` are the retry
    policy the loop applies (the client itself never retries); a server's ``retry-after`` is
    honoured even above ``retry_max_delay``, up to ``RETRY_AFTER_CEILING`` (60 s). ``client``
    wraps an existing ``AsyncAnthropic`` instead (a copy with ``max_retries=0`` is used).
    ``send_agent_headers=True`` adds ``x-agent-type``/``x-agent-id``/``x-agent-purpose`` headers
    so a :class:`~agents.testing.FakeAnthropicServer` can route subagents' calls to their
    own steps::

        options = AgentOptions(backend=AnthropicBackend(max_retries=3))
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 10,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 32.0,
        timeout: float = 600.0,
        client: anthropic.AsyncAnthropic | None = None,
        default_headers: Mapping[str, str] | None = None,
        *,
        send_agent_headers: bool = False,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if retry_base_delay < 0:
            raise ValueError(f"retry_base_delay must be >= 0, got {retry_base_delay}")
        if retry_max_delay < retry_base_delay:
            raise ValueError(
                f"retry_max_delay must be >= retry_base_delay={retry_base_delay}, "
                f"got {retry_max_delay}"
            )
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        self.api_key = api_key
        self.base_url = base_url
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self.timeout = timeout
        self.default_headers = dict(default_headers or {})
        self.send_agent_headers = send_agent_headers
        self._owns_client = client is None
        self._client: anthropic.AsyncAnthropic | None = (
            client.with_options(max_retries=0) if client is not None else None
        )

    def __repr__(self) -> str:
        return (
            f"AnthropicBackend(base_url={self.base_url!r}, max_retries={self.max_retries}, "
            f"retry_base_delay={self.retry_base_delay}, retry_max_delay={self.retry_max_delay})"
        )

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The ``AsyncAnthropic`` client, created (and ``anthropic`` imported) on first use."""
        if self._client is None:
            import anthropic

            from ._shared import shared_ssl_context

            # The process's SSL context: building one loads the CA bundle, ~30 ms of CPU.
            http_client = anthropic.DefaultAsyncHttpxClient(verify=shared_ssl_context())
            self._client = anthropic.AsyncAnthropic(
                api_key=self.api_key,
                base_url=self.base_url,
                max_retries=0,
                timeout=self.timeout,
                default_headers=self.default_headers or None,
                http_client=http_client,
            )
        return self._client

    async def aclose(self) -> None:
        """Close the client's connection pool; idle keep-alive connections stay open until then.

        ``async with AnthropicBackend() as backend`` does it on exit. The backend stays usable: the
        next request opens a new client. A ``client`` passed in is the caller's to close.

        Shielded, with its own deadline, so a cancelled caller still releases the sockets.
        """
        if not self._owns_client:
            return  # a client passed in belongs to the caller
        client, self._client = self._client, None
        if client is not None:
            with trio.CancelScope(shield=True) as scope:
                scope.relative_deadline = _CLOSE_TIMEOUT
                await client.close()

    async def __aenter__(self) -> AnthropicBackend:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _options(self, request: ModelRequest) -> dict[str, Any]:
        headers: dict[str, str] = {}
        if self.send_agent_headers:
            headers["x-agent-type"] = request.agent_type
            headers["x-agent-id"] = request.agent_id
            headers["x-agent-purpose"] = request.purpose
        if request.tools and any("defer_loading" in t for t in request.tools):
            headers["anthropic-beta"] = TOOL_SEARCH_BETA  # deferred tools, tool_reference blocks
        return {"headers": headers} if headers else {}

    async def stream(self, request: ModelRequest) -> AsyncIterator[BackendEvent]:
        """Stream one response as event structs; raise :class:`BackendError` on any failure.

        The body is encoded here with msgspec and handed to the client's generic ``post`` as
        ``content``: ``messages.create`` would deep-copy it and encode it with the standard
        ``json`` module, about a millisecond per request with the built-in tools' schemas. Auth,
        headers, base URL, timeouts and status errors remain the client's.
        """
        import anthropic
        import httpx2

        client = self.client
        try:
            body = _encode({**build_params(request), "stream": True})
        except TypeError as exc:
            raise BackendError(f"request is not JSON-serializable: {exc}") from exc
        try:
            response = await client.post(
                "/v1/messages",
                cast_to=httpx2.Response,
                content=body,
                stream=True,
                options=cast(Any, self._options(request)),
            )
            try:
                parser = _SSEParser(request.model, self.timeout)
                chunks = response.aiter_bytes()
                try:
                    async for chunk in chunks:
                        for event in await feed_or_unwind(parser, chunk, chunks):
                            yield event
                finally:
                    await chunks.aclose()
                if not parser.stopped:
                    raise APIConnectionError("stream ended before message_stop")
            finally:
                await response.aclose()
        except anthropic.AnthropicError as exc:
            raise _map_client_error(exc, request.model) from exc
        except httpx2.HTTPError as exc:
            raise APIConnectionError(f"stream interrupted ({exc!r})") from exc
        except TypeError as exc:
            # The client raises TypeError when it finds no credentials at request time.
            if "authentication" not in str(exc):
                raise
            raise BackendError(f"anthropic client: {exc}") from exc


#: Bytes one SSE event may take; a longer one ends the stream with an error naming the limit.
#: The API's events are small (a delta, a block's start); this bounds a broken or hostile
#: server's, which would otherwise be held in memory whole.
MAX_SSE_EVENT_BYTES = 16 << 20


class _SSEParser:
    """Incremental SSE parser: bytes in, event structs out; notes whether ``message_stop`` came.

    Each byte is looked at a bounded number of times whatever the chunking: the search for an
    event's end resumes where the last one stopped, and CRLF line ends are normalized in the new
    bytes only (one before them, for a CRLF split across chunks). An event longer than
    ``MAX_SSE_EVENT_BYTES`` is an :class:`APIConnectionError` naming the limit.

    With a ``patience`` (the backend's read timeout), chunks fed with the time they came
    (``now``) that bring no event for longer than it end the stream too: a read timeout cuts a
    silent server, and this one that sends only pings (or one event that never ends).
    """

    __slots__ = ("_buffer", "_crlf", "_model", "_patience", "_quiet_since", "_scanned", "stopped")

    def __init__(self, model: str, patience: float | None = None) -> None:
        self._buffer = bytearray()
        self._crlf = False
        self._model = model
        self._patience = patience
        #: when the chunks without an event began (None: the last chunk brought one)
        self._quiet_since: float | None = None
        #: where the search for the next event's end resumes (all before it holds none)
        self._scanned = 0
        self.stopped = False

    def feed(self, chunk: bytes, now: float | None = None) -> list[BackendEvent]:
        buffer = self._buffer
        fresh = max(0, len(buffer) - 1)
        buffer += chunk
        if self._crlf or b"\r" in chunk:
            # Once a CR is seen, keep normalizing: a CRLF may straddle two chunks (the byte
            # before the chunk is taken again for that). The bytes before it hold no CRLF.
            self._crlf = True
            buffer[fresh:] = buffer[fresh:].replace(b"\r\n", b"\n")
        events: list[BackendEvent] = []
        while (end := buffer.find(b"\n\n", self._scanned)) >= 0:
            self._scanned = 0
            event = self._event(buffer, end)
            del buffer[: end + 2]
            if event is not None:
                if type(event) is MessageStop:
                    self.stopped = True
                events.append(event)
        if len(buffer) > MAX_SSE_EVENT_BYTES:
            raise APIConnectionError(
                f"the stream sent an event longer than {MAX_SSE_EVENT_BYTES} bytes "
                f"(MAX_SSE_EVENT_BYTES; {len(buffer)} bytes so far without its end)"
            )
        # The next end may start at the last byte, or one before it when the last is a CR that
        # the next chunk's LF turns into a line end.
        self._scanned = max(0, len(buffer) - 2)
        if now is not None and self._patience is not None:
            if events:
                self._quiet_since = None
            elif self._quiet_since is None:
                self._quiet_since = now
            elif now - self._quiet_since > self._patience:
                raise APIConnectionError(
                    f"the stream brought no event but pings for {now - self._quiet_since:.1f} s "
                    f"(more than the read timeout, {self._patience:g} s)"
                )
        return events

    def _event(self, buffer: bytearray, end: int) -> BackendEvent | None:
        """The event ``buffer[:end]`` (None for a ping or an unknown one); raises for an
        ``error`` event or data that is not the event's JSON."""
        at = _api_shape_data(buffer, end)
        if at:  # the API's shape: decoded where it lies, so an event of megabytes is not copied
            name = bytes(buffer[7 : at - 7])
            if name in _EVENT_NAMES:
                with memoryview(buffer)[at:end] as data_view:  # released before the buffer shrinks
                    return _decode_event(data_view, name)
            data = bytes(buffer[at:end]) if name == b"error" else b""
        else:
            name, data = _parse_sse_block(bytes(buffer[:end]))
            if name in _EVENT_NAMES:
                return _decode_event(data, name)
        if name == b"error":
            raise _stream_error(data, self._model)
        return None  # ``ping`` and event types this version does not know are skipped


async def feed_or_unwind(
    parser: _SSEParser, chunk: bytes, chunks: AsyncIterator[bytes]
) -> list[BackendEvent]:
    """The events ``chunk`` completes (``parser.feed``); when the stream fails there, its byte
    stream ``chunks`` is ended (:func:`unwind_stream`) before the error goes up. Each backend's
    reading loop awaits this for every chunk."""
    try:
        return parser.feed(chunk, trio.current_time())
    except BackendError:
        await unwind_stream(chunks)
        raise


async def unwind_stream(chunks: AsyncIterator[bytes]) -> None:
    """End a response's byte stream left mid-iteration (its SSE failed) as a cancellation would:
    the client's async generators are nested, and an exception raised by their reader leaves
    the inner ones to the garbage collector, where a cancellation at their await unwinds each
    in its own frame."""
    with trio.CancelScope() as scope:
        scope.cancel()
        with contextlib.suppress(StopAsyncIteration):
            while True:  # chunks already read come first, then the cancelled read
                await chunks.__anext__()


def _api_shape_data(buffer: bytearray, end: int) -> int:
    """Where the data of the event ``buffer[:end]`` starts if it has the API's shape (one
    ``event:`` line, then one ``data:`` line), else 0."""
    if not buffer.startswith(b"event: "):
        return 0
    line = buffer.find(b"\n", 7, end)
    if line < 0 or buffer.find(b"\n", line + 1, end) >= 0:
        return 0
    return line + 7 if buffer.startswith(b"data: ", line + 1, end) else 0


def _decode_event(data: bytes | memoryview, name: bytes) -> BackendEvent:
    try:
        event: BackendEvent = _event_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise APIConnectionError(f"malformed {name.decode()} event: {exc}") from exc
    return event


def _parse_sse_block(block: bytes) -> tuple[bytes, bytes]:
    """``(event name, data)`` of one SSE event; data lines are joined with newlines."""
    if block.startswith(b"event: ") and block.count(b"\n") == 1:
        # The API's shape, one ``event:`` and one ``data:`` line: the fast path.
        head, _, line = block.partition(b"\n")
        if line.startswith(b"data: "):
            return head[7:], line[6:]
    name = b""
    data: list[bytes] = []
    for line in block.split(b"\n"):
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"event":
            name = value
        elif field == b"data":
            data.append(value)
    return name, b"\n".join(data)


def _stream_error(data: bytes, model: str) -> BackendError:
    try:
        body = msgspec.json.decode(data)
    except msgspec.DecodeError:
        body = None
    kind, message = _error_fields(body)
    status = _STATUS_FOR_ERROR_TYPE.get(kind or "", 500)
    text = message or data.decode("utf-8", "replace") or "error event"
    return _status_error(status, kind, text, model, None)


# Shared with ``agents.backends.wire``, which speaks the same protocol without the client.
SSEParser = _SSEParser
error_fields = _error_fields
status_error = _status_error
