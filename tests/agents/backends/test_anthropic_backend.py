"""AnthropicBackend through the real ``anthropic`` client against FakeAnthropicServer.

Sockets and the client's timeouts live in real time, so these tests use tiny real delays, never
``autojump_clock`` (it would jump to the client's read timeout while a socket waits).
"""

from __future__ import annotations

import copy
import email.utils
import itertools
import re
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any, cast

import msgspec
import pytest
import trio

from agents.backends import (
    AnthropicBackend,
    APIConnectionError,
    APIStatusError,
    BackendError,
    BackendEvent,
    ContentBlockDelta,
    MessageStart,
    ModelNotAvailable,
    ModelRequest,
)
from agents.backends.anthropic import _SSEParser, build_params, parse_retry_after
from agents.testing.fake_api import FakeAnthropicServer
from agents.testing.scripted import (
    Fault,
    ScriptedBackend,
    Step,
    events_for,
    text,
    thinking,
    tool_use,
    usage,
)

MODEL = "claude-opus-5-5"
EventStream = AsyncGenerator[BackendEvent, None]
EPHEMERAL = {"type": "ephemeral"}


def request(**kw: Any) -> ModelRequest:
    fields: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "hello"}],
    }
    fields.update(kw)
    return ModelRequest(**fields)


def backend_for(server: FakeAnthropicServer, **kw: Any) -> AnthropicBackend:
    return AnthropicBackend(api_key="test-key", base_url=server.base_url, **kw)


def events_of(backend: AnthropicBackend, req: ModelRequest | None = None) -> EventStream:
    """``backend.stream(req)`` typed as the async generator it is, for ``aclosing``."""
    return cast(EventStream, backend.stream(req or request()))


async def collect(events: AsyncIterator[BackendEvent]) -> list[BackendEvent]:
    async with aclosing(cast(EventStream, events)) as stream:
        return [event async for event in stream]


async def fetch(server: FakeAnthropicServer, req: ModelRequest, **kw: Any) -> list[BackendEvent]:
    """One response through a fresh backend, closed afterwards (no socket left to the GC)."""
    async with backend_for(server, **kw) as backend:
        return await collect(backend.stream(req))


def without_ids(events: list[BackendEvent]) -> list[Any]:
    """Events as builtins with the message id blanked (each server names its own messages)."""
    out: list[Any] = msgspec.to_builtins(events)
    for event in out:
        if event["type"] == "message_start":
            event["message"]["id"] = ""
    return out


STEPS = {
    "text": Step([text("Hello there.")]),
    "thinking then text": Step([thinking("let me see", "sig-1"), text("Done.")]),
    "parallel tools": Step(
        [
            text("Reading both."),
            tool_use("Read", {"file_path": "/a.py"}, id="toolu_a"),
            tool_use("Grep", {"pattern": "x", "-n": True}, id="toolu_b"),
        ]
    ),
    "cache usage": Step(
        [text("cached")],
        usage=usage(1200, 40, cache_read_input_tokens=900, cache_creation_input_tokens=300),
    ),
    "max_tokens": Step([text("cut sh")], stop_reason="max_tokens"),
    "unicode": Step([text("héllo — 世界 \n\n data: not an event")]),
}


@pytest.mark.parametrize("name", list(STEPS))
async def test_events_match_scripted_backend(name: str) -> None:
    """Each scripted step streams the same events over HTTP as from ScriptedBackend."""
    step = STEPS[name]
    req = request()
    expected = await collect(ScriptedBackend([step]).stream(req))
    assert without_ids(expected) == without_ids(events_for(step, req, "x"))
    async with FakeAnthropicServer([step]) as server:
        got = await fetch(server, req)
    assert without_ids(got) == without_ids(expected)
    server.assert_consumed()


