"""Hypothesis strategies for agent hierarchies, so users can property-test their budgets.

:func:`trees` draws a random tree of agents — how many responses each gives, which of them spawn
children (foreground or background), token counts and latencies. :meth:`TreeSpec.options`
turns one into ``AgentOptions`` (one ``AgentDefinition`` per node) and a ``ScriptedBackend``
that plays it::

    @given(tree=trees(), cap=st.floats(0.0005, 0.05))
    def test_budget_holds(tree, cap):
        async def main():
            probe = ProbeBackend(tree.backend(), prices=PRICES)
            options = tree.options(probe, max_budget_usd=cap)
            ...
        trio.run(main, clock=MockClock(autojump_threshold=0))

Importing this module needs ``hypothesis`` (a test dependency).
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
from hypothesis import strategies as st

from ..options import AgentDefinition, AgentOptions
from .scripted import ScriptedBackend, Step, text, tool_use, usage

__all__ = ["NodeSpec", "StepSpec", "TreeSpec", "trees"]

#: A cheap made-up model, priced per million tokens, so that small caps are interesting.
PROBE_MODEL = "probe-model"
PROBE_PRICING = {PROBE_MODEL: {"input": 1.0, "output": 5.0}}


@attrs.frozen
class StepSpec:
    """One response: its tokens and latency, the children it spawns, the no-op tools it calls."""

    input_tokens: int
    output_tokens: int
    latency: float
    children: tuple[NodeSpec, ...] = ()
    tools: int = 0


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
    """A whole hierarchy, rooted at the main agent."""

    root: NodeSpec

    @property
    def nodes(self) -> list[NodeSpec]:
        return self.root.walk()

    def script(self) -> dict[str, list[Step]]:
        out: dict[str, list[Step]] = {}
        for node in self.nodes:
            steps = []
            for spec in node.steps:
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
                calls += [tool_use("Glob", {"pattern": "*.none"}) for _ in range(spec.tools)]
                steps.append(_step(spec, calls))
            steps.append(_step(node.final, [text(f"{node.name} done")]))
            background = sum(c.background for s in node.steps for c in s.children)
            steps += [_step(node.final, [text("noted")]) for _ in range(background)]
            out["main" if node is self.root else node.name] = steps
        return out

    def backend(self) -> ScriptedBackend:
        return ScriptedBackend(self.script())

    def options(self, backend: Any, **overrides: Any) -> AgentOptions:
        agents = {
            n.name: AgentDefinition(description=f"node {n.name}", prompt=f"You are {n.name}.")
            for n in self.nodes
            if n is not self.root
        }
        settings: dict[str, Any] = {
            "backend": backend,
            "agents": agents,
            "model": PROBE_MODEL,
            "pricing": PROBE_PRICING,
            "permission_mode": "bypassPermissions",
            "max_tokens": 4_000,
            "max_subagent_depth": 3,
            "max_concurrent_subagents": 50,
        }
        settings.update(overrides)
        return AgentOptions(**settings)


def _step(spec: StepSpec, content: list[Any]) -> Step:
    return Step(
        content,
        usage=usage(spec.input_tokens, spec.output_tokens),
        latency=spec.latency,
    )


_step_costs = st.builds(
    StepSpec,
    input_tokens=st.integers(1, 400),
    output_tokens=st.integers(1, 2_000),
    latency=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5]),
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
        tools = draw(st.integers(0 if children else 1, 2))  # a tool-less step would end the loop
        steps.append(attrs.evolve(base, children=tuple(children), tools=tools))
    return NodeSpec(name=name, background=background, steps=tuple(steps), final=draw(_step_costs))


@st.composite
def trees(draw: st.DrawFn, max_agents: int = 12) -> TreeSpec:
    """A random hierarchy of at most ``max_agents`` subagents below the main agent."""
    names = itertools.count()
    root = draw(_node(names, 0, False, [max_agents]))
    return TreeSpec(root=attrs.evolve(root, name="main"))
