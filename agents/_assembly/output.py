"""The session's output: a bounded FIFO from the session's agents to the caller that reads it.

Every message of every agent passes through it (a tree of 10 000 agents streams five per
agent), so it is not a Trio memory channel: a channel's ``send_nowait`` and ``receive_nowait``
cost about 70 bytecodes per message through its statistics, its two channel objects and their
state; here queuing a message that fits is an append, and taking one a ``popleft``.

It behaves as a memory channel of ``capacity`` for what the session needs: a message put while
the reader waits goes straight to it; a full buffer makes ``put`` wait (backpressure on a slow
reader: ``put_nowait`` says False instead); a sender parked on a full buffer is woken once a
receive has moved its message into the buffer; cancelling a parked sender or receiver takes it
out of line (the sender's message is not sent); ``close`` ends the output once what is queued
is read.

One thing a channel does not have: a *notice* (``put_notice``) is queued without waiting, even
past a full buffer, in line behind the parked senders; a notice with the key of one still
waiting in line takes that one's place. The session sends the notices about background agents
this way (their progress and their end, keyed per agent): an agent must not wait, alive and
holding its memory, until a slow reader reads that it has ended, and the line they wait in is
bounded by the live agents, not by how long the reader takes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Hashable
from functools import partial
from typing import Any, Generic, TypeVar

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

from .._loop.contracts import DONE
from ..messages import Message, ResultMessage

T = TypeVar("T")

__all__ = ["MessageStream", "Messages", "drain"]


class MessageStream(Generic[T]):
    """A bounded FIFO with any number of writers and readers (one, as a rule)::

    stream: MessageStream[Message] = MessageStream(256)
    stream.put_nowait(message) or await stream.put(message)
    message = stream.pop()              # None when nothing is queued
    message = await stream.get()        # trio.EndOfChannel once closed and drained
    stream.close()
    """

    __slots__ = ("_capacity", "_closed", "_items", "_receivers", "_senders")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._capacity = capacity
        self._closed = False
        self._items: deque[T] = deque()
        # Parked readers (nothing is queued while one waits), and the line behind a full
        # buffer in arrival order: parked writers (by task) with the message each brings, and
        # notices (by their key). Something waits in line only while the buffer is full.
        self._receivers: dict[Task, None] = {}
        self._senders: dict[Hashable, T] = {}

    @property
    def closed(self) -> bool:
        return self._closed

    def put_nowait(self, item: T) -> bool:
        """Queue ``item`` (or hand it to a waiting reader); False, queuing nothing, when full.

        Raises ``trio.ClosedResourceError`` once closed."""
        if self._closed:
            raise trio.ClosedResourceError("the output is closed")
        receivers = self._receivers
        if receivers:
            task = next(iter(receivers))
            del receivers[task]
            reschedule(task, Value(item))
            return True
        items = self._items
        if len(items) >= self._capacity:
            return False
        items.append(item)
        return True

    def put_notice(self, item: T, key: Hashable, replaces: Hashable | None = None) -> None:
        """Queue ``item`` at once, even past a full buffer: in line behind the parked senders,
        in place of the notice with the same ``key`` if one still waits there (a newer word of
        the same thing), else last. So the caller's keys bound how far past its capacity the
        stream can hold. A notice with key ``replaces`` still waiting in line is dropped (a
        task's last progress report, once its end is queued: the end says more, and a slow
        reader is spared the stale one). Raises ``trio.ClosedResourceError`` once closed."""
        senders = self._senders
        # (``put_nowait`` raises once closed; and closing empties the line, so anything waits
        # in it only while the stream is open)
        if not senders and self.put_nowait(item):
            return
        if replaces is not None:
            # (the buffer stays full while anything waits in line: the item waits here)
            senders.pop(replaces, None)
        senders[key] = item

    def send(self, item: T) -> Awaitable[None]:
        """``put`` for a writer that need not be a checkpoint when there is room: the item
        queued at once (a reusable awaitable done at once handed back, no coroutine), or
        ``put``'s wait when the buffer is full. (Every message of every agent of a tree comes
        this way: a coroutine per message would be one more object for the collector.)"""
        if self.put_nowait(item):
            return DONE
        return self.put(item)

    async def put(self, item: T) -> None:
        """Queue ``item``, waiting while the buffer is full (a checkpoint either way).

        A full buffer (a reader never waits while anything is queued) parks the sender at once:
        the wait is the checkpoint, and a pending cancellation takes the item back out of line
        before anything can receive it, as ``checkpoint_if_cancelled`` would have stopped it
        (the session's writers call this right after ``put_nowait`` said False: a parked
        sender is the common case here, and that check and a second ``put_nowait`` its cost).
        """
        if self._closed or len(self._items) < self._capacity:
            await checkpoint_if_cancelled()
            if self.put_nowait(item):  # room, or a reader waiting (raises once closed)
                await cancel_shielded_checkpoint()
                return
        task = current_task()
        senders = self._senders
        senders[task] = item
        # by the receive that queued our item, or ``close``
        await wait_task_rescheduled(partial(_out_of_line, senders, task))

    def pop(self) -> T | None:
        """The oldest queued item, or None when nothing is queued (items are never None)."""
        items = self._items
        if not items:
            return None
        item = items.popleft()
        senders = self._senders
        if senders:
            waiting = next(iter(senders))
            items.append(senders.pop(waiting))
            if type(waiting) is Task:  # a parked sender (else a notice): its put is done
                reschedule(waiting)
        return item

    async def get(self) -> T:
        """The oldest item, waiting for one; ``trio.EndOfChannel`` once closed and drained."""
        await checkpoint_if_cancelled()
        item = self.pop()
        if item is not None:
            await cancel_shielded_checkpoint()
            return item
        if self._closed:
            raise trio.EndOfChannel
        task = current_task()
        receivers = self._receivers
        receivers[task] = None
        received: T = await wait_task_rescheduled(partial(_out_of_line, receivers, task))
        return received

    def close(self) -> None:
        """No more items: readers get what is queued (the notices in line too), then
        ``EndOfChannel``; parked writers get ``ClosedResourceError`` (their items are not sent).
        Idempotent."""
        if self._closed:
            return
        self._closed = True
        senders, self._senders = self._senders, {}
        for waiting, item in senders.items():
            if type(waiting) is Task:
                reschedule(waiting, Error(trio.ClosedResourceError("the output was closed")))
            else:
                self._items.append(item)
        receivers, self._receivers = self._receivers, {}
        for task in receivers:
            reschedule(task, Error(trio.EndOfChannel()))

    def __aiter__(self) -> MessageStream[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.get()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None


def _out_of_line(waiting: dict[Any, Any], task: Task, _: RaiseCancelT) -> Abort:
    """A parked sender's or reader's abort: out of line (a sender's item is not sent). A
    ``partial`` of it per wait, not a closure: a closure's cells are made at every call of
    ``put`` and ``get``, and are two objects more for the collector while the task waits."""
    waiting.pop(task, None)
    return Abort.SUCCEEDED


class Messages:
    """An iterator over the client's output. Not an async generator on purpose: callers break
    out of these loops all the time, and an abandoned generator would need finalizing."""

    def __init__(self, receive: MessageStream[Message], *, until_result: bool) -> None:
        self._receive = receive
        self._until_result = until_result
        self._done = False

    def __aiter__(self) -> Messages:
        return self

    async def __anext__(self) -> Message:
        if self._done:
            raise StopAsyncIteration
        try:
            message = await self._receive.get()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            self._done = True
            raise StopAsyncIteration from None
        if self._until_result and isinstance(message, ResultMessage):
            self._done = True
        return message


async def drain(receive: MessageStream[Message]) -> None:
    """Read ``receive`` to its end, keeping nothing (output nobody will read)."""
    async for _ in receive:
        pass
