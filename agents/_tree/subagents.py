"""Subagents: each one an actor in the supervisor tree, under one budget.

A subagent is an :class:`~agents._loop.agent.AgentLoop` served (``agents._tree.serve``) in a
child actor of its spawner's actor: it lives in the nursery of its spawner's actor, so cancelling
an agent cancels its subtree.

The ``Agent`` tool (:func:`run_agent_tool`) spawns a child from a definition:

* foreground: the tool call waits for the child and returns its final text;
* background: the call returns at once; the child's result later reaches the spawner as an
  injected user turn (``origin={"kind": "task-notification"}``: it waits in the spawner's
  notification queue, a ``WAKE`` in its mailbox marks the moment, and notifications queued
  together share one turn) and the stream gets ``task_started`` / ``task_progress`` /
  ``task_notification`` system messages.

Every response of every agent is charged to the tree's one ledger; when it trips, the supervisor
cancels the running background agents in that same instant (their in-flight response charged
for what it used) and refuses later spawns with ``Budget limit reached``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import attrs
import msgspec
import trio

from runtime import Actor, BudgetExhausted, SpawnRefused

from .._features.hookpoints import fire
from .._loop.agent import AgentLoop
from .._loop.contracts import Content, Prompt
from .._loop.run import BUDGET_LIMIT_TEXT
from ..messages import ResultMessage, SystemMessage
from ..options import AgentDefinition, AgentOptions, resolve_model
from ..tools.base import Tool, ToolContext, ToolOutput, ToolRegistry
from .reports import notify, notify_nowait, report_progress
from .serve import answer, needs_services, serve

if TYPE_CHECKING:  # the scale-out's types load with the first remote spawn
    from ..remote import RemoteAgents

__all__ = [
    "GENERAL_PURPOSE",
    "AgentInput",
    "adopt",
    "agent_tool",
    "definitions",
    "definitions_for",
    "make_child",
    "release_transcript",
    "run_agent_tool",
    "spawn_child",
    "spawn_child_nowait",
    "take_actor",
]

log = logging.getLogger("agents.subagents")

GENERAL_PURPOSE = AgentDefinition(
    description=(
        "General-purpose agent for researching complex questions, searching for code, and "
        "executing multi-step tasks."
    ),
    prompt=(
        "You are an agent working on a task delegated by another agent. Use the tools available "
        "to complete it, then reply with a concise report of what you found or did: your final "
        "message is all the other agent will see."
    ),
)
#: A parent in one of these modes keeps it for its children, whatever their definition says.
_MODES_KEPT_BY_CHILDREN = frozenset({"bypassPermissions", "acceptEdits", "auto"})
#: Tools a subagent never gets: only the main agent can ask the user.
_MAIN_ONLY = frozenset({"AskUserQuestion"})


def definitions_for(options: AgentOptions) -> dict[str, AgentDefinition]:
    """The agent types the model may spawn: the built-in general-purpose one and the options'."""
    return {"general-purpose": GENERAL_PURPOSE, **(options.agents or {})}


def definitions(loop: AgentLoop) -> dict[str, AgentDefinition]:
    """The session's agent types (built once per session: every Agent call looks them up)."""
    session = loop.session
    kinds = session.agent_types
    if kinds is None:
        kinds = session.agent_types = definitions_for(session.options)
    return kinds


def _session_agent_tool(loop: AgentLoop) -> Tool:
    """The ``Agent`` tool given to subagents that may spawn (one per session, like its text)."""
    session = loop.session
    tool = session.agent_tool
    if tool is None:
        tool = session.agent_tool = agent_tool(definitions(loop))
    return tool


# -- the Agent tool --------------------------------------------------------------------------------


class AgentInput(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The Agent tool's input."""

    description: str
    prompt: str
    subagent_type: str = "general-purpose"
    model: str | None = None
    run_in_background: bool | None = None


def agent_tool(loop_definitions: dict[str, AgentDefinition]) -> Tool:
    """The ``Agent`` tool, describing the agent types it can spawn."""
    kinds = "\n".join(f"- {name}: {d.description}" for name, d in loop_definitions.items())
    return Tool(
        name="Agent",
        description=(
            "Launch a new agent to handle a task on its own, with a fresh context. Available "
            f"agent types:\n{kinds}\nThe agent's final message is returned to you. With "
            "run_in_background the call returns at once and you are notified when it finishes."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short (3-5 word) task name"},
                "prompt": {"type": "string", "description": "The task for the agent"},
                "subagent_type": {"type": "string", "enum": list(loop_definitions)},
                "model": {"type": "string", "description": "Optional model override"},
                "run_in_background": {"type": "boolean"},
            },
            "required": ["description", "prompt", "subagent_type"],
        },
        handler=run_agent_tool,
        read_only=False,
        input_type=AgentInput,
    )


