"""The scripted backend plays a step again with the same events (kept, not made anew), and
those are exactly what ``events_for`` makes: the fake server's events, field for field."""

from __future__ import annotations

import msgspec
import pytest

from agents.backends.base import BackendEvent, MessageStart, ModelRequest
from agents.testing.scripted import (
    ScriptedBackend,
    Step,
    events_for,
    text,
    thinking,
    tool_use,
    usage,
)

REQUEST = ModelRequest(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=10)
STEPS = [
    Step([text("done")]),
    Step([thinking("hm"), text("a"), tool_use("Read", {"file_path": "/x"}, id="t1")]),
    Step([text("b")], usage=usage(3, 4, cache_read_input_tokens=5), stop_reason="max_tokens"),
    Step([], model="other"),
]


async def played(backend: ScriptedBackend) -> list[BackendEvent]:
    stream = backend.stream(REQUEST)
    try:
        return [event async for event in stream]
    finally:
        await stream.aclose()  # type: ignore[attr-defined]


def without_id(events: list[BackendEvent]) -> list[object]:
    """The events as builtins, the message id left out (each response has its own)."""
    out = msgspec.to_builtins(events)
    assert isinstance(events[0], MessageStart)
    del out[0]["message"]["id"]
    return out  # type: ignore[no-any-return]


@pytest.mark.parametrize("step", STEPS, ids=range(len(STEPS)))
async def test_a_step_played_again_brings_what_events_for_makes(step: Step) -> None:
    backend = ScriptedBackend(lambda request: step)
    first, second = await played(backend), await played(backend)
    expected = without_id(events_for(step, REQUEST, "msg_x"))
    assert without_id(first) == without_id(second) == expected
    assert first[0].message["id"] != second[0].message["id"]  # type: ignore[union-attr]


async def test_the_kept_events_are_bounded() -> None:
    """A generated workload of fresh steps keeps no more than a few dozen of them."""
    backend = ScriptedBackend(lambda request: Step([text("fresh")]))
    for _ in range(500):
        await played(backend)
    assert len(backend._kept) <= 64


async def test_each_step_keeps_its_own_events() -> None:
    order = [STEPS[0], STEPS[1], STEPS[0], STEPS[2], STEPS[1]]
    backend = ScriptedBackend(order)
    for step in order:
        assert without_id(await played(backend)) == without_id(events_for(step, REQUEST, "m"))


@pytest.mark.parametrize(
    "step",
    [
        Step([text(str(i)) for i in range(100)]),  # many blocks
        Step([tool_use("Read", {"file_path": "/x"}, id="t1")]),  # a tool call: its input
    ],
    ids=["big", "tool call"],
)
async def test_a_step_whose_events_the_collector_would_walk_is_not_kept(step: Step) -> None:
    """Only a few blocks of text or thinking are kept (strings: nothing for the cycle
    collector); a tree's 10 000 spawns, or each turn's fresh tool calls, played once, are not
    held."""
    backend = ScriptedBackend([step, step])
    for _ in range(2):
        assert without_id(await played(backend)) == without_id(events_for(step, REQUEST, "m"))
    assert backend._kept == {}
