"""The turn's shortcuts do what the full paths they skip would do: the prompt and stop seams
without the hooks' coroutines, the soft budget gate, and the stream read inline (closed
whatever ends it, its booking settled whatever fails)."""

from __future__ import annotations

import contextlib
import itertools
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import attrs
import msgspec
import pytest
import trio
import trio.testing

from agents import AgentOptions, ResultError, ResultMessage, SystemMessage, query
from agents._features import hookpoints
from agents._features.seams import FEATURES
from agents._loop.agent import AgentLoop
from agents._loop.budget import admit, admit_soft
from agents._loop.response import Response
from agents._loop.run import Run
from agents._loop.session import Session
from agents.backends.base import (
    APIStatusError,
    BackendEvent,
    ContentBlockDelta,
    ModelRequest,
)
from agents.testing import Step, text
from agents.testing.scripted import events_for
from runtime import Ledger

from .helpers import collect, result_of

EVENTS = ("UserPromptSubmit", "Stop", "SubagentStop", "SessionStart")


def fake_loop(is_main: bool, events: tuple[str, ...], state: dict[str, Any]) -> AgentLoop:
    """What the seams read of a loop: whether it is main, its state, its session's hooks."""
    runner = types.SimpleNamespace(has=lambda event: event in events)
    options = types.SimpleNamespace(output_format=None)
    session = types.SimpleNamespace(hooks=runner if events else None, options=options)
    return cast(AgentLoop, types.SimpleNamespace(is_main=is_main, state=state, session=session))


def hook_sets() -> list[tuple[str, ...]]:
    return [combo for n in range(3) for combo in itertools.combinations(EVENTS, n)]


@pytest.mark.parametrize("is_main", [True, False])
@pytest.mark.parametrize("events", hook_sets())
@pytest.mark.parametrize("pending", [None, ["context from SessionStart"]])
async def test_the_prompt_seam_skips_the_hooks_only_where_they_would_leave_it_unchanged(
    monkeypatch: pytest.MonkeyPatch,
    is_main: bool,
    events: tuple[str, ...],
    pending: list[str] | None,
) -> None:
    """Wherever the prompt seam skips ``hookpoints.on_prompt``, the full path returns the very
    prompt and changes nothing; context waiting to be added never passes."""
    state: dict[str, Any] = {} if pending is None else {hookpoints._PENDING: list(pending)}
    loop = fake_loop(is_main, events, state)
    full = hookpoints.on_prompt
    called: list[object] = []

    async def spy(*args: Any) -> Any:
        called.append(args)
        return "from the hooks"

    monkeypatch.setattr(hookpoints, "on_prompt", spy)
    prompt = "the task"
    answer = await FEATURES.on_prompt(loop, prompt, Run(started=0.0))
    if called:
        assert answer == "from the hooks"
        assert pending is not None or (is_main and "UserPromptSubmit" in events)
        return
    assert answer is prompt
    assert await full(loop, prompt, Run(started=0.0)) is prompt and state == {}


@pytest.mark.parametrize("is_main", [True, False])
@pytest.mark.parametrize("events", hook_sets())
async def test_the_final_seam_skips_stop_hooks_only_where_they_would_do_nothing(
    monkeypatch: pytest.MonkeyPatch, is_main: bool, events: tuple[str, ...]
) -> None:
    """Wherever the final-answer seam skips ``hookpoints.stop_hooks``, the full path returns
    None (the run ends) and leaves the run alone."""
    loop = fake_loop(is_main, events, {})
    full = hookpoints.stop_hooks
    called: list[object] = []

    async def spy(*args: Any) -> Any:
        called.append(args)
        return "go on"

    monkeypatch.setattr(hookpoints, "stop_hooks", spy)
    run = Run(started=0.0)
    answer = await FEATURES.on_final(loop, Response(), run)
    if called:
        assert answer == "go on" and ("Stop" if is_main else "SubagentStop") in events
        return
    assert answer is None
    assert await full(loop, Response(), run) is None
    assert msgspec.structs.asdict(run) == msgspec.structs.asdict(Run(started=0.0))


