"""``jsonrpc_line_streams``: the line pump under the stdio client and the shipped stdio server."""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

# The pump imports the package's types on its first message: imported here, at collection,
# they are not imported inside a test's deadline (a first import takes seconds under load).
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter

from agents.mcp import jsonrpc_line_streams
from tests.agents.tools.toolkit import printed_within_a_deadline


def request(n: int) -> bytes:
    message = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "x"}}
    return json.dumps(message).encode() + b"\n"


class CountingSend(trio.abc.SendStream):
    """A send stream that keeps each ``send_all``'s bytes."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint()
        self.writes.append(bytes(data))

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


async def test_every_line_of_one_read_is_a_message_and_a_split_line_waits_for_its_end() -> None:
    send_bytes, receive_bytes = trio.testing.memory_stream_one_way_pair()
    with trio.fail_after(5):
        async with jsonrpc_line_streams(receive_bytes, CountingSend()) as (read, _):
            whole = request(1) + request(2) + request(3)
            await send_bytes.send_all(whole + request(4)[:10])
            ids = [(await read.receive()).message.id for _ in range(3)]
            await send_bytes.send_all(request(4)[10:])
            ids.append((await read.receive()).message.id)
    assert ids == [1, 2, 3, 4]


async def test_a_line_that_is_not_json_rpc_is_handed_on_as_an_error() -> None:
    send_bytes, receive_bytes = trio.testing.memory_stream_one_way_pair()
    with trio.fail_after(5):
        async with jsonrpc_line_streams(receive_bytes, CountingSend()) as (read, _):
            await send_bytes.send_all(b"not json {\n" + request(7))
            first, second = await read.receive(), await read.receive()
    assert isinstance(first, ValueError)
    assert second.message.id == 7


async def test_the_messages_queued_in_one_step_go_out_in_one_write() -> None:
    out = CountingSend()
    _, receive_bytes = trio.testing.memory_stream_one_way_pair()
    messages: list[Any] = [
        SessionMessage(jsonrpc_message_adapter.validate_json(request(n))) for n in range(10)
    ]
    with trio.fail_after(5):
        async with jsonrpc_line_streams(receive_bytes, out) as (_, write):
            async with trio.open_nursery() as nursery:
                for message in messages:
                    nursery.start_soon(write.send, message)
            while sum(w.count(b"\n") for w in out.writes) < 10:
                await trio.sleep(0.01)
    assert len(out.writes) == 1
    assert sorted(json.loads(line)["id"] for line in out.writes[0].splitlines()) == list(range(10))


async def test_peek_shows_the_next_message_without_taking_it_and_none_at_the_end() -> None:
    send_bytes, receive_bytes = trio.testing.memory_stream_one_way_pair()
    with trio.fail_after(5):
        async with jsonrpc_line_streams(receive_bytes, CountingSend()) as (read, _):
            await send_bytes.send_all(request(5))
            peeked = await read.peek()
            taken = await read.receive()
            await send_bytes.aclose()
            at_end = await read.peek()
    assert peeked is taken
    assert taken.message.id == 5
    assert at_end is None


async def test_a_result_is_written_as_the_mcp_packages_transports_write_it() -> None:
    from mcp.types import JSONRPCResponse

    out = CountingSend()
    _, receive_bytes = trio.testing.memory_stream_one_way_pair()
    result = {"content": [{"type": "text", "text": "é \n \u2028"}], "isError": False}
    response = JSONRPCResponse(jsonrpc="2.0", id=3, result=result)
    with trio.fail_after(5):
        async with jsonrpc_line_streams(receive_bytes, out) as (_, write):
            await write.send(SessionMessage(response))
            while not out.writes:
                await trio.sleep(0.01)
    line = b"".join(out.writes)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    expected = response.model_dump_json(by_alias=True, exclude_unset=True)
    assert json.loads(line) == json.loads(expected)


class Pieces:
    """A receive stream that hands over ``data`` in reads of the given sizes, then its end."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self.data, self.sizes = data, sizes

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        await trio.lowlevel.checkpoint()
        size = self.sizes.pop(0) if self.sizes else len(self.data)
        chunk, self.data = self.data[:size], self.data[size:]
        return chunk


async def read_all(data: bytes, sizes: list[int], max_line: int) -> list[Any]:
    items: list[Any] = []
    with trio.fail_after(5):
        async with jsonrpc_line_streams(Pieces(data, sizes), CountingSend(), max_line=max_line) as (
            read,
            _,
        ):
            async for item in read:
                items.append(item)
    return items


@given(cuts=st.lists(st.integers(1, 40), max_size=30))
async def test_lines_split_anywhere_over_reads_are_the_same_messages(cuts: list[int]) -> None:
    data = request(1) + b"\n" + request(22) + request(333)
    items = await read_all(data, cuts, max_line=len(request(333)))
    assert [item.message.id for item in items] == [1, 22, 333]


async def test_a_line_longer_than_the_limit_is_an_error_naming_it_and_ends_the_stream() -> None:
    """Whether its end came in the same read or never: one ValueError naming the limit, and
    nothing read after it; a line of exactly the limit passes."""
    line = request(5)
    limit = len(line) - 1  # (the newline is not the line's)
    assert [i.message.id for i in await read_all(line, [7, 9], max_line=limit)] == [5]
    for data, sizes in ((line + request(6), [len(line) + 3]), (line[:-1] * 3, [20] * 99)):
        items = await read_all(data, sizes, max_line=limit - 1)
        assert [str(i) for i in items] == [
            f"a line longer than {limit - 1} bytes (max_line): the stream ends here"
        ]


def test_a_line_of_64_mb_in_reads_of_64_kb_is_read_in_linear_time() -> None:
    """Each read joined to the line so far copied the line again (quadratic: 32 MB took 7.9 s
    of CPU, 64 MB about half a minute); the line is now copied once."""
    script = """
import json, trio
from agents.mcp import jsonrpc_line_streams

class Feed:
    def __init__(self, data): self.data, self.pos = data, 0
    async def receive_some(self, n=None):
        await trio.lowlevel.checkpoint()
        self.pos += 65536
        return self.data[self.pos - 65536 : self.pos]

class Sink:
    async def send_all(self, data): await trio.lowlevel.checkpoint()

async def main():
    params = {"name": "x", "arguments": {"s": "a" * (64 << 20)}}
    data = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params})
    async with jsonrpc_line_streams(Feed(data.encode() + b"\\n"), Sink()) as (read, _):
        print((await read.receive()).message.id)

trio.run(main)
"""
    assert printed_within_a_deadline(script, seconds=20) == "9"
