"""Subagents (SPEC §5): each one an actor in the supervisor tree, under one budget.

An agent — main or sub — is an :class:`~agents._loop.AgentLoop` run by :func:`serve` inside a
``runtime`` actor: the actor's mailbox brings prompts, control actions and wake-ups, and the loop
answers each prompt with a ``ResultMessage``. A child actor lives in the nursery of its spawner's
actor, so cancelling an agent cancels its subtree (S9).

The ``Agent`` tool (:func:`run_agent_tool`) spawns a child from a definition:

* foreground: the tool call waits for the child and returns its final text (S3);
* background: the call returns at once; the child's result later reaches the spawner as an
  injected user turn (``origin={"kind": "task-notification"}``: it waits in the spawner's
  notification queue, a ``WAKE`` in its mailbox marks the moment, and notifications queued
  together share one turn) and the stream gets ``task_started`` / ``task_progress`` /
  ``task_notification`` system messages.

Every response of every agent is charged to the tree's one ledger; when it trips, the supervisor
cancels the running background agents in that same instant (their in-flight response charged
for what it used) and refuses later spawns with ``Budget limit reached`` (S6).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import msgspec
import trio

from runtime import Actor, BudgetExhausted, SpawnRefused

from ._hookpoints import fire, has_hooks
from ._loop import AgentLoop
from ._persist import open_agent_transcript, recording_results
from .messages import ResultMessage, SystemMessage
from .options import AgentDefinition, AgentOptions, resolve_model
from .tools.base import Tool, ToolContext, ToolOutput, ToolRegistry

__all__ = [
    "GENERAL_PURPOSE",
    "INPUT_END",
    "WAKE",
    "AgentInput",
    "InputEnd",
    "Prompt",
    "Wake",
    "adopt",
    "agent_tool",
    "definitions",
    "definitions_for",
    "make_child",
    "release_transcript",
    "run_agent_tool",
    "serve",
    "spawn_child",
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
#: Tools a subagent never gets: only the main agent can ask the user (S1).
_MAIN_ONLY = frozenset({"AskUserQuestion"})


@attrs.frozen
class Prompt:
    """A user turn for an agent's mailbox; ``origin`` marks injected turns (task notifications)."""

    content: str | list[dict[str, Any]]
    origin: dict[str, Any] | None = None
    max_turns: int | None = None


class InputEnd:
    """No more prompts will come: the agent ends once its background children are done."""


class Wake:
    """Makes an idle agent re-check whether it may end (a background child finished)."""


INPUT_END = InputEnd()
WAKE = Wake()
_NO_SERVICES: contextlib.nullcontext[None] = contextlib.nullcontext()


def definitions_for(options: AgentOptions) -> dict[str, AgentDefinition]:
    """The agent types the model may spawn: the built-in general-purpose one and the options'."""
    return {"general-purpose": GENERAL_PURPOSE, **(options.agents or {})}


def definitions(loop: AgentLoop) -> dict[str, AgentDefinition]:
    """The session's agent types (built once per session: every Agent call looks them up)."""
    cache = loop.session.cache
    kinds: dict[str, AgentDefinition] | None = cache.get("definitions")
    if kinds is None:
        kinds = cache["definitions"] = definitions_for(loop.session.options)
    return kinds


def _session_agent_tool(loop: AgentLoop) -> Tool:
    """The ``Agent`` tool given to subagents that may spawn (one per session, like its text)."""
    cache = loop.session.cache
    tool: Tool | None = cache.get("agent_tool")
    if tool is None:
        tool = cache["agent_tool"] = agent_tool(definitions(loop))
    return tool


async def serve(
    loop: AgentLoop,
    actor: Actor,
    on_result: Callable[[ResultMessage], Awaitable[None]],
    *,
    closed: bool = False,
) -> ResultMessage | None:
    """Run an agent's actor: answer mailbox prompts one at a time until its input has ended
    (``INPUT_END``, or ``closed=True`` for a subagent with one prompt) and none of its
    background children is running or waiting to be heard. Returns the last result.

    Background children's notifications wait in ``loop.notifications`` (see :func:`_notify`);
    a ``WAKE`` in the mailbox marks where they arrived among the prompts, and every
    notification waiting then is answered in one injected turn (:func:`_notification_turn`).
    """
    loop.actor = actor
    mailbox = actor.mailbox
    last: ResultMessage | None = None
    services_cm = trio.open_nursery() if _needs_services(loop) else _NO_SERVICES
    async with services_cm as services:
        loop.nursery = services
        try:
            while True:
                try:
                    item = mailbox.receive_nowait()
                except trio.WouldBlock:
                    if loop.notifications:  # their WAKE did not fit in a full mailbox
                        item = WAKE
                    elif closed and loop.background_running == 0:
                        break
                    else:
                        item = await mailbox.receive()
                except trio.EndOfChannel:
                    break
                if isinstance(item, Prompt):
                    last = await loop.run_prompt(
                        item.content, max_turns=item.max_turns, origin=item.origin
                    )
                    await on_result(last)
                elif item is WAKE:
                    if loop.notifications:
                        prompt = _notification_turn(loop)
                        last = await loop.run_prompt(prompt.content, origin=prompt.origin)
                        await on_result(last)
                elif item is INPUT_END:
                    closed = True
                elif callable(item):  # a control action queued behind the running turn
                    await item()
                else:
                    log.warning("agent %s: ignoring mailbox item %r", loop.agent_id, item)
        finally:
            await loop.aclose()
            if services is not None:
                services.cancel_scope.cancel()
    return last


