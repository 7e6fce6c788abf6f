"""Agents spawned from Python code (``AgentClient.spawn``), not by the model.

Each is an actor like any other — a child of the main agent in the supervisor tree, charged to the
same ledger, cancelled with the session — whose mailbox the caller feeds through an
:class:`AgentHandle`; its results come back to the handle, its messages go to its transcript.
"""

from __future__ import annotations

import contextlib
import sys

import attrs
import trio

from runtime import Actor, BudgetExhausted, Mailbox

from .._features.hookpoints import fire, has_hooks
from .._loop.agent import AgentLoop
from .._loop.contracts import Content, Prompt
from .._loop.run import Run, budget_end
from ..messages import ResultError, ResultMessage
from .serve import INPUT_END, answer, needs_services, serve
from .subagents import adopt, definitions, make_child, release_transcript, take_actor

__all__ = ["UNBOUNDED_MAILBOX", "AgentHandle", "spawn_from_code"]

#: The capacity of a mailbox fed from the caller's code (the API's edge): in effect no bound, so
#: queuing a prompt never waits on the agent's progress.
UNBOUNDED_MAILBOX = sys.maxsize


@attrs.define(eq=False)
class AgentHandle:
    """An agent spawned from Python (``AgentClient.spawn``), not by the model.

    It is an actor like any other — a child of the main agent in the supervisor tree, charged to
    the same ledger, cancelled with the session — whose mailbox you feed yourself::

        researcher = await client.spawn("researcher")
        result = await researcher.ask("List the modules that touch the network.")
        print(result.result)

    Its messages go to its transcript, not to the client's stream; results come back here.
    """

    loop: AgentLoop
    #: the agent's results, closed when it ends (a mailbox, not a memory channel: it is memory
    #: per idle agent)
    _results: Mailbox[ResultMessage]

    @property
    def agent_id(self) -> str:
        return self.loop.agent_id

    @property
    def agent_type(self) -> str:
        return self.loop.agent_type

    async def send(self, prompt: Content, *, max_turns: int | None = None) -> None:
        """Queue a prompt; it runs as its own turn once the agent is free.

        Raises :class:`~agents.ResultError` if the agent has ended (its ``result`` says why:
        ``error_max_budget_usd`` once the tree's budget is spent)."""
        actor = self.loop.links.actor
        assert actor is not None
        try:
            await actor.mailbox.send(Prompt(prompt, max_turns=max_turns))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            ended = self._ended()
            raise ResultError(ended.subtype, ended.errors or [], ended.session_id, ended) from None

    async def result(self) -> ResultMessage:
        """The next result of this agent (in prompt order). An agent that ended without one —
        cancelled when the tree's budget tripped, stopped — answers with an error result
        (``error_max_budget_usd`` for the budget), never with a Trio exception."""
        try:
            return await self._results.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return self._ended()

    async def ask(self, prompt: Content) -> ResultMessage:
        """``send`` then ``result``: a ``ResultMessage``, or :class:`~agents.ResultError` when
        the agent had ended before the prompt could be queued."""
        await self.send(prompt)
        return await self.result()

    def _ended(self) -> ResultMessage:
        """The result of a prompt this agent will never answer: the budget's if it is spent."""
        loop = self.loop
        run = Run(started=trio.current_time())
        if loop.session.ledger.exhausted:
            end = budget_end(loop.session.ledger.cap)
            return loop.result(run, end.subtype, errors=end.errors, terminal=end.terminal_reason)
        errors = [f"agent {loop.agent_id} has ended"]
        return loop.result(run, "error_during_execution", errors=errors, terminal="stopped")

    async def close(self) -> None:
        """No more prompts: the agent ends once its queued prompts and children are done."""
        actor = self.loop.links.actor
        assert actor is not None
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await actor.mailbox.send(INPUT_END)

    def stop(self) -> None:
        """Cancel the agent and its subtree now."""
        actor = self.loop.links.actor
        if actor is not None:
            actor.cancel(reason="stopped from code")

    async def _behaviour(self, actor: Actor) -> None:
        """The agent's actor: serve its mailbox, its results to this handle."""
        child = self.loop
        adopt(child, actor)
        try:
            if has_hooks(child, "SubagentStart"):
                await fire(child, "SubagentStart", child.agent_type, agent_type=child.agent_type)
            if needs_services(child):
                await serve(child, actor, self._on_result)
            else:  # ``serve`` without its coroutine: an idle agent keeps a frame less alive
                await answer(child, actor, self._on_result, False, None, None)
        finally:
            self._results.close()
            release_transcript(child)

    async def _on_result(self, result: ResultMessage) -> None:
        """Each result: into the agent's transcript, then to this handle."""
        await self.loop.record(result)
        await self._results.send(result)

    async def wait(self) -> None:
        """Wait until the agent has ended."""
        actor = self.loop.links.actor
        if actor is not None:
            await actor.wait_done()


async def spawn_from_code(
    main: AgentLoop, agent_type: str, *, model: str | None = None, background: bool = True
) -> AgentHandle:
    """Spawn a named agent under the main agent (see :class:`AgentHandle`)."""
    kinds = definitions(main)
    definition = kinds.get(agent_type)
    if definition is None:
        raise ValueError(f"unknown agent type {agent_type!r} (available: {', '.join(kinds)})")
    child = make_child(
        main,
        definition,
        agent_type=agent_type,
        model=model,
        tool_use_id=None,
        depth=1,
        streams=False,
    )
    # The API's edge: results nobody reads never block the agent (they are dropped at close),
    # and prompts from code never wait on the agent's progress.
    handle = AgentHandle(child, Mailbox(UNBOUNDED_MAILBOX))
    if main.session.ledger.exhausted:
        raise BudgetExhausted()
    parent = main.links.actor
    assert parent is not None
    actor = await main.session.supervisor.spawn(
        handle._behaviour,  # a bound method, not a closure: memory per idle agent
        name=agent_type,
        parent=parent,
        background=background,
        mailbox_capacity=UNBOUNDED_MAILBOX,
        leaf=child.tools.get("Agent") is None,  # it can spawn nothing: no nursery needed
    )
    take_actor(child, actor)
    return handle