async def test_usage_passes_through_message_start_and_delta() -> None:
    """Input-side usage arrives on message_start and output tokens on message_delta."""
    step = STEPS["cache usage"]
    async with FakeAnthropicServer([step]) as server:
        got = await fetch(server, request())
    start = got[0]
    assert isinstance(start, MessageStart)
    assert start.message["usage"] == {
        "input_tokens": 1200,
        "cache_read_input_tokens": 900,
        "cache_creation_input_tokens": 300,
        "output_tokens": 0,
    }
    assert msgspec.to_builtins(got[-2])["usage"] == {"output_tokens": 40}


async def test_request_carries_cache_breakpoints_effort_and_thinking() -> None:
    """The body has cache_control on the stable prefix and the last block, plus effort/thinking."""
    req = request(
        system=[{"type": "text", "text": "You are terse."}, {"type": "text", "text": "CLAUDE.md"}],
        tools=[
            {"name": "Read", "input_schema": {"type": "object"}},
            {"name": "Grep", "input_schema": {"type": "object"}},
        ],
        messages=[
            {"role": "user", "content": "list files"},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "b"},
                ],
            },
        ],
        thinking={"type": "adaptive"},
        effort="high",
    )
    before = copy.deepcopy(msgspec.to_builtins(req))
    async with FakeAnthropicServer([Step([text("ok")])]) as server:
        await fetch(server, req)
    body = server.requests[0].body
    assert msgspec.to_builtins(req) == before, "the request's lists must not be mutated"
    assert body["stream"] is True
    assert "cache_control" not in body["system"][0]
    assert body["system"][1]["cache_control"] == EPHEMERAL
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1]["cache_control"] == EPHEMERAL
    last = body["messages"][-1]["content"]
    assert "cache_control" not in last[0]
    assert last[1]["cache_control"] == EPHEMERAL
    assert [b["tool_use_id"] for b in last] == ["t1", "t2"]
    assert "cache_control" not in body["messages"][1]["content"][0]
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "high"}


def test_build_params_leaves_unset_options_unset() -> None:
    """No effort, thinking or output_format in the request means none in the API call."""
    params = build_params(request())
    assert set(params) == {"model", "max_tokens", "messages"}
    assert params["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": EPHEMERAL}]}
    ]


def test_build_params_maps_output_format_and_skips_thinking_blocks() -> None:
    """output_format goes to output_config.format; a trailing thinking block gets no breakpoint."""
    schema = {"type": "json_schema", "schema": {"type": "object"}}
    req = request(
        output_format=schema,
        messages=[
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "a"},
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                ],
            },
        ],
    )
    params = build_params(req)
    assert params["output_config"] == {"format": schema}
    content = params["messages"][-1]["content"]
    assert content[0]["cache_control"] == EPHEMERAL
    assert "cache_control" not in content[1]


async def test_status_429_maps_to_retryable_error_with_retry_after() -> None:
    """A 429 with retry-after becomes a retryable APIStatusError carrying the delay."""
    step = Step(fault=Fault(status=429, message="slow down", retry_after=2.5))
    async with FakeAnthropicServer([step]) as server:
        with pytest.raises(APIStatusError) as info:
            await fetch(server, request())
    err = info.value
    assert (err.status, err.retryable, err.retry_after) == (429, True, 2.5)
    assert str(err) == "API error 429: slow down"


@pytest.mark.parametrize("status", [500, 503, 529])
async def test_server_errors_are_retryable(status: int) -> None:
    """5xx and 529 (overloaded) map to retryable APIStatusError with that status."""
    async with FakeAnthropicServer([Step(fault=Fault(status=status))]) as server:
        with pytest.raises(APIStatusError) as info:
            await fetch(server, request())
    assert (info.value.status, info.value.retryable, info.value.retry_after) == (status, True, None)


@pytest.mark.parametrize("status", [400, 401, 403, 413])
async def test_client_errors_are_not_retryable(status: int) -> None:
    """A 4xx other than 408/409/429 is a non-retryable APIStatusError."""
    step = Step(fault=Fault(status=status, message="prompt is too long"))
    async with FakeAnthropicServer([step]) as server:
        with pytest.raises(APIStatusError) as info:
            await fetch(server, request())
    assert (info.value.status, info.value.retryable) == (status, False)
    assert "prompt is too long" in str(info.value)


