"""The session's output stream (``agents._assembly.output``): a memory channel's semantics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


#: how each sender ends: its item sent, its put cancelled, or refused by a closed stream
Outcome = str


async def _run_senders(
    stream: MessageStream[int] | trio.MemorySendChannel[int],
    receive: Callable[[], int | None],
    capacity: int,
    queued: int,
    senders: list[str],
    close_at: int | None,
    close: Callable[[], None],
) -> tuple[list[int], list[Outcome]]:
    """Drive one stream through a scenario: ``queued`` items put without waiting, then one
    task per sender, started in turn (each parks if the buffer is full), some cancelled before
    their put (``"before"``) or while parked (``"parked"``), the stream closed once
    ``close_at`` senders have started; then everything received without waiting."""
    put_nowait = stream.put_nowait if isinstance(stream, MessageStream) else stream.send_nowait
    put = stream.put if isinstance(stream, MessageStream) else stream.send
    for i in range(queued):
        put_nowait(100 + i)
    outcomes: list[Outcome] = ["parked"] * len(senders)
    scopes: list[trio.CancelScope] = []
    received: list[int] = []

    async def send(i: int, scope: trio.CancelScope) -> None:
        with scope:
            try:
                await put(i)
            except trio.ClosedResourceError:
                outcomes[i] = "closed"
                return
            outcomes[i] = "sent"
        if scope.cancelled_caught:
            outcomes[i] = "cancelled"

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for i, how in enumerate(senders):
                if i == close_at:
                    close()
                scope = trio.CancelScope()
                if how == "before":
                    scope.cancel()
                scopes.append(scope)
                nursery.start_soon(send, i, scope)
                await trio.testing.wait_all_tasks_blocked()
            if close_at == len(senders):
                close()
            for scope, how in zip(scopes, senders, strict=True):
                if how == "parked":
                    scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
            while (item := receive()) is not None:
                received.append(item)
                await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()  # nothing should be left parked: checked below
    return received, outcomes


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    capacity=st.integers(1, 3),
    queued=st.integers(0, 3),
    senders=st.lists(st.sampled_from(["none", "before", "parked"]), max_size=5),
    close_at=st.none() | st.integers(0, 5),
)
async def test_put_ends_each_sender_as_a_memory_channel_would(
    autojump_clock: trio.testing.MockClock,
    capacity: int,
    queued: int,
    senders: list[str],
    close_at: int | None,
) -> None:
    """``put`` parks a sender at once when the buffer is full (no check for cancellation
    first): every scenario of full and free buffers, senders cancelled before their put or
    while parked, and a stream closed among them, ends each sender and delivers the items as
    a Trio memory channel of the same capacity does."""
    queued = min(queued, capacity)
    if close_at is not None:
        close_at = min(close_at, len(senders))

    stream: MessageStream[int] = MessageStream(capacity)
    ours = await _run_senders(stream, stream.pop, capacity, queued, senders, close_at, stream.close)

    send, receive = trio.open_memory_channel[int](capacity)

    def receive_nowait() -> int | None:
        try:
            return receive.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return None

    theirs = await _run_senders(
        send, receive_nowait, capacity, queued, senders, close_at, send.close
    )
    assert ours == theirs
    assert "parked" not in ours[1]


# -- notices: queued without waiting, in line behind the parked writers ----------------------


async def test_a_notice_never_waits_and_comes_after_the_parked_writers() -> None:
    """A full buffer: a writer parks; a notice is queued at once, past the bound, behind it
    (so a spawn's ``task_started`` that had to wait still comes before the child's end)."""
    stream: MessageStream[str] = MessageStream(1)
    stream.put_nowait("first")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream.put, "parked")
        await trio.testing.wait_all_tasks_blocked()
        stream.put_notice("notice", "child-1")  # no checkpoint: a plain call
        assert [stream.pop(), stream.pop(), stream.pop(), stream.pop()] == [
            "first",
            "parked",
            "notice",
            None,
        ]


async def test_a_notice_takes_the_place_of_a_waiting_one_with_its_key() -> None:
    stream: MessageStream[str] = MessageStream(1)
    stream.put_nowait("first")
    stream.put_notice("progress 1 of a", ("progress", "a"))
    stream.put_notice("end of b", ("end", "b"))
    stream.put_notice("progress 2 of a", ("progress", "a"))  # replaces, keeps its place
    assert [stream.pop(), stream.pop(), stream.pop(), stream.pop()] == [
        "first",
        "progress 2 of a",
        "end of b",
        None,
    ]


async def test_a_notice_drops_the_waiting_one_it_makes_stale() -> None:
    """A task's end, queued while its last progress report still waits in line, drops that
    report (the end says more); one already in the buffer is read as it is."""
    stream: MessageStream[str] = MessageStream(1)
    stream.put_notice("progress of b", "b")  # into the buffer: room
    stream.put_notice("progress of a", "a")  # in line
    stream.put_notice("progress of c", "c")
    stream.put_notice("end of a", object(), "a")
    stream.put_notice("end of b", object(), "b")  # b's report is in the buffer: stays
    assert [stream.pop() for _ in range(5)] == [
        "progress of b",
        "progress of c",
        "end of a",
        "end of b",
        None,
    ]


async def test_a_notice_goes_to_a_waiting_reader_or_into_a_buffer_with_room() -> None:
    stream: MessageStream[str] = MessageStream(2)
    async with trio.open_nursery() as nursery:
        got: list[str] = []

        async def read() -> None:
            got.append(await stream.get())

        nursery.start_soon(read)
        await trio.testing.wait_all_tasks_blocked()
        stream.put_notice("to the reader", "k")
    assert got == ["to the reader"]
    stream.put_notice("buffered", "k")
    assert stream.put_nowait("then this")  # the notice took a slot of the buffer, not the line
    assert not stream.put_nowait("full")
    assert [stream.pop(), stream.pop(), stream.pop()] == ["buffered", "then this", None]


async def test_close_keeps_the_waiting_notices_for_the_reader() -> None:
    """The session closes its output once every agent has ended: notices still in line are
    read before ``EndOfChannel``; parked writers are refused as before."""
    stream: MessageStream[str] = MessageStream(1)
    stream.put_nowait("first")
    refused: list[BaseException] = []

    async def send() -> None:
        try:
            await stream.put("parked")
        except trio.ClosedResourceError as exc:
            refused.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        await trio.testing.wait_all_tasks_blocked()
        stream.put_notice("end of a", "a")
        stream.close()
    assert len(refused) == 1
    assert [await stream.get(), await stream.get()] == ["first", "end of a"]
    with pytest.raises(trio.EndOfChannel):
        await stream.get()
    with pytest.raises(trio.ClosedResourceError):
        stream.put_notice("late", "b")


@settings(max_examples=300, deadline=None)
@given(
    capacity=st.integers(1, 3),
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("put"), st.integers(0, 99)),
            st.tuples(
                st.just("notice"),
                st.integers(0, 99),
                st.sampled_from("abc"),
                st.sampled_from([None, "a", "b", "c"]),
            ),
            st.tuples(st.just("pop")),
        ),
        max_size=30,
    ),
)
def test_notices_and_writes_come_out_as_a_line_with_places_kept_per_key(
    capacity: int, ops: list[tuple[Any, ...]]
) -> None:
    """Against a plain model: a buffer of ``capacity`` and, behind it, a line where a notice
    with the key of one still waiting takes that one's place; ``put_nowait`` only fits while
    nothing waits in line; a read moves the head of the line into the buffer; closing moves
    the whole line in; a notice drops the one waiting in line with the key it replaces."""
    stream: MessageStream[int] = MessageStream(capacity)
    buffer: list[int] = []
    line: dict[str, int] = {}
    for op in ops:
        if op[0] == "put":
            fits = not line and len(buffer) < capacity
            assert stream.put_nowait(op[1]) is fits
            if fits:
                buffer.append(op[1])
        elif op[0] == "notice":
            stream.put_notice(op[1], op[2], op[3])
            if op[3] is not None:
                line.pop(op[3], None)
            if not line and len(buffer) < capacity:
                buffer.append(op[1])
            else:
                line[op[2]] = op[1]
        else:
            expected = buffer.pop(0) if buffer else None
            if expected is not None and line:
                key = next(iter(line))
                buffer.append(line.pop(key))
            assert stream.pop() == expected
    stream.close()
    buffer.extend(line.values())
    assert [stream.pop() for _ in range(len(buffer) + 1)] == [*buffer, None]
