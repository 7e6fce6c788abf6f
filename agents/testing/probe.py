"""``ProbeBackend``: a backend wrapper that records every response, for budget property tests.

It logs, in one global sequence, when each response starts and ends and what it *delivered*
(the usage the loop saw: input on ``message_start``, output on ``message_delta``), priced with
the session's table. From that log :func:`check_soft_cap` and :func:`check_hard_cap` verify
the budget bounds on a finished run (the soft cap, and the hard cap with reservations)::

    probe = ProbeBackend(ScriptedBackend(script), prices=options.price_table())
    ... run the query with AgentOptions(backend=probe, max_budget_usd=cap) ...
    check_soft_cap(probe.records, cap, ledger_total)
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from typing import Any

import attrs
import trio

from ..backends.base import Backend, BackendEvent, MessageDelta, MessageStart, ModelRequest
from ..backends.pricing import PriceTable

__all__ = ["ProbeBackend", "ResponseRecord", "check_hard_cap", "check_soft_cap"]


@attrs.define(eq=False)
class ResponseRecord:
    """One model response as the backend saw it."""

    agent_id: str
    model: str
    start_seq: int
    start: float
    end_seq: int = -1
    end: float = -1.0
    completed: bool = False
    usage: dict[str, Any] = attrs.Factory(dict)
    cost: float = 0.0


@attrs.define(eq=False)
class ProbeBackend:
    """Wraps a backend; ``records`` lists every response in start order."""

    inner: Backend
    prices: PriceTable
    records: list[ResponseRecord] = attrs.Factory(list)
    _seq: Any = attrs.Factory(itertools.count)

    @property
    def max_retries(self) -> int:
        return int(getattr(self.inner, "max_retries", 10))

    async def stream(self, request: ModelRequest) -> AsyncIterator[BackendEvent]:
        record = ResponseRecord(
            agent_id=request.agent_id,
            model=request.model,
            start_seq=next(self._seq),
            start=trio.current_time(),
        )
        self.records.append(record)
        try:
            async for event in self.inner.stream(request):
                if isinstance(event, MessageStart):
                    record.usage = dict(event.message.get("usage") or {})
                    record.model = event.message.get("model") or record.model
                elif isinstance(event, MessageDelta):
                    record.usage.update({k: v for k, v in event.usage.items() if v is not None})
                yield event
            record.completed = True
        finally:
            record.end_seq = next(self._seq)
            record.end = trio.current_time()
            record.cost = self.prices.cost(record.model, record.usage) or 0.0


def _crossing(records: Sequence[ResponseRecord], cap: float) -> ResponseRecord | None:
    spent = 0.0
    for record in sorted(records, key=lambda r: r.end_seq):
        spent += record.cost
        if spent >= cap - 1e-12:
            return record
    return None


def check_soft_cap(records: Sequence[ResponseRecord], cap: float, total: float) -> None:
    """The soft cap: the ledger total is what the responses delivered; no response started after the
    crossing; total < cap + the cost of the responses in flight at the crossing."""
    delivered = sum(r.cost for r in records)
    assert abs(total - delivered) < 1e-9, f"ledger total {total} != delivered {delivered}"
    crossing = _crossing(records, cap)
    if crossing is None:
        assert total < cap + 1e-12, f"total {total} >= cap {cap} but nothing crossed it"
        return
    late = [r for r in records if r.start_seq > crossing.end_seq]
    assert not late, f"{len(late)} responses started after the cap was crossed: {late[:3]}"
    in_flight = [r for r in records if r.end_seq >= crossing.end_seq]
    bound = cap + sum(r.cost for r in in_flight)
    assert total < bound + 1e-12, f"total {total} >= cap {cap} + in-flight {bound - cap}"


def check_hard_cap(records: Sequence[ResponseRecord], cap: float, total: float) -> None:
    """The hard cap: with reservations the total never exceeds the cap."""
    delivered = sum(r.cost for r in records)
    assert abs(total - delivered) < 1e-9, f"ledger total {total} != delivered {delivered}"
    assert total <= cap + 1e-12, f"total {total} > cap {cap}"
