"""Agents that run somewhere else: the seam through which a subagent runs on another host.

``AgentOptions(remote_agents=...)`` names an object that runs some agent types itself; the
``Agent`` tool hands a spawn of such a type to it instead of starting a local actor, waits for it
(remote agents run in the foreground of the call) and returns its final text as the tool's result,
as for a local subagent. :class:`agents.scaleout.SpawnQueueAgents` is the implementation on Redis
Streams and PostgreSQL; tests can pass any object with these two methods::

    class Echo:
        def runs(self, agent_type: str) -> bool:
            return agent_type == "echo"

        async def run(self, task: RemoteTask) -> RemoteOutcome:
            return RemoteOutcome(status="completed", text=task.prompt, agent_id="echo-1")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

import attrs

if TYPE_CHECKING:
    from .options import AgentDefinition

__all__ = ["RemoteAgents", "RemoteOutcome", "RemoteTask"]


@attrs.frozen
class RemoteTask:
    """One spawn handed to a :class:`RemoteAgents`: what the Agent tool was asked to run."""

    agent_type: str
    definition: AgentDefinition
    prompt: str
    description: str
    model: str | None
    parent_agent_id: str
    tool_use_id: str
    session_id: str
    cwd: str


@attrs.frozen
class RemoteOutcome:
    """How a remote agent ended; ``text`` is its final answer when ``status`` is completed."""

    status: Literal["completed", "failed", "stopped"]
    text: str = ""
    errors: tuple[str, ...] = ()
    cost_usd: float = 0.0
    num_turns: int = 0
    agent_id: str = ""


class RemoteAgents(Protocol):
    """Runs the agent types it claims, elsewhere; see the module docstring."""

    def runs(self, agent_type: str) -> bool:
        """Whether spawns of ``agent_type`` go to this runner."""
        ...

    async def run(self, task: RemoteTask) -> RemoteOutcome:
        """Run ``task`` to its end (cancelling the call gives up waiting for it)."""
        ...
