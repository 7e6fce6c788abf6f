"""The loop's seams: what one agent's loop needs from the parts that plug into it.

The loop depends on these and on nothing above it; the permission gate (``agents._assembly``),
the features (hooks, structured output, commands: ``agents._features``) and the tree of actors
(``agents._tree``) implement or fill them:

* :class:`Gate` gives one :class:`Verdict` per tool call; ``None`` from its ``check`` means "run
  it as it is". A verdict with ``deferred`` set always has ``denied`` set too (the error text
  the model sees when the deferral cannot end the turn).
* :class:`Seams` is where the features act: a prompt that is a slash command, a prompt about to
  run, a final response, a tool result, a compaction.
* :class:`Recorder` is an agent's transcript (``agents.sessions.Transcript`` is one).
* :class:`TreeLinks` are the loop's ties to the tree of actors; only ``agents._tree`` writes them.
* :class:`AgentSources` is what a session took from outside its options (external MCP servers,
  skills) as a subagent needs it; ``agents._assembly.sources`` implements it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import msgspec
import trio

from ..hooks import HookResult
from ..messages import Message, ResultMessage, ToolUseBlock
from ..tools.base import FileAccess, Tool, ToolOutput, ToolRegistry

if TYPE_CHECKING:
    from runtime import Actor

    from ..options import AgentDefinition
    from .agent import AgentLoop
    from .response import Response
    from .run import Run

__all__ = [
    "DONE",
    "AgentSources",
    "Content",
    "Done",
    "Gate",
    "Prompt",
    "Recorder",
    "Seams",
    "TreeLinks",
    "Verdict",
]

#: A user turn's content: text, or API-shaped content blocks.
Content = str | list[dict[str, Any]]


class Prompt(msgspec.Struct, frozen=True):
    """A user turn for an agent's mailbox; ``origin`` marks injected turns (task notifications).

    (A frozen Struct, not an ``attrs.frozen`` value: two or more per agent, and a Struct costs
    a sixth as much to make.)"""

    content: Content
    origin: dict[str, Any] | None = None
    max_turns: int | None = None


@attrs.frozen
class Verdict:
    """``denied`` is the error text for the model, or None when the call may run with ``input``."""

    input: dict[str, Any]
    denied: str | None = None
    interrupt: bool = False
    stop: str | None = None
    additional_context: tuple[str, ...] = ()
    #: a PreToolUse hook deferred the call (``denied`` then holds the text for the model)
    deferred: bool = False

    def __attrs_post_init__(self) -> None:
        if self.deferred and self.denied is None:
            raise ValueError("a deferred Verdict needs denied: the text the model sees")


class Gate(Protocol):
    """The permission gate of one agent (subagents share their parent's, or a copy of it in
    another mode)."""

    @property
    def mode(self) -> str: ...

    def set_mode(self, mode: str) -> None: ...

    def with_mode(self, mode: str) -> Gate: ...

    @property
    def files(self) -> FileAccess | None:
        """What the file tools learn from the gate: the files it approved, with their identity,
        and the Read deny rules that searches must respect (``ToolContext.files``)."""
        ...

    def passes_at_once(self, call: ToolUseBlock, tool: Tool) -> bool:
        """Whether ``check`` would answer None (run it as it is) without asking anyone: the
        loop then only checks for a cancellation, and awaits no ``check`` (one coroutine less
        per call)."""
        ...

    async def check(self, loop: AgentLoop, call: ToolUseBlock, tool: Tool) -> Verdict | None: ...


class Seams(Protocol):
    """The features' say in one agent's loop."""

    async def command(self, loop: AgentLoop, prompt: str) -> ResultMessage | None:
        """Run ``prompt`` if it is a slash command (the main agent's prompts starting with
        ``/``); None if it is an ordinary prompt."""
        ...

    async def on_prompt(self, loop: AgentLoop, prompt: Content, run: Run) -> Content | None:
        """The prompt to run (with any added context), or None when it must not run."""
        ...

    async def on_final(self, loop: AgentLoop, response: Response, run: Run) -> str | None:
        """A response without tool calls: the agent's next instruction, or None to end the run
        (or raise ``RunEnd``)."""
        ...

    async def after_tool(
        self,
        loop: AgentLoop,
        call: ToolUseBlock,
        tool_input: dict[str, Any],
        output: ToolOutput,
        context: tuple[str, ...],
        run: Run,
    ) -> ToolOutput:
        """The output the model sees of a call that ran; ``context`` is the text the gate's
        hooks added."""
        ...

    def sees_tool_output(self, loop: AgentLoop, failed: bool) -> bool:
        """Whether :meth:`after_tool` may change a call's output (a PostToolUse or
        PostToolUseFailure hook is set); when it says no and the gate's hooks added no context,
        the loop skips ``after_tool`` (a cheap check on every tool call)."""
        ...

    async def pre_compact(
        self, loop: AgentLoop, trigger: str, instructions: str | None
    ) -> HookResult:
        """Before a compaction; a result with ``block`` set skips it."""
        ...

    async def after_compact(self, loop: AgentLoop) -> None:
        """After a compaction replaced the history."""
        ...


class Recorder(Protocol):
    """An agent's transcript: every message it produces, in order. ``last_uuid`` is the uuid
    of the last entry stored, set as soon as it is (a record cancelled after storing its entry
    says so there)."""

    last_uuid: str | None

    async def record(self, message: Message) -> object: ...

    async def record_all(self, messages: Sequence[Message]) -> object: ...

    async def record_kind(self, kind: str, data: dict[str, Any]) -> object: ...

    def close(self) -> None: ...


class AgentSources(Protocol):
    """A session's external MCP servers and skills, for its subagents."""

    def for_child(
        self, definition: AgentDefinition, registry: ToolRegistry
    ) -> list[dict[str, Any]]:
        """Add the tools of the definition's own servers and its skills to ``registry``;
        return the system blocks describing them."""
        ...


@attrs.define(eq=False)
class TreeLinks:
    """One agent's ties to the tree of actors, written only by ``agents._tree``; the loop reads
    ``nursery`` (its tools' background work) and ``progress``."""

    #: the actor this agent runs in (None until it is spawned)
    actor: Actor | None = None
    #: lives as long as the agent: background shells run there (None when no tool needs one)
    nursery: trio.Nursery | None = None
    #: background children still running (the agent's input cannot end before they do)
    background_running: int = 0
    #: background children's notifications not answered yet, oldest first (None until the
    #: first: most agents of a tree have no background child, and an empty list per agent is
    #: one more object for the cycle collector to walk while the agent lives)
    notifications: list[Prompt] | None = None
    #: called after each of this agent's responses (background subagents report progress)
    progress: Callable[[AgentLoop, Response], Awaitable[None]] | None = None


class Done:
    """An awaitable done at once, and reusable: what a step that usually waits hands back,
    without a coroutine, when it had nothing to wait for (a ``record`` without a transcript,
    an ``emit`` that found room)."""

    __slots__ = ()

    def __await__(self) -> Generator[None, None, None]:
        return
        yield  # (a generator, so that awaiting it returns at once)


DONE = Done()
