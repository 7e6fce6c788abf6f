"""OpenTelemetry spans for a session, derived from its message stream (the ``[otel]`` extra).

:class:`SpanObserver` reads the messages ``query()`` yields and records the tree as spans::

    session                                  trio_agents.budget_usd, trio_agents.total_cost_usd
    └─ invoke_agent main                     gen_ai.agent.id/name, trio_agents.cost_usd
       ├─ turn 1
       │  ├─ chat claude-opus-5-5            gen_ai.request.model, gen_ai.usage.*_tokens, cost
       │  ├─ execute_tool Grep               gen_ai.tool.name, gen_ai.tool.call.id
       │  └─ execute_tool Agent
       │     └─ invoke_agent researcher      (the subagent's own turns below)
       └─ turn 2 ...

Attributes follow the OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name``,
``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.response.model``,
``gen_ai.response.id``, ``gen_ai.usage.input_tokens``/``output_tokens``, ``gen_ai.agent.*``,
``gen_ai.tool.*``, ``gen_ai.conversation.id``); cost and budget go under ``trio_agents.*``.

Times come from when messages arrive: a turn (and its model request) starts when its agent began
waiting for a response — its start, or the end of its previous turn's tool calls — and the request
ends when the response's blocks arrive. Spans are created with those start times once the
response is there, so no span is left open for a request that never came.

``opentelemetry`` is imported only when a :class:`SpanObserver` is made: nothing is imported or
paid when the extra is absent or tracing is off::

    observer = SpanObserver()            # the global tracer provider, or pass tracer_provider=
    async for message in query(prompt=..., options=options):
        observer.observe(message)
    observer.close()
"""

from __future__ import annotations

import time
from typing import Any

import attrs

