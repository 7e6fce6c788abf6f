"""Settings-file ``prompt`` hooks: the session's model decides, in Claude Code's format.

``{"type": "prompt", "prompt": "Is this command safe? $ARGUMENTS", "model"?, "timeout"?}``: the
prompt, with ``$ARGUMENTS`` replaced by the hook input as JSON (appended when it has no
placeholder), goes to the model as one short request of its own, charged to the session's
budget like any response. The model answers with a JSON object ``{"ok": true}`` or ``{"ok":
false, "reason": "..."}``: ``ok: false`` blocks as a command hook's exit 2 does (a denied tool
call, a dropped prompt, a blocked stop, with the reason).

A hook that cannot decide raises :class:`HookDecisionError`: an answer that is not such an
object, or a budget that has no room for the question (the ledger has tripped, or in ``reserve``
mode the question's worst case does not fit in what is left). The hook runner treats it as any
failing hook: for ``PreToolUse`` the call is denied (a guard that could not be asked never lets
an unchecked call through; once the ledger has tripped the loop refuses the calls anyway), for
every other event it is a non-blocking error, shown, and the action goes ahead (as Claude Code
does for a hook's errors; blocking a Stop would keep going an agent that can no longer pay).

The model call itself is the session's (``ask``, given by the session's assembly), so this module
needs no backend of its own.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from ..hooks import HookCallback, HookContext
from ._files import PromptHook

__all__ = [
    "PROMPT_HOOK_SYSTEM",
    "PROMPT_HOOK_TIMEOUT",
    "AskModel",
    "HookDecisionError",
    "budget_refused",
    "hook_prompt",
    "parse_answer",
    "prompt_hook",
    "verdict_output",
]

#: Seconds a prompt hook may take when it sets no timeout (Claude Code's default).
PROMPT_HOOK_TIMEOUT = 30.0

#: ``ask(prompt, system, model, hook_input)``: the model's text answer, or None when the budget
#: has no room for the question.
AskModel = Callable[[str, str, str | None, dict[str, Any]], Awaitable[str | None]]

PROMPT_HOOK_SYSTEM = (
    "You are a hook deciding whether an action in a coding agent's session may go ahead. "
    'Answer with one JSON object and nothing else: {"ok": true} to let it go ahead, or '
    '{"ok": false, "reason": "<why, for the agent to read>"} to stop it.'
)


class HookDecisionError(Exception):
    """A prompt or agent hook that could not decide (see the module's docstring)."""


def prompt_hook(hook: PromptHook, ask: AskModel) -> HookCallback:
    """A hook callback that asks the model ``hook.prompt`` about the hook input."""
    where = f"{hook.event} prompt hook"

    async def run(
        input: dict[str, Any], tool_use_id: str | None, context: HookContext
    ) -> dict[str, Any]:
        prompt = hook_prompt(hook.prompt, input)
        answer = await ask(prompt, PROMPT_HOOK_SYSTEM, hook.model, input)
        if answer is None:
            raise budget_refused(where)
        verdict = parse_answer(answer)
        if verdict is None:
            raise HookDecisionError(
                f"{where}: the model's answer is not "
                f'{{"ok": true|false, "reason"?}}: {answer[:200]!r}'
            )
        return verdict_output(hook.event, where, *verdict)

    run.__name__ = run.__qualname__ = f"prompt hook {hook.prompt[:40]!r}"
    return run


def hook_prompt(template: str, input: dict[str, Any]) -> str:
    """The hook's prompt with ``$ARGUMENTS`` replaced by the hook input as JSON (appended when
    the prompt has no placeholder)."""
    arguments = json.dumps(input, default=str, ensure_ascii=False)
    if "$ARGUMENTS" in template:
        return template.replace("$ARGUMENTS", arguments)
    return f"{template}\n\nThe hook input:\n{arguments}"


def verdict_output(event: str, where: str, ok: bool, reason: str | None) -> dict[str, Any]:
    """The hook output of a decision: nothing for ``ok``, else a blocking answer with the
    reason (a command hook's exit 2)."""
    from ._shell_hooks import blocking_output

    if ok:
        return {}
    return blocking_output(event, reason or f"{where} said no")


def budget_refused(where: str) -> HookDecisionError:
    """The error of a decision the budget could not pay for."""
    return HookDecisionError(f"{where}: the budget has no room for the question")


def parse_answer(text: str) -> tuple[bool, str | None] | None:
    """``(ok, reason)`` from the model's answer (the first JSON object in it), or None.

    The object is the text from the first ``{`` to the last ``}`` (what a greedy search for
    ``\\{.*\\}`` finds, without its quadratic scan from every ``{`` when no ``}`` follows). An
    object nested too deeply to be read is no verdict, as one that is not JSON."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        return None
    reason = data.get("reason")
    return data["ok"], reason if isinstance(reason, str) else None
