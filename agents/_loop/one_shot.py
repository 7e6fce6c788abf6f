"""One request of its own, outside any agent's turn: a question the session asks its model.

``auto`` mode's classifier and the settings' prompt hooks ask the model a short question whose
answer decides something, not a turn of the conversation. Such a request passes the same budget
gate as a turn (booked first in ``reserve`` mode), is charged once to the ledger it was sent on —
what a cut stream delivered included — and an overrun is reported as for any response.
"""

from __future__ import annotations

from contextlib import aclosing
from typing import TYPE_CHECKING

from ..backends.base import ModelRequest
from .budget import admit, charge_cut, overrun_message
from .model_call import request_size
from .response import Response, ResponseBuilder

if TYPE_CHECKING:
    from .session import Session

__all__ = ["ask_once"]


async def ask_once(session: Session, request: ModelRequest) -> Response | None:
    """Send ``request`` (attributed to ``request.agent_id``) through the budget gate and return
    its whole response, or None when the budget has no room for it."""
    agent_id = request.agent_id or "main"
    reserve = session.options.budget_mode == "reserve"
    size = request_size(request) if reserve else 0
    admitted = await admit(session, agent_id, request, size, reserve=reserve)
    ledger = session.ledger  # sent on it now: charged there, even if a /clear replaces it
    if admitted is None:
        return None
    request, reservation = admitted
    builder = ResponseBuilder()
    try:
        async with aclosing(session.backend.stream(request)) as events:  # type: ignore[type-var]
            async for event in events:
                builder.feed(event)
        response = builder.finish()
    except BaseException:  # what the cut attempt used is spent all the same
        cut = builder.response
        model = cut.model or request.model
        await charge_cut(session, agent_id, model, cut.usage, reservation, session.emit, ledger)
        raise
    model = response.model or request.model
    _, _, settlement = session.charge_response(agent_id, model, response.usage, reservation, ledger)
    if settlement is not None and settlement.overrun:
        await session.emit(overrun_message(settlement))
    return response
