"""Actors: a Trio task with an address, a parent, a bounded mailbox and a cancel scope.

An actor is created and started only by :meth:`Supervisor.spawn`; this module holds the state.
The task shape (see ``_supervisor``) is::

    with actor.cancel_scope:
        async with trio.open_nursery() as children:   # the actor's children live here
            await behaviour(actor)

so cancelling an actor cancels its whole subtree, and an actor is done only once its children are.
"""

from __future__ import annotations

from typing import Any

import attrs
import trio

from ._mailbox import Mailbox


@attrs.define(eq=False, repr=False)
class Actor:
    """One node of the supervision tree.

    ``data`` is a free slot for the layer above (the agent loop keeps its state there), so the
    kernel never needs to know what an agent is::

        async def behaviour(actor: Actor) -> None:
            async for message in actor.mailbox:
                ...

        actor = await supervisor.spawn(behaviour, name="researcher", parent=main)
        actor.address   # "main/researcher-1"
    """

    address: str
    name: str
    parent: Actor | None
    depth: int
    mailbox: Mailbox[Any]
    cancel_scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    background: bool = False
    # ``data``, made when first read: most actors never use it.
    _data: dict[str, Any] | None = attrs.field(default=None, alias="data")
    #: a leaf never has children, and runs without a nursery for them (``Supervisor.spawn``)
    leaf: bool = False
    # Live children by address, in spawn order (None until the first child: a leaf has none);
    # kept by the supervisor as it spawns and finishes actors.
    _children: dict[str, Actor] | None = attrs.field(default=None, init=False)
    # The nursery the children run in; None before the task starts and after it ends.
    _nursery: trio.Nursery | None = attrs.field(default=None, init=False)
    # Per-kind counters for child addresses: "researcher" -> last n used (None until needed).
    _child_counts: dict[str, int] | None = attrs.field(default=None, init=False)
    _ended: bool = attrs.field(default=False, init=False)
    # Made only when someone waits for the end: an Event and its set per idle actor add up.
    _done: trio.Event | None = attrs.field(default=None, init=False)
    # Whether a task has run this actor (a ``Supervisor.root`` may never be run).
    _ran: bool = attrs.field(default=False, init=False)
    # Made only when someone waits for the task to start (see ``Supervisor.spawn``).
    _started: trio.Event | None = attrs.field(default=None, init=False)

    def _set_started(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        if self._started is not None:
            self._started.set()

    async def _wait_started(self) -> trio.Nursery:
        """The children's nursery, once this actor's task has opened it."""
        if self._started is None:
            self._started = trio.Event()
        await self._started.wait()
        if self._nursery is None:
            raise ValueError(f"actor {self.address!r} ended before it could take children")
        return self._nursery

    def cancel(self, reason: str | None = None) -> None:
        """Cancel this actor and its subtree; the actor then ends quietly (not an error)."""
        self.cancel_scope.cancel(reason=reason)

    @property
    def data(self) -> dict[str, Any]:
        """A free slot for the layer above (see the class docstring)."""
        data = self._data
        if data is None:
            data = self._data = {}
        return data

    @property
    def children(self) -> tuple[Actor, ...]:
        """The live children, in spawn order."""
        children = self._children
        return () if children is None else tuple(children.values())

    @property
    def done(self) -> bool:
        """True once the actor's task (behaviour and all its children) has ended."""
        return self._ended

    async def wait_done(self) -> None:
        """Wait until the actor has ended, however it ended (a checkpoint either way)."""
        if self._ended:
            await trio.lowlevel.checkpoint()
            return
        if self._done is None:
            self._done = trio.Event()
        await self._done.wait()

    def __repr__(self) -> str:
        state = "done" if self.done else "running"
        kind = " background" if self.background else ""
        return f"<Actor {self.address!r} depth={self.depth}{kind} {state}>"
