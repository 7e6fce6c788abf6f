"""Running the tool calls of one model response.

:class:`ToolCalls` belongs to one :class:`~agents._loop.agent.AgentLoop` (``loop.tool_calls``).
Each call goes through input validation against the tool's schema, the permission gate (with
PreToolUse hooks), the handler (an exception it raises is an error result, never a crash), the
output cap (``Tool.output_cap`` characters) and PostToolUse hooks; its result is emitted as soon
as it is in. Read-only calls run at once, each mutating call alone (``runtime.ToolScheduler``),
and the results go back into the history in call order whatever order they finish in. Every
call of an appended assistant message gets a result, even when the turn is interrupted or
refused, so the transcript always resumes.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any

import attrs
import trio
from trio.lowlevel import checkpoint_if_cancelled

from runtime import ToolScheduler

from ..messages import SystemMessage, ToolResultBlock, ToolUseBlock, UserMessage
from ..tools.base import (
    NO_CONTEXT,
    Tool,
    ToolContext,
    ToolInputError,
    ToolOutput,
    UncheckedInput,
    validated,
)
from .budget import watching_the_budget
from .capping import capped
from .run import BUDGET_LIMIT_TEXT, INTERRUPTED_TEXT, Run, new_id

if TYPE_CHECKING:
    from .agent import AgentLoop
    from .contracts import Verdict
    from .response import Response

__all__ = ["ToolCalls", "capped", "with_context"]

log = logging.getLogger("agents.loop")


@attrs.define(eq=False)
class ToolCalls:
    """How one agent runs its tools: its scheduler bounds the agent's calls at once.

    Its methods take the loop they act for (the loop holds its ``ToolCalls``, not the other way
    round: a finished agent is freed at once, without waiting for the cycle collector)."""

    scheduler: ToolScheduler
    #: whether hooks see a call's output, for a success and for a failure (PostToolUse,
    #: PostToolUseFailure): asked once per agent, as its seams and its session's hooks are set
    #: when it is made (``Seams.sees_tool_output``)
    sees_success: bool = False
    sees_failure: bool = False

    @classmethod
    def for_loop(cls, loop: AgentLoop) -> ToolCalls:
        seams = loop.seams
        return cls(
            ToolScheduler(loop.session.options.max_tool_concurrency),
            seams.sees_tool_output(loop, False),
            seams.sees_tool_output(loop, True),
        )

    async def run(
        self, loop: AgentLoop, calls: list[ToolUseBlock], response: Response, run: Run
    ) -> bool:
        """Run the calls, emit each result as it finishes, append all in call order.

        Returns False when the turn was interrupted; finished calls keep their results and the
        rest are answered as interrupted.
        """
        session = loop.session
        if not (session.denials_interrupt or (session.client_interrupts and loop.is_main)):
            # nothing can interrupt this phase: no cancel scope for it
            turn = _Turn(loop, run, response.bad_inputs, None, self)
            _append_results(loop, await self._schedule(loop, calls, turn))  # in call order
            return True
        with loop.interruptible() as scope:
            turn = _Turn(loop, run, response.bad_inputs, scope, self)
            blocks = await self._schedule(loop, calls, turn)
        if scope.cancelled_caught:
            results, unstreamed = turn.results, turn.unstreamed or {}
            blocks = []
            for call in calls:
                block = results.get(call.id)
                if block is None:
                    block = ToolResultBlock(
                        tool_use_id=call.id, content=INTERRUPTED_TEXT, is_error=True
                    )
                    await _emit_result(loop, block, None)
                elif call.id in unstreamed and loop.streams:
                    await session.emit(unstreamed[call.id])  # recorded, not yet streamed
                blocks.append(block)
            _append_results(loop, blocks)
            return False
        _append_results(loop, blocks)
        return True

    async def _schedule(
        self, loop: AgentLoop, calls: list[ToolUseBlock], turn: _Turn
    ) -> list[ToolResultBlock]:
        """Every call's result, in call order (the scheduler's list)."""
        ledger = loop.session.ledger
        if ledger.cap is None:  # no budget to trip (the hot path)
            return await self.scheduler.run(calls, turn.call, read_only=turn.read_only)
        else:  # a call waiting for a slot is cut at the trip, and never runs
            return await self.scheduler.run(
                calls, turn.call, read_only=turn.read_only,
                wait_scope=partial(watching_the_budget, ledger), if_cut=turn.not_started,
            )  # fmt: skip

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


def _result_message(
    loop: AgentLoop, block: ToolResultBlock, data: dict[str, Any] | None
) -> UserMessage:
    """The stream's message for one tool result (a plain function: no coroutine per call)."""
    return UserMessage(
        content=[block],
        parent_tool_use_id=loop.parent_tool_use_id,
        tool_use_result=data,
        uuid=new_id(),
        session_id=loop.session.session_id,
    )