def child_registry(parent: AgentLoop, definition: AgentDefinition, depth: int) -> ToolRegistry:
    """A child's tools: the definition's list (or all of the parent's), minus its
    disallowed ones, minus ``AskUserQuestion``, and without ``Agent`` at the depth limit."""
    wanted = definition.tools
    if wanted is not None and not wanted:  # no tools at all (a tree's leaves): nothing to filter
        return ToolRegistry()
    max_depth = parent.session.options.max_subagent_depth
    denied = set(definition.disallowed_tools or ()) | _MAIN_ONLY
    if depth >= max_depth:
        denied.add("Agent")
    registry = ToolRegistry()
    for name in wanted if wanted is not None else parent.tools.names():
        tool = parent.tools.get(name)
        if name == "Agent" and tool is None and depth < max_depth:
            tool = _session_agent_tool(parent)
        if tool is None:
            log.warning("agent definition lists tool %r, which the parent does not have", name)
            continue
        if name not in denied:
            registry.add(tool)
    return registry


@attrs.define(eq=False)
class _Child:
    """Bookkeeping of one spawned subagent, and its actor's behaviour (:meth:`__call__`): the
    record itself is what its actor runs, not a closure (a function and cells per spawn) nor
    a bound method (an object its task holds for the child's whole life)."""

    loop: AgentLoop
    description: str
    background: bool
    parent: AgentLoop
    prompt: Content
    #: whether the spawner hears of the end (a background child's notification)
    notify: bool = False
    result: ResultMessage | None = None
    error: BaseException | None = None
    stopped: bool = False
    #: set when it has ended; made for a foreground child only (the one its spawner waits
    #: for): an Event per background child of a big tree adds up
    done: trio.Event | None = None

    async def __call__(self, actor: Actor) -> None:
        """The child's actor: its one prompt served, then its end reported."""
        child = self.loop
        # ``adopt`` inlined (once per agent): its address as its id, and a transcript
        child.links.actor = actor
        address = actor.address
        child.take_name(
            address, child.session.agent_transcript(address) if child.transcript is None else None
        )
        # Its one prompt comes first, handed to ``serve`` (no ``Prompt`` queued in its own
        # mailbox), unless something was queued before its task started: then it waits behind.
        first: Content | None = self.prompt
        if actor.mailbox.ready:
            actor.mailbox.send_nowait(Prompt(self.prompt))
            first = None
        try:
            hooks = child.session.hooks  # ``has_hooks`` inlined: once per agent
            if hooks is not None and hooks.has("SubagentStart"):
                await fire(child, "SubagentStart", child.agent_type, agent_type=child.agent_type)
            if needs_services(child):
                self.result = await serve(child, actor, None, closed=True, first=first)
            else:  # ``serve`` without its coroutine: no nursery to open around the work
                self.result = await answer(child, actor, None, True, first, None)
        except Exception as exc:  # a bug in a child must not take its parent down
            log.exception("subagent %s crashed", actor.address)
            self.error = exc
        finally:
            # Cancellation (stop_task, budget, a cancelled parent or an interrupt above it)
            # arrives as Cancelled, possibly wrapped in a group by the agent's nurseries, from
            # this actor's scope or an enclosing one: no result and no error is a stop.
            self.stopped = self.result is None and self.error is None
            if self.done is not None:
                self.done.set()
            transcript = child.transcript  # ``release_transcript`` inlined: once per agent
            if transcript is not None:
                transcript.close()
            if self.notify:
                pending = notify_nowait(self.parent, self)
                if pending is not None:  # the stream had no room: wait for it
                    await notify(self.parent, *pending)

    @property
    def status(self) -> str:
        if self.stopped:
            return "stopped"
        if self.result is not None and not self.result.is_error:
            return "completed"
        return "failed"

    def summary(self) -> str:
        if self.result is None:
            return "stopped before finishing" if self.stopped else f"crashed: {self.error!r}"
        if self.result.is_error:
            return f"{self.result.subtype}: {'; '.join(self.result.errors or [])}"
        return self.result.result or ""


