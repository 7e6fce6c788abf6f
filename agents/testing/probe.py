"""``ProbeBackend``: a backend wrapper that records every response, for budget property tests.

It logs, in one global sequence, when each response starts and ends and what it *delivered*
(the usage the loop saw: input on ``message_start``, output on ``message_delta``), priced with
the session's table, and when each probe tool starts (:meth:`ProbeBackend.note_tool`). From that
log :func:`check_soft_cap` and :func:`check_hard_cap` verify the budget's guarantees on a
finished run: the ledger holds what was delivered, nothing starts after the cap is crossed,
the total stays within its bound::

    probe = ProbeBackend(ScriptedBackend(script), prices=options.price_table())
    ... run the query with AgentOptions(backend=probe, max_budget_usd=cap) ...
    check_soft_cap(probe.records, cap, ledger_total)
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from typing import Any

import attrs
import trio

from ..backends.base import Backend, BackendEvent, MessageDelta, MessageStart, ModelRequest
from ..backends.pricing import PriceTable

__all__ = [
    "ProbeBackend",
    "ResponseRecord",
    "ToolStart",
    "WaitRecord",
    "check_hard_cap",
    "check_soft_cap",
    "crossing_of",
]


@attrs.define(eq=False)
class ResponseRecord:
    """One model response as the backend saw it."""

    agent_id: str
    model: str
    start_seq: int
    start: float
    #: the request's ``purpose`` (``turn``, ``compact``, ``classifier`` ...)
    purpose: str = "turn"
    end_seq: int = -1
    end: float = -1.0
    completed: bool = False
    usage: dict[str, Any] = attrs.Factory(dict)
    cost: float = 0.0


@attrs.frozen
class ToolStart:
    """A probe tool call starting, in the responses' sequence."""

    agent: str
    seq: int
    at: float
    #: the call's key (the strategies' probe tools are called with one), "" if none
    call: str = ""


@attrs.define(eq=False)
class WaitRecord:
    """One wait a budget's trip must cut: a ``can_use_tool`` answer or a hook taking its time
    (the strategies' slow ones note theirs, see :meth:`ProbeBackend.note_wait`)."""

    #: ``can_use_tool`` or the hook event (``PostToolUse``, ``Stop``, ``PreCompact`` ...)
    kind: str
    #: the agent waiting ("main" or a subagent's id)
    agent_id: str
    #: the tool call it is about (None for a Stop or PreCompact hook)
    tool_use_id: str | None
    start: float
    end: float = -1.0
    #: it ran to its end (False: cancelled)
    completed: bool = False


