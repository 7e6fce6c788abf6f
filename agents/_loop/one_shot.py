"""One request of its own, outside any agent's turn: a question the session asks its model.

``auto`` mode's classifier and the settings' prompt hooks ask the model a short question whose
answer decides something, not a turn of the conversation; an agent hook gives the question to a
short-lived agent with read-only tools (``run_short_agent``). Such a request passes the same budget
gate as a turn (booked first in ``reserve`` mode), is charged once to the ledger it was sent on —
what a cut stream delivered included — and an overrun is reported as for any response.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..backends.base import ModelRequest
from ..messages import ResultMessage
from ..tools.base import ToolRegistry
from .budget import admit, charge_cut, overrun_message
from .model_call import request_size
from .no_seams import NoSeams
from .response import Response, ResponseBuilder

if TYPE_CHECKING:
    from .agent import AgentLoop
    from .contracts import Gate
    from .run import Run
    from .session import Session

__all__ = ["CheckAnswer", "ask_once", "run_short_agent"]


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


#: ``check(answer) -> (value, follow_up)``: the parsed final answer and None when it will do,
#: or the instruction to answer again.
CheckAnswer = Callable[[str], tuple[Any, str | None]]


class _Checked(NoSeams):
    """The seams of a short-lived agent: no hooks, no slash commands (a hook's own agent never
    fires hooks), and its final answer checked as structured output."""

    def __init__(self, check: CheckAnswer) -> None:
        self._check = check

    async def on_final(self, loop: AgentLoop, response: Response, run: Run) -> str | None:
        value, follow_up = self._check(response.text)
        if follow_up is None:
            run.structured_output = value
        return follow_up


async def run_short_agent(
    session: Session,
    *,
    agent_id: str,
    agent_type: str,
    model: str,
    system: str,
    prompt: str,
    tools: ToolRegistry,
    max_turns: int,
    check: CheckAnswer,
    gate: Gate | None = None,
    max_tokens: int = 4096,
) -> ResultMessage:
    """One prompt run by an agent of its own, outside the tree of actors: the session's backend
    and budget (every response through the same gate, charged to ``agent_id``, a path below the
    agent it works for), ``tools`` judged by ``gate`` (none: they run unchecked, so give it
    read-only ones), at most ``max_turns`` responses, nothing streamed or recorded. Its final
    answer passes ``check`` (asked again otherwise); the parsed value is the result's
    ``structured_output``.
    A budget that cannot pay ends it as any run (``error_max_budget_usd``)."""
    from .agent import AgentLoop

    loop = AgentLoop(
        session=session,
        agent_id=agent_id,
        agent_type=agent_type,
        model=model,
        tools=tools,
        system=[{"type": "text", "text": system}],
        max_turns=max_turns,
        max_tokens=max_tokens,
        gate=gate,
        seams=_Checked(check),
        streams=False,
    )
    try:
        return await loop.run_prompt(prompt)
    finally:
        await loop.aclose()
