"""Serving an agent: its actor's mailbox, one prompt at a time.

An agent — main or sub — is an :class:`~agents._loop.agent.AgentLoop` run by :func:`serve`
inside a ``runtime`` actor: the actor's mailbox brings prompts (``Prompt``), control actions,
the end of input (``INPUT_END``) and wake-ups (``WAKE``: a background child has ended and its
notification waits in ``loop.links.notifications``); the loop answers each prompt with a
``ResultMessage``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable

import trio

from runtime import Actor

from .._loop.agent import AgentLoop
from .._loop.contracts import Content, Prompt
from ..messages import ResultMessage

__all__ = [
    "INPUT_END",
    "WAKE",
    "InputEnd",
    "Prompt",
    "Wake",
    "answer",
    "needs_services",
    "recording_results",
    "serve",
]

log = logging.getLogger("agents.subagents")


class InputEnd:
    """No more prompts will come: the agent ends once its background children are done."""


class Wake:
    """Makes an idle agent re-check whether it may end (a background child finished)."""


INPUT_END = InputEnd()
WAKE = Wake()


async def serve(
    loop: AgentLoop,
    actor: Actor,
    on_result: Callable[[ResultMessage], Awaitable[None]] | None,
    *,
    closed: bool = False,
    first: Content | None = None,
) -> ResultMessage | None:
    """Run an agent's actor: answer mailbox prompts one at a time until its input has ended
    (``INPUT_END``, or ``closed=True`` for a subagent with one prompt) and none of its
    background children is running or waiting to be heard. Returns the last result.

    Each result goes to ``on_result``; None records it in the agent's transcript and nothing
    more (a model-spawned subagent: its result reaches its spawner, not the stream), without
    a callable made per agent.

    ``first``: a prompt to answer before the mailbox's (a subagent's task: no ``Prompt`` made and
    queued in its own mailbox for it); the caller passes it only while the mailbox is empty,
    so the order of what arrives is kept.

    Background children's notifications wait in ``loop.links.notifications``;
    a ``WAKE`` in the mailbox marks where they arrived among the prompts, and every
    notification waiting then is answered in one injected turn (:func:`_notification_turn`).
    """
    if not needs_services(loop):
        return await answer(loop, actor, on_result, closed, first, None)
    async with trio.open_nursery() as services:
        try:
            return await answer(loop, actor, on_result, closed, first, services)
        finally:
            services.cancel_scope.cancel()


async def answer(
    loop: AgentLoop,
    actor: Actor,
    on_result: Callable[[ResultMessage], Awaitable[None]] | None,
    closed: bool,
    first: Content | None,
    services: trio.Nursery | None,
) -> ResultMessage | None:
    """:func:`serve`'s work, with the nursery for the tools' background work it opened
    (``services``), or None for an agent that needs none (:func:`needs_services`): such an
    agent's actor may await this directly, without ``serve``'s coroutine. Positional: it is
    awaited once per agent."""
    links = loop.links
    links.actor = actor
    links.nursery = services
    mailbox = actor.mailbox
    last: ResultMessage | None = None
    try:
        if first is not None:
            last = await loop.run_prompt(first)
            await (loop.record(last) if on_result is None else on_result(last))
        while True:
            # Looked at, not tried: no ``WouldBlock`` made (and kept alive by the frames it
            # went through) on each agent's way to idle.
            if mailbox.ready:
                item = mailbox.receive_nowait()
            elif mailbox.closed:
                break
            elif links.notifications:  # their WAKE did not fit in a full mailbox
                item = WAKE
            elif closed and links.background_running == 0:
                break
            else:
                item = await mailbox.receive()
            if isinstance(item, Prompt):
                last = await loop.run_prompt(
                    item.content, max_turns=item.max_turns, origin=item.origin
                )
                await (loop.record(last) if on_result is None else on_result(last))
            elif item is WAKE:
                if links.notifications:
                    prompt = _notification_turn(loop)
                    last = await loop.run_prompt(prompt.content, origin=prompt.origin)
                    await (loop.record(last) if on_result is None else on_result(last))
            elif item is INPUT_END:
                closed = True
            elif callable(item):  # a control action queued behind the running turn
                await item()
            else:
                log.warning("agent %s: ignoring mailbox item %r", loop.agent_id, item)
    finally:
        if loop.cleanup:  # (``aclose`` has nothing to do otherwise: no coroutine for it)
            await loop.aclose()
    return last


def needs_services(loop: AgentLoop) -> bool:
    """Whether the agent gets a nursery for its tools' background work (``ToolContext.nursery``).

    Of the built-in tools only Bash (background shells) uses one; custom ``Tool`` handlers
    may (in-process MCP tools, ``mcp__*``, never see a ``ToolContext``). Agents with neither go
    without: a nursery is a noticeable part of what a one-turn subagent costs, and a tree of
    thousands of leaf agents would pay for thousands of them."""
    plain = _no_nursery_tools()
    names = loop.tools.names()
    # no generator made for an agent without tools (a tree's leaves)
    return bool(names) and any(name not in plain and name[:5] != "mcp__" for name in names)


@functools.cache
def _no_nursery_tools() -> frozenset[str]:
    """The tools known not to use ``ToolContext.nursery`` (imported late: the tools are heavy)."""
    from ..tools.builtin import BUILTIN_TOOL_NAMES

    return frozenset(set(BUILTIN_TOOL_NAMES) - {"Bash"} | {"Agent"})


def _notification_turn(loop: AgentLoop) -> Prompt:
    """Every notification waiting for ``loop``, in the order the children ended, as one turn.

    Children that finish while their spawner is busy are answered together in its next turn,
    as Claude Code drains its queue of task notifications: one turn (and ``ResultMessage``) per
    batch, instead of a turn per child whose answer only says "noted". A notification that
    finds its spawner idle still gets a turn of its own.
    """
    links = loop.links
    batch = links.notifications or []
    links.notifications = None
    if len(batch) == 1:
        return batch[0]
    return Prompt(
        "\n".join(str(p.content) for p in batch),
        origin={
            "kind": "task-notification",
            "task_ids": [p.origin["task_id"] for p in batch if p.origin is not None],
        },
    )


def recording_results(
    loop: AgentLoop, emit: Callable[[ResultMessage], Awaitable[None]]
) -> Callable[[ResultMessage], Awaitable[None]]:
    """An ``on_result`` for :func:`serve`: record each ``ResultMessage`` in the agent's
    transcript, then ``emit`` it."""

    async def on_result(result: ResultMessage) -> None:
        await loop.record(result)
        await emit(result)

    return on_result
