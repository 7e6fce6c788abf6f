"""What the agents of one session share: :class:`Session`, and where their transcripts go.

One per ``query()`` or ``AgentClient``, built by ``agents._assembly``: the options, the backend,
the price table, the hooks, the supervisor (and through it the tree's ledger), the output stream,
the transcripts, and the spend of the whole tree by model and by agent.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

import attrs
import trio

from runtime import BudgetLedger, Reservation, Settlement, Supervisor

from ..backends.base import Backend
from ..backends.pricing import PriceTable
from ..hooks import HookRunner
from ..messages import Message
from ..options import AgentDefinition, AgentOptions
from ..sessions import SessionKey, SessionStore, Transcript, subagent_subpath
from ..tools.base import Tool
from .contracts import AgentSources
from .run import Usage

__all__ = ["Session", "Transcripts"]

log = logging.getLogger("agents.loop")


@attrs.define(eq=False)
class Transcripts:
    """Where the session's transcripts go: a store, under the project's key."""

    store: SessionStore
    project_key: str

    def key(self, session_id: str, agent_id: str = "main") -> SessionKey:
        subpath = None if agent_id == "main" else subagent_subpath(agent_id)
        return SessionKey(self.project_key, session_id, subpath)

    def path(self, key: SessionKey) -> str:
        """The transcript's file path for a file store; ``store:<project>/<session>`` otherwise."""
        path_for = getattr(self.store, "path_for", None)  # only file stores have paths
        if path_for is not None:
            return str(path_for(key))
        sub = f"/{key.subpath}" if key.subpath else ""
        return f"{type(self.store).__name__}:{key.project_key}/{key.session_id}{sub}"


