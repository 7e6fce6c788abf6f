"""One Trio guest run per asyncio event loop, shared by every session of that loop.

Trio runs on top of the asyncio loop in *guest mode* (:func:`trio.lowlevel.start_guest_run`):
its ticks are callbacks of the asyncio loop, on the loop's thread, and only its wait for I/O
happens in a worker thread. So asyncio code and Trio code never run at the same moment, and
code of one side may call the other side's *synchronous* functions directly: asyncio code may
start a task in the guest nursery, cancel a Trio cancel scope or reschedule a sleeping Trio task
(Trio allows its sync functions from the host once the guest run is set up); Trio code may set an
asyncio future's result. Every crossing below is one of those calls: no locks, no threads.

Lifetime: the first session of a loop starts the guest run; each session holds it (``_active``);
when the last one ends, the run's main task returns and the run ends, and the asyncio caller of
that last session waits for the end, so nothing of Trio is left once it returns. A *keeper*
asyncio task awaits the end too: when the loop shuts down (``asyncio.run`` cancels every task
before it closes the loop) the keeper's cancellation cancels every session still running and
holds the loop until Trio has finished. Only one Trio run can exist per thread, and one asyncio
loop runs per thread at a time, so "this loop's guest run" is kept per thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import attrs
import trio
from outcome import Error, Outcome, Value

__all__ = ["Completion", "GuestRun", "acquire", "call_in_trio", "run_in_trio"]

T = TypeVar("T")

_local = threading.local()
#: Loop iterations Trio stays scheduled after it becomes ready (see ``GuestRun._main``): the
#: caller waiting for ``ready`` runs in the next one.
SPIN_TICKS = 2


@attrs.define(eq=False)
class Completion(Generic[T]):
    """The outcome of a piece of Trio work, set from Trio and awaited from asyncio.

    A fresh asyncio future per wait: cancelling the waiting asyncio task cancels only that
    future, and the outcome can still be awaited afterwards (cleanup after a cancellation)."""

    loop: asyncio.AbstractEventLoop
    outcome: Outcome[T] | None = None
    _waiters: list[asyncio.Future[None]] = attrs.field(factory=list)

    def set(self, result: Outcome[T]) -> None:
        """Record the outcome and wake the waiters (called from Trio, on the loop's thread)."""
        if self.outcome is not None:
            return
        self.outcome = result
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def wait(self) -> Outcome[T]:
        """Wait for the outcome; a cancellation of the caller raises ``CancelledError``."""
        if self.outcome is None:
            waiter = self.loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        assert self.outcome is not None
        return self.outcome

    async def wait_through_cancellation(self, on_cancel: Callable[[], object]) -> bool:
        """Wait for the outcome whatever happens; each cancellation of the caller calls
        ``on_cancel`` and is absorbed. Returns whether one was absorbed (the caller re-raises)."""
        absorbed = False
        while self.outcome is None:
            try:
                await self.wait()
            except asyncio.CancelledError:
                absorbed = True
                on_cancel()
        return absorbed


@attrs.define(eq=False)
class GuestRun:
    """The Trio run serving one asyncio loop; see the module docstring."""

    loop: asyncio.AbstractEventLoop
    _nursery: trio.Nursery | None = None
    _active: int = 0
    _idle: trio.Event = attrs.field(factory=trio.Event)
    _closing: bool = False
    _cancelled: bool = False
    _ready: Completion[None] = attrs.field(init=False)
    _ended: Completion[None] = attrs.field(init=False)
    _keeper: asyncio.Task[None] | None = None

    def __attrs_post_init__(self) -> None:
        self._ready = Completion(self.loop)
        self._ended = Completion(self.loop)

    @property
    def closing(self) -> bool:
        return self._closing

    @classmethod
    def open(cls, loop: asyncio.AbstractEventLoop) -> GuestRun:
        """Start a guest run on ``loop`` (from a task of that loop)."""
        run = cls(loop)
        # An empty context: the run's own tasks see none of the first caller's context
        # variables; each session's task gets a copy of its caller's (see ``start``).
        contextvars.Context().run(
            trio.lowlevel.start_guest_run,
            run._main,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=loop.call_soon,
            done_callback=run._done,
            # asyncio and uvloop own the signal wakeup fd; Trio must leave it alone
            host_uses_signal_set_wakeup_fd=True,
        )
        _local.run = run
        run._keeper = loop.create_task(run._keep(), name="agents.asyncio guest run")
        return run

    async def _main(self) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if self._cancelled:
                nursery.cancel_scope.cancel()
            self._ready.set(Value(None))
            # Stay on the loop for a few iterations, so that the first session, started by
            # asyncio code as soon as it sees ``ready``, finds Trio's ticks scheduled instead
            # of having to wake it through its I/O thread.
            for _ in range(SPIN_TICKS):
                await trio.lowlevel.cancel_shielded_checkpoint()
            await self._idle.wait()

    def _done(self, result: Outcome[None]) -> None:
        if getattr(_local, "run", None) is self:
            _local.run = None
        self._closing = True
        self._ended.set(result)

    async def _keep(self) -> None:
        """Await the run's end; if cancelled (the loop shutting down), end it first."""
        absorbed = await self._ended.wait_through_cancellation(self.cancel)
        assert self._ended.outcome is not None
        self._ended.outcome.unwrap()  # a failure here is a bug of this module or of Trio
        if absorbed:
            raise asyncio.CancelledError

    def cancel(self) -> None:
        """Cancel every session of this run (the loop is shutting down)."""
        self._cancelled = True
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    async def take_slot(self) -> None:
        """Hold the run open for one more task (given back by ``_release``, when it ends);
        wait until the run is ready to take tasks."""
        assert not self._closing
        self._active += 1
        if self._nursery is None:
            try:
                await self._ready.wait()
            except BaseException:
                self._release()
                raise

    async def wait_ended(self) -> None:
        await self._ended.wait()

    def _release(self) -> None:
        # The last session's end closes the run for good: a session starting after this waits
        # for its end and starts a new run, so ``settle`` never waits for someone else's.
        self._active -= 1
        if self._active == 0:
            self._closing = True
            self._idle.set()

    def start(
        self,
        async_fn: Callable[[], Awaitable[T]],
        on_done: Callable[[Outcome[T]], object],
        context: contextvars.Context,
    ) -> trio.CancelScope:
        """Run ``async_fn()`` as a task of the guest nursery, in a copy of ``context``, and
        hand its outcome to ``on_done`` (on the loop's thread). Needs a slot taken by
        :func:`acquire`, which the task gives back as it ends. The returned scope cancels it.

        The outcome of a cancelled task is ``CancelledError`` (the asyncio side's name for it);
        the Trio ``Cancelled`` itself goes on to the nursery, as Trio requires."""
        assert self._nursery is not None
        scope = trio.CancelScope()

        async def task() -> None:
            result: Outcome[T] = Error(asyncio.CancelledError())
            try:
                with scope:
                    result = Value(await async_fn())
            except trio.Cancelled:
                raise  # the run is being cancelled: ``result`` says so to the asyncio side
            except BaseException as exc:  # handed to the asyncio side, which raises it
                result = Error(exc)
            finally:
                self._release()
                on_done(result)

        # ``start_soon`` copies the current context: run it inside the caller's
        context.run(self._nursery.start_soon, task)
        return scope

    async def settle(self) -> bool:
        """After a session ended: if it was the last, wait until the run (and its keeper) have
        ended, so nothing of Trio is left. Returns whether a cancellation was absorbed."""
        if not self._closing:
            return False
        absorbed = await self._ended.wait_through_cancellation(self.cancel)
        keeper = self._keeper
        while keeper is not None and not keeper.done():
            try:
                await asyncio.wait([keeper])
            except asyncio.CancelledError:
                absorbed = True
        return absorbed


async def acquire() -> GuestRun:
    """The running loop's guest run, started if needed, with a slot taken for one task."""
    loop = asyncio.get_running_loop()
    while True:
        run: GuestRun | None = getattr(_local, "run", None)
        if run is not None and run.loop is not loop:
            raise RuntimeError(
                "agents.asyncio: a Trio guest run of another event loop is still running in "
                "this thread; close that loop with asyncio.run() (or let its sessions end) first"
            )
        if run is None:
            run = GuestRun.open(loop)
        if run.closing:  # the last session has just ended: wait for its run, then start anew
            await run.wait_ended()
            continue
        await run.take_slot()
        return run


async def run_in_trio(async_fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``await async_fn(*args)`` for a Trio async function, from asyncio.

    It runs in the running loop's Trio guest run (started for it if need be) and returns its
    value or raises its exception; cancelling the caller cancels it and waits for its end.
    For Trio objects an asyncio program holds, e.g. closing a backend it created::

        backend = AnthropicBackend()
        ...  # queries with AgentOptions(backend=backend)
        await run_in_trio(backend.aclose)

    Under Trio itself it simply awaits ``async_fn(*args)``."""
    if trio.lowlevel.in_trio_task():
        return await async_fn(*args)
    return await call_in_trio(lambda: async_fn(*args))


async def call_in_trio(async_fn: Callable[[], Awaitable[T]], context: Any = None) -> T:
    """``await async_fn()`` in the loop's guest run, from asyncio: its value, or its exception
    (the same object); cancelling the caller cancels it and waits until it has ended."""
    run = await acquire()
    loop = run.loop
    done: Completion[T] = Completion(loop)
    scope = run.start(async_fn, done.set, context or contextvars.copy_context())
    try:
        result = await done.wait()
    except asyncio.CancelledError:
        scope.cancel()
        await done.wait_through_cancellation(scope.cancel)
        await run.settle()
        raise
    if await run.settle():
        raise asyncio.CancelledError
    value: T = result.unwrap()
    return value
