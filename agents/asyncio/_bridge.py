"""The crossings between a Trio session and its asyncio caller, on the loop's one thread.

* :class:`MessageStream`: messages from a Trio task to an asyncio reader, bounded (a reader
  that stops reading holds the session up, as the native output channel does).
* :class:`Callbacks`: the user's asyncio callbacks (hooks, ``can_use_tool``, in-process tool
  handlers, a stream of prompts) called from Trio: each call is an asyncio task of the caller's
  loop, in a copy of the caller's context, awaited by the calling Trio task; cancelling that
  Trio task cancels the asyncio task and waits for it to end.
* :func:`trio_options`: the options a Trio session needs, with every callback (and a session
  store of the program's own) made callable from Trio.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from typing import Any, Generic, TypeVar

import attrs
import outcome
import trio

from ..hooks import HookMatcher
from ..options import AgentOptions
from ..tools.base import SdkMcpServer

__all__ = ["END", "CallbackCancelled", "Callbacks", "MessageStream", "trio_options"]

T = TypeVar("T")

#: What :meth:`MessageStream.get` returns once the stream has ended and been read to its end.
END: Any = object()
_EXHAUSTED: Any = object()
#: Loop iterations a Trio task waits for an asyncio callback before it sleeps (see ``wait``).
SPIN_TICKS = 8


@attrs.define(eq=False)
class MessageStream(Generic[T]):
    """Items from one Trio producer to one asyncio consumer, then the producer's outcome."""

    loop: asyncio.AbstractEventLoop
    capacity: int = 64
    _items: deque[T] = attrs.field(factory=deque)
    _end: outcome.Outcome[Any] | None = None
    #: asyncio tasks waiting for an item or the end (a reader, and ``disconnect`` at the end)
    _consumers: list[asyncio.Future[None]] = attrs.field(factory=list)
    _producer: trio.lowlevel.Task | None = None

    @property
    def end(self) -> outcome.Outcome[Any] | None:
        """The producer's outcome, once it has ended."""
        return self._end

    # -- the Trio side ----------------------------------------------------------------------------
    async def put(self, item: T) -> None:
        if len(self._items) >= self.capacity:
            self._producer = trio.lowlevel.current_task()

            def abort(_: Any) -> trio.lowlevel.Abort:
                self._producer = None
                return trio.lowlevel.Abort.SUCCEEDED

            await trio.lowlevel.wait_task_rescheduled(abort)
        self._items.append(item)
        self._wake()

    def finish(self, result: outcome.Outcome[Any]) -> None:
        if self._end is None:
            self._end = result
            self._wake()

    def _wake(self) -> None:
        for consumer in self._consumers:
            if not consumer.done():
                consumer.set_result(None)
        self._consumers.clear()

    # -- the asyncio side -------------------------------------------------------------------------
    async def get(self) -> T:
        """The next item, or :data:`END` once the producer has ended and all was read."""
        while not self._items:
            if self._end is not None:
                return END  # type: ignore[no-any-return]
            waiter = self.loop.create_future()
            self._consumers.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._consumers:
                    self._consumers.remove(waiter)
        item = self._items.popleft()
        producer = self._producer
        if producer is not None:
            self._producer = None
            trio.lowlevel.reschedule(producer)
        return item

    async def wait_end(self, on_cancel: Callable[[], object]) -> bool:
        """Wait for the producer's end, dropping what it sends; each cancellation of the caller
        calls ``on_cancel`` and is absorbed. Returns whether one was."""
        absorbed = False
        while self._end is None:
            try:
                await self.get()
            except asyncio.CancelledError:
                absorbed = True
                on_cancel()
            self._items.clear()
        return absorbed


@attrs.define(eq=False)
class Callbacks:
    """Calls from Trio into the asyncio code of one caller (loop and context)."""

    loop: asyncio.AbstractEventLoop
    context: contextvars.Context

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, its awaitable awaited by an asyncio task (from Trio)."""
        result = fn(*args, **kwargs)
        if not inspect.isawaitable(result):
            return result
        return await self.wait(result)

    async def wait(self, awaitable: Any) -> Any:
        """Await ``awaitable`` in an asyncio task; the calling Trio task sleeps meanwhile."""
        coro = awaitable if asyncio.iscoroutine(awaitable) else _await(awaitable)
        task = self.loop.create_task(coro, context=self.context.copy())
        waiter = trio.lowlevel.current_task()
        raise_cancel: list[Callable[[], Any]] = []

        def done(_: asyncio.Task[Any]) -> None:  # an asyncio callback, on the loop's thread
            if raise_cancel:
                trio.lowlevel.reschedule(waiter, outcome.capture(raise_cancel[0]))
            else:
                trio.lowlevel.reschedule(waiter, _result(task))

        def abort(cancel: Callable[[], Any]) -> trio.lowlevel.Abort:
            # Trio cancels us: cancel the asyncio task and stay asleep until it has ended.
            raise_cancel.append(cancel)
            task.cancel()
            return trio.lowlevel.Abort.FAILED

        # A quick callback (most are) ends within a few loop iterations: wait for it by
        # yielding to the loop a few times first. Trio's ticks then stay scheduled on the loop
        # and the answer needs no wake-up through Trio's I/O thread, which costs a round trip
        # between threads (hundreds of microseconds on a busy machine). Not cancellable here:
        # at most SPIN_TICKS ticks late.
        for _ in range(SPIN_TICKS):
            await trio.lowlevel.cancel_shielded_checkpoint()
            if task.done():
                return _result(task).unwrap()
        task.add_done_callback(done)
        return await trio.lowlevel.wait_task_rescheduled(abort)

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` as an async function Trio can await (name and docstring kept)."""

        @functools.wraps(fn)
        async def from_trio(*args: Any, **kwargs: Any) -> Any:
            return await self.call(fn, *args, **kwargs)

        return from_trio

    def prompts(self, source: AsyncIterable[Any]) -> AsyncIterator[Any]:
        """An asyncio async iterable of prompts, iterated from Trio."""
        return _Prompts(self, source)


