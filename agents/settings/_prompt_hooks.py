"""Settings-file ``prompt`` hooks: the session's model decides, in Claude Code's format.

``{"type": "prompt", "prompt": "Is this command safe? $ARGUMENTS", "model"?, "timeout"?}``: the
prompt, with ``$ARGUMENTS`` replaced by the hook input as JSON (appended when it has no
placeholder), goes to the model as one short request of its own, charged to the session's
budget like any response. The model answers with a JSON object ``{"ok": true}`` or ``{"ok":
false, "reason": "..."}``: ``ok: false`` blocks as a command hook's exit 2 does (a denied tool
call, a dropped prompt, a blocked stop, with the reason). An answer that is not such an object,
or a budget that has no room for the question, is a non-blocking error: the action goes ahead.

The model call itself is the session's (``ask``, given by the session's assembly), so this module
needs no backend of its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from ..hooks import HookCallback, HookContext
from ._files import PromptHook

__all__ = ["PROMPT_HOOK_SYSTEM", "PROMPT_HOOK_TIMEOUT", "AskModel", "prompt_hook"]

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

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def prompt_hook(hook: PromptHook, ask: AskModel) -> HookCallback:
    """A hook callback that asks the model ``hook.prompt`` about the hook input."""
    from ._shell_hooks import blocking_output

    where = f"{hook.event} prompt hook"

    async def run(
        input: dict[str, Any], tool_use_id: str | None, context: HookContext
    ) -> dict[str, Any]:
        arguments = json.dumps(input, default=str, ensure_ascii=False)
        if "$ARGUMENTS" in hook.prompt:
            prompt = hook.prompt.replace("$ARGUMENTS", arguments)
        else:
            prompt = f"{hook.prompt}\n\nThe hook input:\n{arguments}"
        answer = await ask(prompt, PROMPT_HOOK_SYSTEM, hook.model, input)
        if answer is None:
            return {"systemMessage": f"{where}: the budget has no room for the question"}
        verdict = parse_answer(answer)
        if verdict is None:
            return {
                "systemMessage": f"{where}: the model's answer is not "
                f'{{"ok": true|false, "reason"?}}: {answer[:200]!r}'
            }
        ok, reason = verdict
        if ok:
            return {}
        return blocking_output(hook.event, reason or f"{where} said no")

    run.__name__ = run.__qualname__ = f"prompt hook {hook.prompt[:40]!r}"
    return run


def parse_answer(text: str) -> tuple[bool, str | None] | None:
    """``(ok, reason)`` from the model's answer (the first JSON object in it), or None."""
    match = _OBJECT.search(text)
    if match is None:
        return None
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        return None
    reason = data.get("reason")
    return data["ok"], reason if isinstance(reason, str) else None
