"""The agent loop: prompt → model → tools → results → repeat → result.

One :class:`AgentLoop` per agent — the main one and every subagent — each run inside an actor of
the ``runtime`` supervisor tree. :class:`~agents._loop.session.Session` is what the agents of one
``query()`` or ``AgentClient`` share: the backend, the price table, the ledger, the output stream.

This module is the loop itself — ``run_prompt`` and the seams where features plug in (hooks,
structured output, commands: ``contracts.Seams``; the permission gate: ``contracts.Gate``). Its
two steps per turn live next to it: ``model_call`` (the request, retries, budget, streaming) and
``tool_calls`` (validation, permissions, handlers, output caps, results in call order).

Invariants kept here:

* the history (:class:`~agents._loop.history.History`) is the Messages API's ``messages`` list;
  the loop appends to it, and a rewrite (compaction, ``/clear``, resume) goes through
  ``History.replace``, which whatever measures the history incrementally can see;
* a response is fed back only once it is complete (``message_stop``): a failed attempt leaves
  nothing behind in the history;
* tool results go back in call order whatever order the scheduler finishes them in, and every
  tool call of an appended assistant message gets a result, even when the turn is cut short —
  so the transcript always resumes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

import attrs
import msgspec
import trio

from ..backends.base import ModelRequest
from ..messages import (
    AssistantMessage,
    ContentBlock,
    Message,
    ResultMessage,
    SystemMessage,
    ToolUseBlock,
    UserMessage,
)
from ..tools.base import ToolRegistry
from .compaction import ContextTracker, auto_compact, over_threshold
from .contracts import DONE, Content, Gate, Recorder, Seams, TreeLinks
from .history import History
from .model_call import ModelCall
from .no_seams import NO_SEAMS
from .response import Response
from .run import BUDGET_LIMIT_TEXT, INTERRUPTED_TEXT, Run, RunEnd, budget_end, new_id
from .session import Session
from .tool_calls import ToolCalls

__all__ = ["DEFAULT_MAX_TOKENS", "AgentLoop", "check_user_blocks"]

log = logging.getLogger("agents.loop")

DEFAULT_MAX_TOKENS = 32_000


@attrs.define(eq=False)
class AgentLoop:
    """One agent's loop. ``run_prompt`` runs one prompt to its result.

    Its fields are written by this class only; the tree of actors writes ``links``, and the
    history is written through its own methods."""

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
    #: per-agent state of the tools (read-file bookkeeping, the persistent shell)
    state: dict[str, Any] = attrs.Factory(dict)
    #: async callables run, shielded, when the agent ends (kill shells ...), last added first;
    #: None until the first is added (:meth:`cleanups`): most agents of a tree run no tool
    cleanup: list[Callable[[], Awaitable[None]]] | None = None
    #: the permission gate; None runs every call as it is
    gate: Gate | None = None
    #: where the features act (hooks, structured output, commands)
    seams: Seams = NO_SEAMS
    #: this agent's transcript; None records nothing
    transcript: Recorder | None = None
    #: the agent's depth below main, and whether its messages are streamed
    depth: int = 0
    streams: bool = True
    #: its ties to the tree of actors (written by ``agents._tree`` only)
    links: TreeLinks = attrs.Factory(TreeLinks)
    #: model responses over all its runs, and the last run's token usage
    turns_total: int = attrs.field(default=0, init=False)
    last_usage: dict[str, int] = attrs.field(factory=dict, init=False)
    #: the context size as of the last response
    context: ContextTracker = attrs.field(factory=ContextTracker, init=False)
    #: this agent's two steps per turn (``model_call``, ``tool_calls``)
    model_call: ModelCall = attrs.field(init=False)
    _tool_calls: ToolCalls | None = attrs.field(default=None, init=False)
    #: the running model call or tool phase: what ``interrupt`` cancels
    _turn_scope: trio.CancelScope | None = attrs.field(default=None, init=False)
    #: ``agent_id == "main"``, kept with ``agent_id`` (both written by this class only): a
    #: field, not a property, as it is read several times in every turn of every agent
    is_main: bool = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.is_main = self.agent_id == "main"
        self.model_call = ModelCall.for_loop(self)

    @property
    def tool_calls(self) -> ToolCalls:
        """Made at the first tool call: most subagents of a big tree never make one."""
        tool_calls = self._tool_calls
        if tool_calls is None:
            tool_calls = self._tool_calls = ToolCalls.for_loop(self)
        return tool_calls

    # -- control ----------------------------------------------------------------------------------

    def interrupt(self) -> bool:
        """Cancel the running turn (model call or tools); False when nothing is running."""
        if self._turn_scope is None:
            return False
        self._turn_scope.cancel(reason="interrupt")
        return True

    def interruptible(self) -> TurnScope:
        """``with loop.interruptible() as scope:`` runs a model call or tool phase in the
        cancel scope that :meth:`interrupt` cancels."""
        return TurnScope(self)

    def use_model(self, model: str) -> None:
        """Switch the model from the next request (``AgentClient.set_model``, the fallback)."""
        self.model = model

    def take_name(self, agent_id: str, transcript: Recorder | None) -> None:
        """The agent's id (a subagent takes its actor's address) and transcript, once known."""
        self.agent_id = agent_id
        self.is_main = agent_id == "main"
        if transcript is not None:
            self.transcript = transcript

    def start_over(self, transcript: Recorder | None) -> None:
        """An empty history and a fresh transcript (``/clear``)."""
        self.history.replace([], "clear")
        self.context.reset()
        self.transcript = transcript

    def cleanups(self) -> list[Callable[[], Awaitable[None]]]:
        """The list that cleanup callables are added to (made at the first use)."""
        cleanup = self.cleanup
        if cleanup is None:
            cleanup = self.cleanup = []
        return cleanup

    async def aclose(self) -> None:
        """Run the tools' cleanup (kill shells ...), shielded: no process outlives its agent."""
        cleanup = self.cleanup
        if not cleanup:
            return
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            while cleanup:
                fn = cleanup.pop()
                try:
                    await fn()
                except Exception:
                    log.exception("cleanup of agent %s failed", self.agent_id)

    # -- the loop ---------------------------------------------------------------------------------

    async def run_prompt(
        self,
        prompt: Content,
        *,
        max_turns: int | None = None,
        origin: dict[str, Any] | None = None,
    ) -> ResultMessage:
        """Append ``prompt`` as a user turn and loop until a response has no tool calls."""
        if isinstance(prompt, str) and prompt[:1] == "/" and self.is_main:
            command = await self.seams.command(self, prompt)
            if command is not None:
                return command
        run = Run(started=self.session.now())
        limit = self.max_turns if max_turns is None else max_turns
        try:
            accepted = await self.seams.on_prompt(self, prompt, run)
            if accepted is None:
                terminal = "prompt_blocked" if run.stop is None else "hook_stopped"
                return self.result(run, "success", result="", terminal=terminal)
            message = self._add_user_turn(accepted, origin)
            transcript = self.transcript
            if transcript is not None:
                await transcript.record(message)
            supervisor = self.session.supervisor  # its ledger read each time: /clear replaces it
            while True:
                # The next response: the limits checked, the context compacted if it must be.
                # (Inlined, not a coroutine of its own: every wait of the model call passes
                # through each frame above it.) Before each model request: max_turns, then the
                # tree's budget (no response starts after the cap was reached, whoever did).
                if limit is not None and run.turns >= limit:
                    raise RunEnd(
                        "error_max_turns",
                        [f"Reached maximum number of turns ({limit})"],
                        "max_turns",
                    )
                if supervisor.ledger.exhausted:
                    raise budget_end(supervisor.ledger.cap)
                tokens = over_threshold(self)  # no coroutine unless there is something to compact
                if tokens is not None:
                    await auto_compact(self, tokens)
                response = await self._turn_model(run)
                if response is None:  # interrupted while streaming
                    raise RunEnd("error_during_execution", [INTERRUPTED_TEXT], "aborted_streaming")
                calls = response.tool_uses
                if supervisor.ledger.exhausted:
                    if calls:
                        await self.tool_calls.refuse(self, calls, BUDGET_LIMIT_TEXT)
                    raise budget_end(supervisor.ledger.cap)
                if not calls:
                    if response.stop_reason == "pause_turn":
                        continue
                    follow_up = await self.seams.on_final(self, response, run)
                    if follow_up is not None:
                        message = self._add_user_turn(follow_up, None)
                        transcript = self.transcript
                        if transcript is not None:
                            await transcript.record(message)
                        continue
                    return self.result(run, "success", result=response.text)
                if not await self.tool_calls.run(self, calls, response, run):
                    raise RunEnd("error_during_execution", [INTERRUPTED_TEXT], "aborted_tools")
                if run.stop is not None or run.deferred is not None:
                    return await self._ended_early(run, response)
        except RunEnd as end:
            return self.result(run, end.subtype, errors=end.errors, terminal=end.terminal_reason)

    def _add_user_turn(self, prompt: Content, origin: dict[str, Any] | None) -> UserMessage:
        """A user turn into the history; returns its message, for the caller to record in the
        transcript (not the stream). Synchronous: the caller awaits the transcript itself,
        without a coroutine more per prompt (and a user turn has no usage to note)."""
        self.history.append({"role": "user", "content": prompt})
        return UserMessage(
            content=prompt if isinstance(prompt, str) else _blocks_of(prompt),
            uuid=new_id(),
            session_id=self.session.session_id,
            origin=origin,
        )

    async def _ended_early(self, run: Run, response: Response) -> ResultMessage:
        """The result of a run ended by a deferral or a hook's ``continue_: False``: the last
        response's text, with the deferred call for the application to run."""
        if run.deferred is not None:
            run.stop_reason = "tool_deferred"
            result = self.result(run, "success", result=response.text, terminal="tool_deferred")
            return msgspec.structs.replace(result, deferred_tool_use=run.deferred)
        await self.inform("stopped by a hook" + (f": {run.stop}" if run.stop else ""))
        return self.result(run, "success", result=response.text, terminal="hook_stopped")

    # -- output -----------------------------------------------------------------------------------

    def record(self, message: Message) -> Awaitable[object]:
        """Append ``message`` to this agent's transcript (``await loop.record(message)``); note
        each response's usage for the context size.

        Not a coroutine of its own: it hands back the transcript's (or, without a transcript,
        an awaitable done at once), one coroutine less for every result an agent records."""
        if type(message) is AssistantMessage and message.usage is not None:
            self.context.observe(message.usage, len(self.history))
        transcript = self.transcript
        if transcript is None:
            return DONE
        return transcript.record(message)

    async def publish(self, message: Message, *, stream: bool = True) -> None:
        """Every message this agent produces: into its transcript, and (if ``stream``) out.

        (``record`` inlined. A tool call's result takes the same two steps, inlined in
        ``tool_calls``: that runs for every call.)"""
        if type(message) is AssistantMessage and message.usage is not None:
            self.context.observe(message.usage, len(self.history))
        transcript = self.transcript
        if transcript is not None:
            await transcript.record(message)
        if stream and self.streams:
            session = self.session
            nowait = session.emit_nowait  # no coroutine while the stream's buffer has room
            if nowait is None or not nowait(message):
                await session.emit(message)

    async def inform(self, text: str) -> None:
        """An ``informational`` system message (a hook's output, a fallback, a resume notice)."""
        await self.publish(SystemMessage(subtype="informational", data={"message": text}))

    def result(
        self,
        run: Run,
        subtype: str,
        *,
        result: str | None = None,
        errors: list[str] | None = None,
        terminal: str | None = None,
    ) -> ResultMessage:
        """The ``ResultMessage`` that ends ``run``."""
        session = self.session
        self.turns_total += run.turns
        usage = run.usage.as_dict()
        self.last_usage = usage
        ledger = session.supervisor.ledger  # ``subtree_cost``, without its two calls
        cost = ledger.total if self.is_main else ledger.subtree_spent(self.agent_id)
        # a loop, not a comprehension (a call of its own): there is one model, mostly
        model_usage: dict[str, dict[str, Any]] = {}
        for model, counts in session.model_usage.items():
            model_usage[model] = dict(counts)
        return ResultMessage(
            subtype=subtype,  # type: ignore[arg-type]
            duration_ms=int((session.now() - run.started) * 1000),
            duration_api_ms=int(run.api_seconds * 1000),
            is_error=subtype != "success",
            num_turns=run.turns,
            session_id=session.session_id,
            total_cost_usd=cost,
            usage=dict(usage),
            model_usage=model_usage,
            result=result,
            errors=errors,
            stop_reason=run.stop_reason,
            terminal_reason=terminal or ("completed" if subtype == "success" else None),
            permission_denials=[] if run.denials is None else list(run.denials),
            structured_output=run.structured_output,
            uuid=new_id(),
        )

    def subtree_cost(self) -> float:
        """What this agent and every agent below it have cost (the main agent: the tree)."""
        ledger = self.session.ledger  # (inlined in ``result``)
        return ledger.total if self.is_main else ledger.subtree_spent(self.agent_id)

    # -- one turn: the model's response (its tools: ``self.tool_calls.run``) --------------------

    async def _turn_model(self, run: Run) -> Response | None:
        """One model response (retried, charged and streamed); None if interrupted."""
        session = self.session
        now = session.now
        t0 = now()
        try:
            # only the main agent's turns can be interrupted (AgentClient)
            if session.client_interrupts and self.is_main:
                with self.interruptible() as scope:
                    response_and_trip = await self.model_call.with_retries(self)
                if scope.cancelled_caught:
                    return None
            else:
                response_and_trip = await self.model_call.with_retries(self)
        finally:
            run.api_seconds += now() - t0
        response, tripped = response_and_trip
        run.turns += 1
        run.stop_reason = response.stop_reason
        if not tripped:  # the response that reached the cap is left out of the run's usage
            run.usage = run.usage.plus(response.usage)
        self.history.append({"role": "assistant", "content": response.api_content})
        turns_by_agent = session.turns_by_agent
        turns_by_agent[self.agent_id] = turns_by_agent.get(self.agent_id, 0) + 1
        await self._emit_response(response)
        progress = self.links.progress
        # a background agent's progress, after a response that goes on to its tools: the one
        # that ends its run is followed at once by its notification, which says more
        if progress is not None and response.tool_uses:
            await progress(self, response)
        return response

    async def _emit_response(self, response: Response) -> None:
        """One assistant message per content block, as the Agent SDK streams them; a
        subagent's text is recorded but only streamed with ``forward_subagent_text``.

        The blocks are recorded together (one transcript write per response), before the first
        is streamed: each message is still in the transcript before anyone sees it."""
        session = self.session
        usage = response.usage
        model = response.model or self.model
        blocks = response.blocks
        message_id = response.message_id
        parent = self.parent_tool_use_id
        session_id = session.session_id
        if not blocks:
            return
        # a loop, not a comprehension: most responses have one or two blocks, and a
        # comprehension is a function call of its own
        messages: list[AssistantMessage] = []
        add = messages.append
        for block in blocks:
            add(
                AssistantMessage(
                    content=[block],
                    model=model,
                    message_id=message_id,
                    parent_tool_use_id=parent,
                    usage=usage,
                    uuid=new_id(),
                    session_id=session_id,
                )
            )
        self.context.observe(usage, len(self.history))
        if self.transcript is not None:
            await self.transcript.record_all(messages)
        if self.streams:
            forward_text = self.is_main or session.options.forward_subagent_text
            nowait = session.emit_nowait
            for block, message in zip(blocks, messages, strict=True):
                if (forward_text or type(block) is ToolUseBlock) and (
                    nowait is None or not nowait(message)
                ):
                    await session.emit(message)

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


