"""Running the tool calls of one model response (SPEC T1-T8).

:class:`ToolCalls` belongs to one :class:`~agents._loop.AgentLoop` (``loop.tool_calls``). Each
call goes through the permission gate (P1, with PreToolUse hooks), input validation (T4), the
handler, the output cap (T8) and PostToolUse hooks; its result is emitted as soon as it is in.
The calls run read-only fan-out / serialized writes (T5, ``runtime.ToolScheduler``) and their
results go back into the history in call order (T6). Every call of an appended assistant message
gets a result, even when the turn is interrupted or refused, so the transcript always resumes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import attrs
import trio

from runtime import ToolScheduler

from . import _hookpoints
from ._run import INTERRUPTED_TEXT, _Run, new_id
from .messages import SystemMessage, ToolResultBlock, ToolUseBlock, UserMessage
from .tools.base import Tool, ToolContext, ToolInputError, ToolOutput, truncate

if TYPE_CHECKING:
    from ._loop import AgentLoop
    from ._response import Response

__all__ = ["ToolCalls", "capped"]

log = logging.getLogger("agents.loop")


@attrs.define(eq=False)
class ToolCalls:
    """How one agent runs its tools: its scheduler bounds the agent's calls at once.

    Its methods take the loop they act for (the loop holds its ``ToolCalls``, not the other way
    round: a finished agent is freed at once, without waiting for the cycle collector)."""

    scheduler: ToolScheduler

    @classmethod
    def for_loop(cls, loop: AgentLoop) -> ToolCalls:
        return cls(ToolScheduler(loop.session.options.max_tool_concurrency))

    async def run(
        self, loop: AgentLoop, calls: list[ToolUseBlock], response: Response, run: _Run
    ) -> bool:
        """Run the calls (T5), emit each result as it finishes, append all in call order (T6).

        Returns False when the turn was interrupted; finished calls keep their results and the
        rest are answered as interrupted.
        """
        with loop._interruptible() as scope:
            turn = _Turn(loop, run, response.bad_inputs, scope)
            await self.scheduler.run(calls, turn.call, read_only=turn.read_only)
        results = turn.results
        if scope.cancelled_caught:
            blocks = []
            for call in calls:
                block = results.get(call.id)
                if block is None:
                    block = ToolResultBlock(
                        tool_use_id=call.id, content=INTERRUPTED_TEXT, is_error=True
                    )
                    await _emit_result(loop, block, None)
                blocks.append(block)
            _append_results(loop, blocks)
            return False
        _append_results(loop, [results[c.id] for c in calls])
        return True

    async def refuse(self, loop: AgentLoop, calls: list[ToolUseBlock], text: str) -> None:
        """Answer every call with an error result, so the history stays resumable."""
        blocks = []
        for call in calls:
            block = ToolResultBlock(tool_use_id=call.id, content=text, is_error=True)
            blocks.append(block)
            await _emit_result(loop, block, None)
        _append_results(loop, blocks)


def _append_results(loop: AgentLoop, blocks: list[ToolResultBlock]) -> None:
    content: list[dict[str, Any]] = []
    for b in blocks:
        item: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": b.tool_use_id,
            "content": b.content,
        }
        if b.is_error:
            item["is_error"] = True
        content.append(item)
    loop.history.append({"role": "user", "content": content})


async def _emit_result(
    loop: AgentLoop, block: ToolResultBlock, data: dict[str, Any] | None
) -> None:
    await loop._publish(
        UserMessage(
            content=[block],
            parent_tool_use_id=loop.parent_tool_use_id,
            tool_use_result=data,
            uuid=new_id(),
            session_id=loop.session.session_id,
        )
    )


async def _execute(
    loop: AgentLoop, call: ToolUseBlock, bad_input: str | None, run: _Run
) -> tuple[ToolOutput, dict[str, Any] | None]:
    """One call through the gate, validation, the handler, the output cap and PostToolUse."""
    tool = loop.tools.get(call.name)
    if tool is None:
        available = ", ".join(loop.tools.names()) or "none"
        return ToolOutput.error(
            f"No such tool available: {call.name} (available: {available})"
        ), None
    if bad_input is not None:
        return ToolOutput.error(f"invalid input for {call.name}: {bad_input}"), None
    tool_input = call.input
    context: tuple[str, ...] = ()  # PreToolUse hooks' additionalContext
    gate = loop.gate
    verdict = None if gate is None else await gate.check(loop, call, tool)
    if verdict is not None:
        context = verdict.additional_context
        if verdict.stop is not None:
            run.stop = verdict.stop
        if verdict.deferred and _hookpoints.defer(loop, call, verdict.input, run):
            return _hookpoints.with_context(ToolOutput.error(verdict.denied), context), None
        if verdict.denied is not None:
            run.denials.append(
                {"tool_name": call.name, "tool_use_id": call.id, "tool_input": call.input}
            )
            await loop._publish(
                SystemMessage(
                    subtype="permission_denied",
                    data={
                        "tool_name": call.name,
                        "tool_use_id": call.id,
                        "reason": verdict.denied,
                        "agent_id": loop.agent_id,
                    },
                )
            )
            if verdict.interrupt:
                run.interrupt_call = call.id  # the turn ends once this result is in
            return _hookpoints.with_context(ToolOutput.error(verdict.denied), context), None
        tool_input = verdict.input
    after_tool = _hookpoints.after_tool  # PostToolUse / PostToolUseFailure hooks
    try:
        parsed = tool.validate(tool_input)
    except ToolInputError as exc:
        failed = ToolOutput.error(str(exc))
        return await after_tool(loop, call, tool_input, failed, context, run), None
    session = loop.session
    # positional, in field order: a keyword call costs twice as much, once per tool call
    ctx = ToolContext(
        session.cwd,  # cwd
        loop.agent_id,  # agent_id
        call.id,  # tool_use_id
        session.session_id,  # session_id
        loop.state,  # state
        session.session_state,  # session_state
        loop,  # agent
        loop.nursery,  # nursery
        loop.cleanup,  # cleanup
        session.backend,  # backend
        loop.model,  # model
        loop.complete,  # complete
        None if gate is None else gate.gate.files,  # files: the gate's word on paths
    )
    try:
        output = await tool.handler(parsed, ctx)
    except Exception as exc:
        log.info("tool %s raised", call.name, exc_info=True)
        failed = ToolOutput.error(
            f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        )
        return await after_tool(loop, call, tool_input, failed, context, run), None
    output = capped(tool, output)
    if context or getattr(gate, "runner", None) is not None:  # else no hook has a say
        output = await after_tool(loop, call, tool_input, output, context, run)
    return output, output.data


@attrs.define(eq=False)
class _Turn:
    """The calls of one response in flight: what the scheduler's tasks share."""

    loop: AgentLoop
    run: _Run
    bad_inputs: dict[str, str]
    #: the tool phase's scope (``AgentLoop.interrupt`` cancels it too)
    scope: trio.CancelScope
    #: call id → result, as each call finishes (kept when the turn is interrupted)
    results: dict[str, ToolResultBlock] = attrs.Factory(dict)

    def read_only(self, call: ToolUseBlock) -> bool:
        tool = self.loop.tools.get(call.name)
        return tool is not None and tool.read_only

    async def call(self, call: ToolUseBlock) -> ToolResultBlock:
        """One tool call → its result block, emitted as it finishes. Never raises (T4)."""
        loop = self.loop
        output, data = await _execute(loop, call, self.bad_inputs.get(call.id), self.run)
        block = ToolResultBlock(
            tool_use_id=call.id, content=output.content, is_error=True if output.is_error else None
        )
        await _emit_result(loop, block, data)
        self.results[call.id] = block
        if call.id == self.run.interrupt_call:
            # only now: the denial's own result is kept, the other calls are interrupted
            self.scope.cancel(reason="permission denied with interrupt")
        return block


def capped(tool: Tool, output: ToolOutput) -> ToolOutput:
    """``output`` within the tool's ``output_cap`` characters (T8): text is cut with a note saying
    how much; in a list of content items, text items share the cap and the rest are kept."""
    cap = tool.output_cap
    if cap is None:
        return output
    content = output.content
    if isinstance(content, str):
        if len(content) <= cap:
            return output
        return attrs.evolve(output, content=truncate(content, cap))
    total = 0
    for item in content:
        if item.get("type") == "text":
            total += len(item.get("text", ""))
    if total <= cap:
        return output
    kept: list[dict[str, Any]] = []
    budget = cap
    for item in content:
        if item.get("type") != "text":
            kept.append(item)
            continue
        text = item.get("text", "")
        if budget <= 0:
            continue
        if len(text) > budget:
            kept.append({"type": "text", "text": truncate(text, budget)})
            budget = 0
        else:
            kept.append(item)
            budget -= len(text)
    return attrs.evolve(output, content=kept)
