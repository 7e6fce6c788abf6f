"""Settings-file ``agent`` hooks: a short-lived agent with read-only tools decides.

``{"type": "agent", "prompt": "Check that the tests pass. $ARGUMENTS", "model"?, "timeout"?}``
as Claude Code's: the prompt (``$ARGUMENTS`` replaced by the hook input as JSON, appended when it
has no placeholder) goes to an agent of its own with the tools Read, Grep and Glob, which may look
at the project for a few turns (at most :data:`AGENT_HOOK_MAX_TURNS` responses) before it answers
``{"ok": true}`` or ``{"ok": false, "reason": "..."}`` — its structured output, checked, and asked
for again when it is not such an object. ``ok: false`` blocks as a command hook's exit 2 does.

Every response of that agent is a model request on the session's budget, charged to a path below
the agent the hook runs for. The hook's ``timeout`` (default 60 s) cancels the agent with what
it has used charged. An agent that does not decide — the budget cannot pay for its requests,
it runs out of turns, an API error ends it — raises ``HookDecisionError``, which the hook runner
treats as any failing hook (as a timeout): the call is denied for ``PreToolUse``, a
non-blocking error for every other event.

The agent itself is the session's (``run``, given by the session's assembly), so this module
needs neither a backend nor the loop. Its input is the model's tool call, so it can be steered:
its reads go through the session's rules and working directories with nobody to ask.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..hooks import HookCallback, HookContext
from ..messages import ResultMessage
from ._files import AgentHook
from ._prompt_hooks import (
    HookDecisionError,
    budget_refused,
    hook_prompt,
    parse_answer,
    verdict_output,
)

__all__ = [
    "AGENT_HOOK_MAX_TURNS",
    "AGENT_HOOK_SYSTEM",
    "AGENT_HOOK_TIMEOUT",
    "AGENT_HOOK_TOOLS",
    "RunHookAgent",
    "agent_hook",
    "check_decision",
]

#: Seconds an agent hook may take when it sets no timeout (Claude Code's default).
AGENT_HOOK_TIMEOUT = 60.0
#: Model responses the hook's agent may use (Claude Code bounds it to a few turns too).
AGENT_HOOK_MAX_TURNS = 10
#: The tools the hook's agent gets: it looks, it changes nothing.
AGENT_HOOK_TOOLS = ("Read", "Grep", "Glob")

AGENT_HOOK_SYSTEM = (
    "You are a hook deciding whether an action in a coding agent's session may go ahead. "
    "You may use the Read, Grep and Glob tools to look at the project before you decide. "
    'End with one JSON object and nothing else: {"ok": true} to let it go ahead, or '
    '{"ok": false, "reason": "<why, for the agent to read>"} to stop it.'
)

#: ``run(prompt, system, model, hook_input)``: the result of the hook's agent run, its decision
#: as ``structured_output`` (``error_max_budget_usd`` when the budget cannot pay).
RunHookAgent = Callable[[str, str, str | None, dict[str, Any]], Awaitable[ResultMessage]]

_ASK_AGAIN = (
    'Your final answer must be one JSON object, {"ok": true} or {"ok": false, "reason": "..."}, '
    "and nothing else. Answer again."
)


def check_decision(text: str) -> tuple[Any, str | None]:
    """The hook agent's final answer as ``{"ok", "reason"?}``, or the instruction to answer
    again (the agent run's structured-output check)."""
    verdict = parse_answer(text)
    if verdict is None:
        return None, _ASK_AGAIN
    ok, reason = verdict
    return ({"ok": ok} if reason is None else {"ok": ok, "reason": reason}), None


def agent_hook(hook: AgentHook, run_agent: RunHookAgent) -> HookCallback:
    """A hook callback that has an agent with read-only tools decide on the hook input."""
    where = f"{hook.event} agent hook"

    async def run(
        input: dict[str, Any], tool_use_id: str | None, context: HookContext
    ) -> dict[str, Any]:
        prompt = hook_prompt(hook.prompt, input)
        result = await run_agent(prompt, AGENT_HOOK_SYSTEM, hook.model, input)
        if result.subtype == "error_max_budget_usd":
            raise budget_refused(where)
        decision = result.structured_output
        if result.is_error or not isinstance(decision, dict):
            errors = "; ".join(result.errors or []) or result.subtype
            raise HookDecisionError(f"{where}: the agent did not decide ({errors})")
        reason = decision.get("reason")
        return verdict_output(hook.event, where, decision["ok"], reason)

    run.__name__ = run.__qualname__ = f"agent hook {hook.prompt[:40]!r}"
    return run