async def _emit_result(
    loop: AgentLoop, block: ToolResultBlock, data: dict[str, Any] | None
) -> None:
    await loop.publish(_result_message(loop, block, data))


@attrs.frozen
class _Admitted:
    """What the gate's slow path lets a call run with: its parsed input, the input as the gate
    left it (a hook or ``can_use_tool`` may rewrite it) and the PreToolUse hooks' context."""

    parsed: Any
    tool_input: dict[str, Any]
    context: tuple[str, ...]


async def _admit(
    loop: AgentLoop, call: ToolUseBlock, tool: Tool, parsed: Any, run: Run
) -> _Admitted | ToolOutput:
    """The gate's slow path for a call whose input is valid: the permission pipeline and
    PreToolUse hooks (within the budget's watch when there is a cap). The call's error result
    when it may not run; otherwise what it runs with."""
    gate = loop.gate
    assert gate is not None
    ledger = loop.session.ledger
    if ledger.cap is None:  # no budget to trip: the gate decides alone
        verdict = await gate.check(loop, call, tool)
    else:
        with watching_the_budget(ledger) as wait:  # a pending prompt or hook ends at the trip
            verdict = await gate.check(loop, call, tool)
        if wait.cancelled_caught:
            return ToolOutput.error(BUDGET_LIMIT_TEXT)
    if verdict is None:
        return _Admitted(parsed, call.input, ())
    refused = await _refusal(loop, call, verdict, run)
    if refused is not None:
        return refused
    context = verdict.additional_context
    tool_input = call.input
    if verdict.input is not call.input:  # a hook or can_use_tool rewrote the input
        tool_input = verdict.input
        try:
            parsed = await validated(tool, tool_input)
        except ToolInputError as exc:
            failed = ToolOutput.error(str(exc))
            return await loop.seams.after_tool(loop, call, tool_input, failed, context, run)
    return _Admitted(parsed, tool_input, context)


def _defer(loop: AgentLoop, call: ToolUseBlock, tool_input: dict[str, Any], run: Run) -> bool:
    """Record a PreToolUse deferral; False when the turn has other calls (then it is denied:
    a deferral cannot end a turn whose other calls need results)."""
    last = loop.history[-1] if loop.history else {}
    content = last.get("content") if last.get("role") == "assistant" else None
    calls = sum(1 for b in content or () if isinstance(b, dict) and b.get("type") == "tool_use")
    if calls != 1:
        return False
    run.deferred = {"id": call.id, "name": call.name, "input": tool_input}
    return True


def _no_such_tool(loop: AgentLoop, call: ToolUseBlock) -> ToolOutput:
    available = ", ".join(loop.tools.names()) or "none"
    return ToolOutput.error(f"No such tool available: {call.name} (available: {available})")