def _blocks_of(content: list[dict[str, Any]]) -> list[ContentBlock]:
    """API-shaped user content as message blocks (text and tool results)."""
    return [msgspec.convert(c, ContentBlock) for c in content if c.get("type") in _BLOCK_TYPES]


_BLOCK_TYPES = frozenset({"text", "tool_result", "tool_use", "thinking"})


def check_user_blocks(content: list[Any], where: str) -> None:
    """Refuse API-shaped user content that ``_blocks_of`` could not make into message blocks:
    an item that is not a dict with a ``type``, or a block of a type the stream shows that does
    not convert. Checked where the content comes in (the caller's stream of prompts), since
    found in the loop it ends the whole session. ``where`` names the content in the error."""
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(kind, str):
            got = type(block).__name__ if not isinstance(block, dict) else "a dict without one"
            raise ValueError(f"{where}[{index}] must be a dict with a 'type', got {got}")
        if kind in _BLOCK_TYPES:
            try:
                msgspec.convert(block, ContentBlock)
            except msgspec.ValidationError as exc:
                raise ValueError(f"{where}[{index}] is not a valid {kind!r} block: {exc}") from None




class TurnScope:
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

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        try:
            return self.scope.__exit__(exc_type, exc, traceback)
        finally:
            self.loop._turn_scope = None
