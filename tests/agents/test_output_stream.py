"""The session's output stream (``agents._assembly.output``): a memory channel's semantics."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from agents._assembly.output import MessageStream


async def test_a_full_stream_refuses_put_nowait_and_makes_put_wait() -> None:
    stream: MessageStream[int] = MessageStream(2)
    assert stream.put_nowait(1) and stream.put_nowait(2)
    assert not stream.put_nowait(3)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream.put, 3)
        await trio.testing.wait_all_tasks_blocked()
        assert [stream.pop(), stream.pop(), stream.pop(), stream.pop()] == [1, 2, 3, None]


async def test_items_come_out_in_order_and_a_waiting_reader_gets_the_next() -> None:
    stream: MessageStream[int] = MessageStream(4)
    got: list[int] = []

    async def read() -> None:
        async for item in stream:
            got.append(item)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await trio.testing.wait_all_tasks_blocked()
        for i in range(10):
            await stream.put(i)
        stream.close()
    assert got == list(range(10))


async def test_close_lets_the_reader_drain_then_ends_it() -> None:
    stream: MessageStream[str] = MessageStream(4)
    stream.put_nowait("a")
    stream.close()
    assert await stream.get() == "a"
    with pytest.raises(trio.EndOfChannel):
        await stream.get()
    with pytest.raises(trio.ClosedResourceError):
        stream.put_nowait("b")


async def test_a_cancelled_parked_sender_sends_nothing() -> None:
    stream: MessageStream[int] = MessageStream(1)
    stream.put_nowait(1)
    with trio.move_on_after(1) as scope:
        await stream.put(2)
    assert scope.cancelled_caught
    assert stream.pop() == 1
    assert stream.pop() is None


async def test_close_wakes_a_parked_sender_with_closed_resource_error() -> None:
    stream: MessageStream[int] = MessageStream(1)
    stream.put_nowait(1)
    errors: list[BaseException] = []

    async def send() -> None:
        try:
            await stream.put(2)
        except trio.ClosedResourceError as exc:
            errors.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        await trio.testing.wait_all_tasks_blocked()
        stream.close()
    assert len(errors) == 1


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"^capacity must be >= 1, got 0$"):
        MessageStream(0)
