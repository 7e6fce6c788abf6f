"""FakeAnthropicServer on its own: the HTTP surface, non-streaming answers, the standalone entry."""

from __future__ import annotations

import sys
from pathlib import Path

import anthropic
import msgspec
import pytest
import trio

from agents.testing.fake_api import FakeAnthropicServer, message_from_events
from agents.testing.scripted import Fault, Script, Step, events_for, text, thinking, tool_use

MODEL = "claude-opus-5-5"
HELLO = [{"role": "user", "content": "hello"}]


async def raw_exchange(server: FakeAnthropicServer, payload: bytes) -> bytes:
    """Send raw bytes, read until the server closes (requests here ask for connection: close)."""
    stream = await trio.open_tcp_stream("127.0.0.1", server.port)
    async with stream:
        await stream.send_all(payload)
        chunks = []
        with trio.fail_after(1):
            while data := await stream.receive_some():
                chunks.append(data)
    return b"".join(chunks)


async def test_non_streaming_request_gets_the_whole_message() -> None:
    """stream=false gets one Message JSON equal to what the stream events build."""
    step = Step([thinking("hm", "s1"), text("Hi!"), tool_use("Read", {"file_path": "/a"}, id="t1")])
    async with (
        FakeAnthropicServer([step]) as server,
        anthropic.AsyncAnthropic(api_key="k", base_url=server.base_url, max_retries=0) as client,
    ):
        message = await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)  # type: ignore[arg-type]
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    assert message.content[1].text == "Hi!"  # type: ignore[union-attr]
    assert message.content[2].input == {"file_path": "/a"}  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use"
    assert message.usage.output_tokens > 0


def test_message_from_events_rebuilds_blocks_and_usage() -> None:
    """The non-streaming body is the accumulation of the streamed events."""
    from agents.backends import ModelRequest

    step = Step(
        [text("a"), tool_use("Grep", {"pattern": "x"}, id="t9")],
        usage={"input_tokens": 7, "output_tokens": 3},
    )
    req = ModelRequest(model=MODEL, messages=HELLO, max_tokens=10)
    message = message_from_events(events_for(step, req, "msg_1"))
    assert message["id"] == "msg_1"
    assert message["content"] == [
        {"type": "text", "text": "a"},
        {"type": "tool_use", "id": "t9", "name": "Grep", "input": {"pattern": "x"}},
    ]
    assert message["stop_reason"] == "tool_use"
    assert message["usage"] == {"input_tokens": 7, "output_tokens": 3}


async def test_unknown_path_is_a_404_error_body() -> None:
    """Anything but POST /v1/messages gets a 404 with an Anthropic error body."""
    async with FakeAnthropicServer([]) as server:
        reply = await raw_exchange(server, b"GET /v1/models HTTP/1.1\r\nconnection: close\r\n\r\n")
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 404 Not Found\r\n")
    assert msgspec.json.decode(body)["error"]["type"] == "not_found_error"


async def test_malformed_json_body_is_a_400_and_still_recorded() -> None:
    """A body that is not JSON gets a 400; the request is recorded for inspection."""
    async with FakeAnthropicServer([Step([text("unused")])]) as server:
        reply = await raw_exchange(
            server,
            b"POST /v1/messages HTTP/1.1\r\ncontent-length: 5\r\nconnection: close\r\n\r\n{oops",
        )
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"invalid_request_error" in reply
    assert server.requests[0].body is None
    assert server.remaining() == {"main": 1}


async def test_error_response_carries_retry_after_headers() -> None:
    """A scripted 429 sends retry-after and retry-after-ms with the error body."""
    step = Step(fault=Fault(status=429, retry_after=1.5, message="slow"))
    body = msgspec.json.encode({"model": MODEL, "max_tokens": 5, "messages": HELLO})
    async with FakeAnthropicServer([step]) as server:
        reply = await raw_exchange(
            server,
            b"POST /v1/messages HTTP/1.1\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%b"
            % (len(body), body),
        )
    head = reply.partition(b"\r\n\r\n")[0].decode().lower()
    assert head.startswith("http/1.1 429 too many requests")
    assert "retry-after: 1.5" in head
    assert "retry-after-ms: 1500" in head


async def test_standalone_module_serves_a_script(tmp_path: Path) -> None:
    """`python -m agents.testing.fake_api --script s.json` prints its URL and plays the script."""
    script = tmp_path / "s.json"
    script.write_bytes(Script({"main": [Step([text("from the script")])]}).to_json())
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "agents.testing.fake_api", "--script", str(script), "--port", "0"],
        stdout=-1,  # subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        with trio.fail_after(5):
            line = b""
            while not line.endswith(b"\n"):
                line += await process.stdout.receive_some(1)
        base_url = line.decode().strip()
        assert base_url.startswith("http://127.0.0.1:")
        client = anthropic.AsyncAnthropic(api_key="k", base_url=base_url, max_retries=0)
        async with client:
            message = await client.messages.create(
                model=MODEL, max_tokens=10, messages=HELLO  # type: ignore[arg-type]
            )
        assert message.content[0].text == "from the script"  # type: ignore[union-attr]
    finally:
        process.kill()
        await process.wait()
        if process.stdout is not None:
            await process.stdout.aclose()


async def test_server_cannot_be_entered_twice() -> None:
    """Re-entering a running server is a RuntimeError, not a second listener."""
    server = FakeAnthropicServer([])
    async with server:
        with pytest.raises(RuntimeError, match=r"^FakeAnthropicServer is already running$"):
            await server.__aenter__()
