"""The agent loop (SPEC §1): prompt → model → tools → results → repeat → result.

One :class:`AgentLoop` per agent — the main one and every subagent — each run inside an actor of
the ``runtime`` supervisor tree. :class:`~agents._session.Session` is what the agents of one
``query()`` or ``AgentClient`` share: the backend, the price table, the ledger, the output stream.

This module is the loop itself — ``run_prompt`` and the seams where features plug in (hooks,
compaction, structured output, commands). Its two steps per turn live next to it:
``agents._model_call`` (the request, retries, budget, streaming) and ``agents._tool_calls``
(permissions, validation, handlers, output caps, results in call order).

Invariants kept here:

* the history (``AgentLoop.history``) is the Messages API's ``messages`` list and only grows by
  appending, so a turn costs the same at turn 200 as at turn 2;
* a response is fed back only once it is complete (``message_stop``): a failed attempt leaves
  nothing behind (SPEC L8);
* tool results go back in call order (T6) whatever order the scheduler finishes them in, and every
  tool call of an appended assistant message gets a result, even when the turn is cut short —
  so the transcript always resumes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import msgspec
import trio

from runtime import Actor

from .._features import hookpoints as _hookpoints
from .._features.structured import structured_follow_up
from ..backends.base import ModelRequest
from ..messages import (
    AssistantMessage,
    ContentBlock,
    Message,
    ResultMessage,
    ToolUseBlock,
    UserMessage,
)
from ..tools.base import ToolRegistry
from .compaction import ContextTracker, maybe_compact
from .history import History
from .model_call import ModelCall
from .response import Response
from .run import (
    BUDGET_LIMIT_TEXT,
    INTERRUPTED_TEXT,
    USAGE_KEYS,
    _EndRun,
    _Run,
    budget_end,
    new_id,
)
from .session import Session
from .tool_calls import ToolCalls

# ``Session``, ``new_id``, ``_Run`` and ``_EndRun`` are imported from here by the loop's features.
__all__ = ["AgentLoop", "Session", "_EndRun", "_Run", "new_id"]

log = logging.getLogger("agents.loop")

DEFAULT_MAX_TOKENS = 32_000


@attrs.define(eq=False)
class AgentLoop:
    """One agent's loop. ``run_prompt`` runs SPEC L1 for one prompt and returns its result."""

    session: Session
    agent_id: str
    agent_type: str
    model: str
    tools: ToolRegistry
    system: list[dict[str, Any]] = attrs.Factory(list)
    max_turns: int | None = None
    effort: str | None = None
    thinking: dict[str, Any] | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    parent_tool_use_id: str | None = None
    history: History = attrs.Factory(History)
    state: dict[str, Any] = attrs.Factory(dict)
    nursery: trio.Nursery | None = None
    cleanup: list[Callable[[], Awaitable[None]]] = attrs.Factory(list)
    gate: Any = None
    hooks: Any = None
    #: the actor this loop runs in, its depth below main, and whether its messages are streamed
    actor: Actor | None = None
    depth: int = 0
    streams: bool = True
    #: background children still running (the agent's input cannot end before they do)
    background_running: int = 0
    #: background children's notifications (``Prompt``s) not answered yet, oldest first
    notifications: list[Any] = attrs.Factory(list)
    turns_total: int = 0
    last_usage: dict[str, int] = attrs.Factory(dict)
    #: called after each of this agent's responses (background subagents report progress)
    progress: Callable[[AgentLoop, Response], Awaitable[None]] | None = None
    #: this agent's transcript (``agents.sessions.Transcript``); None records nothing (C1)
    transcript: Any = None
    #: the context size as of the last response (C4)
    context: ContextTracker = attrs.Factory(ContextTracker)
    #: this agent's two steps per turn (``agents._model_call``, ``agents._tool_calls``)
    model_call: ModelCall = attrs.field(init=False)
    _tool_calls: ToolCalls | None = attrs.field(default=None, init=False)
    #: the running model call or tool phase: what ``interrupt`` cancels
    _turn_scope: trio.CancelScope | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        self.model_call = ModelCall.for_loop(self)

    @property
    def tool_calls(self) -> ToolCalls:
        """Made at the first tool call: most subagents of a big tree never make one."""
        tool_calls = self._tool_calls
        if tool_calls is None:
            tool_calls = self._tool_calls = ToolCalls.for_loop(self)
        return tool_calls

    @property
    def is_main(self) -> bool:
        return self.agent_id == "main"

    # -- control ----------------------------------------------------------------------------------

    def interrupt(self) -> bool:
        """Cancel the running turn (model call or tools); False when nothing is running."""
        if self._turn_scope is None:
            return False
        self._turn_scope.cancel(reason="interrupt")
        return True

    def _interruptible(self) -> _TurnScope:
        """``with loop._interruptible() as scope:`` runs a model call or tool phase in the
        cancel scope that :meth:`interrupt` cancels."""
        return _TurnScope(self)

    async def aclose(self) -> None:
        """Run the tools' cleanup (kill shells ...), shielded: nothing outlives the agent (T7)."""
        if not self.cleanup:
            return
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            while self.cleanup:
                fn = self.cleanup.pop()
                try:
                    await fn()
                except Exception:
                    log.exception("cleanup of agent %s failed", self.agent_id)

    # -- the loop ---------------------------------------------------------------------------------

    async def run_prompt(
        self,
        prompt: str | list[dict[str, Any]],
        *,
        max_turns: int | None = None,
        origin: dict[str, Any] | None = None,
    ) -> ResultMessage:
        """Append ``prompt`` as a user turn and loop until a response has no tool calls."""
        if isinstance(prompt, str) and prompt[:1] == "/" and self.is_main:
            from .._features.commands import run_command  # /clear, /compact (C3, C4)

            command = await run_command(self, prompt)
            if command is not None:
                return command
        run = _Run(started=trio.current_time())
        limit = self.max_turns if max_turns is None else max_turns
        try:
            accepted = await self._on_prompt(prompt, run)
            if accepted is None:
                terminal = "prompt_blocked" if run.stop is None else "hook_stopped"
                return self._result(run, "success", result="", terminal=terminal)
            await self._add_user_turn(accepted, origin=origin)
            while True:
                self._check_limits(run, limit)
                await self._before_request(run)
                response = await self._turn_model(run)
                if response is None:  # interrupted while streaming
                    raise _EndRun("error_during_execution", [INTERRUPTED_TEXT], "aborted_streaming")
                calls = response.tool_uses
                if self.session.ledger.exhausted:
                    if calls:
                        await self.tool_calls.refuse(self, calls, BUDGET_LIMIT_TEXT)
                    raise budget_end(self.session.ledger.cap)
                if not calls:
                    if response.stop_reason == "pause_turn":
                        continue
                    follow_up = await self._on_final(response, run)
                    if follow_up is not None:
                        await self._add_user_turn(follow_up)
                        continue
                    run.last_text = response.text
                    return self._result(run, "success", result=response.text)
                if not await self.tool_calls.run(self, calls, response, run):
                    raise _EndRun("error_during_execution", [INTERRUPTED_TEXT], "aborted_tools")
                if run.stop is not None or run.deferred is not None:
                    return await _hookpoints.end_result(self, run, response)
        except _EndRun as end:
            return self._result(run, end.subtype, errors=end.errors, terminal=end.terminal_reason)

    def _check_limits(self, run: _Run, limit: int | None) -> None:
        """Before each model request: max_turns (L4), then the tree's budget (S6: no response
        starts after the cap was reached, whoever reached it)."""
        if limit is not None and run.turns >= limit:
            raise _EndRun(
                "error_max_turns",
                [f"Reached maximum number of turns ({limit})"],
                "max_turns",
            )
        if self.session.ledger.exhausted:
            raise budget_end(self.session.ledger.cap)

    async def _add_user_turn(
        self, prompt: str | list[dict[str, Any]], *, origin: dict[str, Any] | None = None
    ) -> None:
        """A user turn: into the history, and into the transcript (not the stream)."""
        self.history.append({"role": "user", "content": prompt})
        await self._record(
            UserMessage(
                content=prompt if isinstance(prompt, str) else _blocks_of(prompt),
                uuid=new_id(),
                session_id=self.session.session_id,
                origin=origin,
            )
        )

    # -- extension points (each owned by one feature; see the issue that builds it) --------------

    async def _on_prompt(
        self, prompt: str | list[dict[str, Any]], run: _Run
    ) -> str | list[dict[str, Any]] | None:
        """UserPromptSubmit hooks (SPEC H4): the prompt to run, or None when a hook blocks it."""
        return await _hookpoints.on_prompt(self, prompt, run)

    async def _before_request(self, run: _Run) -> None:
        """Before each model request: automatic compaction (SPEC C4)."""
        await maybe_compact(self)

    async def _on_final(self, response: Response, run: _Run) -> str | None:
        """A response without tool calls: Stop hooks (H4) and structured output (C5) may keep
        the agent going by returning its next instruction; None ends the run."""
        follow_up = await self._stop_hooks(response, run)
        if follow_up is not None:
            return follow_up
        return structured_follow_up(self, response, run)

    async def _stop_hooks(self, response: Response, run: _Run) -> str | None:
        """Stop (SubagentStop in a subagent) hooks: a block's reason is the next instruction."""
        return await _hookpoints.stop_hooks(self, response, run)

    async def _record(self, message: Message) -> None:
        """Append ``message`` to this agent's transcript (SPEC C1); note each response's usage
        for the context size (C4)."""
        if type(message) is AssistantMessage and message.usage is not None:
            self.context.observe(message.usage, len(self.history))
        transcript = self.transcript
        if transcript is not None:
            await transcript.record(message)

    async def _publish(self, message: Message, *, stream: bool = True) -> None:
        """Every message this agent produces: into its transcript, and (if ``stream``) out.

        (``_record`` inlined: this runs for every tool result.)"""
        if type(message) is AssistantMessage and message.usage is not None:
            self.context.observe(message.usage, len(self.history))
        transcript = self.transcript
        if transcript is not None:
            await transcript.record(message)
        if stream and self.streams:
            await self.session.emit(message)

    def _result(
        self,
        run: _Run,
        subtype: str,
        *,
        result: str | None = None,
        errors: list[str] | None = None,
        terminal: str | None = None,
    ) -> ResultMessage:
        session = self.session
        self.turns_total += run.turns
        self.last_usage = run.usage
        return ResultMessage(
            subtype=subtype,  # type: ignore[arg-type]
            duration_ms=int((trio.current_time() - run.started) * 1000),
            duration_api_ms=int(run.api_seconds * 1000),
            is_error=subtype != "success",
            num_turns=run.turns,
            session_id=session.session_id,
            total_cost_usd=session.ledger.total,
            usage=dict(run.usage),
            model_usage={k: dict(v) for k, v in session.model_usage.items()},
            result=result,
            errors=errors,
            stop_reason=run.stop_reason,
            terminal_reason=terminal or ("completed" if subtype == "success" else None),
            permission_denials=list(run.denials),
            structured_output=run.structured_output,
            uuid=new_id(),
        )

    # -- one turn: the model's response (its tools: ``self.tool_calls.run``) --------------------

    async def _turn_model(self, run: _Run) -> Response | None:
        """One model response, retried per SPEC L8, charged and streamed; None if interrupted."""
        t0 = trio.current_time()
        try:
            if self.is_main:  # only the main agent's turns can be interrupted (AgentClient)
                with self._interruptible() as scope:
                    response_and_trip = await self.model_call.with_retries(self)
                if scope.cancelled_caught:
                    return None
            else:
                response_and_trip = await self.model_call.with_retries(self)
        finally:
            run.api_seconds += trio.current_time() - t0
        response, tripped = response_and_trip
        run.turns += 1
        run.stop_reason = response.stop_reason
        if not tripped:  # the crossing response is left out of `usage` (S6)
            for key in USAGE_KEYS:
                run.usage[key] += response.usage.get(key) or 0
        self.history.append({"role": "assistant", "content": response.api_content})
        self.session.turns_by_agent[self.agent_id] = (
            self.session.turns_by_agent.get(self.agent_id, 0) + 1
        )
        await self._emit_response(response)
        if self.progress is not None:
            await self.progress(self, response)
        return response

    async def _emit_response(self, response: Response) -> None:
        """One assistant message per content block, as the Agent SDK streams them; a
        subagent's text is recorded but only streamed with ``forward_subagent_text``.

        The blocks are recorded together (one transcript write per response), before the first
        is streamed: each message is still in the transcript before anyone sees it (C1)."""
        session = self.session
        usage = response.usage
        model = response.model or self.model
        blocks = response.blocks
        messages = [
            AssistantMessage(
                content=[block],
                model=model,
                message_id=response.message_id,
                parent_tool_use_id=self.parent_tool_use_id,
                usage=usage,
                uuid=new_id(),
                session_id=session.session_id,
            )
            for block in blocks
        ]
        if not messages:
            return
        self.context.observe(usage, len(self.history))
        if self.transcript is not None:
            await self.transcript.record_all(messages)
        if self.streams:
            forward_text = self.is_main or session.options.forward_subagent_text
            emit = session.emit
            for block, message in zip(blocks, messages, strict=True):
                if forward_text or isinstance(block, ToolUseBlock):
                    await emit(message)

    # -- helpers for tools ------------------------------------------------------------------------

    async def complete(self, prompt: str, system: str | None = None) -> str:
        """A one-shot model call (no tools) charged to the tree's budget like any response."""
        if self.session.ledger.exhausted:
            raise RuntimeError(BUDGET_LIMIT_TEXT)
        request = ModelRequest(
            model=self.model,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=4096,
            system=[{"type": "text", "text": system}] if system else [],
            agent_id=self.agent_id,
            agent_type=self.agent_type,
            purpose="complete",
        )
        response, _ = await self.model_call.charged(self, request)
        return response.text


def _blocks_of(content: list[dict[str, Any]]) -> list[Any]:
    """API-shaped user content as message blocks (text and tool results)."""
    return [msgspec.convert(c, ContentBlock) for c in content if c.get("type") in _BLOCK_TYPES]


_BLOCK_TYPES = frozenset({"text", "tool_result", "tool_use", "thinking"})


class _TurnScope:
    """The cancel scope of a model call or tool phase, known to its loop while entered (what
    :meth:`AgentLoop.interrupt` cancels). A class, not a generator context manager: it runs
    twice per turn."""

    __slots__ = ("loop", "scope")

    def __init__(self, loop: AgentLoop) -> None:
        self.loop = loop
        self.scope = trio.CancelScope()

    def __enter__(self) -> trio.CancelScope:
        self.loop._turn_scope = self.scope
        return self.scope.__enter__()

    def __exit__(self, *exc_info: Any) -> bool:
        try:
            return self.scope.__exit__(*exc_info)
        finally:
            self.loop._turn_scope = None