@attrs.define(eq=False)
class Session:
    """What the agents of one session share. Built by ``agents._assembly``."""

    options: AgentOptions
    session_id: str
    cwd: str
    backend: Backend
    prices: PriceTable
    supervisor: Supervisor
    emit: Callable[[Message], Awaitable[None]]
    #: ``emit`` when it need not wait: queues the message and returns True, or returns False
    #: (queuing nothing) when the stream's buffer is full and only ``emit`` may wait for room.
    #: None: every message goes through ``emit``.
    emit_nowait: Callable[[Message], bool] | None = None
    #: a notice about a background agent (its progress, its end), queued at once even when
    #: the stream's buffer is full, in place of a waiting one with the same key (see
    #: ``MessageStream.put_notice``): an agent never waits for the reader to learn how it is
    #: doing or that it has ended. None: notices go through ``emit``, waiting like the rest.
    #: (the message, its key, and the key of a waiting notice it makes stale, if any)
    emit_notice: Callable[[Message, Hashable, Hashable | None], None] | None = None
    #: the hooks of the options (None when there are none)
    hooks: HookRunner | None = None
    #: whether the main agent's turns can be interrupted from outside (``AgentClient``), and
    #: whether a permission answer can deny a call with ``interrupt=True`` (a ``can_use_tool``
    #: callback or a hook), which ends that agent's tool phase: a turn that nothing can
    #: interrupt runs without the cancel scope an interrupt would cancel (two per turn)
    client_interrupts: bool = True
    denials_interrupt: bool = True
    #: Trio's time (``trio.current_time``), read straight from the run's clock when the
    #: assembly passes ``trio.lowlevel.current_clock().current_time``: a turn reads it four times
    now: Callable[[], float] = trio.current_time
    #: state the tools of all its agents share (the task list)
    session_state: dict[str, Any] = attrs.Factory(dict)
    #: model id → token counts and cost, for the whole tree
    model_usage: dict[str, dict[str, Any]] = attrs.Factory(dict)
    #: agent id → model responses, for the whole tree
    turns_by_agent: dict[str, int] = attrs.Factory(dict)
    #: built once per session from the options, when first needed (``agents._tree.subagents``):
    #: the agent types the model may spawn, and the Agent tool given to subagents
    agent_types: dict[str, AgentDefinition] | None = None
    agent_tool: Tool | None = None
    #: a subagent's system prompt, by the definition's prompt: one list shared by the agents
    #: of a type that get no other system blocks (``agents._tree.subagents``; never mutated)
    child_systems: dict[str, list[dict[str, Any]]] = attrs.Factory(dict)
    #: the external MCP servers and skills subagents may get (``agents._assembly.sources``)
    sources: AgentSources | None = None
    _unpriced: set[str] = attrs.Factory(set)
    #: where transcripts go; None records nothing
    transcripts: Transcripts | None = None
    #: the main agent's transcript key, set with ``transcripts``
    transcript_key: SessionKey | None = None
    _path: tuple[SessionKey, str] | None = attrs.field(default=None, init=False)

    @property
    def transcript_path(self) -> str:
        """Where the main agent's transcript is (hook inputs' ``transcript_path``); "" if not
        recorded.

        Worked out when first asked for (only hooks ask), and again after ``/clear``: building
        a path costs tens of microseconds, which every session would pay on its way to its first
        model request."""
        key = self.transcript_key
        if self.transcripts is None or key is None:
            return ""
        cached = self._path
        if cached is None or cached[0] is not key:
            cached = self._path = (key, self.transcripts.path(key))
        return cached[1]

    def agent_transcript(self, agent_id: str) -> Transcript | None:
        """A transcript for subagent ``agent_id`` under the session (``subagents/agent-<id>``);
        None when the session records nothing."""
        transcripts = self.transcripts
        if transcripts is None:
            return None
        key = transcripts.key(self.session_id, agent_id)
        return Transcript(transcripts.store, key, agent_id=agent_id)

    def restart(self, session_id: str) -> Transcript | None:
        """Carry on as session ``session_id`` (``/clear``): the main agent's fresh transcript."""
        self.session_id = session_id
        transcripts = self.transcripts
        if transcripts is None:
            return None
        key = transcripts.key(session_id)
        self.transcript_key = key
        return Transcript(transcripts.store, key)

    def summary(self) -> dict[str, Any]:
        """The tree's spend: total, cap, and cost and turns per agent; what is still booked
        (``reserved_usd``, 0 once every request is done), how many responses were charged, and
        how many cost more than their booking (``overruns``, each reported as it happened)."""
        ledger = self.ledger
        return {
            "total_cost_usd": ledger.total,
            "max_budget_usd": ledger.cap,
            "cost_by_agent": ledger.per_agent(),
            "turns_by_agent": dict(self.turns_by_agent),
            "reserved_usd": ledger.reserved,
            "charges": ledger.charges,
            "overruns": ledger.overruns,
        }

    @property
    def ledger(self) -> BudgetLedger:
        return self.supervisor.ledger

    def charge(
        self,
        agent_id: str,
        model: str,
        usage: dict[str, Any],
        reservation: Reservation | None = None,
    ) -> tuple[float, bool]:
        """Charge one response to the tree's ledger; returns (cost, whether the cap is reached).

        Called exactly once per response, whichever messages later carry its usage; with a
        ``reservation`` (the hard cap) the booked worst case is settled to the actual cost.
        """
        cost, tripped, _ = self.charge_response(agent_id, model, usage, reservation)
        return cost, tripped

    def charge_response(
        self,
        agent_id: str,
        model: str,
        usage: dict[str, Any],
        reservation: Reservation | None = None,
        ledger: BudgetLedger | None = None,
    ) -> tuple[float, bool, Settlement | None]:
        """:meth:`charge`, also returning the settlement of ``reservation`` (whether the cost
        overran the booking). A reservation is settled on the ledger that issued it, which is
        not the current one after a ``/clear`` replaced it mid-request: the booking is released
        where it was made and the cost recorded there, never on another ledger's booking.
        Without a reservation the cost goes to ``ledger``, the one current when the request
        was sent (the current one if not given), so in both modes a response counts for the
        conversation it started in."""
        cost = self.prices.cost(model, usage)
        if cost is None:
            if model not in self._unpriced:
                self._unpriced.add(model)
                log.warning("no price for model %r: its cost counts as 0", model)
            cost = 0.0
        entry = self.model_usage.get(model)
        if entry is None:
            entry = self.model_usage[model] = {**dict.fromkeys(Usage.KEYS, 0), "cost_usd": 0.0}
        get = usage.get  # the four of ``Usage.KEYS``, unrolled: this runs for every response
        entry["input_tokens"] += get("input_tokens") or 0
        entry["output_tokens"] += get("output_tokens") or 0
        entry["cache_creation_input_tokens"] += get("cache_creation_input_tokens") or 0
        entry["cache_read_input_tokens"] += get("cache_read_input_tokens") or 0
        entry["cost_usd"] += cost
        if reservation is None:
            return cost, (ledger or self.ledger).charge(agent_id, cost), None
        issuer = reservation.issuer if reservation.issuer is not None else self.ledger
        settlement = issuer.settle_and_report(reservation, cost)
        return cost, settlement.tripped, settlement

    def prices_per_mtok(self, model: str) -> tuple[float, float]:
        """The dearest input-side price (cache writes and reads included) and the dearest
        output price of ``model`` (USD per million tokens, long-context tier included); an
        unknown model costs 0."""
        info = self.prices.get(model)
        if info is None:
            return 0.0, 0.0
        tiers = [info] if info.long_context is None else [info, info.long_context]
        per_in = max(max(t.input, t.cache_write_5m, t.cache_write_1h, t.cache_read) for t in tiers)
        return per_in, max(t.output for t in tiers)

    def worst_case(self, model: str, input_tokens: int, max_tokens: int) -> float:
        """The most a request can cost: every input token at the dearest input-side price
        (cache writes included) and ``max_tokens`` of output. Unknown models cost 0."""
        per_in, per_out = self.prices_per_mtok(model)
        return (input_tokens * per_in + max_tokens * per_out) / 1_000_000
