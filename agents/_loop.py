"""The agent loop (SPEC §1): prompt → model → tools → results → repeat → result.

One :class:`AgentLoop` per agent — the main one and every subagent — each run inside an actor of
the ``runtime`` supervisor tree. :class:`Session` is what the agents of one ``query()`` or
``AgentClient`` share: the backend, the price table, the ledger, the output stream.

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
import random
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any

import attrs
import msgspec
import trio

from runtime import Actor, Ledger, Reservation, Supervisor, ToolScheduler

from . import _hookpoints
from ._response import Response, ResponseBuilder
from ._structured import structured_follow_up
from .backends.base import Backend, BackendError, ModelNotAvailable, ModelRequest
from .backends.pricing import PriceTable
from .context import ContextTracker, maybe_compact
from .messages import (
    AssistantMessage,
    ContentBlock,
    Message,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from .options import AgentOptions
from .tools.base import Tool, ToolContext, ToolInputError, ToolOutput, ToolRegistry, truncate

__all__ = ["AgentLoop", "Session"]

log = logging.getLogger("agents.loop")

_to_builtins = msgspec.to_builtins
_encoder = msgspec.json.Encoder()
BUDGET_LIMIT_TEXT = "Budget limit reached"
INTERRUPTED_TEXT = "Interrupted by user"
DEFAULT_MAX_TOKENS = 32_000


def new_id() -> str:
    """A random (version 4) UUID string, made in a third of ``str(uuid.uuid4())``'s time."""
    h = "%032x" % ((_getrandbits(128) & _UUID_MASK) | _UUID_BITS)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_getrandbits = random.getrandbits
_UUID_MASK = ~((0xF000 << 64) | (0xC000 << 48))
_UUID_BITS = (0x4000 << 64) | (0x8000 << 48)


@attrs.define(eq=False)
class Session:
    """What the agents of one session share. Built by ``agents._query``."""

    options: AgentOptions
    session_id: str
    cwd: str
    backend: Backend
    prices: PriceTable
    supervisor: Supervisor
    emit: Callable[[Message], Awaitable[None]]
    session_state: dict[str, Any] = attrs.Factory(dict)
    #: model id → token counts and cost, for the whole tree (SPEC L10)
    model_usage: dict[str, dict[str, Any]] = attrs.Factory(dict)
    #: agent id → model responses, for the whole tree
    turns_by_agent: dict[str, int] = attrs.Factory(dict)
    _unpriced: set[str] = attrs.Factory(set)
    #: where transcripts go (``agents._persist.Transcripts``); None records nothing (C1)
    transcripts: Any = None

    def summary(self) -> dict[str, Any]:
        """The tree's spend: total, cap, and cost and turns per agent (S6 attribution)."""
        ledger = self.ledger
        return {
            "total_cost_usd": ledger.total,
            "max_budget_usd": ledger.cap,
            "cost_by_agent": ledger.per_agent(),
            "turns_by_agent": dict(self.turns_by_agent),
        }

    @property
    def ledger(self) -> Ledger:
        return self.supervisor.ledger

    def charge(
        self,
        agent_id: str,
        model: str,
        usage: dict[str, Any],
        reservation: Reservation | None = None,
    ) -> tuple[float, bool]:
        """Charge one response to the tree's ledger; returns (cost, whether the cap is reached).

        Called exactly once per response, whichever messages later carry its usage (L10); with a
        ``reservation`` (hard cap, S8) the booked worst case is settled to the actual cost.
        """
        cost = self.prices.cost(model, usage)
        if cost is None:
            if model not in self._unpriced:
                self._unpriced.add(model)
                log.warning("no price for model %r: its cost counts as 0", model)
            cost = 0.0
        entry = self.model_usage.get(model)
        if entry is None:
            entry = self.model_usage[model] = {
                "input_tokens": 0,
                "output_tokens": 0,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
                "cost_usd": 0.0,
            }
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            entry[key] += usage.get(key) or 0
        entry["cost_usd"] += cost
        if reservation is not None:
            return cost, self.ledger.settle(reservation, cost)
        return cost, self.ledger.charge(agent_id, cost)

    def worst_case(self, model: str, input_tokens: int, max_tokens: int) -> float:
        """The most a request can cost (S8): every input token at the dearest input-side price
        (cache writes included) and ``max_tokens`` of output. Unknown models cost 0."""
        info = self.prices.get(model)
        if info is None:
            return 0.0
        tiers = [info] if info.long_context is None else [info, info.long_context]
        per_in = max(max(t.input, t.cache_write_5m, t.cache_write_1h, t.cache_read) for t in tiers)
        per_out = max(t.output for t in tiers)
        return (input_tokens * per_in + max_tokens * per_out) / 1_000_000


