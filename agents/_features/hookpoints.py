"""Where the agent loop fires hooks, and what it does with their answers.

The loop's seams (``agents._features.seams``) call into this module for prompts, final
responses, tool results and compaction; everything else that fires hooks (subagents) calls
:func:`fire`. ``PreToolUse`` and ``PermissionRequest`` hooks run inside the permission gate
(``agents._assembly.gate``), ``Notification`` hooks just before ``can_use_tool`` is asked.

Decisions where the Agent SDK's documentation is silent (mirrored in the README's reference
section):

* ``additionalContext`` of ``UserPromptSubmit`` and ``SessionStart`` hooks goes into the user turn
  as extra text blocks after the prompt (the session's first prompt for ``SessionStart``); of
  ``PreToolUse`` / ``PostToolUse`` / ``PostToolUseFailure`` hooks as extra text blocks after the
  tool result's content, in the same ``tool_result`` (so the model reads it next to the result).
* ``UserPromptSubmit`` fires for the main agent's prompts only (a subagent's task prompt comes
  from its parent, not from the user).
* A blocked prompt (``UserPromptSubmit`` ``decision: "block"``) is not added to the history and
  no model call is made; the run ends with ``success``, ``result=""`` and
  ``terminal_reason="prompt_blocked"``, after an ``informational`` system message with the reason.
* ``continue_: False`` is the application's choice, not a failure: the run ends (after the
  current tool phase) with ``success``, ``result`` the last response's text,
  ``terminal_reason="hook_stopped"``, and the ``stopReason`` as an ``informational`` message.
* ``PostToolUse`` fires when a tool ran and succeeded, ``PostToolUseFailure`` when it ran (or the
  input a hook or ``can_use_tool`` rewrote failed validation) and failed; calls that were denied,
  unknown, or whose input was unparseable or failed the tool's schema (checked before any
  permission is asked) fire neither. ``tool_response`` is the tool's structured data
  (``tool_use_result``) when it has some, else the content the model would see.
* A ``Stop`` hook's block is counted per prompt: the 9th stop attempt after 8 blocks in a row
  ends the run whatever the hooks say. A subagent's loop fires ``SubagentStop`` (matched on its
  agent type) in place of ``Stop``, with the same blocking rule.
* ``defer`` in a turn with a single tool call ends the run: the call gets an error result (so the
  history stays valid and the session can take another prompt), ``stop_reason`` and
  ``terminal_reason`` are ``"tool_deferred"``, and ``ResultMessage.deferred_tool_use`` holds
  ``{id, name, input}`` for the application to run. In a turn with several calls a deferral
  cannot end the turn cleanly, so it is treated as a denial saying so.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from .._loop.budget import watching_the_budget
from .._loop.contracts import Content
from .._loop.run import BUDGET_LIMIT_TEXT, budget_end
from .._loop.tool_calls import with_context
from ..hooks import HookResult
from ..messages import ToolUseBlock
from ..tools.base import ToolOutput

if TYPE_CHECKING:
    from .._loop.agent import AgentLoop
    from .._loop.response import Response
    from .._loop.run import Run

__all__ = [
    "CUT_BY_THE_BUDGET",
    "MAX_STOP_BLOCKS",
    "SESSION_END_TIMEOUT",
    "after_tool",
    "fire",
    "has_hooks",
    "hook_input",
    "notify",
    "on_prompt",
    "open_session",
    "pre_compact",
    "prompt_as_is",
    "session_end",
    "session_start",
    "stop_hooks",
]

log = logging.getLogger("agents.hooks")

#: A Stop (or SubagentStop) hook may keep an agent going this many times in a row.
MAX_STOP_BLOCKS = 8
#: Seconds SessionEnd hooks get once the session is over (they run shielded).
SESSION_END_TIMEOUT = 5.0
_PENDING = "hooks.session_start_context"
_NO_RESULT = HookResult()
#: what :func:`fire` returns when the budget's trip cut the hooks (or came before them)
CUT_BY_THE_BUDGET = HookResult()


def has_hooks(loop: AgentLoop, event: str) -> bool:
    """Whether any hook is registered for ``event`` in ``loop``'s session."""
    runner = loop.session.hooks
    return runner is not None and runner.has(event)


def hook_input(loop: AgentLoop) -> dict[str, Any]:
    """The fields every hook input carries: the session, its transcript, the working directory,
    the permission mode, and in a subagent its id and type."""
    session = loop.session
    gate = loop.gate
    data: dict[str, Any] = {
        "session_id": session.session_id,
        "transcript_path": session.transcript_path,
        "cwd": session.cwd,
        "permission_mode": (
            gate.mode if gate is not None else session.options.resolved_permission_mode
        ),
    }
    if not loop.is_main:
        data["agent_id"] = loop.agent_id
        data["agent_type"] = loop.agent_type
    return data


