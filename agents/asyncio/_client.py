"""``AgentClient`` (the Agent SDK's ``ClaudeSDKClient``) for asyncio.

A Trio task of the loop's guest run owns the native :class:`agents.AgentClient` from
``connect()`` to ``disconnect()`` and copies its messages into a
:class:`~agents.asyncio._bridge.MessageStream`; ``receive_messages()`` and
``receive_response()`` read that stream. Each command (``query``, ``interrupt``,
``set_permission_mode``, ...) runs the native method as a task of the guest run and returns its
result or raises its exception. As in the Agent SDK, ``disconnect()`` (and leaving ``async
with``) ends the session at once: a turn still running is cancelled, and ``disconnect()`` returns
when everything of the session has ended.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import outcome
import trio

from .. import AgentClient as TrioAgentClient
from ..messages import Message, ResultMessage
from ..options import AgentOptions
from . import _guest
from ._bridge import END, Callbacks, MessageStream, trio_options

__all__ = ["AgentClient"]

T = TypeVar("T")


class AgentClient:
    """A streaming-input session for asyncio programs: the Agent SDK's ``ClaudeSDKClient``.

    ::

        async with AgentClient(AgentOptions(allowed_tools=["Read"])) as client:
            await client.query("What is in README.md?")
            async for message in client.receive_response():
                print(message)

    Prompts sent while a turn runs are queued; error results do not end the client.
    """

    def __init__(self, options: AgentOptions | None = None) -> None:
        self.options = options or AgentOptions()
        self._client: TrioAgentClient | None = None
        self._stream: MessageStream[Message] | None = None
        self._scope: trio.CancelScope | None = None
        self._run: _guest.GuestRun | None = None
        self._callbacks: Callbacks | None = None
        self._context: contextvars.Context | None = None

    async def __aenter__(self) -> AgentClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.disconnect()

    async def connect(self, prompt: str | AsyncIterable[Any] | None = None) -> None:
        """Start the session (and send ``prompt`` if given); ``async with`` calls it."""
        if self._stream is not None:
            raise RuntimeError("AgentClient is already connected; disconnect() it first")
        loop = asyncio.get_running_loop()
        self._context = context = contextvars.copy_context()
        self._callbacks = callbacks = Callbacks(loop, context)
        options = trio_options(self.options, callbacks)
        stream: MessageStream[Message] = MessageStream(loop)
        self._stream = stream
        ready: _guest.Completion[TrioAgentClient] = _guest.Completion(loop)

        async def session() -> None:
            async with TrioAgentClient(options) as client:
                ready.set(outcome.Value(client))
                async for message in client.receive_messages():
                    await stream.put(message)

        def ended(result: outcome.Outcome[None]) -> None:
            stream.finish(result)
            if isinstance(result, outcome.Error):  # it failed before it was ready
                ready.set(result)

        self._run = await _guest.acquire()
        self._scope = self._run.start(session, ended, context)
        try:
            self._client = (await ready.wait()).unwrap()
        except BaseException:
            await self.disconnect()
            raise
        if prompt is not None:
            await self.query(prompt)

    async def disconnect(self) -> None:
        """End the session now (a running turn is cancelled) and wait until it has ended."""
        stream, scope, run = self._stream, self._scope, self._run
        if stream is None or scope is None or run is None:
            return
        self._client = None
        scope.cancel()
        absorbed = await stream.wait_end(scope.cancel)
        self._stream = self._scope = self._run = None
        if await run.settle() or absorbed:
            raise asyncio.CancelledError

    def _require(self) -> TrioAgentClient:
        """The connected Trio client, used from the loop that connected it. From another loop
        (another thread's) a command would run the session's Trio code in that loop's guest
        run: a second Trio run touching the first's tasks (its main agent's wake-up lost, the
        session hung), so it is refused; called with no loop running, it is a plain read."""
        if self._client is None:
            raise RuntimeError(
                "AgentClient is not connected: use 'async with AgentClient(...) as client' "
                "or 'await client.connect()'"
            )
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        callbacks = self._callbacks
        if loop is not None and callbacks is not None and loop is not callbacks.loop:
            raise RuntimeError(
                "AgentClient is connected on another event loop: use it from the loop that "
                "connected it (its session runs in that loop's Trio guest run)"
            )
        return self._client

    async def _call(self, method: Callable[[], Awaitable[T]]) -> T:
        assert self._context is not None
        return await _guest.call_in_trio(method, self._context)

    @property
    def session_id(self) -> str:
        return self._require().session_id

    async def query(self, prompt: str | AsyncIterable[Any], session_id: str = "default") -> None:
        """Queue a prompt (or each prompt of an asyncio async iterable) for the main agent."""
        client = self._require()
        assert self._callbacks is not None
        sent = prompt if isinstance(prompt, str) else self._callbacks.prompts(prompt)
        await self._call(lambda: client.query(sent, session_id))

    def receive_messages(self) -> AsyncIterator[Message]:
        """Every message of the session, as it comes (until the session ends)."""
        self._require()
        assert self._stream is not None
        return _Messages(self._stream, until_result=False)

    def receive_response(self) -> AsyncIterator[Message]:
        """Messages up to and including the next ``ResultMessage``."""
        self._require()
        assert self._stream is not None
        return _Messages(self._stream, until_result=True)

    async def interrupt(self) -> None:
        """Cancel the running turn: its tools are cancelled, its result says it was aborted."""
        await self._call(self._require().interrupt)

    async def set_permission_mode(self, mode: str) -> None:
        """Change the permission mode; it applies from the next tool call."""
        client = self._require()
        await self._call(lambda: client.set_permission_mode(mode))

    async def set_model(self, model: str | None = None) -> None:
        """Switch the main agent's model from its next request."""
        client = self._require()
        await self._call(lambda: client.set_model(model))

    async def stop_task(self, task_id: str) -> None:
        """Cancel a running subagent (and its subtree) by its agent id."""
        client = self._require()
        await self._call(lambda: client.stop_task(task_id))

    def statistics(self) -> Any:
        """The supervisor's statistics (live actors, depth, mailbox peaks)."""
        return self._require().statistics()

    def spend(self) -> dict[str, Any]:
        """The tree's spend so far: total, cap, and cost and turns per agent."""
        return self._require().spend()

    async def spawn(self, agent_type: str, **_: Any) -> Any:
        """Not available from asyncio yet: the handle it returns is a Trio object."""
        raise NotImplementedError(
            f"AgentClient.spawn({agent_type!r}) is not built for asyncio yet; "
            "use agents.AgentClient under trio.run, or let the model spawn it with the Agent tool"
        )


class _Messages:
    """An iterator over the client's stream: breaking out of it leaves nothing to finalize."""

    def __init__(self, stream: MessageStream[Message], *, until_result: bool) -> None:
        self._stream = stream
        self._until_result = until_result
        self._done = False

    def __aiter__(self) -> _Messages:
        return self

    async def __anext__(self) -> Message:
        if self._done:
            raise StopAsyncIteration
        message = await self._stream.get()
        if message is END:
            self._done = True
            end = self._stream.end
            # the session failed: its exception; ended by disconnect(): the end of the stream
            if isinstance(end, outcome.Error) and not isinstance(
                end.error, asyncio.CancelledError
            ):
                end.unwrap()
            raise StopAsyncIteration
        if self._until_result and isinstance(message, ResultMessage):
            self._done = True
        return message
