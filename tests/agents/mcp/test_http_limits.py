"""What a server over HTTP sends is bounded per message: a JSON response's body is read up to
MAX_HTTP_MESSAGE_BYTES (the package read it whole) and refused compressed; event streams keep
the package's per-event limit, the same number."""

from __future__ import annotations

import gzip

import httpx2
import pytest
import trio

from agents.mcp import open_mcp_servers
from agents.mcp._http import MAX_HTTP_MESSAGE_BYTES, cap_json_body
from agents.testing.mcp_servers import open_http_server


class Chunks(httpx2.AsyncByteStream):
    def __init__(self, data: bytes, size: int = 1 << 16) -> None:
        self.data, self.size = data, size

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        for start in range(0, len(self.data), self.size):
            yield self.data[start : start + self.size]


async def _read(data: bytes, ctype: str, **headers: str) -> bytes:
    response = httpx2.Response(200, headers={"content-type": ctype, **headers}, stream=Chunks(data))
    await cap_json_body(response)
    return await response.aread()


async def test_a_json_body_of_the_limit_is_read_and_one_byte_more_is_refused() -> None:
    body = b"[" + b" " * (MAX_HTTP_MESSAGE_BYTES - 2) + b"]"
    assert await _read(body, "application/json") == body
    with pytest.raises(httpx2.StreamError) as caught:
        await _read(body + b" ", "application/json; charset=utf-8")
    assert str(caught.value) == (
        f"a JSON response longer than {MAX_HTTP_MESSAGE_BYTES} bytes (MAX_HTTP_MESSAGE_BYTES)"
    )


async def test_a_compressed_json_body_is_refused_before_it_is_inflated() -> None:
    bomb = gzip.compress(b"[" + b" " * (64 << 20) + b"]")  # 64 MiB in about 64 KB
    with pytest.raises(httpx2.StreamError, match=r"^a JSON response compressed \(gzip\) refused"):
        await _read(bomb, "application/json", **{"content-encoding": "gzip"})


async def test_an_event_stream_is_left_to_the_per_event_limit() -> None:
    data = b"data: " + b"x" * (MAX_HTTP_MESSAGE_BYTES + 10) + b"\n\n"
    assert await _read(data, "text/event-stream") == data


async def test_a_json_result_over_the_limit_is_an_error_naming_it_and_the_next_is_served() -> None:
    """A server that answers with JSON responses, a result of 2 MB: the call's error names the
    limit (the package read the body whole), and the connection serves the next call."""
    with trio.fail_after(60):
        async with (
            open_http_server("http-json") as config,
            open_mcp_servers({"demo": config}) as servers,
        ):
            big = await servers.call("demo", "big", {"chars": 2_000_000})
            small = await servers.call("demo", "big", {"chars": 1000})
            after = await servers.call("demo", "echo", {"text": "still here"})
    assert big.is_error
    assert (
        f"a JSON response longer than {MAX_HTTP_MESSAGE_BYTES} bytes (MAX_HTTP_MESSAGE_BYTES)"
        in str(big.content)
    )
    assert not small.is_error and len(str(small.content)) > 1000
    assert not after.is_error and "still here" in str(after.content)
