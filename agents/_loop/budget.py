"""The budget gate every model request passes, and what settling a response reports.

One gate for every kind of request — a turn, each retry attempt, a compaction summary, auto
mode's classifier, a structured-output re-prompt, a one-shot completion, every subagent's —
passed immediately before the request is sent: :func:`admit`'s check and booking are
synchronous and the send follows them, so nothing runs between. (Its one await comes before
the check: a ledger kept elsewhere fetches the room for the request there; the in-process
ledger has nothing to fetch and does not yield.)

* soft cap (``budget_mode="soft"``): a request is refused once the ledger has tripped.
* hard cap (``budget_mode="reserve"``): the request's worst case (:func:`worst_input_tokens` at
  the dearest input-side price, plus ``max_tokens`` at the output price) is booked first, with
  ``max_tokens`` lowered to what the rest of the budget pays for, never below
  ``min_output_tokens``; only when not even that fits is the request refused.

A response whose usage turns out above its booking is charged in full, trips the ledger, and is
reported (:func:`overrun_message`). :func:`watching_the_budget` is the cancel scope that ends a
wait (a permission prompt, a hook, a retry backoff) at the instant the ledger trips.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from runtime import BudgetLedger, Reservation, Settlement

from ..backends.base import ModelRequest
from ..messages import Message, SystemMessage

if TYPE_CHECKING:
    from .session import Session

__all__ = [
    "DOCUMENT_ALLOWANCE",
    "IMAGE_ALLOWANCE",
    "MESSAGE_MARGIN",
    "OVERRUN_REPORT_TIMEOUT",
    "REQUEST_MARGIN",
    "TOOLS_ALLOWANCE",
    "admit",
    "admit_soft",
    "allowances",
    "charge_cut",
    "overrun_message",
    "watching_the_budget",
]

#: bytes counted per message on top of its JSON (role and separators the API adds)
MESSAGE_MARGIN = 16
#: bytes counted per request on top of its JSON
REQUEST_MARGIN = 256
#: input tokens the API adds to a request that has tools (its tool-use system prompt is
#: documented at 313-346 tokens; a margin on top)
TOOLS_ALLOWANCE = 1_000
#: input tokens per image block: an image costs about width x height / 750 tokens and the API
#: scales images down to about 1.15 megapixels, so at most about 1 600 tokens
IMAGE_ALLOWANCE = 1_600
#: input tokens per document block on top of its bytes: a PDF's pages are each read as an image
#: and as text; this covers about 20 pages of images (the text is bounded by the bytes only if
#: it is not compressed in the file: documents are the one place where the bound is an estimate)
DOCUMENT_ALLOWANCE = 32_000

#: seconds a cut response's ``budget_overrun`` report may wait for the reader (it is sent
#: shielded: the cut is often a cancellation, which must not lose the report)
OVERRUN_REPORT_TIMEOUT = 1.0

log = logging.getLogger("agents.loop")

_IMAGE = b'"type":"image"'
_DOCUMENT = b'"type":"document"'


def allowances(encoded: bytes) -> int:
    """The extra input tokens of the image and document blocks inside one encoded entry."""
    extra = 0
    if _IMAGE in encoded:
        extra += IMAGE_ALLOWANCE * encoded.count(_IMAGE)
    if _DOCUMENT in encoded:
        extra += DOCUMENT_ALLOWANCE * encoded.count(_DOCUMENT)
    return extra


async def admit(
    session: Session, agent_id: str, request: ModelRequest, input_tokens: int, *, reserve: bool
) -> tuple[ModelRequest, Reservation | None] | None:
    """The budget gate: the request to send (``max_tokens`` fitted in reserve mode) and its
    booking, or None when the budget refuses it. Send right after it: from the check on,
    nothing is awaited.

    ``input_tokens`` is the request's worst-case input (see ``ModelCall.input_estimate``)."""
    ledger = session.ledger
    if not reserve or ledger.cap is None:
        return admit_soft(session, request)
    if ledger.exhausted:
        return None
    per_in, per_out = session.prices_per_mtok(request.model)
    input_cost = input_tokens * per_in / 1_000_000
    least = session.options.min_output_tokens
    await ledger.prepare_request(
        agent_id,
        input_cost_usd=input_cost,
        output_usd_per_mtok=per_out,
        max_tokens=request.max_tokens,
        min_output_tokens=least,
    )
    ledger = session.ledger  # a /clear may have replaced it meanwhile: book on the current one
    reservation = ledger.try_reserve_request(
        agent_id,
        input_cost_usd=input_cost,
        output_usd_per_mtok=per_out,
        max_tokens=request.max_tokens,
        min_output_tokens=least,
    )
    if reservation is None:
        return None
    fitted = reservation.max_tokens
    if fitted is not None and fitted != request.max_tokens:
        request = msgspec.structs.replace(request, max_tokens=fitted)
    return request, reservation


def admit_soft(session: Session, request: ModelRequest) -> tuple[ModelRequest, None] | None:
    """:func:`admit` for a request that books nothing (``reserve`` off, or no cap): refused
    once the ledger has tripped. Synchronous, for the loop to skip the coroutine."""
    if session.supervisor.ledger.exhausted:  # (``Session.ledger`` without its call)
        return None
    return request, None


def overrun_message(settlement: Settlement) -> SystemMessage:
    """What the stream says when a response cost more than its booking."""
    return SystemMessage(
        subtype="budget_overrun",
        data={
            "agent_id": settlement.agent_id,
            "reserved_usd": settlement.reserved_usd,
            "actual_usd": settlement.actual_usd,
        },
    )


async def charge_cut(
    session: Session,
    agent_id: str,
    model: str,
    usage: dict[str, Any],
    reservation: Reservation | None,
    publish: Callable[[Message], Awaitable[None]],
    ledger: BudgetLedger | None = None,
) -> None:
    """Charge what a cut response (cancelled, failed, interrupted) delivered — its booking is
    settled even when it delivered nothing — and report an overrun like a complete response's.

    Called while the cut's exception propagates, often a ``Cancelled``: the report is sent
    shielded, for at most :data:`OVERRUN_REPORT_TIMEOUT` seconds (a reader that slow misses
    it; the ledger has tripped all the same). ``ledger``: the one the request was sent on."""
    if not usage and reservation is None:
        return
    _, _, settlement = session.charge_response(agent_id, model, usage, reservation, ledger)
    if settlement is not None and settlement.overrun:
        log.warning("agent %s: a cut response cost more than its booking", agent_id)
        with trio.CancelScope(shield=True), trio.move_on_after(OVERRUN_REPORT_TIMEOUT):
            await publish(overrun_message(settlement))


@contextmanager
def watching_the_budget(ledger: BudgetLedger) -> Iterator[trio.CancelScope]:
    """A cancel scope cancelled at the instant ``ledger`` trips (at once if it has already):
    what an agent waits on inside it — a permission prompt, a hook, a retry backoff — ends
    with the budget. Check ``scope.cancelled_caught`` afterwards."""
    with trio.CancelScope() as scope:
        ledger.add_trip_callback(scope.cancel)
        try:
            yield scope
        finally:
            ledger.remove_trip_callback(scope.cancel)
