"""``query()`` and ``AgentClient``: sessions as a tree of actors.

A session is a ``runtime`` supervisor whose root actor is the main agent. Its mailbox takes prompts
(streaming input), task notifications from background subagents, and wake-ups; its
:class:`~agents._loop.agent.AgentLoop` emits messages into one bounded output channel that the
caller reads. ``AgentClient`` owns the session in a nursery of the caller's (structured
concurrency).

``query()`` is an async generator, and an async generator cannot safely own a nursery across its
``yield``s (the caller may abandon it; Trio would then close it from another task). So the
session runs in a Trio *system task* bound to the generator: the generator's ``finally`` — run
when the caller finishes, breaks out, is cancelled, or drops the generator — cancels the
session's scope and waits, shielded, until every actor, tool and process of it has ended.
Nothing outlives the query.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import logging
from collections.abc import AsyncIterable, AsyncIterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

import attrs
import msgspec
import trio

from runtime import Actor, Supervisor, SupervisorStatistics, open_supervisor

from .._features import hookpoints
from .._loop.agent import AgentLoop
from .._loop.run import new_id
from .._loop.session import Session
from .._tree.handles import UNBOUNDED_MAILBOX, AgentHandle, spawn_from_code
from .._tree.serve import INPUT_END, InputEnd, Prompt, recording_results, serve
from ..backends.base import Backend
from ..hooks import HookRunner
from ..messages import Message, ResultError, ResultMessage, SystemMessage
from ..options import AgentOptions
from ..sessions.history import release
from ..tools.base import SESSION_ENV
from .claude_md import claude_md_blocks
from .output import Messages, MessageStream, drain
from .persist import attach_main, open_session_store, start_session
from .prompts import check_prompt, prompt_item
from .setup import (
    add_source_tools,
    build_registry,
    check_supported,
    default_backend,
    init_message,
    main_loop,
    session_cwd,
    system_blocks,
)

if TYPE_CHECKING:
    from .sources import SessionSources

__all__ = ["AgentClient", "query"]

#: a history this long or shorter is freed on the event loop at the session's end
END_INLINE_MESSAGES = 4_000

log = logging.getLogger("agents.query")

OUTPUT_BUFFER = 256
MAILBOX_CAPACITY = 64


@attrs.define(eq=False)
class SessionHandle:
    """What a running session exposes to ``query()`` / ``AgentClient``."""

    session: Session
    main: AgentLoop
    supervisor: Supervisor
    sources: SessionSources
    actor: Actor = attrs.field(default=None)

    async def send(self, item: Prompt | InputEnd) -> None:
        if isinstance(item, Prompt):  # a custom slash command becomes its file's text
            content = self.sources.expand(item.content)
            if content is not item.content:
                item = msgspec.structs.replace(item, content=content)
        await self.actor.mailbox.send(item)


@attrs.define(eq=False)
class _Starter:
    """Runs one session, writing its messages to ``output`` and closing it at the end.

    ``prompt``, when given, is a single-shot session's whole input: the main agent finds it (and
    the end of input) in its mailbox as it starts, so no feeding task and no scheduling round
    trips stand between the ``init`` message and the first model request.
    """

    options: AgentOptions
    output: MessageStream[Message]
    prompt: str | None = None
    #: whether Python code may spawn agents under the main one (``AgentClient.spawn``)
    spawns_from_code: bool = False
    #: whether the main agent's mailbox is fed by the caller directly (``AgentClient.query``):
    #: then it has no bound, so queuing a prompt never waits on the agent's progress
    unbounded_input: bool = False
    #: whether the caller can interrupt the main agent's turns (``AgentClient.interrupt``)
    interruptible: bool = False

    async def run(
        self, *, task_status: trio.TaskStatus[SessionHandle] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run a whole session; ``task_status.started`` hands out its handle.

        The output is closed (without a checkpoint: the session is already over) once every
        actor of the session has ended, so a reader that sees ``EndOfChannel`` knows that."""
        try:
            await self._run(task_status)
        finally:
            self.output.close()

    async def _run(self, task_status: trio.TaskStatus[SessionHandle]) -> None:
        check_supported(self.options)
        if self.options.backend is not None:
            await self._session(self.options.backend, task_status)
            return
        backend = default_backend()  # ours, so ours to close: no HTTP connection outlives us
        try:
            await self._session(backend, task_status)
        finally:
            aclose = getattr(backend, "aclose", None)
            if aclose is not None:
                with trio.CancelScope(shield=True), trio.move_on_after(5):
                    await aclose()

    async def _session(self, backend: Backend, task_status: trio.TaskStatus[SessionHandle]) -> None:
        from .sources import open_session_sources  # late: MCP and settings code

        cwd = session_cwd(self.options.cwd)
        async with open_session_sources(self.options, cwd) as sources:
            # settings files merge in below the options' own values; servers live as long
            options = sources.apply(self.options)
            await self._with_sources(options, sources, cwd, backend, task_status)

    async def _with_sources(
        self,
        options: AgentOptions,
        sources: SessionSources,
        cwd: str,
        backend: Backend,
        task_status: trio.TaskStatus[SessionHandle],
    ) -> None:
        ledger = options.new_ledger()
        async with (
            open_session_store(options) as store,
            open_supervisor(
                ledger=ledger,
                max_depth=options.max_subagent_depth,
                max_concurrent=options.max_concurrent_subagents,
            ) as supervisor,
        ):
            setup = await start_session(options, store, cwd, new_id())
            session = Session(
                options=options,
                session_id=setup.session_id,
                cwd=cwd,
                backend=backend,
                prices=options.price_table(),
                supervisor=supervisor,
                # most messages fit in the buffer: no scheduling round trip of a full ``put``
                # (nor a coroutine); only a full buffer (a slow reader) waits: backpressure
                emit=self.output.send,
                # ``emit`` without a coroutine: False (nothing sent) when the buffer is full
                emit_nowait=self.output.put_nowait,
                emit_notice=self.output.put_notice,
                hooks=HookRunner(options.hooks) if options.hooks else None,
                client_interrupts=self.interruptible,
                now=trio.lowlevel.current_clock().current_time,
                # only a can_use_tool callback or a hook can deny a call with interrupt=True
                denials_interrupt=options.can_use_tool is not None or bool(options.hooks),
                # the shells' variables: the options' env over the settings files'
                session_state={SESSION_ENV: options.env} if options.env else {},
            )
            session.sources = sources  # subagents' own servers and skills
            sources.bind(session)  # prompt hooks ask its model
            registry = build_registry(options)
            add_source_tools(registry, options, sources)
            system = system_blocks(options) + await claude_md_blocks(cwd, options.setting_sources)
            system += sources.system_blocks()
            main = main_loop(options, session, setup, registry, system)
            await self.output.send(init_message(session, main, sources.mcp_status(options)))
            await attach_main(session, main, setup)  # the transcripts, resume notices
            await hookpoints.open_session(main)  # SessionStart now, SessionEnd at the end
            handle = SessionHandle(
                session=session, main=main, supervisor=supervisor, sources=sources
            )

            async def behaviour(actor: Actor) -> None:
                if self.prompt is not None:  # fits: a fresh mailbox holds MAILBOX_CAPACITY items
                    actor.mailbox.send_nowait(Prompt(sources.expand(self.prompt)))
                    actor.mailbox.send_nowait(INPUT_END)
                await serve(main, actor, recording_results(main, self.output.send))
                # trailing, after every result: what the whole tree spent, per agent
                summary = SystemMessage(subtype="session_summary", data=session.summary())
                await self.output.send(summary)

            # The main agent runs in this task (the session's): see ``Supervisor.root``.
            # A main agent that can have no children (no Agent tool, no AgentClient.spawn) runs
            # as a leaf actor, without a nursery for them.
            leaf = registry.get("Agent") is None and not self.spawns_from_code
            main_actor = supervisor.root(
                "main",
                address="main",
                mailbox_capacity=UNBOUNDED_MAILBOX if self.unbounded_input else MAILBOX_CAPACITY,
                leaf=leaf,
            )
            handle.actor = main_actor
            task_status.started(handle)
            await supervisor.run(main_actor, behaviour)
            # The session's end. A long history is about ten objects a message (a million for a
            # 100 000-message resume): freed on the event loop that is half a second, so a long
            # list goes to a worker thread, a slice at a time (the restored copy is dropped first:
            # it only shares the messages). Up to END_INLINE_MESSAGES (a few milliseconds) it is
            # freed here: a thread hop is not free either (and under a test's autojump clock it
            # lets virtual time run on to the next deadline).
            setup.history.clear()
            await release(main.history.take("end"), inline_up_to=END_INLINE_MESSAGES)


