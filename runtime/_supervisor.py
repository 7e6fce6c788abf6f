"""The supervisor: owns the actor tree, its limits and its budget ledger.

Every actor's task runs in a nursery: a root actor in the supervisor's, a child in the nursery
owned by its parent's task. Cancelling an actor therefore cancels its subtree, and no actor can
outlive ``open_supervisor``.

Errors: an exception escaping a behaviour cancels the actor's children, then propagates through
its parent, and its parent's parent, up to ``open_supervisor``, cancelling everything on the way
(structured concurrency; there is no restart policy). Each actor re-raises a lone error
unwrapped, so the caller sees ``ExceptionGroup([error])`` from ``open_supervisor`` whatever the
depth it came from. Cancellation of an actor (``actor.cancel()``) is not an error: it ends
quietly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from ._actor import Actor
from ._budget_ledger import BudgetLedger
from ._errors import BudgetExhausted, ConcurrencyLimitReached, DepthLimitReached
from ._ledger import Ledger
from ._mailbox import Mailbox

Behaviour = Callable[[Actor], Awaitable[None]]


@attrs.frozen
class SupervisorStatistics:
    """A snapshot of the tree. ``live_tasks`` counts running actor tasks (roots included)."""

    live_actors: int
    live_tasks: int
    max_depth_live: int
    spawned_total: int
    peak_live: int
    mailbox_peak: int


def _check_limit(_instance: object, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and value < 0:
        raise ValueError(f"{attribute.name} must be >= 0, got {value}")


# Validated once, at construction; hot counters are then set without attrs hooks.
@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class Supervisor:
    """Spawns actors into the tree and enforces the depth, concurrency and budget limits.

    Made by :func:`open_supervisor`::

        async with open_supervisor(max_depth=3, max_concurrent=20) as supervisor:
            main = await supervisor.spawn(main_loop, name="main")
            # inside main_loop: await supervisor.spawn(research, name="researcher", parent=actor)

    When the ledger trips, the supervisor refuses further spawns (``BudgetExhausted``) and
    cancels every live background actor inside the very ``charge`` call that tripped it; the
    foreground actors finish their step and stop on their own.
    """

    ledger: BudgetLedger = attrs.field(factory=Ledger)
    max_depth: int | None = attrs.field(default=None, validator=_check_limit)
    max_concurrent: int | None = attrs.field(default=None, validator=_check_limit)
    _nursery: trio.Nursery | None = attrs.field(default=None, init=False)
    # Live actors by address, in spawn order; an actor leaves when its task ends.
    _live: dict[str, Actor] = attrs.field(factory=dict, init=False)
    _live_subagents: int = attrs.field(default=0, init=False)
    _live_tasks: int = attrs.field(default=0, init=False)
    _spawned_total: int = attrs.field(default=0, init=False)
    _peak_live: int = attrs.field(default=0, init=False)
    _mailbox_peak: int = attrs.field(default=0, init=False)

    async def spawn(
        self,
        behaviour: Behaviour,
        *,
        name: str,
        parent: Actor | None = None,
        background: bool = False,
        mailbox_capacity: int = 64,
        address: str | None = None,
        leaf: bool = False,
    ) -> Actor:
        """Start ``behaviour(actor)`` as a new actor and return the actor.

        The actor is live (addressable, counted, its mailbox open) when this returns; its task
        runs from the caller's next scheduling point on (a spawn is not one itself, unless it
        waits for a parent spawned a moment ago to start). A ``leaf`` actor will never have
        children: it runs without a nursery for them (a good part of what a small actor
        costs), and spawning under it raises ``ValueError``.

        Refusals, checked in this order: the ledger is exhausted (:class:`BudgetExhausted`),
        the actor would be deeper than ``max_depth`` (:class:`DepthLimitReached`), there are
        already ``max_concurrent`` live actors of depth >= 1 (:class:`ConcurrencyLimitReached`).

        Addresses: ``address`` if given (unique among live actors); else a root is ``name``
        (``name-2``, ``name-3``... if taken) and a child is ``"{parent.address}/{name}-{n}"``,
        ``n`` counting 1, 2, 3 per parent and name.
        """
        while True:
            actor = self.spawn_nowait(
                behaviour,
                name=name,
                parent=parent,
                background=background,
                mailbox_capacity=mailbox_capacity,
                address=address,
                leaf=leaf,
            )
            if actor is not None:
                return actor
            # Its parent was spawned a moment ago and its task has not run yet: wait for it
            # (the limits may have moved meanwhile: checked again).
            assert parent is not None
            await parent._wait_started()

    def spawn_nowait(
        self,
        behaviour: Behaviour,
        *,
        name: str,
        parent: Actor | None = None,
        background: bool = False,
        mailbox_capacity: int = 64,
        address: str | None = None,
        leaf: bool = False,
    ) -> Actor | None:
        """:meth:`spawn` without waiting: the actor, or None (nothing done, no limit counted)
        while ``parent``'s task has not started yet, when only ``spawn`` can wait for it.

        For a caller that spawns many actors from a running parent (the agents' tree): the
        same checks and refusals as ``spawn``, without a coroutine per spawn."""
        # The limits checked, the actor made live and the nursery its task goes in found, with
        # no checkpoint (so concurrent spawns see the limits up to date) and no call per step.
        if self.ledger.exhausted:
            raise BudgetExhausted
        if parent is None:
            depth = 0
            nursery = self._nursery
        else:
            depth = parent.depth + 1
            nursery = parent._nursery
        if self.max_depth is not None and depth > self.max_depth:
            raise DepthLimitReached(self.max_depth)
        if (
            depth
            and self.max_concurrent is not None
            and self._live_subagents >= self.max_concurrent
        ):
            raise ConcurrencyLimitReached
        if parent is None:
            if nursery is None:
                raise RuntimeError("supervisor is closed: spawn inside open_supervisor()")
        else:
            if self._live.get(parent.address) is not parent:
                raise ValueError(f"parent actor {parent.address!r} is not live in this supervisor")
            if parent.leaf:
                raise ValueError(f"actor {parent.address!r} is a leaf: it takes no children")
            if nursery is None:  # spawned a moment ago, its task not yet running
                return None
        actor = self._new_actor(name, parent, background, mailbox_capacity, address, leaf)
        # ``start_soon``, not ``start``: the actor is registered and addressable now, its task
        # runs at the next scheduling point. Waiting for it to start would cost a nursery and two
        # task switches per actor, which is most of a spawn; the one thing that needs the task
        # running, spawning a grandchild from outside, waits for it (``_wait_started``).
        #
        # Nor is a spawn a schedule point (unless it had to wait for the parent's task to
        # start), as ``nursery.start_soon`` is not: a yield per spawn is a trip through the
        # scheduler per actor, which made a tree of thousands of agents cost a tenth more. A
        # spawn is never cut by a cancellation either: once spawned, the caller gets its actor.
        try:
            nursery.start_soon(self._run, actor, behaviour, name=actor.address)
        except BaseException:
            self._finish(actor)
            raise
        self._live_tasks += 1
        return actor

    def root(
        self,
        name: str,
        *,
        address: str | None = None,
        mailbox_capacity: int = 64,
        leaf: bool = False,
    ) -> Actor:
        """Register a root actor whose task will be the caller's own: run it with :meth:`run`.

        For the one actor that does nothing but run its session (the main agent): running it
        in the task that opened the supervisor saves a task, and the scheduling round trips of
        starting it and of waiting for it at the end. It is live (addressable, its mailbox open)
        from now on, so its handle can be given out before it runs. ``leaf`` as for
        :meth:`spawn`.
        """
        if self._nursery is None:
            raise RuntimeError("supervisor is closed: register inside open_supervisor()")
        return self._new_actor(name, None, False, mailbox_capacity, address, leaf)

    async def run(self, actor: Actor, behaviour: Behaviour) -> None:
        """Run ``behaviour(actor)`` for a :meth:`root` actor, in the calling task.

        Returns (or raises) as a spawned actor's task would end: once the behaviour and every
        child of the actor have ended; cancelling the actor ends it quietly.
        """
        if actor.parent is not None or self._live.get(actor.address) is not actor:
            raise ValueError(f"actor {actor.address!r} is not a registered root of this supervisor")
        if actor._ran:
            raise RuntimeError(f"actor {actor.address!r} has already been run")
        self._live_tasks += 1
        await self._run(actor, behaviour)

    def _new_actor(
        self,
        name: str,
        parent: Actor | None,
        background: bool,
        mailbox_capacity: int,
        address: str | None,
        leaf: bool,
    ) -> Actor:
        address = self._address(name, parent, address)
        live = self._live
        if parent is None:
            actor = Actor(
                address, name, None, 0, Mailbox(mailbox_capacity), background=background, leaf=leaf
            )
            live[address] = actor
        else:
            # positional, in field order: once per spawn
            actor = Actor(
                address,  # address
                name,  # name
                parent,  # parent
                parent.depth + 1,  # depth
                Mailbox(mailbox_capacity),  # mailbox
                background=background,
                leaf=leaf,
            )
            live[address] = actor
            # ``Actor._add_child`` inlined (once per spawn)
            children = parent._children
            if children is None:
                children = parent._children = {}
            children[address] = actor
            self._live_subagents += 1
        self._spawned_total += 1
        if len(live) > self._peak_live:
            self._peak_live = len(live)
        return actor

    def _address(self, name: str, parent: Actor | None, address: str | None) -> str:
        live = self._live
        if address is not None:
            if address in live:
                raise ValueError(f"address {address!r} is taken by a live actor")
            return address
        if parent is None:
            candidate, n = name, 1
            while candidate in live:
                n += 1
                candidate = f"{name}-{n}"
            return candidate
        counts = parent._child_counts
        if counts is None:
            counts = parent._child_counts = {}
        n = counts.get(name, 0)
        while True:
            n += 1
            candidate = f"{parent.address}/{name}-{n}"
            if candidate not in live:
                counts[name] = n
                return candidate

    async def _run(self, actor: Actor, behaviour: Behaviour) -> None:
        actor._ran = True
        if actor.leaf:
            try:
                with actor.cancel_scope:
                    await behaviour(actor)
            finally:
                self._live_tasks -= 1
                self._finish(actor)
            return
        try:
            with actor.cancel_scope:
                error: BaseException | None = None
                try:
                    async with trio.open_nursery() as children:
                        actor._set_started(children)
                        await behaviour(actor)
                except BaseExceptionGroup as group:
                    if len(group.exceptions) != 1:
                        raise
                    error = group.exceptions[0]
                if error is not None:
                    # Unwrapped so that depth does not nest groups; a lone Cancelled aimed at
                    # this actor is then swallowed by its own scope, as it should be.
                    try:
                        raise error
                    finally:
                        del error
        finally:
            self._live_tasks -= 1
            self._finish(actor)

    def _finish(self, actor: Actor) -> None:
        if actor._ended:
            return
        actor._nursery = None
        mailbox = actor.mailbox
        mailbox.close()
        address = actor.address
        live = self._live
        if live.get(address) is actor:
            del live[address]
        parent = actor.parent
        if parent is not None:
            # ``Actor._remove_child`` inlined (once per actor)
            children = parent._children
            if children is not None:
                children.pop(address, None)
        if actor.depth:
            self._live_subagents -= 1
        peak = mailbox.peak
        if peak > self._mailbox_peak:
            self._mailbox_peak = peak
        # ``Actor._set_done`` inlined (once per actor)
        actor._ended = True
        if actor._done is not None:
            actor._done.set()
        if actor._started is not None:
            actor._started.set()  # wake spawners waiting on a task that never ran

    def actor(self, address: str) -> Actor:
        """The live actor at ``address``; ``KeyError`` if there is none."""
        try:
            return self._live[address]
        except KeyError:
            raise KeyError(f"no live actor at address {address!r}") from None

    def actors(self) -> tuple[Actor, ...]:
        """Every live actor, in spawn order."""
        return tuple(self._live.values())

    def cancel_background(self, reason: str | None = None) -> int:
        """Cancel every live background actor (and so its subtree); return how many."""
        count = 0
        for actor in tuple(self._live.values()):
            if actor.background:
                actor.cancel_scope.cancel(reason=reason)
                count += 1
        return count

    def replace_ledger(self, ledger: BudgetLedger) -> None:
        """Charge to ``ledger`` from now on (a ``/clear`` resets the budget).

        The supervisor's trip callback moves to the new ledger; the old one is left as it is.
        """
        on_trip = self._on_trip
        self.ledger.remove_trip_callback(on_trip)
        self.ledger = ledger
        ledger.add_trip_callback(on_trip)

    def _on_trip(self) -> None:
        self.cancel_background("budget limit reached")

    def statistics(self) -> SupervisorStatistics:
        live = self._live.values()
        mailbox_peak = max((a.mailbox.statistics().peak for a in live), default=0)
        return SupervisorStatistics(
            live_actors=len(self._live),
            live_tasks=self._live_tasks,
            max_depth_live=max((a.depth for a in live), default=0),
            spawned_total=self._spawned_total,
            peak_live=self._peak_live,
            mailbox_peak=max(mailbox_peak, self._mailbox_peak),
        )


@asynccontextmanager
async def open_supervisor(
    *,
    ledger: BudgetLedger | None = None,
    max_depth: int | None = None,
    max_concurrent: int | None = None,
) -> AsyncIterator[Supervisor]:
    """Open a supervisor owning a nursery for its root actors.

    On a normal exit it waits for every actor to end (close their mailboxes or cancel them to
    get there); if the body raises or is cancelled, the actors are cancelled. A ledger passed in
    may be shared with other supervisors; the supervisor unhooks itself from it on exit.
    """
    supervisor = Supervisor(
        ledger=Ledger() if ledger is None else ledger,
        max_depth=max_depth,
        max_concurrent=max_concurrent,
    )
    on_trip = supervisor._on_trip
    supervisor.ledger.add_trip_callback(on_trip)
    try:
        async with trio.open_nursery() as nursery:
            supervisor._nursery = nursery
            yield supervisor
    finally:
        supervisor._nursery = None
        supervisor.ledger.remove_trip_callback(on_trip)
        for actor in supervisor.actors():  # a root() never run (its owner failed first)
            if not actor._ran:
                supervisor._finish(actor)