async def _refusal(
    loop: AgentLoop, call: ToolUseBlock, verdict: Verdict, run: Run
) -> ToolOutput | None:
    """What a gate's verdict means besides "run": a deferral or a denial as the call's error
    result (a denial is recorded and announced); None when the call may run."""
    if verdict.stop is not None:
        run.stop = verdict.stop
    if verdict.denied is None:
        return None
    refused = with_context(ToolOutput.error(verdict.denied), verdict.additional_context)
    if verdict.deferred and _defer(loop, call, verdict.input, run):
        return refused
    denial = {"tool_name": call.name, "tool_use_id": call.id, "tool_input": call.input}
    if run.denials is None:
        run.denials = [denial]
    else:
        run.denials.append(denial)
    await loop.publish(
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
    return refused


def _context(loop: AgentLoop, call: ToolUseBlock) -> ToolContext:
    """What the call's handler may know about its caller."""
    session = loop.session
    gate = loop.gate
    # positional, in field order: a keyword call costs twice as much, once per tool call
    return ToolContext(
        session.cwd,  # cwd
        loop.agent_id,  # agent_id
        call.id,  # tool_use_id
        session.session_id,  # session_id
        loop.state,  # state
        session.session_state,  # session_state
        loop,  # agent
        loop.links.nursery,  # nursery
        loop.cleanups(),  # cleanup
        session.backend,  # backend
        loop.model,  # model
        loop.complete,  # complete
        None if gate is None else gate.files,  # files: the gate's word on paths
    )


def _raised(call: ToolUseBlock, exc: Exception) -> ToolOutput:
    """The error result of a handler that raised ``exc``."""
    log.info("tool %s raised", call.name, exc_info=True)
    return ToolOutput.error(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


class _Turn:
    """The calls of one response in flight: what the scheduler's tasks share.

    A plain class with slots: one is made per turn, and attrs' ``__attrs_post_init__`` would be
    a call more."""

    __slots__ = ("bad_inputs", "loop", "results", "run", "scope", "sees_failure", "sees_success",
                 "tool_of", "unstreamed")  # fmt: skip

    def __init__(
        self,
        loop: AgentLoop,
        run: Run,
        bad_inputs: dict[str, str],
        scope: trio.CancelScope | None,
        tool_calls: ToolCalls,
    ) -> None:
        self.loop = loop
        self.run = run
        self.bad_inputs = bad_inputs
        #: the tool phase's scope (``AgentLoop.interrupt`` cancels it too); None when nothing
        #: can interrupt the phase (no client, and no permission answer can ask to)
        self.scope = scope
        #: call id → result, as each call finishes (kept when the turn is interrupted)
        self.results: dict[str, ToolResultBlock] = {}
        #: call id → the message of a result recorded in the transcript but not streamed when
        #: the turn was interrupted (the interruption streams it); made when first needed
        self.unstreamed: dict[str, UserMessage] | None = None
        #: the agent's tools by name (``ToolRegistry.lookup``: no Python code runs per look-up)
        self.tool_of = loop.tools.lookup
        self.sees_success = tool_calls.sees_success
        self.sees_failure = tool_calls.sees_failure

    def read_only(self, call: ToolUseBlock) -> bool:
        tool = self.tool_of(call.name)
        return tool is not None and tool.read_only

    async def call(self, call: ToolUseBlock) -> ToolResultBlock:
        """One tool call → its result block, emitted as it finishes. Never raises: a failing
        call is an error result.

        The tool is looked up, its input validated (before the gate is asked: an input that
        fails the tool's schema is an error naming the field in every mode, with no permission
        asked), the gate asked, the handler awaited, the output capped and PostToolUse run.
        The common case — a call the gate passes at once — runs here without a coroutine of
        its own; any other goes through the gate's slow path (``_gated``), which runs the
        handler the same way (``tests/agents/test_tool_call_paths.py`` compares the two)."""
        loop = self.loop
        session = loop.session
        tool = self.tool_of(call.name)
        data = None
        if tool is None:
            output = _no_such_tool(loop, call)
        elif self.bad_inputs and call.id in self.bad_inputs:
            output = ToolOutput.error(f"invalid input for {call.name}: {self.bad_inputs[call.id]}")
        else:
            try:
                parsed = tool.validate(call.input)
            except UncheckedInput as unchecked:
                output, data = await self._checked_apart(call, tool, unchecked)
            except ToolInputError as exc:
                output = ToolOutput.error(str(exc))
            else:
                gate = loop.gate
                if gate is not None and not gate.passes_at_once(call, tool):
                    output, data = await self._gated(call, tool, parsed)
                else:
                    if gate is not None:
                        await checkpoint_if_cancelled()  # what ``gate.check`` would do
                    # no tool starts after the trip (the tree's ledger: ``Session.ledger``'s)
                    if session.supervisor.ledger.exhausted:
                        output = ToolOutput.error(BUDGET_LIMIT_TEXT)
                    else:
                        # ``_execute`` inlined, for a call with its own input and no context
                        try:
                            output = await tool.handler(
                                parsed, _context(loop, call) if tool.takes_context else NO_CONTEXT
                            )
                        except Exception as exc:
                            output = _raised(call, exc)
                            if self.sees_failure:
                                output = await loop.seams.after_tool(
                                    loop, call, call.input, output, (), self.run
                                )
                        else:
                            if tool.output_cap is not None:
                                output = capped(tool, output)
                            if self.sees_failure if output.is_error else self.sees_success:
                                output = await loop.seams.after_tool(
                                    loop, call, call.input, output, (), self.run
                                )
                            data = output.data
        # positional, in field order (a keyword call costs more, once per tool call):
        # tool_use_id, content, is_error
        block = ToolResultBlock(call.id, output.content, True if output.is_error else None)
        # ``loop.publish`` inlined (a coroutine less per call): into the transcript, then out;
        # ``_result_message`` inlined, positional: content, parent_tool_use_id,
        # tool_use_result, uuid, session_id
        message = UserMessage(
            [block], loop.parent_tool_use_id, data, new_id(), session.session_id
        )
        transcript = loop.transcript
        if transcript is not None:
            try:
                await transcript.record(message)
            except BaseException:
                # cancelled once stored (the store's checkpoint comes after the append): the
                # result stands, or the interruption would answer the call a second time
                if transcript.last_uuid == message.uuid:
                    self._kept(call.id, block, message)
                raise
        if loop.streams:
            nowait = session.emit_nowait  # no coroutine while the stream's buffer has room
            if nowait is None or not nowait(message):
                try:
                    await session.emit(message)
                except BaseException:  # cancelled waiting for room: not streamed
                    self._kept(call.id, block, message)
                    raise
        self.results[call.id] = block
        if call.id == self.run.interrupt_call:
            # only now: the denial's own result is kept, the other calls are interrupted
            if self.scope is None:
                raise RuntimeError(
                    "a call was denied with interrupt=True in a session marked as having "
                    "nothing that could interrupt (Session.denials_interrupt=False)"
                )
            self.scope.cancel(reason="permission denied with interrupt")
        return block

    def _kept(self, call_id: str, block: ToolResultBlock, message: UserMessage) -> None:
        """A result recorded, or left unrecorded for want of a transcript, but not streamed."""
        self.results[call_id] = block
        if self.unstreamed is None:
            self.unstreamed = {}
        self.unstreamed[call_id] = message

    async def _checked_apart(
        self, call: ToolUseBlock, tool: Tool, unchecked: UncheckedInput
    ) -> tuple[ToolOutput, dict[str, Any] | None]:
        """A call whose input only a process of its own can check (a regex of the schema that
        could backtrack without bound over it): checked there, then through the gate's slow
        path, as any call whose input is valid."""
        try:
            parsed = await unchecked.check()
        except ToolInputError as exc:
            return ToolOutput.error(str(exc)), None
        if self.loop.gate is not None:
            return await self._gated(call, tool, parsed)
        if self.loop.session.supervisor.ledger.exhausted:  # no tool starts after the trip
            return ToolOutput.error(BUDGET_LIMIT_TEXT), None
        return await self._execute(call, tool, _Admitted(parsed, call.input, ()))

    async def _gated(
        self, call: ToolUseBlock, tool: Tool, parsed: Any
    ) -> tuple[ToolOutput, dict[str, Any] | None]:
        """The slow path of a call with a valid input: the gate's pipeline, then the handler
        with the input the gate left and the context its hooks added."""
        admitted = await _admit(self.loop, call, tool, parsed, self.run)
        if isinstance(admitted, ToolOutput):
            return admitted, None
        if self.loop.session.ledger.exhausted:  # no tool starts after the trip
            return ToolOutput.error(BUDGET_LIMIT_TEXT), None
        return await self._execute(call, tool, admitted)

    async def _execute(
        self, call: ToolUseBlock, tool: Tool, admitted: _Admitted
    ) -> tuple[ToolOutput, dict[str, Any] | None]:
        """The handler, the output cap and PostToolUse: the output and its ``data`` (None
        when the handler raised)."""
        loop = self.loop
        raised = False
        try:
            context_of_call = _context(loop, call) if tool.takes_context else NO_CONTEXT
            output = await tool.handler(admitted.parsed, context_of_call)
        except Exception as exc:
            raised = True
            output = _raised(call, exc)
        else:
            output = capped(tool, output)
        # PostToolUse hooks and the gate's hook context, only where there are some
        if admitted.context or (self.sees_failure if output.is_error else self.sees_success):
            output = await loop.seams.after_tool(
                loop, call, admitted.tool_input, output, admitted.context, self.run
            )
        return output, None if raised else output.data

    async def not_started(self, call: ToolUseBlock) -> ToolResultBlock:
        """The result of a call whose wait for a slot the budget's trip cut: it never ran."""
        block = ToolResultBlock(tool_use_id=call.id, content=BUDGET_LIMIT_TEXT, is_error=True)
        await _emit_result(self.loop, block, None)
        self.results[call.id] = block
        return block


def with_context(output: ToolOutput, texts: tuple[str, ...]) -> ToolOutput:
    """``output`` with hook context appended as text blocks of the same tool result."""
    if not texts:
        return output
    content = output.content
    blocks = (
        ([{"type": "text", "text": content}] if content else [])
        if isinstance(content, str)
        else list(content)
    )
    blocks.extend({"type": "text", "text": t} for t in texts)
    return ToolOutput(content=blocks, is_error=output.is_error, data=output.data)
