"""One model response for the loop: the request, retries, budget, streaming.

:class:`ModelCall` belongs to one :class:`~agents._loop.agent.AgentLoop` (``loop.model_call``).
A response counts only once it is complete (``message_stop``); an attempt that fails is retried
from scratch, so a failed attempt leaves nothing behind in the history. Every attempt is charged
for what it used, complete or not (cut short, failed or cancelled); in ``reserve`` budget mode an
attempt starts only once its worst case is booked on the ledger, so the total never passes the
cap.
"""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from ..backends.base import (
    BackendError,
    BackendEvent,
    ModelNotAvailable,
    ModelRequest,
    retry_delay,
)
from ..messages import StreamEvent, SystemMessage
from .budget import (
    MESSAGE_MARGIN,
    OVERRUN_REPORT_TIMEOUT,
    REQUEST_MARGIN,
    TOOLS_ALLOWANCE,
    admit,
    admit_soft,
    allowances,
    charge_cut,
    overrun_message,
    watching_the_budget,
)
from .response import Response, ResponseBuilder
from .run import RunEnd, budget_end, new_id

if TYPE_CHECKING:
    from .agent import AgentLoop
    from .session import Session

__all__ = ["ModelCall", "request_size"]

log = logging.getLogger("agents.loop")

_to_builtins = msgspec.to_builtins
_encode = msgspec.json.Encoder().encode


def _measure(messages: list[dict[str, Any]]) -> int:
    """The JSON size of ``messages`` plus a margin each, plus the allowance of each image or
    document block in them."""
    total = 0
    for entry in messages:
        encoded = _encode(entry)
        total += len(encoded) + MESSAGE_MARGIN + allowances(encoded)
    return total


def _fixed_size(request: ModelRequest) -> int:
    """The JSON size of a request's parts besides its messages, plus a margin, plus what the
    API adds to a request with tools."""
    parts = (request.system, request.tools, request.thinking, request.output_format)
    size = sum(len(_encode(part)) for part in parts) + REQUEST_MARGIN
    return size + TOOLS_ALLOWANCE if request.tools else size


def request_size(request: ModelRequest) -> int:
    """An upper bound on ``request``'s input tokens, measured whole: its JSON size in bytes plus
    a margin per message (a token is at least one byte), plus the allowances for tools, images
    and documents (``agents._loop.budget``)."""
    return _measure(request.messages) + _fixed_size(request)


