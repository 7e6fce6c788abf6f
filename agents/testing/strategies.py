"""Hypothesis strategies for agent hierarchies, so users can property-test their budgets.

:func:`trees` draws a random tree of agents — how many responses each gives, which of them spawn
children (foreground or background), token counts, a latency before each response and between
its stream events (so cancellations land mid-stream), faults the loop must retry (an overloaded
answer, a stream cut after some events), and, for the whole tree, whether input tokens are
billed from the request's size (as the API does, or three or thirty times over: a backend that
bills more than the request can hold, thirty times even on its first event), whether ``auto``
mode's classifier and compaction make requests of their own, and the waits a budget's trip
must cut: a slow ``can_use_tool``, slow ``PostToolUse`` / ``Stop`` / ``PreCompact`` hooks, tool
calls queued behind a small ``max_tool_concurrency``.
:meth:`TreeSpec.options` turns one into ``AgentOptions`` (one ``AgentDefinition`` per node)
and :meth:`TreeSpec.backend` into a ``ScriptedBackend`` that plays it. :func:`caps` draws a
budget relative to the tree's costs, so that most examples start requests and many cross the
cap::

    @given(data=st.data(), tree=trees())
    def test_budget_holds(data, tree):
        cap = data.draw(caps(tree))
        async def main():
            probe = ProbeBackend(tree.backend(), prices=PRICES)
            options = tree.options(probe, max_budget_usd=cap)
            ...
        trio.run(main, clock=MockClock(autojump_threshold=0))

Tool calls go to the ``mcp__probe__work`` tool (mutating) or ``mcp__probe__look`` (read-only),
which record when they start and end in the probe's sequence
(:meth:`agents.testing.probe.ProbeBackend.note_tool`) when the backend is a probe.

Importing this module needs ``hypothesis`` (a test dependency).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import attrs
import msgspec
import trio
from hypothesis import strategies as st

from ..backends.base import Backend, BackendEvent, MessageDelta, MessageStart, ModelRequest
from ..options import AgentDefinition, AgentOptions
from ..tools.base import ToolAnnotations, create_sdk_mcp_server, tool
from .scripted import Fault, ScriptedBackend, Step, text, tool_use, usage

__all__ = [
    "HONEST_BILLING",
    "PROBE_READ_TOOL",
    "PROBE_TOOL",
    "BilledBackend",
    "NodeSpec",
    "StepSpec",
    "TreeSpec",
    "caps",
    "trees",
]

#: A cheap made-up model, priced per million tokens, so that small caps are interesting.
PROBE_MODEL = "probe-model"
PROBE_PRICING = {PROBE_MODEL: {"input": 1.0, "output": 5.0}}
#: with compaction drawn, the probe model's context window is this small (tokens)
SMALL_CONTEXT_WINDOW = 3_000
#: the names the model calls the probe tools by: mutating, and read-only
PROBE_TOOL = "mcp__probe__work"
PROBE_READ_TOOL = "mcp__probe__look"
#: ``billing`` above this bills more input than a request's bytes: a lying backend
HONEST_BILLING = 1.0
#: the options' ``max_tokens`` for every agent of a drawn tree
MAX_TOKENS = 4_000

FAULTS = (None, "overloaded", "cut")


@attrs.frozen
class StepSpec:
    """One response: its tokens and latencies, the children it spawns, the tools it calls.

    ``event_latency`` is waited before each content event of the stream (after the input usage
    arrived, before the output usage does). ``fault``: ``"overloaded"`` answers 529 first,
    ``"cut"`` sends ``cut_after`` events (``message_start`` with its usage first) and drops the
    connection; either way the loop retries and the next attempt plays the response."""

    input_tokens: int
    output_tokens: int
    latency: float
    event_latency: float = 0.0
    fault: str | None = None
    cut_after: int = 1
    children: tuple[NodeSpec, ...] = ()
    tools: int = 0
    mutating: bool = False
    #: how long each of its tool calls takes (Trio time): crossings land between tool calls
    tool_latency: float = 0.0


@attrs.frozen
class NodeSpec:
    """An agent: ``steps`` are its tool-using responses; a final text response follows, plus
    enough answers for its background children's notifications (one per child at most:
    notifications queued behind a busy agent share one turn)."""

    name: str
    background: bool
    steps: tuple[StepSpec, ...]
    final: StepSpec

    def walk(self) -> list[NodeSpec]:
        return [self, *(n for s in self.steps for c in s.children for n in c.walk())]


@attrs.frozen
class TreeSpec:
    """A whole hierarchy, rooted at the main agent, and how its requests are billed.

    ``billing``: None bills each response's scripted ``input_tokens``; a number bills
    ``ceil(request bytes * billing)`` input tokens instead (the request's JSON size: messages,
    system prompt and tools), the way input grows with the history. ``classify``: ``auto``
    permission mode, so mutating tool calls ask the classifier (a model request of its own).
    ``verbose``: every response's output is its request's whole ``max_tokens``.
    ``compact``: a context window small enough that compaction requests happen.
    ``ask``: permission mode ``default`` with a ``can_use_tool`` that answers yes after this
    long. ``hook_latency``: ``PostToolUse``, ``Stop``, ``SubagentStop`` and ``PreCompact``
    hooks that take this long. ``max_tool_concurrency``: the tool slots of each agent (calls
    beyond wait). With a :class:`~agents.testing.probe.ProbeBackend`, the slow answers and
    hooks note their waits (``probe.waits``)."""

    root: NodeSpec
    billing: float | None = None
    #: every response runs to its request's ``max_tokens`` (a model that writes until cut off)
    verbose: bool = False
    classify: bool = False
    compact: bool = False
    ask: float | None = None
    hook_latency: float | None = None
    max_tool_concurrency: int = 10
    side: StepSpec = StepSpec(input_tokens=50, output_tokens=20, latency=0.0)

    @property
    def nodes(self) -> list[NodeSpec]:
        return self.root.walk()

    def script(self) -> dict[str, list[Step]]:
        out: dict[str, list[Step]] = {}
        for node in self.nodes:
            steps: list[Step] = []
            for index, spec in enumerate(node.steps):
                calls = [
                    tool_use(
                        "Agent",
                        {
                            "description": f"task {child.name}",
                            "prompt": f"do {child.name}",
                            "subagent_type": child.name,
                            "run_in_background": child.background,
                        },
                    )
                    for child in spec.children
                ]
                calls += [
                    tool_use(
                        PROBE_TOOL if spec.mutating else PROBE_READ_TOOL,
                        {
                            "agent": node.name,
                            "write": spec.mutating,
                            "wait": spec.tool_latency,
                            "call": f"{node.name}.{index}.{i}",  # which call started
                        },
                    )
                    for i in range(spec.tools)
                ]
                steps += _steps(spec, calls)
            steps += _steps(node.final, [text(f"{node.name} done")])
            background = sum(c.background for s in node.steps for c in s.children)
            for _ in range(background):
                steps += _steps(node.final, [text("noted")])
            if node is self.root:  # a prompt more (after an interrupt or a /clear), answered
                steps += _steps(node.final, [text("again")]) * (2 + background)
            out["main" if node is self.root else node.name] = steps
        # side requests never run out: at most one per response and tool call of the tree
        spare = 2 * sum(len(n.steps) + 2 + sum(s.tools for s in n.steps) for n in self.nodes)
        if self.classify:
            out["classifier"] = [_step(self.side, [text("yes")]) for _ in range(spare)]
        # compaction answers even without a small window: a billed size (``billing``) can
        # take a context past the threshold, and its request must not play an agent's step
        out["compact"] = [_step(self.side, [text("summary")]) for _ in range(spare)]
        return out

    def backend(self) -> Backend:
        """The scripted backend playing this tree, billing like the API (see
        :class:`BilledBackend`)."""
        scripted = ScriptedBackend(self.script(), retry_base_delay=0.5, retry_max_delay=4.0)
        return BilledBackend(scripted, self.billing, fill=self.verbose)

    def options(self, backend: Any, **overrides: Any) -> AgentOptions:
        agents = {
            n.name: AgentDefinition(description=f"node {n.name}", prompt=f"You are {n.name}.")
            for n in self.nodes
            if n is not self.root
        }
        pricing: dict[str, Any] = {PROBE_MODEL: dict(PROBE_PRICING[PROBE_MODEL])}
        if self.compact:
            pricing[PROBE_MODEL]["context_window"] = SMALL_CONTEXT_WINDOW
        mode = "auto" if self.classify else "default" if self.ask else "bypassPermissions"
        settings: dict[str, Any] = {
            "backend": backend,
            "agents": agents,
            "model": PROBE_MODEL,
            "pricing": pricing,
            "permission_mode": mode,
            "max_tokens": MAX_TOKENS,
            "max_subagent_depth": 3,
            "max_concurrent_subagents": 50,
            "max_tool_concurrency": self.max_tool_concurrency,
            "mcp_servers": {"probe": probe_server(backend)},
        }
        if self.ask is not None and not self.classify:
            settings["can_use_tool"] = _slow_yes(self.ask, backend)
        if self.hook_latency is not None:
            settings["hooks"] = _slow_hooks(self.hook_latency, backend)
        settings.update(overrides)
        return AgentOptions(**settings)

    # -- costs, to draw budgets relative to them --------------------------------------------

    def responses(self) -> list[StepSpec]:
        """Every scripted response (a node's notification answers counted once each)."""
        out: list[StepSpec] = []
        for node in self.nodes:
            background = sum(c.background for s in node.steps for c in s.children)
            out += [*node.steps, *[node.final] * (1 + background)]
        return out

    def scripted_cost(self, prices: dict[str, float] | None = None) -> float:
        """What the scripted responses cost at ``prices`` (the probe's by default), faults and
        side requests aside: about what the whole tree spends without a cap."""
        p = prices or PROBE_PRICING[PROBE_MODEL]
        tokens = sum(
            s.input_tokens * p["input"] + s.output_tokens * p["output"] for s in self.responses()
        )
        return tokens / 1e6

    def one_request_worst_case(self, prices: dict[str, float] | None = None) -> float:
        """The largest worst case of one request of this tree: ``MAX_TOKENS`` of output and a
        generous input (the longest scripted input, or a few kilobytes when billed by size)."""
        p = prices or PROBE_PRICING[PROBE_MODEL]
        longest = max((s.input_tokens for s in self.responses()), default=0)
        return (max(longest, 8_000) * p["input"] + MAX_TOKENS * p["output"]) / 1e6


def probe_server(backend: Any) -> Any:
    """The in-process server of the probe tools; their starts and ends go to
    ``backend.note_tool`` / ``backend.note_tool_end`` when the backend has them (a
    :class:`~agents.testing.probe.ProbeBackend`)."""
    note = getattr(backend, "note_tool", None)
    note_end = getattr(backend, "note_tool_end", None)
    schema = {"agent": str, "write": bool, "wait": float, "call": str}

    async def run(args: dict[str, Any]) -> dict[str, Any]:
        if note is not None:
            note(str(args.get("agent", "")), str(args.get("call", "")))
        wait = float(args.get("wait") or 0.0)
        if wait:
            await trio.sleep(wait)
        if note_end is not None:
            note_end(str(args.get("agent", "")))
        return {"content": "done"}

    mutating = ToolAnnotations(readOnlyHint=False)
    work = tool("work", "Waits; the tests record when it runs.", schema, annotations=mutating)
    reading = ToolAnnotations(readOnlyHint=True)
    look = tool("look", "Waits, changing nothing.", schema, annotations=reading)
    return create_sdk_mcp_server("probe", tools=[work(run), look(run)])


async def _wait(backend: Any, seconds: float, kind: str, agent_id: str, call: str | None) -> None:
    """Sleep ``seconds``, noted with ``backend.note_wait`` when it has one (a probe)."""
    note = getattr(backend, "note_wait", None)
    if note is None:
        await trio.sleep(seconds)
        return
    record = note(kind, agent_id, call)
    try:
        await trio.sleep(seconds)
        record.completed = True
    finally:
        record.end = trio.current_time()


def _slow_yes(seconds: float, backend: Any = None) -> Any:
    """A ``can_use_tool`` that says yes after ``seconds`` (a person taking their time)."""
    from ..permissions import PermissionResultAllow

    async def answer(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        agent = context.agent_id or "main"
        await _wait(backend, seconds, "can_use_tool", agent, context.tool_use_id)
        return PermissionResultAllow()

    return answer


#: the hooks a drawn tree may have take their time on these events
SLOW_HOOK_EVENTS = ("PostToolUse", "Stop", "SubagentStop", "PreCompact")


def _slow_hooks(seconds: float, backend: Any = None) -> dict[str, Any]:
    """Hooks on :data:`SLOW_HOOK_EVENTS` that take ``seconds`` and say nothing."""
    from ..hooks import HookMatcher

    async def hook(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        kind, agent = data["hook_event_name"], data.get("agent_id") or "main"
        await _wait(backend, seconds, kind, agent, tool_use_id)
        return {}

    return {event: [HookMatcher(None, [hook])] for event in SLOW_HOOK_EVENTS}


@attrs.define(eq=False)
class BilledBackend:
    """Wraps a backend and bills like the API: ``ceil(request bytes * per_byte)`` input tokens
    in place of the scripted count (input that grows with the request; ``per_byte=None`` keeps
    the scripted count), and never more output tokens than the request's ``max_tokens`` (a
    response stops there). ``clamp=False`` lets the script's output through, however large;
    ``fill=True`` bills every response its whole ``max_tokens``."""

    inner: Any
    per_byte: float | None = None
    clamp: bool = True
    #: bill every response the request's whole ``max_tokens`` of output
    fill: bool = False

    @property
    def max_retries(self) -> int:
        return int(getattr(self.inner, "max_retries", 10))

    @property
    def retry_base_delay(self) -> float:
        return float(getattr(self.inner, "retry_base_delay", 0.5))

    @property
    def retry_max_delay(self) -> float:
        return float(getattr(self.inner, "retry_max_delay", 32.0))

    def input_tokens(self, request: ModelRequest) -> int:
        assert self.per_byte is not None
        size = len(_encode(request.messages)) + len(_encode(request.system))
        size += len(_encode(request.tools))
        return math.ceil(size * self.per_byte)

    async def stream(self, request: ModelRequest) -> AsyncIterator[BackendEvent]:
        billed = None if self.per_byte is None else self.input_tokens(request)
        async with aclosing(self.inner.stream(request)) as events:
            async for event in events:
                if isinstance(event, MessageStart) and billed is not None:
                    message = dict(event.message)
                    message["usage"] = {**(message.get("usage") or {}), "input_tokens": billed}
                    event = MessageStart(message=message)
                elif isinstance(event, MessageDelta) and (self.clamp or self.fill):
                    output = event.usage.get("output_tokens")
                    if self.fill or (output is not None and output > request.max_tokens):
                        usage = {**event.usage, "output_tokens": request.max_tokens}
                        event = MessageDelta(delta=event.delta, usage=usage)
                yield event


_encode = msgspec.json.Encoder().encode


def _step(spec: StepSpec, content: list[Any]) -> Step:
    return Step(
        content,
        usage=usage(spec.input_tokens, spec.output_tokens),
        latency=spec.latency,
        token_latency=spec.event_latency,
    )


def _steps(spec: StepSpec, content: list[Any]) -> list[Step]:
    """The response, preceded by the failed attempt its fault stands for."""
    played = _step(spec, content)
    if spec.fault == "overloaded":
        return [Step(fault=Fault(status=529, message="overloaded")), played]
    if spec.fault == "cut":
        return [
            Step(
                content,
                usage=usage(spec.input_tokens, spec.output_tokens),
                latency=spec.latency,
                token_latency=spec.event_latency,
                fault=Fault(drop_after=spec.cut_after),
            ),
            played,
        ]
    return [played]


_step_costs = st.builds(
    StepSpec,
    input_tokens=st.integers(1, 400),
    output_tokens=st.integers(1, 2_000),
    latency=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5]),
    event_latency=st.sampled_from([0.0, 0.0, 0.25, 0.5, 1.5]),
    fault=st.sampled_from(FAULTS),
    cut_after=st.integers(1, 4),
    mutating=st.booleans(),
    tool_latency=st.sampled_from([1.25, 0.0, 0.5, 0.0]),  # a slow call first: others queue
)


@st.composite
def _node(draw: st.DrawFn, names: Any, depth: int, background: bool, budget: list[int]) -> NodeSpec:
    name = f"n{next(names)}"
    steps = []
    for _ in range(draw(st.integers(0, 3))):
        base = draw(_step_costs)
        children: list[NodeSpec] = []
        if depth < 3:
            for _ in range(draw(st.integers(0, 2))):
                if budget[0] <= 0:
                    break
                budget[0] -= 1
                children.append(draw(_node(names, depth + 1, draw(st.booleans()), budget)))
        tools = draw(st.integers(0 if children else 1, 3))  # a tool-less step would end the loop
        steps.append(attrs.evolve(base, children=tuple(children), tools=tools))
    final = attrs.evolve(draw(_step_costs), mutating=False)
    return NodeSpec(name=name, background=background, steps=tuple(steps), final=final)


@st.composite
def trees(
    draw: st.DrawFn,
    max_agents: int = 12,
    faults: bool = True,
    billing: bool = True,
    side_requests: bool = True,
) -> TreeSpec:
    """A random hierarchy of at most ``max_agents`` subagents below the main agent (two more
    with side requests: background agents the main agent starts first).

    ``faults``, ``billing`` and ``side_requests`` allow drawing retried faults, input billed
    from the request's size (honestly or three or thirty times over), and classifier and
    compaction requests with slow permission prompts and hooks (all drawn by default)."""
    names = itertools.count()
    root = draw(_node(names, 0, False, [max_agents]))
    # half the time (with side requests) the main agent first starts one or two background
    # agents, so that crossings often land while it waits on a prompt, a hook or a tool slot
    # (the interesting choice first: Hypothesis draws a list's first entry most often)
    busy = side_requests and draw(st.sampled_from([True, False]))
    if busy:
        helpers = draw(st.lists(_node(names, 3, True, [0]), min_size=1, max_size=2))
        start = attrs.evolve(draw(_step_costs), children=tuple(helpers), tools=0)
        root = attrs.evolve(root, steps=(start, *root.steps))
    tree = TreeSpec(root=attrs.evolve(root, name="main"))
    if not faults:
        tree = _without_faults(tree)
    permission = draw(st.sampled_from(["ask", "auto", "bypass"])) if side_requests else "bypass"
    waits = side_requests and (busy or draw(st.sampled_from([True, False])))
    return attrs.evolve(
        tree,
        billing=draw(st.sampled_from([None, 0.25, 0.5, 1.0, 3.0, 30.0])) if billing else None,
        verbose=draw(st.booleans()) if billing else False,
        classify=permission == "auto",
        ask=draw(st.sampled_from([0.5, 2.0, 6.0])) if permission == "ask" else None,
        hook_latency=draw(st.sampled_from([0.5, 3.0, 8.0])) if waits else None,
        max_tool_concurrency=draw(st.sampled_from([1, 2, 10])),  # 1 first: calls queue
        compact=draw(st.booleans()) if side_requests else False,
        side=draw(_step_costs.map(lambda s: attrs.evolve(s, fault=None))),
    )


def _without_faults(tree: TreeSpec) -> TreeSpec:
    def strip(node: NodeSpec) -> NodeSpec:
        steps = tuple(
            attrs.evolve(s, fault=None, children=tuple(strip(c) for c in s.children))
            for s in node.steps
        )
        return attrs.evolve(node, steps=steps, final=attrs.evolve(node.final, fault=None))

    return attrs.evolve(tree, root=strip(tree.root))


def caps(tree: TreeSpec, least: float = 0.0) -> st.SearchStrategy[float]:
    """A budget for ``tree``, relative to its costs: mostly between one request's worst case and
    what the whole tree spends (requests start, then the cap is crossed or refuses one mid-way),
    sometimes a fraction of the tree's spend (crossed early), below one request's worst case
    (the first request may be refused or fitted) or above everything (never crossed)."""
    worst = tree.one_request_worst_case()
    spend = tree.scripted_cost()
    mid_way = st.floats(0.0, 1.0).map(lambda f: worst + f * spend)
    return st.one_of(
        mid_way,
        mid_way,
        mid_way,
        st.floats(0.05, 0.95).map(lambda f: f * spend),
        st.floats(0.0, 1.0).map(lambda f: f * worst),
        st.just(1.5 * (worst + spend)),
    ).map(lambda cap: max(round(cap, 9), least))
