"""The session's output stream: the messages of every agent, in order, to the one reader.

A Trio memory channel would do, but every message of a session passes through it (two per
tool call, an assistant message and its result), and its send and receive cost more than the
rest of a no-op message's path. :func:`open_output_stream` gives the same two ends, cut to what
the session needs: one bounded deque owned by the stream, the reader woken once when it waits
(the messages sent meanwhile are taken without a wake-up each), and a writer that waits only
while the buffer is full — so a slow reader still holds the agents back where a memory channel
of the same size would.

Its semantics are a memory channel's: ``send_nowait`` raises ``trio.WouldBlock`` when the
buffer is full, ``ClosedResourceError`` after its own end closed, ``BrokenResourceError`` after
the reader's closed; ``receive`` waits for a message, and raises ``EndOfChannel`` once the
writer closed and every message sent before was received; ``receive_nowait`` raises
``trio.WouldBlock`` when there is nothing yet. A send is all or nothing: a message is in the
buffer or it was not sent (a cancelled ``send`` sent nothing), so no message is lost to a
cancellation. Closing the reader's end drops what it did not read and wakes the writers that
wait with ``BrokenResourceError``.
"""

from __future__ import annotations

from collections import deque

import attrs
import trio

from ..messages import Message

__all__ = ["OutputReceiver", "OutputSender", "open_output_stream"]


@attrs.define(eq=False)
class _State:
    #: how many messages may wait in ``buffer``; 0 once either end is closed (so that the
    #: writer's fast path needs no other check)
    capacity: int
    buffer: deque[Message] = attrs.Factory(deque)
    #: the tasks waiting to read (each woken by one message, and out of the line once woken),
    #: and those waiting to write, and how many of them have not been woken yet (an int, not
    #: the lot's ``len``, a method call)
    readers: deque[trio.lowlevel.Task] = attrs.Factory(deque)
    writers: trio.lowlevel.ParkingLot = attrs.Factory(trio.lowlevel.ParkingLot)
    waiting_writers: int = 0
    send_closed: bool = False
    receive_closed: bool = False

    def close(self) -> None:
        self.capacity = 0
        self.waiting_writers = 0
        readers = self.readers
        while readers:
            trio.lowlevel.reschedule(readers.popleft())
        self.writers.unpark_all()


def open_output_stream(capacity: int) -> tuple[OutputSender, OutputReceiver]:
    """The two ends of a stream buffering up to ``capacity`` messages (at least 1)."""
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    state = _State(capacity)
    return OutputSender(state), OutputReceiver(state)


class OutputSender(trio.abc.SendChannel[Message]):
    """The writing end: what every agent of the session emits through."""

    __slots__ = ("_state",)

    def __init__(self, state: _State) -> None:
        self._state = state

    def put_nowait(self, value: Message) -> bool:
        """``send_nowait`` without the exception: False (nothing sent) when the buffer is full.
        What the loop calls per message."""
        state = self._state
        buffer = state.buffer
        if len(buffer) < state.capacity:
            buffer.append(value)
            readers = state.readers
            if readers:  # one woken per message (a woken task has left the line)
                trio.lowlevel.reschedule(readers.popleft())
            return True
        if state.send_closed:
            raise trio.ClosedResourceError("the output stream's writer is closed")
        if state.receive_closed:
            raise trio.BrokenResourceError("the output stream's reader is closed")
        return False

    def send_nowait(self, value: Message) -> None:
        if not self.put_nowait(value):
            raise trio.WouldBlock

    async def send(self, value: Message) -> None:
        """Send ``value``, waiting while the buffer is full (the backpressure on the agents)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        state = self._state
        if self.put_nowait(value):
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        while True:  # a wait is the schedule point
            state.waiting_writers += 1
            try:
                await state.writers.park()
            except BaseException:  # cancelled in the lot: nobody woke it (a woken task
                state.waiting_writers -= 1  # cannot be cancelled out of its park)
                raise
            if self.put_nowait(value):
                return

    def close(self) -> None:
        """No more messages: the reader gets ``EndOfChannel`` once it has read them all."""
        state = self._state
        if not state.send_closed:
            state.send_closed = True
            state.close()

    def __enter__(self) -> OutputSender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def aclose(self) -> None:
        self.close()
        await trio.lowlevel.checkpoint()


class OutputReceiver(trio.abc.ReceiveChannel[Message]):
    """The reading end: the ``query()`` iterator's, or the ``AgentClient``'s."""

    __slots__ = ("_state",)

    def __init__(self, state: _State) -> None:
        self._state = state

    def receive_nowait(self) -> Message:
        state = self._state
        buffer = state.buffer
        if buffer:  # empty once the reader's end is closed
            value = buffer.popleft()
            if state.waiting_writers:  # one woken per message taken
                state.waiting_writers -= 1
                state.writers.unpark()
            return value
        if state.receive_closed:
            raise trio.ClosedResourceError("the output stream's reader is closed")
        if state.send_closed:
            raise trio.EndOfChannel
        raise trio.WouldBlock

    async def receive(self) -> Message:
        """The next message, waiting for one; a wait is this call's schedule point (no second
        one after it: each costs the reader a pass of the scheduler)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            value = self.receive_nowait()
        except trio.WouldBlock:
            pass
        else:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return value
        readers = self._state.readers
        while True:  # wait in line until a message (or the close) wakes this task
            task = trio.lowlevel.current_task()
            readers.append(task)

            def abort(_: object, task: trio.lowlevel.Task = task) -> trio.lowlevel.Abort:
                readers.remove(task)  # cancelled in line: nobody woke it
                return trio.lowlevel.Abort.SUCCEEDED

            await trio.lowlevel.wait_task_rescheduled(abort)
            try:
                return self.receive_nowait()
            except trio.WouldBlock:
                continue

    def close(self) -> None:
        """Stop reading: unread messages are dropped, writers get ``BrokenResourceError``."""
        state = self._state
        if not state.receive_closed:
            state.receive_closed = True
            state.buffer.clear()
            state.close()

    def __enter__(self) -> OutputReceiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def aclose(self) -> None:
        self.close()
        await trio.lowlevel.checkpoint()