@attrs.define(eq=False)
class ProbeBackend:
    """Wraps a backend; ``records`` lists every response in start order, ``tool_starts`` every
    probe tool call as it starts."""

    inner: Backend
    prices: PriceTable
    records: list[ResponseRecord] = attrs.Factory(list)
    tool_starts: list[ToolStart] = attrs.Factory(list)
    #: every probe tool call as it ends (same shape as a start)
    tool_ends: list[ToolStart] = attrs.Factory(list)
    #: every slow permission answer and hook as it started (and ended)
    waits: list[WaitRecord] = attrs.Factory(list)
    _seq: Any = attrs.Factory(itertools.count)

    @property
    def max_retries(self) -> int:
        return int(getattr(self.inner, "max_retries", 10))

    @property
    def retry_base_delay(self) -> float:
        return float(getattr(self.inner, "retry_base_delay", 0.5))

    @property
    def retry_max_delay(self) -> float:
        return float(getattr(self.inner, "retry_max_delay", 32.0))

    def mark(self) -> int:
        """A place in the sequence, for a test to compare with the records' (a result seen)."""
        return int(next(self._seq))

    def note_tool(self, agent: str, call: str = "") -> None:
        """Record that a tool of ``agent`` starts now (the strategies' probe tool calls it)."""
        self.tool_starts.append(ToolStart(agent, next(self._seq), trio.current_time(), call))

    def note_tool_end(self, agent: str) -> None:
        """Record that a tool of ``agent`` ends now (its handler returns)."""
        self.tool_ends.append(ToolStart(agent, next(self._seq), trio.current_time()))

    def note_wait(self, kind: str, agent_id: str, tool_use_id: str | None) -> WaitRecord:
        """Record that a wait starts now; the caller sets its ``end`` and ``completed``."""
        record = WaitRecord(kind, agent_id, tool_use_id, trio.current_time())
        self.waits.append(record)
        return record

    async def stream(self, request: ModelRequest) -> AsyncIterator[BackendEvent]:
        record = ResponseRecord(
            agent_id=request.agent_id,
            model=request.model,
            start_seq=next(self._seq),
            start=trio.current_time(),
            purpose=request.purpose,
        )
        self.records.append(record)
        try:
            async with aclosing(self.inner.stream(request)) as events:  # type: ignore[type-var]
                async for event in events:
                    if isinstance(event, MessageStart):
                        record.usage = dict(event.message.get("usage") or {})
                        record.model = event.message.get("model") or record.model
                    elif isinstance(event, MessageDelta):
                        usage = event.usage.items()
                        record.usage.update({k: v for k, v in usage if v is not None})
                    yield event
            record.completed = True
        finally:
            record.end_seq = next(self._seq)
            record.end = trio.current_time()
            record.cost = self.prices.cost(record.model, record.usage) or 0.0


def crossing_of(records: Sequence[ResponseRecord], cap: float) -> ResponseRecord | None:
    """The response whose charge reached ``cap``, adding costs in the order responses ended."""
    spent = 0.0
    for record in sorted(records, key=lambda r: r.end_seq):
        spent += record.cost
        if spent >= cap - 1e-12:
            return record
    return None


def check_soft_cap(
    records: Sequence[ResponseRecord],
    cap: float,
    total: float,
    tool_starts: Sequence[ToolStart] = (),
    background: Callable[[str], bool] | None = None,
) -> None:
    """Soft cap: the ledger total is what the responses delivered; no response and no tool
    started after the crossing; total < cap + the cost of the responses in flight at the
    crossing; with ``background`` (agent id → in a background subtree), every such response
    in flight at the crossing ended at the crossing's instant (cancelled then)."""
    delivered = sum(r.cost for r in records)
    assert abs(total - delivered) < 1e-9, f"ledger total {total} != delivered {delivered}"
    crossing = crossing_of(records, cap)
    if crossing is None:
        assert total < cap + 1e-12, f"total {total} >= cap {cap} but nothing crossed it"
        return
    late = [r for r in records if r.start_seq > crossing.end_seq]
    assert not late, f"{len(late)} responses started after the cap was crossed: {late[:3]}"
    late_tools = [t for t in tool_starts if t.seq > crossing.end_seq]
    assert not late_tools, f"{len(late_tools)} tools started after the crossing: {late_tools[:3]}"
    in_flight = [r for r in records if r.end_seq >= crossing.end_seq]
    bound = cap + sum(r.cost for r in in_flight)
    assert total < bound + 1e-12, f"total {total} >= cap {cap} + in-flight {bound - cap}"
    if background is not None:
        lingering = [
            r for r in in_flight if background(r.agent_id) and r.end > crossing.end + 1e-9
        ]
        assert not lingering, f"background responses outlived the crossing: {lingering[:3]}"


def check_hard_cap(
    records: Sequence[ResponseRecord],
    cap: float,
    total: float,
    overrun: float = 0.0,
) -> None:
    """Hard cap: the ledger total is what the responses delivered and never exceeds the cap,
    except by ``overrun`` (what reported overruns charged above their reservations)."""
    delivered = sum(r.cost for r in records)
    assert abs(total - delivered) < 1e-9, f"ledger total {total} != delivered {delivered}"
    assert total <= cap + overrun + 1e-12, f"total {total} > cap {cap} (+ overruns {overrun})"