async def fire(
    loop: AgentLoop,
    event: str,
    match: str | None = None,
    **fields: Any,
) -> HookResult:
    """Run the ``event`` hooks of ``loop``'s session whose matcher accepts ``match``.

    The input is the fields every hook gets (:func:`hook_input`, and ``hook_event_name``) plus
    ``fields`` (a ``tool_use_id`` field is also the callbacks' second argument).
    ``systemMessage`` outputs are published here as ``informational`` system
    messages. Hooks still running when the tree's budget trips are cancelled then (and none
    start on a tripped budget), but ``SessionEnd``'s: the result is then
    :data:`CUT_BY_THE_BUDGET`, an empty result the caller may tell apart. Everything else
    is the caller's to act on — in particular ``result.stop`` (a hook
    said ``continue_: False``) and ``result.block``. Returns an empty result when no hook is
    registered (after a checkpoint)::

        result = await fire(loop, "SubagentStart", "researcher", agent_id=aid, agent_type=t)
    """
    runner = loop.session.hooks
    if runner is None or not runner.has(event):
        await trio.lowlevel.checkpoint()
        return _NO_RESULT
    data = {**hook_input(loop), **fields}
    if event == "SessionEnd":  # the session is over: its hooks run whatever the budget
        result = await runner.run(event, data, match=match)
    else:
        with watching_the_budget(loop.session.ledger) as wait:  # a hook ends at the trip
            result = await runner.run(
                event, data, match=match, tool_use_id=fields.get("tool_use_id")
            )
        if wait.cancelled_caught:
            return CUT_BY_THE_BUDGET
    for text in result.system_messages:
        await loop.inform(text)
    return result


async def notify(
    loop: AgentLoop, message: str, notification_type: str, *, title: str | None = None
) -> HookResult:
    """Fire ``Notification`` hooks (``notification_type`` e.g. ``"permission_prompt"``,
    ``"idle_prompt"``). The gate fires one just before ``can_use_tool`` is asked."""
    fields: dict[str, Any] = {"message": message, "notification_type": notification_type}
    if title is not None:
        fields["title"] = title
    return await fire(loop, "Notification", **fields)


# -- session ---------------------------------------------------------------------------------------


async def session_start(loop: AgentLoop, source: str) -> HookResult:
    """``SessionStart`` (``source``: startup, resume, clear, compact); its ``additionalContext``
    joins the next prompt of ``loop``. Without such hooks it returns at once (no checkpoint:
    it runs on every session's way to its first request)."""
    if not has_hooks(loop, "SessionStart"):
        return _NO_RESULT
    result = await fire(loop, "SessionStart", source, source=source)
    if result.additional_context:
        loop.state.setdefault(_PENDING, []).extend(result.additional_context)
    if result.stop is not None:
        log.info("SessionStart hook asked to stop (%s): ignored", result.stop or "no reason")
    return result


async def open_session(loop: AgentLoop) -> None:
    """At session start (after ``init``): ``SessionStart`` hooks now, and ``SessionEnd`` hooks
    registered to run when the main agent closes (its cleanup runs shielded, last)."""
    if has_hooks(loop, "SessionEnd"):

        async def end() -> None:
            await session_end(loop)

        loop.cleanups().insert(0, end)  # cleanup pops from the end: this runs after the others
    options = loop.session.options
    resumed = options.resume is not None or options.continue_conversation
    await session_start(loop, "resume" if resumed else "startup")


async def session_end(loop: AgentLoop, reason: str = "other") -> None:
    """``SessionEnd``, shielded and bounded: the session is over, nothing can be changed."""
    if not has_hooks(loop, "SessionEnd"):
        return
    with trio.CancelScope(shield=True), trio.move_on_after(SESSION_END_TIMEOUT):
        try:
            await fire(loop, "SessionEnd", reason=reason)
        except Exception:  # the output may be closed already: the session is gone
            log.warning("SessionEnd hooks failed", exc_info=True)


# -- prompts ---------------------------------------------------------------------------------------


def _with_texts(prompt: Content, texts: list[str] | tuple[str, ...]) -> Content:
    if not texts:
        return prompt
    blocks = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else list(prompt)
    return blocks + [{"type": "text", "text": t} for t in texts]


def _prompt_text(prompt: Content) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n".join(b.get("text", "") for b in prompt if b.get("type") == "text")


