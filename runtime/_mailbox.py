"""A bounded FIFO mailbox, built directly on Trio's parking primitives.

An actor owns its mailbox; anyone holding a reference may send. One object holds the queue and
both ends (rather than handing out channel clones), so the kernel closes the mailbox exactly
once, when the actor ends, and counts what is queued without asking for a statistics object.

It is not a ``trio`` memory channel, though it behaves as one: a memory channel is two channel
objects and a state with a deque and two ordered dicts, over a kilobyte before anything is sent,
and an idle agent is little more than its mailbox. Here the queue is made when the first item
has to wait in it, and the tables of parked tasks when the first task parks.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

import attrs
import trio
from outcome import Error, Value
from trio.lowlevel import (
    Abort,
    RaiseCancelT,
    Task,
    cancel_shielded_checkpoint,
    checkpoint_if_cancelled,
    current_task,
    reschedule,
    wait_task_rescheduled,
)

T = TypeVar("T")


@attrs.frozen
class MailboxStatistics:
    """A snapshot of a mailbox: ``queued`` now, ``peak`` = the most ever queued at once."""

    capacity: int
    queued: int
    peak: int
    closed: bool


class Mailbox(Generic[T]):
    """A bounded FIFO; a full mailbox blocks senders (backpressure is the point).

    ``close()`` stops new sends but lets the owner drain what is queued; iteration ends once the
    mailbox is closed and empty::

        box: Mailbox[str] = Mailbox(capacity=8)
        await box.send("hello")
        box.close()
        async for item in box:
            ...

    As with a Trio memory channel: an item sent while a receiver waits goes straight to it; a
    sender parked on a full mailbox is woken once a receive has moved its item into the queue;
    cancelling a parked sender or receiver takes it out of line (the sender's item is not sent).

    ``queued`` counts items sent and not yet received. The counters move in the same synchronous
    step as the queue itself, so they are deterministic; the one approximation is an item
    handed straight to a parked receiver that has not resumed yet, which is why ``statistics``
    clamps ``peak`` to ``capacity`` (the queue itself never holds more).
    """

    __slots__ = (
        "_capacity",
        "_closed",
        "_items",
        "_peak",
        "_queued",
        "_receiver",
        "_receivers",
        "_senders",
    )

    def __init__(self, capacity: int = 64) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._capacity = capacity
        self._closed = False
        self._queued = 0
        self._peak = 0
        # Made when first needed: most mailboxes never hold an item nobody is waiting for, and
        # never see a sender wait.
        self._items: deque[T] | None = None
        # The parked receiver (there is one at most, the owner, but for a few mailboxes: the
        # others wait in ``_receivers``), and parked senders with the item each brings, in
        # arrival order.
        self._receiver: Task | None = None
        self._receivers: dict[Task, None] | None = None
        self._senders: dict[Task, T] | None = None

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def peak(self) -> int:
        """The most items ever queued at once (as in ``statistics()``, without building one)."""
        return min(self._peak, self._capacity)

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called (queued items may still be receivable)."""
        return self._closed

    @property
    def ready(self) -> int:
        """How many items ``receive_nowait`` would return now, without raising: lets a caller
        that would otherwise wait check first, so no ``WouldBlock`` is made on its way to idle."""
        items = self._items
        return 0 if items is None else len(items)

    # -- sending ----------------------------------------------------------------------------------

    def _offer(self, item: T) -> bool:
        """Hand ``item`` to a parked receiver or queue it; False when the mailbox is full."""
        if self._closed:
            raise trio.ClosedResourceError("the mailbox is closed")
        task = self._receiver
        if task is not None:
            self._next_receiver()
            reschedule(task, Value(item))
        else:
            items = self._items
            if items is None:
                items = self._items = deque()
            elif len(items) >= self._capacity:
                return False
            items.append(item)
        queued = self._queued + 1
        self._queued = queued
        if queued > self._peak:
            self._peak = queued
        return True

    async def send(self, item: T) -> None:
        """Queue ``item``, waiting while the mailbox is full.

        Raises ``trio.ClosedResourceError`` if the mailbox is (or gets, while waiting) closed.
        """
        await checkpoint_if_cancelled()
        if self._offer(item):
            await cancel_shielded_checkpoint()
            return
        task = current_task()
        senders = self._senders
        if senders is None:
            senders = self._senders = {}
        senders[task] = item

        def abort(_: RaiseCancelT) -> Abort:
            del senders[task]
            return Abort.SUCCEEDED

        # Woken by the receive that moved our item into the queue (or by ``close``).
        await wait_task_rescheduled(abort)

    def send_nowait(self, item: T) -> None:
        """Queue ``item`` or raise ``trio.WouldBlock`` if the mailbox is full."""
        if not self._offer(item):
            raise trio.WouldBlock

    # -- receiving --------------------------------------------------------------------------------

    def _take(self) -> T:
        """The oldest queued item (the queue must not be empty); a parked sender's item moves
        into the room it leaves."""
        items = self._items
        assert items
        item = items.popleft()
        self._queued -= 1
        senders = self._senders
        if senders:
            task = next(iter(senders))
            items.append(senders.pop(task))
            queued = self._queued + 1
            self._queued = queued
            if queued > self._peak:
                self._peak = queued
            reschedule(task)
        return item

    async def receive(self) -> T:
        """The oldest item, waiting for one; ``trio.EndOfChannel`` once closed and drained."""
        await checkpoint_if_cancelled()
        if self._items:
            item = self._take()
            await cancel_shielded_checkpoint()
            return item
        if self._closed:
            raise trio.EndOfChannel
        task = current_task()
        if self._receiver is None:
            # The usual case: a bound method, not a closure, for the one waiting receiver.
            self._receiver = task
            abort = self._abort_receiver
        else:
            receivers = self._receivers
            if receivers is None:
                receivers = self._receivers = {}
            receivers[task] = None

            def abort(_: RaiseCancelT) -> Abort:
                if self._receiver is task:  # it came first in line meanwhile
                    self._next_receiver()
                else:
                    del receivers[task]
                return Abort.SUCCEEDED

        # Nothing was raised to get here: an idle agent waits with no exception alive.
        received: T = await wait_task_rescheduled(abort)
        self._queued -= 1
        return received

    def _abort_receiver(self, _: RaiseCancelT) -> Abort:
        self._next_receiver()
        return Abort.SUCCEEDED

    def _next_receiver(self) -> None:
        """The first receiver has been served or has left: the next in line takes its place."""
        receivers = self._receivers
        if receivers:
            task = next(iter(receivers))
            del receivers[task]
            self._receiver = task
        else:
            self._receiver = None

    def receive_nowait(self) -> T:
        """The oldest item, or ``trio.WouldBlock`` if empty (``trio.EndOfChannel`` if closed)."""
        if self._items:
            return self._take()
        if self._closed:
            raise trio.EndOfChannel
        raise trio.WouldBlock

    def close(self) -> None:
        """Refuse further sends (blocked senders get ``ClosedResourceError``); idempotent.

        Queued items stay receivable: closing is how the owner says "drain, then stop"; parked
        receivers (there are some only when nothing is queued) get ``EndOfChannel``.
        """
        if self._closed:
            return
        self._closed = True
        if self._receiver is None and not self._senders:  # the usual end: nobody parked
            return
        senders, self._senders = self._senders, None
        for task in senders or ():
            reschedule(task, Error(trio.ClosedResourceError("the mailbox was closed")))
        first, self._receiver = self._receiver, None
        receivers, self._receivers = self._receivers, None
        for task in (*(() if first is None else (first,)), *(receivers or ())):
            reschedule(task, Error(trio.EndOfChannel()))

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