class CallbackCancelled(RuntimeError):
    """An asyncio task running a callback was cancelled from outside the session (the loop
    shutting down cancels every task, say). The session sees this error, not the asyncio
    ``CancelledError``: a Trio session may only be cancelled through its own cancel scopes."""


def _result(task: asyncio.Task[Any]) -> outcome.Outcome[Any]:
    if task.cancelled():
        return outcome.Error(
            CallbackCancelled(
                f"the asyncio task {task.get_name()!r} running a callback was "
                "cancelled from outside the session"
            )
        )
    result: outcome.Outcome[Any] = outcome.capture(task.result)
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


async def _next(iterator: AsyncIterator[Any]) -> Any:
    # StopAsyncIteration would cross an asyncio task badly: a sentinel crosses instead
    try:
        return await iterator.__anext__()
    except StopAsyncIteration:
        return _EXHAUSTED


class _Prompts:
    """Trio's view of an asyncio async iterable: each item fetched by an asyncio task."""

    def __init__(self, callbacks: Callbacks, source: AsyncIterable[Any]) -> None:
        self._callbacks = callbacks
        self._source = source
        self._iterator: AsyncIterator[Any] | None = None

    def __aiter__(self) -> _Prompts:
        return self

    async def __anext__(self) -> Any:
        if self._iterator is None:
            self._iterator = self._source.__aiter__()
        item = await self._callbacks.wait(_next(self._iterator))
        if item is _EXHAUSTED:
            raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        """Close the asyncio iterator (its ``finally`` runs on its loop) when the session stops
        reading it early, as it closes a Trio one."""
        aclose = getattr(self._iterator, "aclose", None)
        if aclose is not None:
            await self._callbacks.wait(aclose())


def _server(server: SdkMcpServer, callbacks: Callbacks) -> SdkMcpServer:
    tools = [attrs.evolve(t, handler=callbacks.wrap(t.handler)) for t in server.tools]
    return SdkMcpServer(name=server.name, version=server.version, tools=tuple(tools))


def _hooks(hooks: Mapping[str, Any], callbacks: Callbacks) -> dict[str, Any]:
    wrapped: dict[str, Any] = {}
    for event, matchers in hooks.items():
        if isinstance(matchers, list | tuple):
            wrapped[event] = [
                attrs.evolve(m, hooks=[callbacks.wrap(h) for h in m.hooks])
                if isinstance(m, HookMatcher)
                else m
                for m in matchers
            ]
        else:
            wrapped[event] = matchers  # not a list: the session's validation says what is wrong
    return wrapped


class _Store:
    """A session store written for asyncio, as the Trio session sees it: each of its async
    methods runs on the caller's loop (its plain methods are called as they are). Only the
    methods the store has exist here too, so the session's checks for optional ones
    (``list_sessions``, ...) see the same store."""

    def __init__(self, store: Any, callbacks: Callbacks) -> None:
        self._store = store
        self._callbacks = callbacks

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        return self._callbacks.wrap(value) if inspect.iscoroutinefunction(value) else value


def _is_ours(value: Any) -> bool:
    """Objects of trio-agents' own classes are Trio code already (its stores, backends)."""
    return type(value).__module__.split(".", 1)[0] in ("agents", "runtime")


def trio_options(options: AgentOptions, callbacks: Callbacks) -> AgentOptions:
    """``options`` with each user callback run on the caller's asyncio loop (and a session store
    of the program's own too: the stores trio-agents ships are Trio code and stay as they are).
    """
    changes: dict[str, Any] = {}
    if options.session_store is not None and not _is_ours(options.session_store):
        changes["session_store"] = _Store(options.session_store, callbacks)
    if options.can_use_tool is not None:
        changes["can_use_tool"] = callbacks.wrap(options.can_use_tool)
    if options.hooks:
        changes["hooks"] = _hooks(options.hooks, callbacks)
    if any(isinstance(s, SdkMcpServer) for s in options.mcp_servers.values()):
        changes["mcp_servers"] = {
            key: _server(s, callbacks) if isinstance(s, SdkMcpServer) else s
            for key, s in options.mcp_servers.items()
        }
    return attrs.evolve(options, **changes) if changes else options