async def _send_prompts(handle: SessionHandle, prompt: str | AsyncIterable[Any]) -> None:
    """Queue a prompt, or each prompt of a stream, in the main agent's mailbox.

    A stream left early (an item refused, a cancellation) is closed here, as ``aclosing``
    would: its ``finally`` runs now, not when the collector finds it."""
    if isinstance(prompt, str):
        await handle.send(Prompt(prompt))
        return
    items = aiter(prompt)
    try:
        async for item in items:
            await handle.send(prompt_item(item))
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()


async def _feed(handle: SessionHandle, prompt: str | AsyncIterable[Any]) -> None:
    """A single-shot query's input: its prompts, then the end of input."""
    await _send_prompts(handle, prompt)
    await handle.send(INPUT_END)


def _unwrap(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def query(
    *, prompt: str | AsyncIterable[Any], options: AgentOptions | None = None
) -> AsyncIterator[Message]:
    """Run the agent loop on ``prompt`` and yield its messages.

    With a string prompt the query is single-shot: it ends when the main agent has answered and no
    background subagent of it is running, and it raises :class:`ResultError` after yielding an
    error result. With an async iterable of prompts it is a streaming session that
    answers each in turn and does not raise on error results::

        async for message in query(prompt="What files are here?"):
            print(message)
    """
    if not trio.lowlevel.in_trio_task():  # under asyncio: say where the asyncio version is
        raise outside_trio_error("query")
    options = options or AgentOptions()
    check_prompt(prompt)
    stream: MessageStream[Message] = MessageStream(OUTPUT_BUFFER)
    scope = trio.CancelScope()
    finished = trio.Event()
    failure: list[BaseException] = []

    async def session_task() -> None:
        try:
            with scope:
                if isinstance(prompt, str):
                    # The session runs in this very task: each task or nursery between the
                    # caller and the main agent would cost a scheduling round trip at start and
                    # another at the end.
                    await _Starter(options, stream, prompt).run()
                else:
                    async with trio.open_nursery() as nursery:
                        handle = await nursery.start(_Starter(options, stream).run)
                        nursery.start_soon(_feed, handle, prompt)
        except BaseException as exc:
            # Handed to the caller, which re-raises it: whatever the user's code raised
            # (KeyboardInterrupt and SystemExit too) — a system task must not raise it, Trio
            # would crash. Only a cancellation of this task itself stays here.
            _, rest = (
                exc.split(trio.Cancelled)
                if isinstance(exc, BaseExceptionGroup)
                else ((exc, None) if isinstance(exc, trio.Cancelled) else (None, exc))
            )
            if rest is None:
                raise
            failure.append(_unwrap(rest))
        finally:
            finished.set()

    trio.lowlevel.spawn_system_task(session_task, context=contextvars.copy_context())
    last_result: ResultMessage | None = None
    try:
        # A reader that leaves early cancels the session (below) before it can write again.
        pop = stream.pop
        while True:
            message = pop()  # no checkpoint while messages are queued
            if message is None:
                try:
                    message = await stream.get()
                except trio.EndOfChannel:
                    break
            if type(message) is ResultMessage:
                last_result = message
            yield message
        # A single-shot session has ended by the time its output closes; the checks skip the
        # checkpoint of waiting on an Event that is already set.
        if not finished.is_set():
            await finished.wait()
        if failure:
            raise failure[0]
    finally:
        if not finished.is_set():
            scope.cancel()
            with trio.CancelScope(shield=True):
                await finished.wait()
    if isinstance(prompt, str) and last_result is not None and last_result.is_error:
        raise ResultError(
            last_result.subtype, last_result.errors or [], last_result.session_id, last_result
        )


class AgentClient:
    """A streaming-input session: send prompts while it works, read messages as they come.

    ::

        async with AgentClient(AgentOptions(backend=backend)) as client:
            await client.query("first question")
            async for message in client.receive_response():
                print(message)

    Prompts sent while a turn runs are queued and each runs as its own turn with its own
    ``max_turns`` allowance; error results do not end the client.
    """

    def __init__(self, options: AgentOptions | None = None) -> None:
        self.options = options or AgentOptions()
        self._state = _State.NEW
        self._handle: SessionHandle | None = None
        self._nursery_cm: contextlib.AbstractAsyncContextManager[trio.Nursery] | None = None
        self._output: MessageStream[Message] | None = None
        self._spawned: list[AgentHandle] = []

    async def __aenter__(self) -> AgentClient:
        if not trio.lowlevel.in_trio_task():  # under asyncio: say where the asyncio version is
            raise outside_trio_error("AgentClient")
        if self._state is _State.OPEN:
            # a second session over the first would leave the first's nursery open
            raise RuntimeError(
                "AgentClient is already open: one 'async with' at a time (another session "
                "at once needs an AgentClient of its own)"
            )
        self._state = _State.OPEN
        self._handle = None
        self._spawned = []
        self._output = MessageStream(OUTPUT_BUFFER)
        self._nursery_cm = trio.open_nursery()
        nursery = await self._nursery_cm.__aenter__()
        try:
            starter = _Starter(
                self.options,
                self._output,
                spawns_from_code=True,
                unbounded_input=True,
                interruptible=True,
            )
            self._handle = await nursery.start(starter.run)
        except BaseException as exc:  # the session could not start: its error, as itself
            self._state = _State.CLOSED
            await _exit_unwrapped(self._nursery_cm, exc)
            raise
        self._nursery = nursery
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        """End the session: after a normal block, let it finish the queued prompts (unread output
        and unread results of spawned agents are dropped); after an error, cancel it. Whatever
        raises meanwhile — an outer cancellation, the session failing — the nursery is closed,
        and an exception that is one error (the body's, a tool's, a hook's) comes out as itself,
        not wrapped in an exception group."""
        if self._state is not _State.OPEN or self._nursery_cm is None:
            raise RuntimeError(_NOT_OPEN)
        self._state = _State.CLOSED  # from now on, commands say so (the exit has begun)
        nursery = self._nursery
        handle = self._handle
        try:
            if handle is not None and exc is None:
                await self._end_input(handle, nursery)
            else:
                nursery.cancel_scope.cancel()
        except BaseException as error:  # the exit's own awaits: cancelled, or the session failed
            nursery.cancel_scope.cancel()
            if exc is None:
                exc = error
        return await _exit_unwrapped(self._nursery_cm, exc)

    async def _end_input(self, handle: SessionHandle, nursery: trio.Nursery) -> None:
        for spawned in self._spawned:
            await spawned.close()
        with contextlib.suppress(trio.ClosedResourceError):
            await handle.send(INPUT_END)
        # drain what is left so the session is never blocked on a full output channel
        assert self._output is not None
        nursery.start_soon(drain, self._output)

    def _require(self) -> SessionHandle:
        """The open session's handle, for a command: a client not open, or closed, says so
        (a closed session's mailbox and agents are gone: a command would fail deep inside,
        or do nothing)."""
        if self._state is _State.CLOSED:
            raise RuntimeError(_CLOSED)
        if self._handle is None:
            raise RuntimeError(_NOT_OPEN)
        return self._handle

    def _last(self) -> SessionHandle:
        """The session's handle, open or ended: what it was stays readable after the block."""
        if self._handle is None:
            raise RuntimeError(_NOT_OPEN)
        return self._handle

    @property
    def session_id(self) -> str:
        return self._last().session.session_id

    async def query(self, prompt: str | AsyncIterable[Any], session_id: str = "default") -> None:
        """Queue a prompt (or a stream of them) for the main agent."""
        check_prompt(prompt)
        await _send_prompts(self._require(), prompt)

    def receive_messages(self) -> AsyncIterator[Message]:
        """Every message of the session, as it comes (until the client closes)."""
        self._require()
        assert self._output is not None
        return Messages(self._output, until_result=False)

    def receive_response(self) -> AsyncIterator[Message]:
        """Messages up to and including the next ``ResultMessage``."""
        self._require()
        assert self._output is not None
        return Messages(self._output, until_result=True)

    async def interrupt(self) -> None:
        """Cancel the running turn: its tools are cancelled, its result says it was aborted."""
        self._require().main.interrupt()
        await trio.lowlevel.checkpoint()

    async def set_permission_mode(self, mode: str) -> None:
        """Change the permission mode; it applies from the next tool call."""
        gate = self._require().main.gate
        if gate is None:
            raise RuntimeError("this session has no permission gate")
        gate.set_mode(mode)
        await trio.lowlevel.checkpoint()

    async def set_model(self, model: str | None = None) -> None:
        """Switch the main agent's model from its next request."""
        from ..options import resolve_model

        handle = self._require()
        if model is not None and not isinstance(model, str):
            raise ValueError(f"model must be a string, got {model!r}")
        resolved = resolve_model(model or self.options.resolved_model)
        handle.session.options.check_priced(resolved)  # under a budget, a price is needed
        handle.main.use_model(resolved)
        await trio.lowlevel.checkpoint()

    async def stop_task(self, task_id: str) -> None:
        """Cancel a running subagent (and its subtree) by its agent id."""
        handle = self._require()
        try:
            actor = handle.supervisor.actor(task_id)
        except KeyError:
            raise ValueError(f"no running task {task_id!r}") from None
        if actor is handle.actor:  # cancelling it would end the session, silently
            raise ValueError(
                f"{task_id!r} is the main agent, not a task: interrupt() cancels its turn"
            )
        actor.cancel(reason="stop_task")
        await trio.lowlevel.checkpoint()

    async def mcp_server_status(self) -> list[dict[str, Any]]:
        """Each MCP server of the session: ``{"name", "status", "error"?, "serverInfo"?,
        "tools"?}``, ``status`` one of connected, failed, pending, disabled."""
        handle = self._require()
        await trio.lowlevel.checkpoint()
        return handle.sources.server_status(handle.session.options)

    async def reconnect_mcp_server(self, name: str) -> dict[str, Any]:
        """Close an external server's connection (stopping its process) and connect it again;
        tools it offers now are added to the main agent's. Returns its new status."""
        handle = self._require()
        status = await handle.sources.reconnect(name, handle.session.options)
        self._refresh_tools(handle, name)
        return status

    async def toggle_mcp_server(self, name: str, enabled: bool) -> dict[str, Any]:
        """Disable an external server (its connection closes; its tools answer with an error
        naming it) or enable it again. Returns its new status."""
        handle = self._require()
        status = await handle.sources.toggle(name, enabled, handle.session.options)
        if enabled:
            self._refresh_tools(handle, name)
        return status

    def _refresh_tools(self, handle: SessionHandle, name: str) -> None:
        from .gate import rules_for

        rules = rules_for(handle.session.options)
        hidden = rules.removes_tool if rules.deny else None
        handle.sources.refresh_tools(handle.main.tools, name, hidden)

    def statistics(self) -> SupervisorStatistics:
        """The supervisor's statistics (live actors, depth, mailbox peaks)."""
        return self._last().supervisor.statistics()

    def spend(self) -> dict[str, Any]:
        """The tree's spend so far: total, cap, and cost and turns per agent."""
        return self._last().session.summary()

    async def spawn(
        self, agent_type: str, *, model: str | None = None, background: bool = True
    ) -> AgentHandle:
        """Spawn an agent of a defined type from code, under the main agent, on the session's
        supervisor and ledger; feed it prompts through its mailbox (:class:`AgentHandle`).

        ``background=True`` (the default) lets a tripped budget cancel it like a model-spawned
        background agent; raises ``runtime.SpawnRefused`` when a limit forbids the spawn."""
        handle = self._require()
        spawned = await spawn_from_code(handle.main, agent_type, model=model, background=background)
        self._spawned.append(spawned)
        return spawned


class _State(enum.Enum):
    """Where an :class:`AgentClient` is: never opened, open (from ``__aenter__`` to the start of
    ``__aexit__``), or closed (it may be opened again, as a new session)."""

    NEW = "new"
    OPEN = "open"
    CLOSED = "closed"


_NOT_OPEN = "AgentClient is not open: use 'async with AgentClient(...) as client'"
_CLOSED = "AgentClient is closed: its session has ended; open it again with 'async with client'"


async def _exit_unwrapped(
    nursery_cm: contextlib.AbstractAsyncContextManager[trio.Nursery], exc: BaseException | None
) -> bool | None:
    """Exit ``nursery_cm`` with ``exc``; a group of one exception is raised as that exception
    (the caller's, a tool's, a hook's: the user sees their own error, not a wrapper)."""
    try:
        return await nursery_cm.__aexit__(
            type(exc) if exc is not None else None,
            exc,
            exc.__traceback__ if exc is not None else None,
        )
    except BaseExceptionGroup as group:
        inner = _unwrap(group)
        if inner is group:
            raise
        raise inner from None


def outside_trio_error(name: str) -> RuntimeError:
    """``agents.<name>`` was used with no Trio task running (under asyncio, or no loop)."""
    call = f"{name}()" if name[0].islower() else name
    return RuntimeError(
        f"agents.{call} must run inside Trio (trio.run); from asyncio (asyncio.run, anyio.run, "
        f"uvloop) import it from agents.asyncio instead: 'from agents.asyncio import {name}'"
    )