def make_child(
    parent: AgentLoop,
    definition: AgentDefinition,
    *,
    agent_type: str,
    model: str | None,
    tool_use_id: str | None,
    depth: int,
    streams: bool = True,
) -> AgentLoop:
    """A child's loop: its own context (the definition's prompt as system prompt), tools,
    model, limits and permission mode, sharing the session, its ledger and the features."""
    session = parent.session
    chosen = model or definition.model
    resolved = parent.model if chosen in (None, "inherit") else resolve_model(chosen)
    gate = parent.gate
    mode = definition.permission_mode
    if gate is not None and mode is not None and gate.mode not in _MODES_KEPT_BY_CHILDREN:
        gate = gate.with_mode(mode)
    tools = child_registry(parent, definition, depth)
    sources = session.sources  # the session's external servers and skills
    extra = None if sources is None else sources.for_child(definition, tools)
    if extra:
        system = [{"type": "text", "text": definition.prompt}, *extra]
    else:  # one list for all the agents of the type, as the request sends it unchanged
        shared = session.child_systems.get(definition.prompt)
        if shared is None:
            shared = session.child_systems[definition.prompt] = [
                {"type": "text", "text": definition.prompt}
            ]
        system = shared
    return AgentLoop(
        session=session,
        agent_id="",  # set from the actor's address once spawned
        agent_type=agent_type,
        model=resolved,
        tools=tools,
        system=system,
        max_turns=definition.max_turns,
        effort=definition.effort or parent.effort,
        thinking=parent.thinking,
        max_tokens=parent.max_tokens,
        parent_tool_use_id=tool_use_id,
        gate=gate,
        seams=parent.seams,
        depth=depth,
        streams=streams,
    )


def spawn_child_nowait(
    parent: AgentLoop,
    child: AgentLoop,
    prompt: Content,
    *,
    description: str,
    background: bool,
    notify: bool,
) -> _Child | None:
    """:func:`spawn_child` without a coroutine (the Agent tool's spawns: one per child of a
    tree): the same checks and refusals, or None, with nothing done, while ``parent``'s task
    has not started yet (only ``spawn_child`` can wait for it)."""
    record = _Child(child, description, background, parent, prompt, notify)
    if not background:
        record.done = trio.Event()
    links = parent.links
    assert links.actor is not None, "spawning needs the parent's actor"
    # the supervisor refuses first of all once the tree's ledger is exhausted (BudgetExhausted)
    actor = parent.session.supervisor.spawn_nowait(
        record,
        name=child.agent_type,
        parent=links.actor,
        background=background,
        leaf=child.tools.get("Agent") is None,  # it can spawn nothing: no nursery needed
    )
    if actor is None:
        return None
    # counted once spawned: nothing between could see the count (no checkpoint)
    if background:
        links.background_running += 1
    # ``take_actor`` inlined (once per spawn)
    child.links.actor = actor
    child.take_name(actor.address, None)
    return record


async def spawn_child(
    parent: AgentLoop,
    child: AgentLoop,
    prompt: Content,
    *,
    description: str,
    background: bool,
    notify: bool,
) -> _Child:
    """Start ``child`` as an actor under ``parent``'s actor; raises ``SpawnRefused``.

    A background child counts in ``parent.links.background_running`` until its notification
    is queued for the parent."""
    record = spawn_child_nowait(
        parent, child, prompt, description=description, background=background, notify=notify
    )
    if record is not None:
        return record
    # The parent's task has not started yet: wait for it (the limits checked again then).
    session = parent.session
    record = _Child(child, description, background, parent, prompt, notify)
    if not background:
        record.done = trio.Event()
    if session.ledger.exhausted:
        raise BudgetExhausted()
    links = parent.links
    assert links.actor is not None, "spawning needs the parent's actor"
    if background:
        links.background_running += 1
    try:
        actor = await session.supervisor.spawn(
            record,
            name=child.agent_type,
            parent=links.actor,
            background=background,
            leaf=child.tools.get("Agent") is None,
        )
    except BaseException:
        if background:
            links.background_running -= 1
        raise
    take_actor(child, actor)
    return record


def take_actor(child: AgentLoop, actor: Actor) -> None:
    """The child takes its actor's address as its id (as soon as it is spawned)."""
    child.links.actor = actor
    child.take_name(actor.address, None)


def adopt(child: AgentLoop, actor: Actor) -> None:
    """The child takes its actor's address as its id, and a transcript of its own (as its
    actor starts)."""
    child.links.actor = actor
    transcript = None
    if child.transcript is None:
        transcript = child.session.agent_transcript(actor.address)
    child.take_name(actor.address, transcript)


def release_transcript(child: AgentLoop) -> None:
    """The agent has ended: its transcript file need not stay open (a tree of thousands of
    agents would otherwise hold thousands of descriptors until the store evicts them)."""
    if child.transcript is not None:
        child.transcript.close()


