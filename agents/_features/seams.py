"""The features at the loop's seams: hooks, structured output and slash commands together.

:data:`FEATURES` is what the assembly gives every agent's loop (``AgentLoop.seams``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._loop.contracts import Content
from ..hooks import HookResult
from ..messages import ResultMessage, ToolUseBlock
from ..tools.base import ToolOutput
from . import hookpoints
from .commands import run_command
from .structured import structured_follow_up

if TYPE_CHECKING:
    from .._loop.agent import AgentLoop
    from .._loop.response import Response
    from .._loop.run import Run

__all__ = ["FEATURES", "Features"]


class Features:
    """Implements ``agents._loop.contracts.Seams``."""

    async def command(self, loop: AgentLoop, prompt: str) -> ResultMessage | None:
        return await run_command(loop, prompt)

    async def on_prompt(self, loop: AgentLoop, prompt: Content, run: Run) -> Content | None:
        """UserPromptSubmit hooks: the prompt with any added context, or None if blocked.

        (Without a hook to run or context to add, the prompt as it is, without the hooks'
        coroutine: every prompt of every agent comes through here.)"""
        if hookpoints.prompt_as_is(loop):
            return prompt
        return await hookpoints.on_prompt(loop, prompt, run)

    async def on_final(self, loop: AgentLoop, response: Response, run: Run) -> str | None:
        """Stop (SubagentStop) hooks, then structured output, may keep the agent going by
        returning its next instruction; None ends the run."""
        if hookpoints.has_hooks(loop, "Stop" if loop.is_main else "SubagentStop"):
            follow_up = await hookpoints.stop_hooks(loop, response, run)
            if follow_up is not None:
                return follow_up
        return structured_follow_up(loop, response, run)

    async def after_tool(
        self,
        loop: AgentLoop,
        call: ToolUseBlock,
        tool_input: dict[str, Any],
        output: ToolOutput,
        context: tuple[str, ...],
        run: Run,
    ) -> ToolOutput:
        """PostToolUse / PostToolUseFailure hooks."""
        return await hookpoints.after_tool(loop, call, tool_input, output, context, run)

    def sees_tool_output(self, loop: AgentLoop, failed: bool) -> bool:
        return hookpoints.has_hooks(loop, "PostToolUseFailure" if failed else "PostToolUse")

    async def pre_compact(
        self, loop: AgentLoop, trigger: str, instructions: str | None
    ) -> HookResult:
        return await hookpoints.pre_compact(loop, trigger, instructions)

    async def after_compact(self, loop: AgentLoop) -> None:
        """SessionStart hooks with source "compact", for the main agent."""
        if loop.is_main:
            await hookpoints.session_start(loop, "compact")


FEATURES = Features()
