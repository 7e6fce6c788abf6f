"""``jsonrpc_line_streams``: the line pump under the stdio client and the shipped stdio server."""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.testing

# The pump imports the package's types on its first message: imported here, at collection,
# they are not imported inside a test's deadline (a first import takes seconds under load).
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter

from agents.mcp import jsonrpc_line_streams


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
