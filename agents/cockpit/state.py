"""What the agent tree is doing, rebuilt from the public message stream alone.

:class:`TreeState` reads the messages ``query()`` yields — the ``init`` message, each agent's
``AssistantMessage``/``UserMessage`` (subagents' carry the ``parent_tool_use_id`` of the ``Agent``
call that spawned them), the ``task_started``/``task_progress``/``task_notification`` system
messages of background agents, ``api_retry``, ``permission_denied``, the ``ResultMessage`` and the
trailing ``session_summary`` — and keeps one :class:`AgentNode` per agent. It never looks inside
the loop, so any consumer of the stream (a live view, a log, a tracer) sees the same tree::

    state = TreeState(budget_usd=0.50)
    async for message in query(prompt=..., options=options):
        state.observe(message)
    print(state.total_cost_usd, [n.status for n in state.walk()])

Costs shown while the run goes are estimates from each response's usage and the shipped prices;
the stream's own figures (``task_progress``, the result, ``session_summary``) replace them as they
arrive.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from ..backends.pricing import PriceTable, default_price_table
from ..messages import (
    AssistantMessage,
    Message,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from .lines import MAIN as MAIN
from .lines import denial_line as denial_line
from .lines import retry_line as retry_line

__all__ = ["STATUSES", "AgentNode", "RunningTool", "TreeState", "denial_line", "retry_line"]

#: what an agent can be doing, as shown to the user
STATUSES = ("starting", "thinking", "running tools", "waiting", "done", "stopped", "failed")
_ENDED = frozenset({"done", "stopped", "failed"})
_NOTIFIED = {"completed": "done", "stopped": "stopped", "failed": "failed"}


@attrs.define(eq=False)
class RunningTool:
    """A tool call whose result has not arrived yet."""

    id: str
    name: str
    started: float
    detail: str = ""


@attrs.define(eq=False)
class AgentNode:
    """One agent of the tree: the main agent (key ``main``) or a subagent, keyed by the id of the
    ``Agent`` tool call that spawned it until its agent id is known."""

    key: str
    agent_type: str
    parent: str | None = None
    description: str = ""
    agent_id: str | None = None
    background: bool = False
    status: str = "starting"
    turns: int = 0
    cost_usd: float = 0.0
    model: str = ""
    tools: dict[str, RunningTool] = attrs.Factory(dict)
    children: list[str] = attrs.Factory(list)
    denials: int = 0
    retry: str | None = None
    _responses: set[str] = attrs.Factory(set)

    @property
    def label(self) -> str:
        return self.agent_id or self.agent_type

    @property
    def ended(self) -> bool:
        return self.status in _ENDED


@attrs.define(eq=False)
class TreeState:
    """The tree as the stream has told it so far; feed it every message with :meth:`observe`."""

    budget_usd: float | None = None
    clock: Callable[[], float] = time.monotonic
    prices: PriceTable = attrs.field(factory=default_price_table)
    nodes: dict[str, AgentNode] = attrs.Factory(dict)
    #: the main agent's text, as it streams (partial messages) or arrives block by block
    text: str = ""
    session_id: str = ""
    model: str = ""
    results: list[ResultMessage] = attrs.Factory(list)
    #: one line per event a person should notice (retries, denials, budget), in order
    events: list[str] = attrs.Factory(list)
    summary: dict[str, Any] | None = None
    _tool_owner: dict[str, str] = attrs.Factory(dict)
    _streamed: set[str] = attrs.Factory(set)
    _current: str = ""
    _result_cost: float = 0.0

    def __attrs_post_init__(self) -> None:
        self.nodes[MAIN] = AgentNode(key=MAIN, agent_type=MAIN, agent_id=MAIN)

    # -- reading -----------------------------------------------------------------------------------
    @property
    def main(self) -> AgentNode:
        return self.nodes[MAIN]

    @property
    def total_cost_usd(self) -> float:
        """The tree's spend: the stream's own figure once known, never below the live estimate."""
        if self.summary is not None:
            return float(self.summary.get("total_cost_usd", 0.0))
        return max(self._result_cost, sum(n.cost_usd for n in self.nodes.values()))

    @property
    def tripped(self) -> bool:
        return self.budget_usd is not None and self.total_cost_usd >= self.budget_usd

    def walk(self) -> Iterator[tuple[int, AgentNode]]:
        """Every agent, parents before children, with its depth (main is 0)."""
        stack = [(0, self.main)]
        while stack:
            depth, node = stack.pop()
            yield depth, node
            stack.extend((depth + 1, self.nodes[k]) for k in reversed(node.children))

    def running(self) -> int:
        """How many agents have not ended."""
        return sum(1 for n in self.nodes.values() if not n.ended)

    # -- writing -----------------------------------------------------------------------------------
    def observe(self, message: Message) -> None:
        """Update the tree from one message of the stream (any order the stream allows)."""
        match message:
            case SystemMessage(subtype=subtype, data=data):
                self._system(subtype, data)
            case AssistantMessage():
                self._assistant(message)
            case UserMessage():
                self._user(message)
            case ResultMessage():
                self._result(message)
            case StreamEvent(event=event, parent_tool_use_id=None):
                self._partial(event)

    def _node_for(self, parent_tool_use_id: str | None) -> AgentNode:
        if parent_tool_use_id is None:
            return self.main
        node = self.nodes.get(parent_tool_use_id)
        if node is None:  # a subagent whose spawn we did not see: keep it visible anyway
            node = self._add_child(parent_tool_use_id, MAIN, "subagent")
        return node

    def _add_child(self, key: str, parent: str, agent_type: str) -> AgentNode:
        node = AgentNode(key=key, agent_type=agent_type, parent=parent, status="thinking")
        self.nodes[key] = node
        self.nodes[parent].children.append(key)
        return node

    def _by_agent_id(self, agent_id: str | None) -> AgentNode | None:
        if agent_id is None:
            return None
        for node in self.nodes.values():
            if node.agent_id == agent_id:
                return node
        return None

    def _system(self, subtype: str, data: dict[str, Any]) -> None:
        if subtype == "init":
            self.session_id = str(data.get("session_id", ""))
            self.model = self.main.model = str(data.get("model", ""))
            self.main.status = "thinking"
        elif subtype == "task_started":
            node = self._node_for(data.get("tool_use_id"))
            node.agent_id = data.get("task_id") or node.agent_id
            node.background = True
            if node.status == "starting":
                node.status = "thinking"
        elif subtype == "task_progress":
            node = self._node_for(data.get("tool_use_id"))
            node.turns = max(node.turns, int(data.get("num_turns") or 0))
            node.cost_usd = float(data.get("cost_usd") or node.cost_usd)
        elif subtype == "task_notification":
            node = self._node_for(data.get("tool_use_id"))
            node.agent_id = data.get("task_id") or node.agent_id
            node.status = _NOTIFIED.get(str(data.get("status")), "done")
            node.tools.clear()
            node.cost_usd = max(node.cost_usd, float(data.get("cost_usd") or 0.0))
            node.turns = max(node.turns, int(data.get("num_turns") or 0))
        elif subtype == "api_retry":
            self._retry(data)
        elif subtype == "permission_denied":
            node = self._by_agent_id(data.get("agent_id")) or self.main
            node.denials += 1
            self.events.append(denial_line(data))
        elif subtype == "budget_overrun":
            self.events.append(f"budget overrun: {data}")
        elif subtype == "session_summary":
            self._summary(data)

    def _retry(self, data: dict[str, Any]) -> None:
        self.main.retry = retry_line(data, with_error=False)
        self.events.append(retry_line(data))

    def _summary(self, data: dict[str, Any]) -> None:
        self.summary = data
        if self.budget_usd is None and data.get("max_budget_usd") is not None:
            self.budget_usd = float(data["max_budget_usd"])
        costs: dict[str, float] = data.get("cost_by_agent") or {}
        turns: dict[str, int] = data.get("turns_by_agent") or {}
        for agent_id in set(costs) | set(turns):
            node = self._by_agent_id(agent_id)
            if node is None:
                continue
            node.cost_usd = float(costs.get(agent_id, node.cost_usd))
            node.turns = max(node.turns, int(turns.get(agent_id, 0)))

    def _assistant(self, message: AssistantMessage) -> None:
        node = self._node_for(message.parent_tool_use_id)
        node.retry = None
        if node.status in ("starting", "waiting") or not node.ended:
            node.status = "thinking"
        if message.message_id not in node._responses:
            node._responses.add(message.message_id)
            node.turns += 1
            node.model = message.model
            if message.usage:
                node.cost_usd += self.prices.cost(message.model, message.usage) or 0.0
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                self._tool_started(node, block)
            elif (
                isinstance(block, TextBlock)
                and node.key == MAIN
                and message.message_id not in self._streamed
            ):
                self._append_text(block.text)
        if node.tools:
            node.status = "running tools"

    def _tool_started(self, node: AgentNode, block: ToolUseBlock) -> None:
        detail = _detail(block.input)
        node.tools[block.id] = RunningTool(block.id, block.name, self.clock(), detail)
        self._tool_owner[block.id] = node.key
        if block.name == "Agent":
            sub = self._add_child(block.id, node.key, str(block.input.get("subagent_type")))
            sub.description = str(block.input.get("description") or "")
            sub.background = bool(block.input.get("run_in_background"))

    def _user(self, message: UserMessage) -> None:
        if isinstance(message.content, str):  # a prompt (or a notification) starts a turn
            node = self._node_for(message.parent_tool_use_id)
            if not node.ended or node.key == MAIN:
                node.status = "thinking"
            return
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                self._tool_finished(block, message.tool_use_result or {})

    def _tool_finished(self, block: ToolResultBlock, result: dict[str, Any]) -> None:
        owner = self.nodes.get(self._tool_owner.pop(block.tool_use_id, MAIN), self.main)
        owner.tools.pop(block.tool_use_id, None)
        sub = self.nodes.get(block.tool_use_id)
        if sub is not None and sub.key != MAIN:
            sub.agent_id = result.get("agentId") or sub.agent_id
            status = result.get("status")
            if status == "async_launched":
                sub.background = True
            elif status == "completed":
                sub.status = "done"
            else:
                sub.status = "failed" if block.is_error and status is None else "stopped"
            if not sub.background:
                sub.tools.clear()
        if not owner.tools and not owner.ended:
            owner.status = "thinking"

    def _result(self, message: ResultMessage) -> None:
        self.results.append(message)
        self._result_cost = max(self._result_cost, message.total_cost_usd)
        main = self.main
        main.tools.clear()
        main.turns = max(main.turns, sum(r.num_turns for r in self.results))
        if message.subtype == "error_max_budget_usd":
            main.status = "stopped"
            line = f"budget reached: ${message.total_cost_usd:.4f} of ${self.budget_usd or 0:.4f}"
            if line not in self.events:
                self.events.append(line)
        elif message.is_error:
            main.status = "failed"
        else:
            background = any(
                not n.ended for n in self.nodes.values() if n.key != MAIN and n.background
            )
            main.status = "waiting" if background else "done"

    def _partial(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            self._current = str((event.get("message") or {}).get("id", ""))
        elif kind == "content_block_start":
            if (event.get("content_block") or {}).get("type") == "text":
                self._streamed.add(self._current)
                self._append_text("")
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                self.text += str(delta.get("text", ""))

    def _append_text(self, text: str) -> None:
        """A new text block: a blank line apart from the one before."""
        if self.text and not self.text.endswith("\n\n"):
            self.text = self.text.rstrip("\n") + "\n\n"
        self.text += text

    def finish(self) -> None:
        """The stream has ended: an agent still marked running was stopped without a word."""
        for node in self.nodes.values():
            if not node.ended:
                node.status = "done" if node.key == MAIN else "stopped"
            node.tools.clear()


def _detail(args: dict[str, Any]) -> str:
    """The one argument that says what a call is about (its path, pattern, command...)."""
    keys = ("subagent_type", "file_path", "pattern", "command", "url", "query", "description")
    for key in (*keys, "path"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return ""