def _needs_services(loop: AgentLoop) -> bool:
    """Whether the agent gets a nursery for its tools' background work (``ToolContext.nursery``).

    Of the built-in tools only Bash (background shells) uses one; custom ``Tool`` handlers
    may (in-process MCP tools, ``mcp__*``, never see a ``ToolContext``). Agents with neither go
    without: a nursery is a noticeable part of what a one-turn subagent costs, and a tree of
    thousands of leaf agents would pay for thousands of them."""
    plain = _no_nursery_tools()
    return any(name not in plain and name[:5] != "mcp__" for name in loop.tools.names())


@functools.cache
def _no_nursery_tools() -> frozenset[str]:
    """The tools known not to use ``ToolContext.nursery`` (imported late: the tools are heavy)."""
    from .tools.builtin import BUILTIN_TOOL_NAMES

    return frozenset(set(BUILTIN_TOOL_NAMES) - {"Bash"} | {"Agent"})


def _notification_turn(loop: AgentLoop) -> Prompt:
    """Every notification waiting for ``loop``, in the order the children ended, as one turn.

    Children that finish while their spawner is busy are answered together in its next turn,
    as Claude Code drains its queue of task notifications: one turn (and ``ResultMessage``) per
    batch, instead of a turn per child whose answer only says "noted". A notification that
    finds its spawner idle still gets a turn of its own.
    """
    batch: list[Prompt] = loop.notifications
    loop.notifications = []
    if len(batch) == 1:
        return batch[0]
    return Prompt(
        "\n".join(str(p.content) for p in batch),
        origin={
            "kind": "task-notification",
            "task_ids": [p.origin["task_id"] for p in batch if p.origin is not None],
        },
    )


# -- the Agent tool --------------------------------------------------------------------------------


class AgentInput(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The Agent tool's input (S1)."""

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
    """A child's tools (S1, S5): the definition's list (or all of the parent's), minus its
    disallowed ones, minus ``AskUserQuestion``, and without ``Agent`` at the depth limit."""
    max_depth = parent.session.options.max_subagent_depth
    wanted = definition.tools
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
    """Bookkeeping of one spawned subagent."""

    loop: AgentLoop
    description: str
    background: bool
    result: ResultMessage | None = None
    error: BaseException | None = None
    stopped: bool = False
    done: trio.Event = attrs.Factory(trio.Event)

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
) -> AgentLoop:
    """A child's loop: its own context (the definition's prompt as system prompt), tools,
    model, limits and permission mode (P5), sharing the session and its ledger."""
    session = parent.session
    chosen = model or definition.model
    resolved = parent.model if chosen in (None, "inherit") else resolve_model(chosen)
    gate = parent.gate
    mode = definition.permission_mode
    if (
        gate is not None
        and mode is not None
        and gate.mode
        not in (
            "bypassPermissions",
            "acceptEdits",
            "auto",
        )
    ):
        gate = gate.with_mode(mode)
    tools = child_registry(parent, definition, depth)
    system = [{"type": "text", "text": definition.prompt}]
    sources = session.cache.get("sources")  # the session's external servers and skills
    if sources is not None:
        system += sources.for_child(definition, tools)
    child = AgentLoop(
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
        depth=depth,
    )
    child.gate = gate
    return child


async def spawn_child(
    parent: AgentLoop,
    child: AgentLoop,
    prompt: str | list[dict[str, Any]],
    *,
    description: str,
    background: bool,
    notify: bool,
) -> _Child:
    """Start ``child`` as an actor under ``parent``'s actor; raises ``SpawnRefused``."""
    session = parent.session
    record = _Child(loop=child, description=description, background=background)

    async def behaviour(actor: Actor) -> None:
        adopt(child, actor)
        actor.mailbox.send_nowait(Prompt(prompt))
        try:
            if has_hooks(child, "SubagentStart"):
                await fire(child, "SubagentStart", child.agent_type, agent_type=child.agent_type)
            record.result = await serve(
                child, actor, recording_results(child, _ignore), closed=True
            )
        except Exception as exc:  # a bug in a child must not take its parent down
            log.exception("subagent %s crashed", actor.address)
            record.error = exc
        finally:
            # Cancellation (stop_task, budget, a cancelled parent) arrives as Cancelled, possibly
            # wrapped in a group by the agent's nurseries: the scope says what happened.
            record.stopped = record.result is None and actor.cancel_scope.cancel_called
            record.done.set()
            release_transcript(child)
            if notify:
                with trio.CancelScope(shield=True, relative_deadline=5):
                    await _notify(parent, record)

    if session.ledger.exhausted:
        raise BudgetExhausted()
    assert parent.actor is not None, "spawning needs the parent's actor"
    if background:
        parent.background_running += 1
    try:
        actor = await session.supervisor.spawn(
            behaviour,
            name=child.agent_type,
            parent=parent.actor,
            background=background,
            leaf=child.tools.get("Agent") is None,  # it can spawn nothing: no nursery needed
        )
    except BaseException:
        if background:
            parent.background_running -= 1
        raise
    child.agent_id = actor.address
    child.actor = actor
    return record


