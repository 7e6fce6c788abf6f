"""``SpawnQueueAgents``: subagents of a local agent that run on the workers of a spawn queue.

Pass it as ``AgentOptions(remote_agents=...)``: a spawn of one of its agent types becomes a
:class:`~agents.scaleout.queue.SpawnRequest` on the queue (the definition's prompt as system
prompt, its tools, model, turn limit and permission mode), the Agent call waits for the result on
the job's stream, and the agent's final text comes back as the call's result. Each remote agent
spends on the tree's ledger in PostgreSQL (at most ``budget_usd`` of it, if set), so the tree's
spend stays within its cap across hosts; run the local agent itself on a
:class:`~agents.scaleout.SharedLedger` of the same tree (``AgentOptions(ledger=...)``, with
``root=True``) to put all of the tree's spending under one cap.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import attrs

from agents.remote import RemoteOutcome, RemoteTask
from agents.scaleout.queue import SpawnQueue, SpawnRequest

__all__ = ["SpawnQueueAgents"]


def _agent_types(names: Iterable[str]) -> frozenset[str]:
    return frozenset(names)


@attrs.define(eq=False)
class SpawnQueueAgents:
    """Runs ``agent_types`` on the queue's workers, in tree ``tree_id``; see the module docstring.

    ``backend`` names the workers' backend factory (``"package.module:function"``), None for
    their default (the Anthropic API).
    """

    queue: SpawnQueue
    tree_id: str
    agent_types: frozenset[str] = attrs.field(converter=_agent_types)
    budget_usd: float | None = None
    backend: str | None = None

    def runs(self, agent_type: str) -> bool:
        return agent_type in self.agent_types

    async def run(self, task: RemoteTask) -> RemoteOutcome:
        definition = task.definition
        model = task.model or definition.model
        request = SpawnRequest(
            job_id=uuid.uuid4().hex,
            tree_id=self.tree_id,
            session_id=str(uuid.uuid4()),
            prompt=task.prompt,
            agent_type=task.agent_type,
            cwd=task.cwd,
            system_prompt=definition.prompt,
            model=None if model == "inherit" else model,
            max_turns=definition.max_turns,
            tools=definition.tools,
            disallowed_tools=list(definition.disallowed_tools or []),
            permission_mode=definition.permission_mode,
            budget_usd=self.budget_usd,
            backend=self.backend,
        )
        await self.queue.submit(request)
        result = await self.queue.result(request.job_id)
        return RemoteOutcome(
            status=result.status,
            text=result.result or "",
            errors=tuple(result.errors),
            cost_usd=result.total_cost_usd,
            num_turns=result.num_turns,
            agent_id=f"{task.agent_type}-{request.job_id[:12]}@{result.worker}",
        )
