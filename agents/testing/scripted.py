"""``ScriptedBackend``: plays scripted model responses, for tests, the demo and benchmarks.

A script is a list of :class:`Step` per agent — ``"main"`` for the main agent, a subagent's type
for its agents — or a function of the :class:`ModelRequest`. Each step is the model's response
(text, thinking and tool_use blocks, ``stop_reason``, ``usage``) with optional latency in Trio
time, or a fault (an HTTP status, a stream cut after N events) that the loop must retry::

    backend = ScriptedBackend({
        "main": [
            Step([tool_use("Glob", {"pattern": "**/*.py"})], usage=usage(1200, 40)),
            Step([text("There are 3 Python files.")]),
        ],
    })

Like httpx's ``MockTransport`` and pydantic-ai's ``TestModel``, it is strict: a call with no step
left raises :class:`ScriptExhausted` (the loop reports it as an API error), and
:meth:`ScriptedBackend.assert_consumed` names any step that was never played. The same script
format (``Script.to_json``) drives :class:`~agents.testing.FakeAnthropicServer` over HTTP.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import attrs
import msgspec
import trio

from ..backends.base import (
    APIConnectionError,
    APIStatusError,
    BackendError,
    BackendEvent,
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelRequest,
)
from ..messages import TextBlock, ThinkingBlock, ToolUseBlock

__all__ = [
    "Fault",
    "Script",
    "ScriptExhausted",
    "ScriptedBackend",
    "Step",
    "events_for",
    "text",
    "thinking",
    "tool_use",
    "usage",
]

_ids = itertools.count(1)
_STOP = MessageStop()


class Fault(msgspec.Struct, frozen=True, omit_defaults=True):
    """A failure to play instead of (or in the middle of) a response.

    ``status``: answer with this HTTP status and ``message`` (429, 500, 529, 400 ...).
    ``drop_after``: send this many stream events, then cut the connection.
    ``retry_after``: seconds, sent as the ``retry-after`` header with ``status``.
    ``delay``: seconds before the first byte (Trio time; the fake server sleeps for real).
    """

    status: int | None = None
    message: str = "scripted failure"
    retry_after: float | None = None
    drop_after: int | None = None
    delay: float = 0.0


class Step(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """One scripted model response (or a :class:`Fault` in its place).

    (Never tracked by the cycle collector: data only, it can be in no cycle, and a tree of
    agents waiting on their scripted models holds one per agent.)

    ``stop_reason`` defaults to ``tool_use`` when the content has a tool call, else ``end_turn``.
    ``latency`` is waited before the first event, ``token_latency`` before each delta (Trio time).
    ``usage`` defaults to small nonzero numbers so cost accounting is exercised.
    """

    content: list[TextBlock | ThinkingBlock | ToolUseBlock] = []
    stop_reason: str | None = None
    usage: dict[str, int] | None = None
    latency: float = 0.0
    token_latency: float = 0.0
    model: str | None = None
    fault: Fault | None = None


def text(value: str) -> TextBlock:
    """A text block for a :class:`Step`."""
    return TextBlock(text=value)


def thinking(value: str, signature: str = "sig") -> ThinkingBlock:
    """A thinking block for a :class:`Step`."""
    return ThinkingBlock(thinking=value, signature=signature)


def tool_use(
    name: str, input: Mapping[str, Any] | None = None, id: str | None = None
) -> ToolUseBlock:
    """A tool call for a :class:`Step`; ids are ``toolu_<n>`` unless given."""
    return ToolUseBlock(id=id or _numbered("toolu_"), name=name, input=dict(input or {}))


def usage(input_tokens: int = 10, output_tokens: int = 5, **extra: int) -> dict[str, int]:
    """A usage dict for a :class:`Step` (``cache_read_input_tokens=...`` etc. as keywords)."""
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, **extra}


class Script(msgspec.Struct, frozen=True):
    """The serializable form: steps per agent (``"main"`` or a subagent type)."""

    agents: dict[str, list[Step]]

    def to_json(self) -> bytes:
        return msgspec.json.encode(self)

    @classmethod
    def from_json(cls, data: bytes | str) -> Script:
        return msgspec.json.decode(data, type=cls)

    @classmethod
    def coerce(cls, script: Script | Sequence[Step] | Mapping[str, Sequence[Step]]) -> Script:
        """Accept a Script, a list of steps (the main agent's) or a mapping per agent."""
        if isinstance(script, Script):
            return script
        if isinstance(script, Mapping):
            return cls({str(k): list(v) for k, v in script.items()})
        return cls({"main": list(script)})


class ScriptExhausted(BackendError):
    """A model call arrived with no scripted step left for that agent."""

    def __init__(self, agent: str, request: ModelRequest) -> None:
        last = request.messages[-1] if request.messages else None
        super().__init__(
            f"script exhausted: no step left for agent {agent!r} "
            f"(call #{len(request.messages)}, last message role {last and last.get('role')!r})"
        )


Responder = Callable[[ModelRequest], Step]


def _numbered(prefix: str) -> str:
    """``prefix`` and the next number of at least six digits (``msg_000042``): ``zfill``, not
    a ``06d`` format, which costs as much again (a message id per response)."""
    return prefix + str(next(_ids)).zfill(6)


def _default_output(step: Step) -> int:
    """The output tokens of a step without ``usage``: 5 plus a token per 4 characters."""
    out = 0
    for block in step.content:  # a loop, not sum() of a generator: this runs per response
        kind = type(block)
        if kind is TextBlock:
            out += len(block.text)  # type: ignore[union-attr]
        elif kind is ThinkingBlock:
            out += len(block.thinking)  # type: ignore[union-attr]
    return 5 + out // 4


def events_for(step: Step, request: ModelRequest, message_id: str) -> list[BackendEvent]:
    """The Messages API stream events that deliver ``step`` (shared with the fake server)."""
    return [_message_start(step, request, message_id), *_step_events(step), _STOP]


def _message_start(step: Step, request: ModelRequest, message_id: str) -> MessageStart:
    """The response's first event: its id, model and the input side of its usage (which,
    without the step's own ``usage``, grows with the request's messages)."""
    use = step.usage
    if use is None:  # small nonzero numbers, so cost accounting is exercised
        input_usage = {"input_tokens": 10 + 5 * len(request.messages), "output_tokens": 0}
    else:
        input_usage = {k: v for k, v in use.items() if k != "output_tokens"}
        input_usage["output_tokens"] = 0
    return MessageStart(
        message={
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": step.model or request.model,
            "content": [],
            "stop_reason": None,
            "usage": input_usage,
        }
    )


def _step_events(step: Step) -> list[BackendEvent]:
    """The events between ``message_start`` and ``message_stop``: the step's blocks, then the
    ``message_delta`` with its stop reason and output tokens. A function of the step alone."""
    use = step.usage
    output_tokens = _default_output(step) if use is None else use.get("output_tokens", 0)
    events: list[BackendEvent] = []
    has_tool = False
    for index, block in enumerate(step.content):
        if isinstance(block, TextBlock):
            events.append(ContentBlockStart(index, {"type": "text", "text": ""}))
            events.append(ContentBlockDelta(index, {"type": "text_delta", "text": block.text}))
        elif isinstance(block, ThinkingBlock):
            events.append(ContentBlockStart(index, {"type": "thinking", "thinking": ""}))
            events.append(
                ContentBlockDelta(index, {"type": "thinking_delta", "thinking": block.thinking})
            )
            events.append(
                ContentBlockDelta(index, {"type": "signature_delta", "signature": block.signature})
            )
        else:
            has_tool = True
            events.append(
                ContentBlockStart(
                    index, {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
                )
            )
            events.append(
                ContentBlockDelta(
                    index,
                    {
                        "type": "input_json_delta",
                        "partial_json": msgspec.json.encode(block.input).decode(),
                    },
                )
            )
        events.append(ContentBlockStop(index))
    stop = step.stop_reason or ("tool_use" if has_tool else "end_turn")
    events.append(
        MessageDelta(
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        )
    )
    return events


#: How many steps' events a :class:`ScriptedBackend` keeps, for a step played again (a
#: generated workload's one ``Step`` answering thousands of agents)
_KEPT_STEPS = 64
#: ... of at most this many blocks each
_KEPT_BLOCKS = 8


def _keeps(step: Step) -> bool:
    """Whether a step's events are worth keeping: a few blocks of text or thinking (what a
    generated workload answers many agents with). Their events hold strings only, which the
    cycle collector never walks; a tool call's hold its input (a step of 10 000 spawns, or
    the fresh calls of each turn, kept, were objects for the collector to walk again and
    again, for a step that is played once)."""
    content = step.content
    return len(content) <= _KEPT_BLOCKS and all(type(b) is not ToolUseBlock for b in content)


@attrs.define(eq=False)
class ScriptedBackend:
    """A :class:`~agents.backends.Backend` that plays a script. See the module docstring.

    ``script`` may be a list of steps (the main agent's), a mapping agent → steps, a
    :class:`Script`, or a function ``request -> Step`` (for generated workloads). With a mapping,
    a subagent type without its own steps falls back to the ``"*"`` entry if there is one.
    """

    script: Script | Sequence[Step] | Mapping[str, Sequence[Step]] | Responder
    #: the loop's retry policy for this backend (retries, backoff), as on AnthropicBackend
    max_retries: int = 10
    retry_base_delay: float = 0.5
    retry_max_delay: float = 32.0
    #: whether ``requests`` lists every request played (a test's record; a benchmark of
    #: thousands of agents turns it off: the list keeps each request's messages alive)
    keep_requests: bool = True
    requests: list[ModelRequest] = attrs.field(factory=list, init=False)
    _queues: dict[str, deque[Step]] | None = attrs.field(default=None, init=False)
    _responder: Responder | None = attrs.field(default=None, init=False)
    #: id(step) → the step (held, so that its id is not another's) and its events: the
    #: events are frozen and the loop only reads them, so a step played again reuses them
    _kept: dict[int, tuple[Step, list[BackendEvent]]] = attrs.field(factory=dict, init=False)

    def __attrs_post_init__(self) -> None:
        if callable(self.script) and not isinstance(self.script, Script | Mapping | Sequence):
            self._responder = self.script
        else:
            coerced = Script.coerce(self.script)
            self._queues = {k: deque(v) for k, v in coerced.agents.items()}

    def next_step(self, request: ModelRequest) -> Step:
        """The step answering ``request`` (consumed); raises :class:`ScriptExhausted`."""
        if self._responder is not None:
            return self._responder(request)
        assert self._queues is not None
        key = request.agent_type if request.purpose == "turn" else request.purpose
        queue = self._queues.get(key)
        if queue is None and request.purpose != "turn":
            queue = self._queues.get(request.agent_type)
        if queue is None:
            queue = self._queues.get("*")
        if not queue:
            raise ScriptExhausted(key, request)
        return queue.popleft()

    def remaining(self) -> dict[str, int]:
        """Steps not yet played, per agent (empty for a function script)."""
        return {k: len(q) for k, q in (self._queues or {}).items() if q}

    def assert_consumed(self) -> None:
        """Raise ``AssertionError`` naming the agents whose steps were not all played."""
        left = self.remaining()
        if left:
            raise AssertionError(f"unconsumed scripted steps: {left}")

    async def stream(self, request: ModelRequest) -> AsyncIterator[BackendEvent]:
        if self.keep_requests:
            self.requests.append(request)
        step = self.next_step(request)
        fault = step.fault
        if fault is not None and fault.delay:
            await trio.sleep(fault.delay)
        if step.latency:
            await trio.sleep(step.latency)
        else:
            await trio.lowlevel.checkpoint()
        if fault is not None and fault.status is not None:
            raise APIStatusError(fault.status, fault.message, retry_after=fault.retry_after)
        kept = self._kept.get(id(step))
        if kept is not None:
            body = kept[1]
        else:
            body = _step_events(step)
            if _keeps(step):
                if len(self._kept) >= _KEPT_STEPS:
                    self._kept.clear()
                self._kept[id(step)] = (step, body)
        events = [_message_start(step, request, _numbered("msg_")), *body, _STOP]
        drop = fault.drop_after if fault is not None else None
        if drop is None and not step.token_latency:  # the common case, without the checks
            for event in events:
                yield event
            return
        for n, event in enumerate(events):
            if drop is not None and n >= drop:
                raise APIConnectionError(f"stream cut after {drop} events")
            if step.token_latency and isinstance(event, ContentBlockDelta):
                await trio.sleep(step.token_latency)
            yield event
