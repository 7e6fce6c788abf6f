"""``query()`` for asyncio: the Trio ``query()`` run in the loop's guest run, read from asyncio.

A Trio task of the guest run iterates the native ``query()`` and hands each message to a
:class:`~agents.asyncio._bridge.MessageStream`; this async generator reads the stream. Its
``finally`` runs however the caller leaves (the end, ``break``, an exception, a cancellation,
``asyncio.timeout``, the loop shutting down): a session still running is cancelled there, and the
generator returns only once it has ended, its tools, processes and HTTP streams with it.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import trio

from .. import query as trio_query
from .._assembly.prompts import check_prompt
from ..messages import Message
from ..options import AgentOptions
from . import _guest
from ._bridge import END, Callbacks, MessageStream, trio_options

__all__ = ["query"]


async def query(
    *, prompt: str | AsyncIterable[Any], options: AgentOptions | None = None
) -> AsyncIterator[Message]:
    """Run the agent loop on ``prompt`` and yield its messages, from asyncio.

    The same function as :func:`agents.query` (same messages, same ``ResultError`` after an
    error result of a single-shot prompt), for programs running under ``asyncio.run``,
    ``anyio.run`` or uvloop; hooks, ``can_use_tool``, tool handlers and a stream of prompts are
    asyncio code::

        async for message in query(prompt="What files are here?"):
            print(message)

    Under Trio (``anyio.run(..., backend="trio")``) it is :func:`agents.query` itself.
    """
    if trio.lowlevel.in_trio_task():
        async for message in trio_query(prompt=prompt, options=options):
            yield message
        return
    check_prompt(prompt)
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    callbacks = Callbacks(loop, context)
    session_options = trio_options(options or AgentOptions(), callbacks)
    session_prompt = prompt if isinstance(prompt, str) else callbacks.prompts(prompt)
    stream: MessageStream[Message] = MessageStream(loop)

    async def session() -> None:
        async for message in trio_query(prompt=session_prompt, options=session_options):
            await stream.put(message)

    run = await _guest.acquire()
    scope = run.start(session, stream.finish, context)
    try:
        while (message := await stream.get()) is not END:
            yield message
    finally:
        absorbed = False
        if stream.end is None:  # the caller left early: end the session, wait for its end
            scope.cancel()
            absorbed = await stream.wait_end(scope.cancel)
        if await run.settle() or absorbed:
            raise asyncio.CancelledError  # a cancellation that came while we cleaned up
    assert stream.end is not None
    stream.end.unwrap()
