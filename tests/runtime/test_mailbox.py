from __future__ import annotations

import gc

import pytest
import trio
import trio.testing

from runtime import Mailbox, MailboxStatistics


async def test_send_blocks_when_full_until_a_receive_frees_a_slot(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A full mailbox applies backpressure: send waits until the owner receives."""
    box: Mailbox[int] = Mailbox(capacity=2)
    await box.send(1)
    await box.send(2)
    with trio.move_on_after(10) as scope:
        await box.send(3)
    assert scope.cancelled_caught
    assert box.statistics().queued == 2

    async with trio.open_nursery() as nursery:
        nursery.start_soon(box.send, 3)
        await trio.testing.wait_all_tasks_blocked()
        assert await box.receive() == 1
    assert [box.receive_nowait(), box.receive_nowait()] == [2, 3]


async def test_items_come_out_in_fifo_order() -> None:
    """Items are received in the order they were sent."""
    box: Mailbox[str] = Mailbox(capacity=8)
    for item in "abcde":
        await box.send(item)
    assert [await box.receive() for _ in range(5)] == list("abcde")


async def test_close_lets_the_owner_drain_then_ends_iteration() -> None:
    """After close(), queued items are still delivered and iteration then stops."""
    box: Mailbox[int] = Mailbox(capacity=4)
    for i in range(3):
        box.send_nowait(i)
    box.close()
    box.close()  # idempotent
    assert [item async for item in box] == [0, 1, 2]
    with pytest.raises(trio.EndOfChannel):
        await box.receive()
    with pytest.raises(trio.EndOfChannel):
        box.receive_nowait()
    assert box.statistics() == MailboxStatistics(capacity=4, queued=0, peak=3, closed=True)


async def test_send_after_close_raises_closed_resource_error() -> None:
    """A closed mailbox refuses new items, blocking or not."""
    box: Mailbox[int] = Mailbox(capacity=1)
    box.close()
    with pytest.raises(trio.ClosedResourceError):
        await box.send(1)
    with pytest.raises(trio.ClosedResourceError):
        box.send_nowait(1)


async def test_close_wakes_a_blocked_sender_with_closed_resource_error() -> None:
    """A sender waiting on a full mailbox learns that it was closed."""
    box: Mailbox[int] = Mailbox(capacity=1)
    box.send_nowait(0)

    async def sender() -> None:
        with pytest.raises(trio.ClosedResourceError):
            await box.send(1)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender)
        await trio.testing.wait_all_tasks_blocked()
        box.close()
    assert box.receive_nowait() == 0


async def test_nowait_variants_raise_would_block() -> None:
    """send_nowait on a full mailbox and receive_nowait on an empty one raise WouldBlock."""
    box: Mailbox[int] = Mailbox(capacity=1)
    with pytest.raises(trio.WouldBlock):
        box.receive_nowait()
    box.send_nowait(1)
    with pytest.raises(trio.WouldBlock):
        box.send_nowait(2)


async def test_statistics_track_queued_and_peak() -> None:
    """`peak` is the most items ever queued at once; `queued` is the current count."""
    box: Mailbox[int] = Mailbox(capacity=5)
    assert box.statistics() == MailboxStatistics(capacity=5, queued=0, peak=0, closed=False)
    for i in range(3):
        await box.send(i)
    await box.receive()
    await box.receive()
    box.send_nowait(9)
    assert box.statistics() == MailboxStatistics(capacity=5, queued=2, peak=3, closed=False)


async def test_peak_never_exceeds_capacity_under_a_parked_receiver() -> None:
    """Hand-offs to a waiting receiver never make `peak` read more than the capacity."""
    box: Mailbox[int] = Mailbox(capacity=1)
    received: list[int] = []

    async def consumer() -> None:
        async for item in box:
            received.append(item)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer)
        await trio.testing.wait_all_tasks_blocked()
        for i in range(20):
            await box.send(i)
        box.close()
    assert received == list(range(20))
    assert 1 <= box.statistics().peak <= 1


def test_capacity_must_be_positive() -> None:
    """A mailbox needs room for at least one item."""
    with pytest.raises(ValueError, match=r"^capacity must be >= 1, got 0$"):
        Mailbox(capacity=0)
    assert Mailbox().statistics().capacity == 64


def _live_would_blocks() -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if isinstance(obj, trio.WouldBlock))


async def test_waiting_receivers_and_senders_keep_no_exception_alive() -> None:
    """An idle agent waits in ``receive``; the ``WouldBlock`` that sent it there (and its
    traceback) must not live as long as the wait: it is memory per idle agent."""
    before = _live_would_blocks()
    empty: list[Mailbox[int]] = [Mailbox(capacity=1) for _ in range(20)]
    full: list[Mailbox[int]] = [Mailbox(capacity=1) for _ in range(20)]
    for box in full:
        box.send_nowait(0)
    async with trio.open_nursery() as nursery:
        for box in empty:
            nursery.start_soon(box.receive)
        for box in full:
            nursery.start_soon(box.send, 1)
        await trio.testing.wait_all_tasks_blocked()
        assert _live_would_blocks() == before
        nursery.cancel_scope.cancel()


async def test_parked_receivers_are_served_in_arrival_order_and_cancelled_ones_leave() -> None:
    """Several receivers waiting on one mailbox get items first come, first served; one that
    is cancelled while it waits (first in line or not) gets nothing and loses no item."""
    box: Mailbox[int] = Mailbox(capacity=4)
    got: dict[str, int] = {}

    async def receiver(name: str) -> None:
        got[name] = await box.receive()

    async with trio.open_nursery() as nursery:
        scopes = {}
        for name in "abcde":
            scope = trio.CancelScope()
            scopes[name] = scope

            async def run(name: str = name, scope: trio.CancelScope = scope) -> None:
                with scope:
                    await receiver(name)

            nursery.start_soon(run)
            await trio.testing.wait_all_tasks_blocked()
        scopes["a"].cancel()  # the first in line
        await trio.testing.wait_all_tasks_blocked()
        box.send_nowait(1)  # to b
        await trio.testing.wait_all_tasks_blocked()
        scopes["d"].cancel()  # one further back, after c came first in line
        await trio.testing.wait_all_tasks_blocked()
        scopes["c"].cancel()  # c, promoted to the front meanwhile
        await trio.testing.wait_all_tasks_blocked()
        box.send_nowait(2)  # to e
    assert got == {"b": 1, "e": 2}
    assert box.statistics().queued == 0



async def test_close_ends_every_parked_receiver_and_refuses_every_parked_sender() -> None:
    """close() wakes all waiters: receivers with EndOfChannel, senders with
    ClosedResourceError."""
    empty: Mailbox[int] = Mailbox(capacity=1)
    full: Mailbox[int] = Mailbox(capacity=1)
    full.send_nowait(0)
    ends: list[str] = []

    async def receive() -> None:
        with pytest.raises(trio.EndOfChannel):
            await empty.receive()
        ends.append("receiver")

    async def send(item: int) -> None:
        with pytest.raises(trio.ClosedResourceError):
            await full.send(item)
        ends.append("sender")

    async with trio.open_nursery() as nursery:
        for i in range(3):
            nursery.start_soon(receive)
            nursery.start_soon(send, i + 1)
        await trio.testing.wait_all_tasks_blocked()
        empty.close()
        full.close()
    assert sorted(ends) == ["receiver"] * 3 + ["sender"] * 3
    assert full.receive_nowait() == 0


async def test_a_cancelled_parked_sender_leaves_the_line_and_its_item_never_arrives() -> None:
    """A sender waiting on a full mailbox and cancelled sends nothing; the next one's item is
    the one that moves in when room is made."""
    box: Mailbox[int] = Mailbox(capacity=1)
    box.send_nowait(0)
    async with trio.open_nursery() as nursery:
        async with trio.open_nursery() as inner:
            inner.start_soon(box.send, 1)
            await trio.testing.wait_all_tasks_blocked()
            inner.cancel_scope.cancel()
        nursery.start_soon(box.send, 2)
        await trio.testing.wait_all_tasks_blocked()
        assert box.receive_nowait() == 0
        await trio.testing.wait_all_tasks_blocked()
        assert box.receive_nowait() == 2
    assert box.statistics().queued == 0
