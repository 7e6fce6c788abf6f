"""The loop's side of the permission pipeline (SPEC P1): one verdict per tool call.

``agents.permissions`` decides (hooks → deny → ask → mode → allow → ``can_use_tool``); this
adapter feeds it what the loop knows — the agent, the call, whether the tool is read-only — and
turns the outcome into what the loop needs: run with this input, or answer with this error.
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any

import attrs

from .hooks import HookRunner
from .messages import SystemMessage, ToolUseBlock
from .permissions import PermissionCheck, PermissionGate, RuleSet
from .tools.base import Tool

if TYPE_CHECKING:
    from ._loop import AgentLoop, Session
    from .options import AgentOptions

__all__ = ["LoopGate", "Verdict", "make_gate"]


_NO_HOOK_INPUT: dict[str, Any] = {}


@attrs.frozen
class Verdict:
    """``denied`` is the error text for the model, or None when the call may run with ``input``."""

    input: dict[str, Any]
    denied: str | None = None
    interrupt: bool = False
    stop: str | None = None
    additional_context: tuple[str, ...] = ()


@attrs.define(eq=False)
class LoopGate:
    """Wraps a :class:`PermissionGate` for one session (subagents share it; P5)."""

    gate: PermissionGate
    session: Session
    has_hooks: bool = False

    def set_mode(self, mode: str) -> None:
        self.gate.set_mode(mode)

    @property
    def mode(self) -> str:
        return self.gate.mode

    def hook_input(self, loop: AgentLoop) -> dict[str, Any]:
        """The fields every hook input carries (H3)."""
        data: dict[str, Any] = {
            "session_id": self.session.session_id,
            "transcript_path": self.session.session_state.get("transcript_path", ""),
            "cwd": self.session.cwd,
            "permission_mode": self.gate.mode,
        }
        if not loop.is_main:
            data["agent_id"] = loop.agent_id
            data["agent_type"] = loop.agent_type
        return data

    async def check(self, loop: AgentLoop, call: ToolUseBlock, tool: Tool) -> Verdict:
        outcome = await self.gate.check(
            PermissionCheck(
                tool_name=call.name,
                tool_input=call.input,
                tool_use_id=call.id,
                read_only=tool.read_only,
                agent_id=None if loop.is_main else loop.agent_id,
                agent_type=None if loop.is_main else loop.agent_type,
            ),
            self.hook_input(loop) if self.has_hooks else _NO_HOOK_INPUT,
        )
        for text in outcome.system_messages:
            await self.session.emit(SystemMessage(subtype="informational", data={"message": text}))
        if outcome.behavior == "allow":
            return Verdict(
                input=outcome.updated_input,
                stop=outcome.stop,
                additional_context=outcome.additional_context,
            )
        if outcome.behavior == "defer":
            message = outcome.message or f"{call.name} call deferred by a PreToolUse hook"
        else:
            message = outcome.message or f"Permission to use {call.name} was denied."
        return Verdict(
            input=call.input, denied=message, interrupt=outcome.interrupt, stop=outcome.stop
        )


def make_gate(options: AgentOptions, session: Session) -> LoopGate:
    """Build the session's gate; malformed rules fail here, at startup (P3)."""
    rules = RuleSet.from_strings(allow=options.allowed_tools, deny=options.disallowed_tools, ask=())
    known = set(session.options.tools or ()) | {"Bash", "Read", "Edit", "Write"}
    for rule in (*rules.allow, *rules.deny):
        if rule.tool.startswith("mcp__") or rule.tool in known:
            continue
        from .tools.builtin import BUILTIN_TOOL_NAMES

        if rule.tool not in BUILTIN_TOOL_NAMES and rule.tool not in (
            "Agent",
            "Skill",
            "ToolSearch",
        ):
            warnings.warn(f"permission rule {rule}: unknown tool {rule.tool!r}", stacklevel=2)
    gate = PermissionGate(
        mode=options.resolved_permission_mode,
        rules=rules,
        can_use_tool=options.can_use_tool,
        hooks=HookRunner(options.hooks) if options.hooks else None,
        cwd=session.cwd,
        add_dirs=[os.path.abspath(d) for d in options.add_dirs],
    )
    return LoopGate(gate=gate, session=session, has_hooks=bool(options.hooks))