from .backends.pricing import default_price_table
from .messages import (
    AssistantMessage,
    Message,
    ResultMessage,
    SystemMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

__all__ = ["INSTALL_HINT", "SpanObserver"]

INSTALL_HINT = "OpenTelemetry spans need the [otel] extra: pip install 'trio-agents[otel]'"
_PROVIDER = "anthropic"


@attrs.define(eq=False)
class _Agent:
    span: Any
    agent_id: str
    agent_type: str
    ready_ns: int
    turns: int = 0
    turn: Any = None
    pending: set[str] = attrs.Factory(set)
    cost_usd: float = 0.0


@attrs.define(eq=False, init=False)
class SpanObserver:
    """Turns a session's messages into spans; feed it every message, then :meth:`close` it."""

    _trace: Any
    _tracer: Any
    _session: Any
    _agents: dict[str, _Agent]
    _tools: dict[str, tuple[Any, str]]
    _responses: set[str]
    _budget: float | None
    _prices: Any

    def __init__(self, tracer_provider: Any = None, *, budget_usd: float | None = None) -> None:
        try:
            from opentelemetry import trace
        except ImportError:
            raise ImportError(INSTALL_HINT) from None
        self._trace = trace
        self._tracer = trace.get_tracer("trio_agents", tracer_provider=tracer_provider)
        self._session = None
        self._agents = {}
        self._tools = {}
        self._responses = set()
        self._budget = budget_usd
        self._prices = default_price_table()

    # -- spans ---------------------------------------------------------------------------------
    def _start(self, name: str, parent: Any, start_ns: int, **attributes: Any) -> Any:
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        attrs_ = {k.replace("__", "."): v for k, v in attributes.items() if v is not None}
        return self._tracer.start_span(
            name, context=context, start_time=start_ns, attributes=attrs_
        )

    def _open_session(self, now: int, data: dict[str, Any] | None = None) -> None:
        if self._session is not None:
            return
        data = data or {}
        self._session = self._start(
            "session", None, now,
            gen_ai__conversation__id=data.get("session_id"),
            trio_agents__budget_usd=self._budget,
            trio_agents__cwd=data.get("cwd"),
            trio_agents__permission_mode=data.get("permission_mode"),
        )  # fmt: skip
        self._agents["main"] = self._agent(self._session, "main", "main", now)

    def _agent(self, parent: Any, agent_id: str, agent_type: str, now: int) -> _Agent:
        span = self._start(
            f"invoke_agent {agent_type}", parent, now,
            gen_ai__operation__name="invoke_agent",
            gen_ai__provider__name=_PROVIDER,
            gen_ai__agent__name=agent_type,
            gen_ai__agent__id=agent_id,
        )  # fmt: skip
        return _Agent(span, agent_id, agent_type, now)

    # -- the stream ----------------------------------------------------------------------------
    def observe(self, message: Message) -> None:
        now = time.time_ns()
        match message:
            case SystemMessage(subtype="init", data=data):
                self._open_session(now, data)
            case SystemMessage(subtype=subtype, data=data):
                self._open_session(now)
                self._system(subtype, data, now)
            case AssistantMessage():
                self._open_session(now)
                self._response(message, now)
            case UserMessage(content=list() as blocks):
                for block in blocks:
                    if isinstance(block, ToolResultBlock):
                        self._tool_done(block, message.tool_use_result or {}, now)
            case ResultMessage():
                self._open_session(now)
                self._result(message, now)

    def _key(self, parent_tool_use_id: str | None) -> str:
        return "main" if parent_tool_use_id is None else parent_tool_use_id

    def _response(self, message: AssistantMessage, now: int) -> None:
        agent = self._agents.get(self._key(message.parent_tool_use_id))
        if agent is None:
            return
        if message.message_id not in self._responses:
            self._responses.add(message.message_id)
            self._end_turn(agent, now)
            agent.turns += 1
            agent.turn = self._start(
                f"turn {agent.turns}", agent.span, agent.ready_ns,
                trio_agents__turn=agent.turns, gen_ai__agent__id=agent.agent_id,
            )  # fmt: skip
            self._chat(agent, message, now)
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                self._tool_started(agent, block, now)

    def _chat(self, agent: _Agent, message: AssistantMessage, now: int) -> None:
        usage = message.usage or {}
        cost = self._prices.cost(message.model, usage) if usage else None
        agent.cost_usd += cost or 0.0
        span = self._start(
            f"chat {message.model}", agent.turn, agent.ready_ns,
            gen_ai__operation__name="chat",
            gen_ai__provider__name=_PROVIDER,
            gen_ai__request__model=message.model,
            gen_ai__response__model=message.model,
            gen_ai__response__id=message.message_id or None,
            gen_ai__usage__input_tokens=usage.get("input_tokens"),
            gen_ai__usage__output_tokens=usage.get("output_tokens"),
            gen_ai__usage__cache_read__input_tokens=usage.get("cache_read_input_tokens"),
            gen_ai__usage__cache_creation__input_tokens=usage.get("cache_creation_input_tokens"),
            trio_agents__cost_usd=cost,
        )  # fmt: skip
        span.end(end_time=now)

    def _tool_started(self, agent: _Agent, block: ToolUseBlock, now: int) -> None:
        span = self._start(
            f"execute_tool {block.name}", agent.turn, now,
            gen_ai__operation__name="execute_tool",
            gen_ai__tool__name=block.name,
            gen_ai__tool__call__id=block.id,
        )  # fmt: skip
        self._tools[block.id] = (span, agent.agent_id if agent.agent_id else "main")
        agent.pending.add(block.id)
        if block.name == "Agent":
            kind = str(block.input.get("subagent_type"))
            self._agents[block.id] = self._agent(span, block.id, kind, now)

    def _tool_done(self, block: ToolResultBlock, data: dict[str, Any], now: int) -> None:
        entry = self._tools.pop(block.tool_use_id, None)
        if entry is None:
            return
        span, _ = entry
        if block.is_error:
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
        sub = self._agents.get(block.tool_use_id)
        if sub is not None:
            if data.get("agentId"):
                sub.span.set_attribute("gen_ai.agent.id", str(data["agentId"]))
            if data.get("status") != "async_launched":
                self._end_agent(sub, now, str(data.get("status") or "completed"))
        span.end(end_time=now)
        for agent in self._agents.values():
            if block.tool_use_id in agent.pending:
                agent.pending.discard(block.tool_use_id)
                if not agent.pending:
                    self._end_turn(agent, now)
                    agent.ready_ns = now
                break

    def _end_turn(self, agent: _Agent, now: int) -> None:
        if agent.turn is not None:
            agent.turn.end(end_time=now)
            agent.turn = None

    def _end_agent(self, agent: _Agent, now: int, status: str) -> None:
        if agent.span is None:
            return
        self._end_turn(agent, now)
        agent.span.set_attribute("trio_agents.status", status)
        agent.span.set_attribute("trio_agents.turns", agent.turns)
        agent.span.set_attribute("trio_agents.cost_usd", agent.cost_usd)
        agent.span.end(end_time=now)
        agent.span = None

    def _system(self, subtype: str, data: dict[str, Any], now: int) -> None:
        sub = self._agents.get(str(data.get("tool_use_id")))
        if subtype == "task_started" and sub is not None:
            sub.span.set_attribute("gen_ai.agent.id", str(data.get("task_id")))
        elif subtype == "task_notification" and sub is not None:
            sub.cost_usd = float(data.get("cost_usd") or sub.cost_usd)
            self._end_agent(sub, now, str(data.get("status")))
        elif subtype in ("api_retry", "permission_denied", "budget_overrun", "compact_boundary"):
            main = self._agents["main"].span or self._session
            flat = {k: v for k, v in data.items() if isinstance(v, str | int | float | bool)}
            main.add_event(subtype, attributes=flat, timestamp=now)
        elif subtype == "session_summary":
            self._session.set_attribute("trio_agents.total_cost_usd",
                                        float(data.get("total_cost_usd") or 0.0))  # fmt: skip
            if data.get("max_budget_usd") is not None:
                self._session.set_attribute("trio_agents.budget_usd", data["max_budget_usd"])

    def _result(self, result: ResultMessage, now: int) -> None:
        main = self._agents["main"]
        self._end_turn(main, now)
        main.ready_ns = now
        if main.span is not None:
            main.span.add_event(
                "result",
                attributes={
                    "trio_agents.subtype": result.subtype,
                    "trio_agents.num_turns": result.num_turns,
                    "trio_agents.total_cost_usd": result.total_cost_usd,
                },
                timestamp=now,
            )
            if result.is_error:
                main.span.set_status(
                    self._trace.Status(self._trace.StatusCode.ERROR, "; ".join(result.errors or []))
                )
        self._session.set_attribute("trio_agents.total_cost_usd", result.total_cost_usd)

    def close(self) -> None:
        """The stream has ended: end every span still open (agents first, then the session)."""
        now = time.time_ns()
        for span, _ in self._tools.values():
            span.end(end_time=now)
        self._tools.clear()
        for key, agent in list(self._agents.items()):
            if key != "main":
                self._end_agent(agent, now, "stopped")
        if "main" in self._agents:
            self._end_agent(self._agents["main"], now, "done")
        if self._session is not None:
            self._session.end(end_time=now)
            self._session = None