def prompt_as_is(loop: AgentLoop) -> bool:
    """Whether :func:`on_prompt` would return the prompt unchanged, awaiting nothing: no
    ``SessionStart`` context waits to be added and no ``UserPromptSubmit`` hook runs (they run
    for the main agent only)."""
    return _PENDING not in loop.state and not (loop.is_main and has_hooks(loop, "UserPromptSubmit"))


async def on_prompt(loop: AgentLoop, prompt: Content, run: Run) -> Content | None:
    """``UserPromptSubmit``: the prompt with any added context, or None if it must not run."""
    pending: list[str] = loop.state.pop(_PENDING, [])
    if loop.is_main and has_hooks(loop, "UserPromptSubmit"):  # a subagent's task is no user's
        result = await fire(loop, "UserPromptSubmit", prompt=_prompt_text(prompt))
        if result.stop is not None:
            run.stop = result.stop
            await _stopped(loop, result.stop, "UserPromptSubmit")
            return None
        if result.block:
            why = f": {result.block_reason}" if result.block_reason else ""
            await loop.inform(f"prompt blocked by a UserPromptSubmit hook{why}")
            return None
        pending.extend(result.additional_context)
    return _with_texts(prompt, pending)


# -- compaction ------------------------------------------------------------------------------------


async def pre_compact(loop: AgentLoop, trigger: str, instructions: str | None) -> HookResult:
    """``PreCompact`` (``trigger``: auto or manual); a block skips the compaction."""
    return await fire(
        loop, "PreCompact", trigger, trigger=trigger, custom_instructions=instructions
    )


# -- tools -----------------------------------------------------------------------------------------


def _replacement(value: Any) -> Content:
    """An ``updatedToolOutput`` as tool-result content."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), list | str):
        value = value["content"]
    if isinstance(value, list) and all(isinstance(b, dict) and "type" in b for b in value):
        return list(value)
    return msgspec.json.encode(value).decode()


async def after_tool(
    loop: AgentLoop,
    call: ToolUseBlock,
    tool_input: dict[str, Any],
    output: ToolOutput,
    context: tuple[str, ...],
    run: Run,
) -> ToolOutput:
    """``PostToolUse`` / ``PostToolUseFailure`` for a call that ran; ``context`` is what the
    ``PreToolUse`` hooks added. Returns the output the model sees."""
    event = "PostToolUseFailure" if output.is_error else "PostToolUse"
    if has_hooks(loop, event):
        fields: dict[str, Any] = {
            "tool_name": call.name,
            "tool_input": tool_input,
            "tool_use_id": call.id,
        }
        if output.is_error:
            fields["error"] = _prompt_text(output.content)
            fields["is_interrupt"] = False
        else:
            fields["tool_response"] = output.data if output.data is not None else output.content
        result = await fire(loop, event, call.name, **fields)
        if result is CUT_BY_THE_BUDGET:  # the hook could not vet the output: not passed on
            return ToolOutput.error(BUDGET_LIMIT_TEXT)
        if result.updated_tool_output is not None and not output.is_error:
            output = ToolOutput(content=_replacement(result.updated_tool_output), data=output.data)
        context = context + result.additional_context
        if result.stop is not None:
            run.stop = result.stop
    return with_context(output, context)


# -- ends ------------------------------------------------------------------------------------------


async def stop_hooks(loop: AgentLoop, response: Response, run: Run) -> str | None:
    """``Stop`` (``SubagentStop`` in a subagent): the next instruction if a hook blocks."""
    event = "Stop" if loop.is_main else "SubagentStop"
    if not has_hooks(loop, event):
        return None
    result = await fire(
        loop,
        event,
        None if loop.is_main else loop.agent_type,
        stop_hook_active=run.stop_blocks > 0,
    )
    if result is CUT_BY_THE_BUDGET:  # the hook might have asked to go on: the budget ends it
        raise budget_end(loop.session.ledger.cap)
    if result.stop is not None:
        run.stop = result.stop
        await _stopped(loop, result.stop, event)
        return None
    if not result.block:
        return None
    if run.stop_blocks >= MAX_STOP_BLOCKS:
        await loop.inform(
            f"{event} hooks blocked {MAX_STOP_BLOCKS} times in a row; stopping anyway"
        )
        return None
    run.stop_blocks += 1
    return result.block_reason or f"A {event} hook asked you to continue."


async def _stopped(loop: AgentLoop, reason: str, event: str) -> None:
    await loop.inform(f"stopped by a {event} hook" + (f": {reason}" if reason else ""))