async def run_agent_tool(args: AgentInput, ctx: ToolContext) -> ToolOutput:
    """The Agent tool's handler: spawn a subagent, in the foreground or the background."""
    parent = ctx.agent
    assert isinstance(parent, AgentLoop), "the Agent tool runs in an agent loop"
    kinds = parent.session.agent_types  # ``definitions`` inlined: once per spawn
    if kinds is None:
        kinds = definitions(parent)
    definition = kinds.get(args.subagent_type)
    if definition is None:
        return ToolOutput.error(
            f"unknown subagent_type {args.subagent_type!r} (available: {', '.join(kinds)})"
        )
    remote = parent.session.options.remote_agents
    if remote is not None and remote.runs(args.subagent_type):
        return await _run_remote(parent, remote, definition, args, ctx)
    if args.model is not None and args.model != "inherit":
        session = parent.session
        if session.options.budget_cap is not None and session.prices.get(
            resolve_model(args.model)
        ) is None:
            return ToolOutput.error(
                f"model {args.model!r} has no price, and this session has a budget: a spend "
                "that cannot be priced cannot be held to it (pass pricing= to price it)"
            )
    background = args.run_in_background
    if background is None:
        background = bool(definition.background)
    child = make_child(
        parent,
        definition,
        agent_type=args.subagent_type,
        model=args.model,
        tool_use_id=ctx.tool_use_id,
        depth=parent.depth + 1,
    )
    try:
        # without a coroutine, unless the parent's task has not started yet
        record = spawn_child_nowait(
            parent,
            child,
            args.prompt,
            description=args.description,
            background=background,
            notify=background,
        )
        if record is None:
            record = await spawn_child(
                parent,
                child,
                args.prompt,
                description=args.description,
                background=background,
                notify=background,
            )
    except SpawnRefused as exc:
        return ToolOutput.error(str(exc))
    if background:
        child.links.progress = report_progress
        session = parent.session
        started = SystemMessage(
            subtype="task_started",
            data={
                "task_id": child.agent_id,
                "tool_use_id": ctx.tool_use_id,
                "description": args.description,
                "agent_type": args.subagent_type,
            },
        )
        nowait = session.emit_nowait
        if nowait is None or not nowait(started):
            await session.emit(started)
        return ToolOutput(
            content=(
                f"Async agent launched: agentId {child.agent_id}. You will be notified when it "
                "finishes; do not wait for it."
            ),
            data={"status": "async_launched", "agentId": child.agent_id},
        )
    done = record.done
    assert done is not None  # a foreground child's
    try:
        await done.wait()
    finally:
        if not done.is_set() and child.links.actor is not None:
            child.links.actor.cancel(reason="the Agent tool call was cancelled")
    usage = child.last_usage
    if record.status != "completed":
        return ToolOutput(
            content=f"Agent {child.agent_id} did not complete ({record.summary()})",
            is_error=True,
            data={"status": record.status, "agentId": child.agent_id, "usage": usage},
        )
    return ToolOutput(
        content=[{"type": "text", "text": record.summary()}],
        data={"status": "completed", "agentId": child.agent_id, "usage": usage},
    )


async def _run_remote(
    parent: AgentLoop,
    remote: RemoteAgents,
    definition: AgentDefinition,
    args: AgentInput,
    ctx: ToolContext,
) -> ToolOutput:
    """A spawn of a type that runs on another host: handed over, waited for, its text returned."""
    if args.run_in_background:
        return ToolOutput.error(
            f"agent type {args.subagent_type!r} runs on another host, in the foreground only; "
            "call it without run_in_background"
        )
    if parent.session.ledger.exhausted:
        return ToolOutput.error(BUDGET_LIMIT_TEXT)
    from ..remote import RemoteTask

    task = RemoteTask(
        agent_type=args.subagent_type,
        definition=definition,
        prompt=args.prompt,
        description=args.description,
        model=args.model,
        parent_agent_id=parent.agent_id,
        tool_use_id=ctx.tool_use_id,
        session_id=parent.session.session_id,
        cwd=parent.session.cwd,
    )
    outcome = await remote.run(task)
    data = {
        "status": outcome.status,
        "agentId": outcome.agent_id,
        "cost_usd": outcome.cost_usd,
        "num_turns": outcome.num_turns,
    }
    if outcome.status != "completed":
        why = "; ".join(outcome.errors) or outcome.status
        return ToolOutput(
            content=f"Agent {outcome.agent_id} did not complete ({why})", is_error=True, data=data
        )
    return ToolOutput(content=[{"type": "text", "text": outcome.text}], data=data)