class ModelCall(msgspec.Struct, eq=False, gc=False):
    """How one agent asks its model: retried, charged, streamed as partial messages if asked.

    It keeps the agent's model-call state; its methods take the loop they act for (the loop
    holds its ``ModelCall``, not the other way round: a finished agent is freed at once, without
    waiting for the cycle collector). A msgspec Struct that the cycle collector never tracks:
    it refers to no agent, only to numbers and the parts of a request it measured, so it can
    be in no cycle, and every agent has one for its whole life."""

    #: book each request's worst case before it starts (``budget_mode="reserve"`` with a cap)
    reserve: bool = False
    #: forward the raw stream events as ``StreamEvent`` messages (``include_partial_messages``)
    partial: bool = False
    #: the input estimate, kept incrementally: the history generation and entries measured so
    #: far, their bytes, and the size of what does not change between requests (the system
    #: prompt, tools, thinking and output format), with the objects it was measured on
    _est_generation: int = 0
    _est_count: int = 0
    _est_bytes: int = 0
    _fixed_bytes: int = 0
    _fixed_of: tuple[object, ...] = ()

    @classmethod
    def for_loop(cls, loop: AgentLoop) -> ModelCall:
        options = loop.session.options
        return cls(
            reserve=options.budget_mode == "reserve" and loop.session.ledger.cap is not None,
            partial=options.include_partial_messages and loop.agent_id == "main",
        )

    def request(self, loop: AgentLoop) -> ModelRequest:
        """The next turn's request: the whole history, the agent's system prompt and tools."""
        return ModelRequest(
            model=loop.model,
            messages=loop.history.messages(),
            max_tokens=loop.max_tokens,
            system=loop.system,
            tools=loop.tools.definitions(),
            thinking=loop.thinking,
            effort=loop.effort,
            output_format=loop.session.options.output_format if loop.is_main else None,
            agent_id=loop.agent_id,
            agent_type=loop.agent_type,
        )

    async def with_retries(self, loop: AgentLoop) -> tuple[Response, bool]:
        """The next turn's response and whether charging it reached the cap.

        Retryable backend errors are retried with capped exponential backoff and jitter (each
        announced as an ``api_retry`` system message); a model that is not available switches
        once to ``fallback_model``. Anything else ends the run with an API error.
        """
        attempt = 0
        while True:
            try:
                return await self.charged(loop, self.request(loop))
            except ModelNotAvailable as exc:
                fallback = loop.session.options.fallback_model
                if fallback and loop.model != fallback:
                    log.warning("%s; falling back to %s", exc, fallback)
                    await loop.inform(f"{exc}; using fallback model {fallback}")
                    loop.use_model(fallback)
                    continue
                raise RunEnd("error_during_execution", [str(exc)], "api_error") from None
            except BackendError as exc:
                # the retry policy, read from the backend only when a request fails
                backend = loop.session.backend
                max_retries: int = getattr(backend, "max_retries", 10)
                base: float = getattr(backend, "retry_base_delay", 0.5)
                cap: float = getattr(backend, "retry_max_delay", 32.0)
                if not exc.retryable or attempt >= max_retries:
                    message = f"{exc} (after {attempt} retries)" if exc.retryable else str(exc)
                    raise RunEnd("error_during_execution", [message], "api_error") from None
                attempt += 1
                delay = retry_delay(attempt, base, cap, exc.retry_after, random.random())
                await loop.publish(
                    SystemMessage(
                        subtype="api_retry",
                        data={
                            "attempt": attempt,
                            "max_retries": max_retries,
                            "error": str(exc),
                            "error_status": exc.status,
                            "delay_s": delay,
                        },
                    )
                )
                with watching_the_budget(loop.session.ledger) as wait:
                    await trio.sleep(delay)  # cut short when the budget trips meanwhile
                if wait.cancelled_caught:
                    raise budget_end(loop.session.ledger.cap) from None
            except (msgspec.ValidationError, KeyError, TypeError) as exc:
                # A malformed event from the backend: an API error, never a crash.
                log.exception("malformed model response")
                raise RunEnd(
                    "error_during_execution", [f"malformed model response: {exc}"], "api_error"
                ) from None

    async def charged(self, loop: AgentLoop, request: ModelRequest) -> tuple[Response, bool]:
        """Stream one attempt and charge it: the whole response once complete, or what it used
        (its usage so far) when it is cut, fails or is cancelled.

        The budget gate is passed right before the request is sent (nothing awaited between):
        refused once the ledger has tripped, and in ``reserve`` budget mode only sent once its
        worst case is booked, its ``max_tokens`` fitted to what is left. A refusal ends the run
        on the budget; the main agent's refusal exhausts the whole tree. A response that cost
        more than its booking trips the ledger and is reported (``budget_overrun``)."""
        session = loop.session
        if self.reserve:
            admitted = await admit(
                session,
                loop.agent_id,
                request,
                self.input_estimate(loop, request),
                reserve=True,
            )
        else:  # nothing to book: the gate without a coroutine (this runs for every request)
            admitted = admit_soft(session, request)
        if admitted is None:
            if loop.is_main:
                session.ledger.exhaust()  # one exhausted state, whatever the mode
            raise budget_end(session.ledger.cap)
        request, reservation = admitted
        # sent on it now: charged there, even if a /clear replaces it (``Session.ledger``
        # without its call: this runs for every request)
        ledger = session.supervisor.ledger
        builder = ResponseBuilder()
        try:
            # the stream read here, not in a method of its own: a coroutine less per response,
            # and a frame less to pass through each time the stream waits
            events = session.backend.stream(request)
            try:
                if self.partial:
                    await self._stream_partial(session, events, builder)
                else:
                    await builder.consume(events)
            finally:  # ``aclosing``, without its two coroutines
                await events.aclose()  # type: ignore[attr-defined]
            response = builder.finish()
        except BaseException:
            cut = builder.response
            model = cut.model or request.model
            await charge_cut(
                session, loop.agent_id, model, cut.usage, reservation, loop.publish, ledger
            )
            raise
        _, tripped, settlement = session.charge_response(
            loop.agent_id, response.model or request.model, response.usage, reservation, ledger
        )
        if settlement is not None and settlement.overrun:
            log.warning("agent %s: a response cost more than its booking", loop.agent_id)
            # shielded like a cut response's: an interrupt landing now must not lose it
            with trio.CancelScope(shield=True), trio.move_on_after(OVERRUN_REPORT_TIMEOUT):
                await loop.publish(overrun_message(settlement))
        return response, tripped

    def input_estimate(self, loop: AgentLoop, request: ModelRequest) -> int:
        """An upper bound on the request's input tokens: its JSON size in bytes plus a margin per
        message (a token is at least one byte).

        A turn's request is the agent's whole history, so its size is kept incrementally: only
        the entries appended since the last request are measured, unless the history was
        rewritten since (compaction, ``/clear``, resume: its generation changed), when it is
        measured again from the start. Any other request (a summary, a one-shot completion) is
        measured whole."""
        if request.purpose != "turn":
            return request_size(request)
        history = loop.history
        if history.generation != self._est_generation or len(history) < self._est_count:
            self._est_generation, self._est_count, self._est_bytes = history.generation, 0, 0
        if len(history) > self._est_count:
            self._est_bytes += _measure(history[self._est_count :])
            self._est_count = len(history)
        return self._fixed(request) + self._est_bytes

    def _fixed(self, request: ModelRequest) -> int:
        """The size of the request's parts besides its messages, measured again only when one
        of them is another object than last time (they are built once per agent)."""
        parts = (request.system, request.tools, request.thinking, request.output_format)
        of = self._fixed_of
        if len(of) != len(parts) or any(a is not b for a, b in zip(of, parts, strict=True)):
            self._fixed_bytes = _fixed_size(request)
            self._fixed_of = parts
        return self._fixed_bytes

    @staticmethod
    async def _stream_partial(
        session: Session, events: AsyncIterator[BackendEvent], builder: ResponseBuilder
    ) -> None:
        """Build the response and forward each raw event as a ``StreamEvent`` message."""
        feed = builder.feed
        emit = session.emit
        sid = session.session_id
        async for event in events:
            feed(event)  # recorded before emitted: a slow reader cannot lose its usage
            await emit(StreamEvent(uuid=new_id(), session_id=sid, event=_to_builtins(event)))
