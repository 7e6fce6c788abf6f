"""The loop without features: no hooks, no structured output, no slash commands.

What an :class:`~agents._loop.agent.AgentLoop` uses until the assembly gives it the features'
seams (``agents._features.FEATURES``); also what a loop built on its own (a test, a tool) runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from ..hooks import HookResult
from ..messages import ResultMessage, ToolUseBlock
from ..tools.base import ToolOutput
from .tool_calls import with_context

if TYPE_CHECKING:
    from .agent import AgentLoop
    from .contracts import Content
    from .response import Response
    from .run import Run

__all__ = ["NO_SEAMS", "NoSeams"]

_NO_RESULT = HookResult()


class NoSeams:
    """Every seam answers "carry on as you are"."""

    async def command(self, loop: AgentLoop, prompt: str) -> ResultMessage | None:
        return None

    async def on_prompt(self, loop: AgentLoop, prompt: Content, run: Run) -> Content | None:
        return prompt

    async def on_final(self, loop: AgentLoop, response: Response, run: Run) -> str | None:
        return None

    async def after_tool(
        self,
        loop: AgentLoop,
        call: ToolUseBlock,
        tool_input: dict[str, Any],
        output: ToolOutput,
        context: tuple[str, ...],
        run: Run,
    ) -> ToolOutput:
        return with_context(output, context)

    def sees_tool_output(self, loop: AgentLoop, failed: bool) -> bool:
        return False

    async def pre_compact(
        self, loop: AgentLoop, trigger: str, instructions: str | None
    ) -> HookResult:
        await trio.lowlevel.checkpoint()
        return _NO_RESULT

    async def after_compact(self, loop: AgentLoop) -> None:
        return None


NO_SEAMS = NoSeams()