@pytest.mark.parametrize("cap", [None, 1.0])
@pytest.mark.parametrize("spent", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("reserve", [True, False])
async def test_the_soft_gate_answers_as_admit_does_without_a_booking(
    cap: float | None, spent: float, reserve: bool
) -> None:
    """``admit_soft`` is ``admit`` wherever nothing is booked (``reserve`` off or no cap):
    the request as it is, or None once the ledger has tripped."""
    if reserve and cap is not None:
        return  # a booking: only ``admit`` makes it
    ledger = Ledger(cap=cap)
    if spent:
        ledger.charge("main", spent)
    supervisor = types.SimpleNamespace(ledger=ledger)  # a session's ledger is its supervisor's
    session = cast(Session, types.SimpleNamespace(ledger=ledger, supervisor=supervisor))
    request = ModelRequest(model="m", messages=[], max_tokens=10)
    expected = None if ledger.exhausted else (request, None)
    assert admit_soft(session, request) == expected
    assert await admit(session, "main", request, 0, reserve=reserve) == expected
    assert ledger.reserved == 0


@attrs.define
class _Events:
    """A backend's stream that is not a generator: only the loop can close it."""

    events: list[BackendEvent | None]
    log: list[str]

    def __aiter__(self) -> _Events:
        return self

    async def __anext__(self) -> BackendEvent:
        if not self.events:
            raise StopAsyncIteration
        event = self.events.pop(0)
        if event is None:  # the model takes its time
            await trio.sleep_forever()
        await trio.lowlevel.checkpoint()
        assert event is not None
        return event

    async def aclose(self) -> None:
        self.log.append("closed")


@attrs.define
class _ClosingBackend:
    events: list[BackendEvent | None]
    log: list[str]
    max_retries: int = 0

    def stream(self, request: ModelRequest) -> AsyncIterator[BackendEvent]:
        self.log.append("stream")
        return _Events(list(self.events), self.log)


def _complete() -> list[BackendEvent | None]:
    request = ModelRequest(model="claude-sonnet-4-5", messages=[{}], max_tokens=10)
    return list(events_for(Step([text("done")]), request, "msg_1"))


def _malformed() -> list[BackendEvent | None]:
    start, *_ = _complete()
    return [start, ContentBlockDelta(7, {"type": "text_delta", "text": "a block never opened"})]


def _waiting() -> list[BackendEvent | None]:
    start, *_ = _complete()
    return [start, None]


@pytest.mark.parametrize(
    ("events", "subtype"),
    [(_complete, "success"), (_malformed, "error_during_execution"), (_waiting, None)],
)
async def test_the_models_stream_is_closed_whatever_ends_the_response(
    project: Path, autojump_clock: trio.testing.MockClock, events: Any, subtype: str | None
) -> None:
    """The loop closes the backend's stream once it is done with it, before the run's result:
    after a whole response, after a malformed event, and when the caller gives up waiting."""
    log: list[str] = []
    backend = _ClosingBackend(events(), log)
    options = AgentOptions(cwd=str(project), backend=backend, model="claude-sonnet-4-5")
    results: list[ResultMessage] = []
    with trio.move_on_after(10), contextlib.suppress(ResultError):
        async for message in query(prompt="hi", options=options):
            if isinstance(message, ResultMessage):
                log.append("result")
                results.append(message)
    if subtype is None:
        assert log == ["stream", "closed"] and results == []
    else:
        assert log == ["stream", "closed", "result"] and results[0].subtype == subtype


async def test_a_backend_that_fails_as_it_is_called_still_settles_its_booking(
    project: Path,
) -> None:
    """A stream that fails before it exists (the backend raises when called) is a cut
    response like any other: in reserve mode its booking is released."""

    @attrs.define
    class Refusing:
        max_retries: int = 0

        def stream(self, request: ModelRequest) -> AsyncIterator[BackendEvent]:
            raise APIStatusError(400, "bad request")

    options = AgentOptions(
        cwd=str(project),
        backend=Refusing(),
        model="claude-sonnet-4-5",
        max_budget_usd=5.0,
        budget_mode="reserve",
    )
    messages, error = await collect("hi", options)
    assert error is not None and result_of(messages).errors == ["API error 400: bad request"]
    summary = [m for m in messages if isinstance(m, SystemMessage)][-1]
    assert summary.subtype == "session_summary" and summary.data["reserved_usd"] == 0
    assert summary.data["charges"] == 1  # the cut, settled at nothing