async def test_unknown_model_maps_to_model_not_available() -> None:
    """A 404 not_found_error about the model raises ModelNotAvailable naming the model."""
    step = Step(fault=Fault(status=404, message="model: claude-nope"))
    async with FakeAnthropicServer([step]) as server:
        with pytest.raises(ModelNotAvailable) as info:
            await fetch(server, request(model="claude-nope"))
    assert info.value.model == "claude-nope"
    assert not info.value.retryable


async def test_drop_after_three_events_is_a_connection_error() -> None:
    """A stream cut after three events yields them, then raises a retryable APIConnectionError."""
    step = Step([text("one"), text("two")], fault=Fault(drop_after=3))
    seen: list[BackendEvent] = []
    async with FakeAnthropicServer([step]) as server:
        with pytest.raises(APIConnectionError) as info:
            async with backend_for(server) as backend, aclosing(events_of(backend)) as events:
                async for event in events:
                    seen.append(event)  # one by one: those before the cut count
    assert len(seen) == 3
    assert info.value.retryable


async def test_refused_connection_is_a_connection_error() -> None:
    """Nothing listening on the port gives a retryable APIConnectionError."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(APIConnectionError) as info:
        async with AnthropicBackend(api_key="k", base_url=f"http://127.0.0.1:{port}") as backend:
            await collect(backend.stream(request()))
    assert info.value.retryable


async def test_exhausted_script_is_a_non_retryable_400() -> None:
    """A request with no step left gets a 400 naming the script, like ScriptExhausted."""
    async with FakeAnthropicServer([]) as server:
        with pytest.raises(APIStatusError, match=r"^API error 400: script exhausted") as info:
            await fetch(server, request())
    assert not info.value.retryable


async def test_cancelling_mid_stream_closes_the_connection() -> None:
    """Cancelling a consumer mid-stream closes its HTTP connection; the server sees it go."""
    step = Step([text(f"part {i}") for i in range(20)], token_latency=0.02)
    seen = 0
    async with FakeAnthropicServer([step]) as server, backend_for(server) as backend:
        with trio.CancelScope() as scope:
            async with aclosing(events_of(backend)) as events:
                async for event in events:
                    seen += 1
                    if isinstance(event, ContentBlockDelta):
                        scope.cancel()
        with trio.fail_after(1):  # closed by the stream, before the backend's pool closes
            while server.open_connections:
                await trio.sleep(0.005)
    assert 3 <= seen < 20
    assert server.connections_opened == 1
    assert server.requests[0].finished_at == 0.0


async def test_delay_and_latency_hold_the_first_byte() -> None:
    """Fault.delay and Step.latency both pass before the response starts."""
    step = Step([text("late")], latency=0.02, fault=Fault(delay=0.03))
    async with FakeAnthropicServer([step]) as server:
        start = time.perf_counter()
        await fetch(server, request())
    assert time.perf_counter() - start >= 0.05


async def test_token_latency_paces_deltas() -> None:
    """Deltas arrive token_latency apart; the rest of the stream is not held back."""
    step = Step([text("a"), text("b"), text("c")], token_latency=0.02)
    stamps: list[float] = []
    async with (
        FakeAnthropicServer([step]) as server,
        backend_for(server) as backend,
        aclosing(events_of(backend)) as events,
    ):
        async for event in events:
            if isinstance(event, ContentBlockDelta):
                stamps.append(time.perf_counter())
    assert len(stamps) == 3
    assert min(b - a for a, b in itertools.pairwise(stamps)) >= 0.015


async def test_connections_are_kept_alive() -> None:
    """Sequential requests from one backend reuse one connection."""
    steps = [Step([text("1")]), Step([text("2")])]
    async with FakeAnthropicServer(steps) as server, backend_for(server) as backend:
        await collect(backend.stream(request()))
        await collect(backend.stream(request()))
    assert server.connections_opened == 1
    assert len(server.requests) == 2


async def test_agent_headers_route_subagent_requests() -> None:
    """With send_agent_headers, a subagent's request plays that agent type's steps."""
    script = {"main": [Step([text("main")])], "researcher": [Step([text("research")])]}
    async with FakeAnthropicServer(script) as server:
        sub = request(agent_type="researcher", agent_id="main/researcher-1")
        async with backend_for(server, send_agent_headers=True) as backend:
            got = await collect(backend.stream(sub))
            got_main = await collect(backend.stream(request()))
    assert msgspec.to_builtins(got[2])["delta"]["text"] == "research"
    assert msgspec.to_builtins(got_main[2])["delta"]["text"] == "main"
    assert server.requests[0].headers["x-agent-id"] == "main/researcher-1"


def test_mid_stream_error_event_maps_to_status() -> None:
    """An `error` SSE event mid-stream raises APIStatusError with the status of its type."""
    parser = _SSEParser(MODEL)
    events = parser.feed(b'event: message_start\ndata: {"type":"message_start","message":{}}\n\n')
    assert len(events) == 1
    body = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    with pytest.raises(APIStatusError, match=r"^API error 529: Overloaded$") as info:
        parser.feed(b"event: ping\ndata: {}\n\nevent: error\ndata: " + body + b"\n\n")
    assert info.value.retryable


def test_sse_parser_handles_split_chunks_and_crlf() -> None:
    """Events split across chunks, CRLF line ends and unknown events parse as the API means."""
    parser = _SSEParser(MODEL)
    wire = (
        b"event: future_event\r\ndata: {}\r\n\r\n"
        b'event: content_block_stop\r\ndata: {"type":"content_block_stop","index":2}\r\n\r\n'
        b'event: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n'
    )
    events = [e for i in range(len(wire)) for e in parser.feed(wire[i : i + 1])]
    assert msgspec.to_builtins(events) == [
        {"type": "content_block_stop", "index": 2},
        {"type": "message_stop"},
    ]
    assert parser.stopped


def test_parse_retry_after_forms() -> None:
    """retry-after-ms wins; retry-after takes seconds or an HTTP date; garbage is ignored."""
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (parse_retry_after({"retry-after": date}) or 0) <= 30


def test_constructor_validates_retry_policy() -> None:
    """Bad retry settings fail at construction naming the parameter."""
    with pytest.raises(ValueError, match=r"^max_retries must be >= 0, got -1$"):
        AnthropicBackend(max_retries=-1)
    with pytest.raises(ValueError, match=r"^retry_max_delay must be >= retry_base_delay=1"):
        AnthropicBackend(retry_base_delay=1.0, retry_max_delay=0.5)
    backend = AnthropicBackend(max_retries=3, retry_base_delay=0.01, retry_max_delay=0.1)
    policy = (backend.max_retries, backend.retry_base_delay, backend.retry_max_delay)
    assert policy == (3, 0.01, 0.1)


async def test_client_is_built_without_its_own_retries() -> None:
    """The wrapped client never retries by itself: the loop owns the policy."""
    async with AnthropicBackend(api_key="k") as backend:
        assert backend.client.max_retries == 0


async def test_missing_credentials_is_a_non_retryable_backend_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no key anywhere, streaming fails with a plain, non-retryable BackendError."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    async with FakeAnthropicServer([]) as server:
        with pytest.raises(BackendError) as info:
            async with AnthropicBackend(base_url=server.base_url) as backend:
                await collect(backend.stream(request()))
    assert not info.value.retryable


def test_importing_backends_does_not_import_anthropic() -> None:
    """`import agents.backends` stays cheap: the anthropic client loads on first use."""
    import subprocess
    import sys

    code = "import sys, agents.backends; print('anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_an_event_longer_than_the_limit_ends_the_stream_naming_it() -> None:
    """A server sending one event without end (64 KiB chunks, as a transport reads them): the
    parser holds at most the limit and then fails the stream, naming it; an event of just the
    limit is read."""
    from agents.backends.anthropic import MAX_SSE_EVENT_BYTES

    head = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    head += b'"delta":{"type":"text_delta","text":"'
    tail = b'"}}\n\n'
    fits = head + b"a" * (MAX_SSE_EVENT_BYTES - len(head) - len(tail) + 2) + tail
    parser = _SSEParser(MODEL)
    chunk = 65536
    events = [e for i in range(0, len(fits), chunk) for e in parser.feed(fits[i : i + chunk])]
    assert len(msgspec.to_builtins(events)[0]["delta"]["text"]) == len(fits) - len(head) - 5
    parser = _SSEParser(MODEL)
    parser.feed(head)
    with pytest.raises(APIConnectionError) as info:
        for _ in range(MAX_SSE_EVENT_BYTES // chunk + 1):
            parser.feed(b"a" * chunk)
    assert str(info.value).startswith(
        f"connection error: the stream sent an event longer than {MAX_SSE_EVENT_BYTES} bytes "
        "(MAX_SSE_EVENT_BYTES; "
    )


async def _only_pings(stream: trio.SocketStream, then: bytes = b"") -> None:
    """A server that starts a response, sends ``then``, then pings every 20 ms until the
    client hangs up."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += await stream.receive_some(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += await stream.receive_some(65536)

    def chunk(payload: bytes) -> bytes:
        return b"%x\r\n%s\r\n" % (len(payload), payload)

    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 1, "output_tokens": 0},
        },
    }
    try:
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
            + chunk(b"event: message_start\ndata: " + msgspec.json.encode(start) + b"\n\n")
            + (chunk(then) if then else b"")
        )
        while True:
            await trio.sleep(0.02)
            await stream.send_all(chunk(b'event: ping\ndata: {"type": "ping"}\n\n'))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def test_a_stream_of_nothing_but_pings_ends_after_the_read_timeout(
    nursery: trio.Nursery,
) -> None:
    """Pings keep every read within the read timeout, so without another deadline the stream
    never ended: it is cut once no event but pings came for longer than that timeout (here
    0.3 s; pings every 20 ms, real time: the client's timeouts are real)."""
    from functools import partial

    listeners = await nursery.start(partial(trio.serve_tcp, _only_pings, 0, host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    backend = AnthropicBackend(
        api_key="test-key", base_url=f"http://127.0.0.1:{port}", max_retries=0, timeout=0.3
    )
    async with backend:
        with trio.fail_after(10), pytest.raises(APIConnectionError) as caught:
            await collect(backend.stream(request()))
    assert re.fullmatch(
        r"connection error: the stream brought no event but pings for 0\.\d s "
        r"\(more than the read timeout, 0\.3 s\)",
        str(caught.value),
    )


async def test_a_malformed_event_mid_stream_fails_it_and_leaves_no_stream_open(
    nursery: trio.Nursery,
) -> None:
    """The parser's failure mid-stream (here an event that is not its JSON) ends the response's
    byte stream as a cancellation would: no async generator of the client is left to the
    garbage collector (a warning, an error under this suite, when it was)."""
    from functools import partial

    bad = b"event: content_block_stop\ndata: {not json\n\n"
    handler = partial(_only_pings, then=bad)
    listeners = await nursery.start(partial(trio.serve_tcp, handler, 0, host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    backend = AnthropicBackend(
        api_key="test-key", base_url=f"http://127.0.0.1:{port}", max_retries=0, timeout=30
    )
    async with backend:
        with trio.fail_after(10), pytest.raises(APIConnectionError) as caught:
            await collect(backend.stream(request()))
    assert str(caught.value).startswith("connection error: malformed content_block_stop event:")