async def _ignore(result: ResultMessage) -> None:
    return None


def adopt(child: AgentLoop, actor: Actor) -> None:
    """The child takes its actor's address as its id, and a transcript of its own (C1)."""
    child.agent_id = actor.address
    child.actor = actor
    if child.transcript is None:
        child.transcript = open_agent_transcript(child.session, actor.address)


def release_transcript(child: AgentLoop) -> None:
    """The agent has ended: its transcript file need not stay open (a tree of thousands of
    agents would otherwise hold thousands of descriptors until the store evicts them)."""
    if child.transcript is not None:
        child.transcript.close()


async def _report_progress(child: AgentLoop, response: Any) -> None:
    """``task_progress`` after each response of a background agent (S3)."""
    calls = [c.name for c in response.tool_uses]
    await child.session.emit(
        SystemMessage(
            subtype="task_progress",
            data={
                "task_id": child.agent_id,
                "tool_use_id": child.parent_tool_use_id,
                "num_turns": child.session.turns_by_agent.get(child.agent_id, 0),
                "cost_usd": child.session.ledger.spent(child.agent_id),
                "last_tool_name": calls[-1] if calls else None,
            },
        )
    )


async def _notify(parent: AgentLoop, record: _Child) -> None:
    """A background child ended: tell the stream, then the spawner (S3).

    The spawner hears of it through ``parent.notifications``, not by a prompt in its bounded
    mailbox: a child must not wait (alive, holding its memory) for room in a busy parent's
    mailbox, and a notification must never be dropped. The list is bounded all the same: by
    the spawner's background children, which the concurrency limit bounds (S5). A ``WAKE``
    marks the moment among the mailbox's prompts; if the mailbox is full the spawner is busy
    with it and finds the notification when it has drained it.
    """
    child = record.loop
    text = (
        f"<task-notification>\n<task-id>{child.agent_id}</task-id>\n"
        f"<status>{record.status}</status>\n<summary>{record.description}</summary>\n"
        f"<result>{record.summary()}</result>\n</task-notification>"
    )
    try:
        data = {
            "task_id": child.agent_id,
            "tool_use_id": child.parent_tool_use_id,
            "status": record.status,
            "summary": record.summary()[:2000],
            "cost_usd": child.session.ledger.spent(child.agent_id),
            "num_turns": child.turns_total,
        }
        await parent.session.emit(SystemMessage(subtype="task_notification", data=data))
    finally:  # even if the stream's reader is gone or too slow: the spawner must hear of it
        parent.notifications.append(
            Prompt(text, origin={"kind": "task-notification", "task_id": child.agent_id})
        )
        parent.background_running -= 1
        if parent.actor is not None:
            with contextlib.suppress(trio.WouldBlock, trio.ClosedResourceError):
                parent.actor.mailbox.send_nowait(WAKE)


async def run_agent_tool(args: AgentInput, ctx: ToolContext) -> ToolOutput:
    """The Agent tool's handler: spawn a subagent, in the foreground or the background."""
    parent: AgentLoop = ctx.agent
    kinds = definitions(parent)
    definition = kinds.get(args.subagent_type)
    if definition is None:
        return ToolOutput.error(
            f"unknown subagent_type {args.subagent_type!r} (available: {', '.join(kinds)})"
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
        child.progress = _report_progress
        await parent.session.emit(
            SystemMessage(
                subtype="task_started",
                data={
                    "task_id": child.agent_id,
                    "tool_use_id": ctx.tool_use_id,
                    "description": args.description,
                    "agent_type": args.subagent_type,
                },
            )
        )
        return ToolOutput(
            content=(
                f"Async agent launched: agentId {child.agent_id}. You will be notified when it "
                "finishes; do not wait for it."
            ),
            data={"status": "async_launched", "agentId": child.agent_id},
        )
    try:
        await record.done.wait()
    finally:
        if not record.done.is_set() and child.actor is not None:
            child.actor.cancel(reason="the Agent tool call was cancelled")
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
