"""A bounded FIFO mailbox: one object holding both ends of a Trio memory channel.

An actor owns its mailbox; anyone holding a reference may send. Keeping both ends in one object
(rather than handing out clones) lets the kernel close the mailbox exactly once, when the actor
ends, and count what is queued without asking the channel for a statistics object on every send.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import attrs
import trio
from trio.lowlevel import cancel_shielded_checkpoint, checkpoint_if_cancelled

T = TypeVar("T")


@attrs.frozen
class MailboxStatistics:
    """A snapshot of a mailbox: ``queued`` now, ``peak`` = the most ever queued at once."""

    capacity: int
    queued: int
    peak: int
    closed: bool


def _check_capacity(_instance: object, _attribute: object, value: int) -> None:
    if value < 1:
        raise ValueError(f"capacity must be >= 1, got {value}")


# Validated once, at construction; hot counters are then set without attrs hooks.
@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class Mailbox(Generic[T]):
    """A bounded FIFO; a full mailbox blocks senders (backpressure is the point).

    ``close()`` stops new sends but lets the owner drain what is queued; iteration ends once the
    mailbox is closed and empty::

        box: Mailbox[str] = Mailbox(capacity=8)
        await box.send("hello")
        box.close()
        async for item in box:
            ...

    ``queued`` counts items sent and not yet received. The counters move in the same synchronous
    step as the channel itself, so they are deterministic; the one approximation is an item
    handed straight to a parked receiver that has not resumed yet, which is why ``statistics``
    clamps ``peak`` to ``capacity`` (the buffer itself never holds more).
    """

    _capacity: int = attrs.field(default=64, validator=_check_capacity)
    _send_channel: trio.MemorySendChannel[T] = attrs.field(init=False)
    _receive_channel: trio.MemoryReceiveChannel[T] = attrs.field(init=False)
    _queued: int = attrs.field(default=0, init=False)
    _peak: int = attrs.field(default=0, init=False)
    _closed: bool = attrs.field(default=False, init=False)

    def __attrs_post_init__(self) -> None:
        self._send_channel, self._receive_channel = trio.open_memory_channel[T](self._capacity)

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def peak(self) -> int:
        """The most items ever queued at once (as in ``statistics()``, without building one)."""
        return min(self._peak, self._capacity)

    async def send(self, item: T) -> None:
        """Queue ``item``, waiting while the mailbox is full.

        Raises ``trio.ClosedResourceError`` if the mailbox is (or gets, while waiting) closed.
        """
        await checkpoint_if_cancelled()
        try:
            self._send_channel.send_nowait(item)
        except trio.WouldBlock:
            pass
        else:
            self._count_in()
            await cancel_shielded_checkpoint()
            return
        # Parked (outside the ``except``, as in ``receive``): by the time we resume, a receiver
        # has moved our item into the buffer.
        await self._send_channel.send(item)
        self._count_in()

    def send_nowait(self, item: T) -> None:
        """Queue ``item`` or raise ``trio.WouldBlock`` if the mailbox is full."""
        self._send_channel.send_nowait(item)
        self._count_in()

    async def receive(self) -> T:
        """The oldest item, waiting for one; ``trio.EndOfChannel`` once closed and drained."""
        await checkpoint_if_cancelled()
        try:
            item = self._receive_channel.receive_nowait()
        except trio.WouldBlock:
            pass
        else:
            self._queued -= 1
            await cancel_shielded_checkpoint()
            return item
        # Parked outside the ``except``: waiting inside it would keep the ``WouldBlock`` and its
        # traceback alive as long as the wait, a few hundred bytes per idle agent.
        item = await self._receive_channel.receive()
        self._queued -= 1
        return item

    def receive_nowait(self) -> T:
        """The oldest item, or ``trio.WouldBlock`` if empty (``trio.EndOfChannel`` if closed)."""
        item = self._receive_channel.receive_nowait()
        self._queued -= 1
        return item

    def close(self) -> None:
        """Refuse further sends (blocked senders get ``ClosedResourceError``); idempotent.

        Queued items stay receivable: closing is how the owner says "drain, then stop".
        """
        self._closed = True
        self._send_channel.close()

    def __aiter__(self) -> Mailbox[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    def statistics(self) -> MailboxStatistics:
        cap = self._capacity
        return MailboxStatistics(
            capacity=cap,
            queued=min(max(self._queued, 0), cap),
            peak=min(self._peak, cap),
            closed=self._closed,
        )

    def _count_in(self) -> None:
        queued = self._queued + 1
        self._queued = queued
        if queued > self._peak:
            self._peak = queued