_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


@attrs.define(eq=False)
class _Run:
    """Bookkeeping of one prompt's loop, reported in its ResultMessage."""

    started: float
    turns: int = 0
    api_seconds: float = 0.0
    usage: dict[str, int] = attrs.Factory(lambda: dict.fromkeys(_USAGE_KEYS, 0))
    stop_reason: str | None = None
    denials: list[dict[str, Any]] = attrs.Factory(list)
    last_text: str = ""
    #: set when a hook said ``continue_: False``: the run ends after the current step
    stop: str | None = None
    #: Stop hooks' blocks so far (H4: at most 8 in a row), and a PreToolUse deferral
    stop_blocks: int = 0
    deferred: dict[str, Any] | None = None
    #: the call whose denial asked to end the turn (P4 ``interrupt=True``)
    interrupt_call: str | None = None
    #: the validated final answer, and how many answers failed validation so far (C5)
    structured_output: Any = None
    structured_failures: int = 0


class _EndRun(Exception):
    """Ends the current prompt's loop with an error result (internal control flow)."""

    def __init__(self, subtype: str, errors: list[str], terminal_reason: str) -> None:
        super().__init__(errors[0])
        self.subtype = subtype
        self.errors = errors
        self.terminal_reason = terminal_reason


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
    history: list[dict[str, Any]] = attrs.Factory(list)
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
    turns_total: int = 0
    last_usage: dict[str, int] = attrs.Factory(dict)
    #: called after each of this agent's responses (background subagents report progress)
    progress: Callable[[AgentLoop, Response], Awaitable[None]] | None = None
    #: this agent's transcript (``agents.sessions.Transcript``); None records nothing (C1)
    transcript: Any = None
    #: the context size as of the last response (C4)
    context: ContextTracker = attrs.Factory(ContextTracker)
    _scheduler: ToolScheduler = attrs.field(init=False)
    _turn_scope: trio.CancelScope | None = attrs.field(default=None, init=False)
    _phase: str = attrs.field(default="idle", init=False)
    _partial: bool = attrs.field(default=False, init=False)
    _reserve: bool = attrs.field(default=False, init=False)
    _est_count: int = attrs.field(default=0, init=False)
    _est_bytes: int = attrs.field(default=0, init=False)

    def __attrs_post_init__(self) -> None:
        self._scheduler = ToolScheduler(self.session.options.max_tool_concurrency)
        self._partial = self.session.options.include_partial_messages and self.agent_id == "main"
        self._reserve = self.session.options.budget_mode == "reserve" and (
            self.session.ledger.cap is not None
        )
        self._est_count = 0
        self._est_bytes = 0

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
            from ._commands import run_command  # /clear, /compact (C3, C4)

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
                        await self._refuse_calls(calls, BUDGET_LIMIT_TEXT)
                    raise self._budget_end()
                if not calls:
                    if response.stop_reason == "pause_turn":
                        continue
                    follow_up = await self._on_final(response, run)
                    if follow_up is not None:
                        await self._add_user_turn(follow_up)
                        continue
                    run.last_text = response.text
                    return self._result(run, "success", result=response.text)
                if not await self._turn_tools(calls, response, run):
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
            raise self._budget_end()

    def _budget_end(self) -> _EndRun:
        cap = self.session.ledger.cap
        return _EndRun("error_max_budget_usd", [f"Reached maximum budget (${cap:g})"], "budget")

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
        """Every message this agent produces: into its transcript, and (if ``stream``) out."""
        await self._record(message)
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

    # -- one turn: the model ----------------------------------------------------------------------

    def _request(self) -> ModelRequest:
        return ModelRequest(
            model=self.model,
            messages=list(self.history),
            max_tokens=self.max_tokens,
            system=self.system,
            tools=self.tools.definitions(),
            thinking=self.thinking,
            effort=self.effort,
            output_format=self.session.options.output_format if self.is_main else None,
            agent_id=self.agent_id,
            agent_type=self.agent_type,
        )

    async def _turn_model(self, run: _Run) -> Response | None:
        """One model response, retried per SPEC L8, charged and streamed; None if interrupted."""
        with trio.CancelScope() as scope:
            self._turn_scope = scope
            self._phase = "model"
            try:
                t0 = trio.current_time()
                try:
                    response_and_trip = await self._call_with_retries()
                finally:
                    run.api_seconds += trio.current_time() - t0
            finally:
                self._turn_scope = None
                self._phase = "idle"
        if scope.cancelled_caught:
            return None
        response, tripped = response_and_trip
        run.turns += 1
        run.stop_reason = response.stop_reason
        if not tripped:  # the crossing response is left out of `usage` (S6)
            for key in _USAGE_KEYS:
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
        forward_text = self.is_main or self.session.options.forward_subagent_text
        usage = response.usage
        for block in response.blocks:
            await self._publish(
                AssistantMessage(
                    content=[block],
                    model=response.model or self.model,
                    message_id=response.message_id,
                    parent_tool_use_id=self.parent_tool_use_id,
                    usage=usage,
                    uuid=new_id(),
                    session_id=self.session.session_id,
                ),
                stream=forward_text or isinstance(block, ToolUseBlock),
            )

    async def _call_with_retries(self) -> tuple[Response, bool]:
        backend = self.session.backend
        max_retries: int = getattr(backend, "max_retries", 10)
        base: float = getattr(backend, "retry_base_delay", 0.5)
        cap: float = getattr(backend, "retry_max_delay", 32.0)
        fallback = self.session.options.fallback_model
        attempt = 0
        while True:
            try:
                return await self._charged_response(self._request())
            except ModelNotAvailable as exc:
                if fallback and self.model != fallback:
                    log.warning("%s; falling back to %s", exc, fallback)
                    await self._publish(
                        SystemMessage(
                            subtype="informational",
                            data={"message": f"{exc}; using fallback model {fallback}"},
                        )
                    )
                    self.model = fallback
                    continue
                raise _EndRun("error_during_execution", [str(exc)], "api_error") from None
            except BackendError as exc:
                if not exc.retryable or attempt >= max_retries:
                    message = f"{exc} (after {attempt} retries)" if exc.retryable else str(exc)
                    raise _EndRun("error_during_execution", [message], "api_error") from None
                attempt += 1
                delay = min(cap, base * 2 ** (attempt - 1)) * (1 - 0.25 * random.random())
                if exc.retry_after is not None:
                    delay = max(delay, min(exc.retry_after, cap))
                await self._publish(
                    SystemMessage(
                        subtype="api_retry",
                        data={
                            "attempt": attempt,
                            "max_retries": max_retries,
                            "error": str(exc),
                            "error_status": exc.status,
                            "delay_s": delay,
                        },
                    )
                )
                await trio.sleep(delay)
            except (msgspec.ValidationError, KeyError, TypeError) as exc:
                # A malformed event from the backend (SPEC E2): an API error, never a crash.
                log.exception("malformed model response")
                raise _EndRun(
                    "error_during_execution", [f"malformed model response: {exc}"], "api_error"
                ) from None

    async def _charged_response(self, request: ModelRequest) -> tuple[Response, bool]:
        """Stream one attempt and charge it: the whole response once complete, or what it used
        (its usage so far) when it is cut, fails or is cancelled (S6, S9). In ``reserve`` budget
        mode the request starts only once its worst case is booked (S8)."""
        session = self.session
        reservation = None
        if self._reserve:
            worst = session.worst_case(
                request.model, self._input_estimate(request), request.max_tokens
            )
            reservation = session.ledger.try_reserve(self.agent_id, worst)
            if reservation is None:
                raise self._budget_end()
        builder = ResponseBuilder()
        try:
            response = await self._stream_once(request, builder)
        except BaseException:
            partial = builder.response
            if partial.usage or reservation is not None:
                session.charge(
                    self.agent_id, partial.model or request.model, partial.usage, reservation
                )
            raise
        _, tripped = session.charge(
            self.agent_id, response.model or request.model, response.usage, reservation
        )
        return response, tripped

    def _input_estimate(self, request: ModelRequest) -> int:
        """An upper bound on the request's input tokens: its JSON size in bytes plus a margin per
        message (a token is at least one byte). Kept incrementally: the history only grows,
        except when compaction replaces it (then it is measured again)."""
        history = self.history
        if len(history) < self._est_count:
            self._est_count, self._est_bytes = 0, 0
        encode = _encoder.encode
        for entry in history[self._est_count :]:
            self._est_bytes += len(encode(entry)) + 16
        self._est_count = len(history)
        fixed = self.state.get("_fixed_bytes")
        if fixed is None:
            fixed = len(encode(request.system)) + len(encode(request.tools)) + 256
            self.state["_fixed_bytes"] = fixed
        return int(fixed + self._est_bytes)

    async def _stream_once(
        self, request: ModelRequest, builder: ResponseBuilder | None = None
    ) -> Response:
        builder = builder or ResponseBuilder()
        feed = builder.feed
        async with aclosing(self.session.backend.stream(request)) as events:  # type: ignore[type-var]
            if self._partial:
                emit = self.session.emit
                sid = self.session.session_id
                async for event in events:
                    await emit(
                        StreamEvent(uuid=new_id(), session_id=sid, event=_to_builtins(event))
                    )
                    feed(event)
            else:
                async for event in events:
                    feed(event)
        return builder.finish()

    # -- one turn: the tools ----------------------------------------------------------------------

    async def _refuse_calls(self, calls: list[ToolUseBlock], text: str) -> None:
        """Answer every call with an error result, so the history stays resumable."""
        blocks = []
        for call in calls:
            block = ToolResultBlock(tool_use_id=call.id, content=text, is_error=True)
            blocks.append(block)
            await self._emit_result(block, None)
        self._append_results(blocks)

    def _append_results(self, blocks: list[ToolResultBlock]) -> None:
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
        self.history.append({"role": "user", "content": content})

    async def _emit_result(self, block: ToolResultBlock, data: dict[str, Any] | None) -> None:
        await self._publish(
            UserMessage(
                content=[block],
                parent_tool_use_id=self.parent_tool_use_id,
                tool_use_result=data,
                uuid=new_id(),
                session_id=self.session.session_id,
            )
        )

    def _read_only(self, call: ToolUseBlock) -> bool:
        tool = self.tools.get(call.name)
        return tool is not None and tool.read_only

    async def _turn_tools(self, calls: list[ToolUseBlock], response: Response, run: _Run) -> bool:
        """Run the calls (T5), emit each result as it finishes, append all in call order (T6).

        Returns False when the turn was interrupted; finished calls keep their results and the
        rest are answered as interrupted.
        """
        results: dict[str, ToolResultBlock] = {}
        bad = response.bad_inputs

        async def execute(call: ToolUseBlock) -> ToolResultBlock:
            return await self._run_call(call, bad.get(call.id), run)

        async def done(_index: int, call: ToolUseBlock, block: ToolResultBlock) -> None:
            results[call.id] = block
            if call.id == run.interrupt_call and self._turn_scope is not None:
                # only now: the denial's own result is kept, the other calls are interrupted
                self._turn_scope.cancel(reason="permission denied with interrupt")

        with trio.CancelScope() as scope:
            self._turn_scope = scope
            self._phase = "tools"
            try:
                await self._scheduler.run(
                    calls, execute, read_only=self._read_only, on_complete=done
                )
            finally:
                self._turn_scope = None
                self._phase = "idle"
        if scope.cancelled_caught:
            blocks = []
            for call in calls:
                block = results.get(call.id)
                if block is None:
                    block = ToolResultBlock(
                        tool_use_id=call.id, content=INTERRUPTED_TEXT, is_error=True
                    )
                    await self._emit_result(block, None)
                blocks.append(block)
            self._append_results(blocks)
            return False
        self._append_results([results[c.id] for c in calls])
        return True

    async def _run_call(
        self, call: ToolUseBlock, bad_input: str | None, run: _Run
    ) -> ToolResultBlock:
        """One tool call → its result block (emitted here, as it finishes). Never raises (T4)."""
        output, data = await self._execute(call, bad_input, run)
        block = ToolResultBlock(
            tool_use_id=call.id, content=output.content, is_error=True if output.is_error else None
        )
        await self._emit_result(block, data)
        return block

    async def _execute(
        self, call: ToolUseBlock, bad_input: str | None, run: _Run
    ) -> tuple[ToolOutput, dict[str, Any] | None]:
        tool = self.tools.get(call.name)
        if tool is None:
            available = ", ".join(self.tools.names()) or "none"
            return ToolOutput.error(
                f"No such tool available: {call.name} (available: {available})"
            ), None
        if bad_input is not None:
            return ToolOutput.error(f"invalid input for {call.name}: {bad_input}"), None
        tool_input = call.input
        context: tuple[str, ...] = ()  # PreToolUse hooks' additionalContext
        if self.gate is not None:
            verdict = await self.gate.check(self, call, tool)
            context = verdict.additional_context
            if verdict.stop is not None:
                run.stop = verdict.stop
            if verdict.deferred and _hookpoints.defer(self, call, verdict.input, run):
                return _hookpoints.with_context(ToolOutput.error(verdict.denied), context), None
            if verdict.denied is not None:
                run.denials.append(
                    {"tool_name": call.name, "tool_use_id": call.id, "tool_input": call.input}
                )
                await self._publish(
                    SystemMessage(
                        subtype="permission_denied",
                        data={
                            "tool_name": call.name,
                            "tool_use_id": call.id,
                            "reason": verdict.denied,
                            "agent_id": self.agent_id,
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
            return await after_tool(self, call, tool_input, failed, context, run), None
        ctx = ToolContext(
            cwd=self.session.cwd,
            agent_id=self.agent_id,
            tool_use_id=call.id,
            session_id=self.session.session_id,
            state=self.state,
            session_state=self.session.session_state,
            agent=self,
            nursery=self.nursery,
            cleanup=self.cleanup,
            backend=self.session.backend,
            model=self.model,
            complete=self.complete,
        )
        try:
            output = await tool.handler(parsed, ctx)
        except Exception as exc:
            log.info("tool %s raised", call.name, exc_info=True)
            failed = ToolOutput.error(
                f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            )
            return await after_tool(self, call, tool_input, failed, context, run), None
        output = await after_tool(self, call, tool_input, _capped(tool, output), context, run)
        return output, output.data

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
        response, _ = await self._charged_response(request)
        return response.text


def _capped(tool: Tool, output: ToolOutput) -> ToolOutput:
    cap = tool.output_cap
    if cap is None:
        return output
    content = output.content
    if isinstance(content, str):
        if len(content) <= cap:
            return output
        return attrs.evolve(output, content=truncate(content, cap))
    total = sum(len(c.get("text", "")) for c in content if c.get("type") == "text")
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


def _blocks_of(content: list[dict[str, Any]]) -> list[Any]:
    """API-shaped user content as message blocks (text and tool results)."""
    return [msgspec.convert(c, ContentBlock) for c in content if c.get("type") in _BLOCK_TYPES]


_BLOCK_TYPES = frozenset({"text", "tool_result", "tool_use", "thinking"})
