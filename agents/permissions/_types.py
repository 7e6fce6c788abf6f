"""The values that cross the permission boundary: modes, callback results, checks and outcomes.

Names and fields follow the Python Claude Agent SDK (``PermissionResultAllow``,
``ToolPermissionContext``...) so that a ``can_use_tool`` written for it works unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeAlias

import attrs
import msgspec

__all__ = [
    "PERMISSION_MODES",
    "CanUseTool",
    "Classifier",
    "PermissionCheck",
    "PermissionMode",
    "PermissionOutcome",
    "PermissionResult",
    "PermissionResultAllow",
    "PermissionResultDeny",
    "ToolPermissionContext",
    "validate_mode",
]

PermissionMode: TypeAlias = Literal[
    "default", "acceptEdits", "plan", "dontAsk", "auto", "bypassPermissions"
]
#: Every permission mode, in the order error messages list them.
PERMISSION_MODES: tuple[str, ...] = (
    "default",
    "acceptEdits",
    "plan",
    "dontAsk",
    "auto",
    "bypassPermissions",
)


def validate_mode(mode: object) -> str:
    """Return ``mode`` if it is a permission mode, else raise ValueError listing the valid ones."""
    if mode not in PERMISSION_MODES:
        raise ValueError(
            f"unknown permission_mode {mode!r} (expected one of {', '.join(PERMISSION_MODES)})"
        )
    assert isinstance(mode, str)
    return mode


@attrs.frozen
class PermissionResultAllow:
    """``can_use_tool``'s yes: run the tool, with ``updated_input`` instead of the input if given.

    ``updated_permissions`` entries (``{"type": "addRules", "rules": [{"toolName": "Bash",
    "ruleContent": "npm *"}], "behavior": "allow"}`` or ``{"type": "setMode", "mode": ...}``)
    are applied to the session, so that the same question is not asked again.
    """

    behavior: Literal["allow"] = "allow"
    updated_input: dict[str, Any] | None = None
    updated_permissions: list[Any] | None = None


@attrs.frozen
class PermissionResultDeny:
    """``can_use_tool``'s no: ``message`` goes to the model; ``interrupt=True`` ends the turn."""

    behavior: Literal["deny"] = "deny"
    message: str = ""
    interrupt: bool = False


PermissionResult: TypeAlias = PermissionResultAllow | PermissionResultDeny


@attrs.frozen
class ToolPermissionContext:
    """What ``can_use_tool`` learns besides the tool name and input.

    ``agent_id`` is set when the call comes from inside a subagent; ``suggestions`` holds
    permission updates the callback may hand back as ``updated_permissions``.
    """

    tool_use_id: str
    agent_id: str | None = None
    suggestions: list[Any] = attrs.field(factory=list)
    signal: None = None


CanUseTool: TypeAlias = Callable[
    [str, dict[str, Any], ToolPermissionContext], Awaitable[PermissionResult]
]


class PermissionCheck(msgspec.Struct, frozen=True):
    """One tool call to decide on, as the loop sees it.

    ``read_only`` is the scheduler's classification (read-only calls fan out): it is what lets
    ``default`` mode pass a call without asking. (A frozen Struct, like
    :class:`PermissionOutcome`: one is made for every call the gate decides.)
    """

    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str
    read_only: bool
    agent_id: str | None = None
    agent_type: str | None = None
    #: the tool needs a person's answer (AskUserQuestion): it always goes to the can_use_tool
    #: callback, the last step
    asks_user: bool = False


#: ``auto`` mode's judge of calls that would otherwise ask: True approves, False denies,
#: None (no opinion) falls through to the ``can_use_tool`` callback.
Classifier: TypeAlias = Callable[[PermissionCheck], Awaitable[bool | None]]


class PermissionOutcome(msgspec.Struct, frozen=True):
    """The gate's verdict on one call, with everything the loop must pass on.

    ``behavior="defer"`` comes only from a PreToolUse hook: the call is neither run nor denied
    now. ``stop`` is not None when a hook returned ``continue_=False``: the loop ends the run
    with that reason after this call (which is denied).

    (A frozen Struct rather than an attrs value: the gate makes one at every check, and it
    costs about 1 k instructions to make where an ``attrs.frozen`` class of these eight fields
    costs 9 k, a thirtieth of a typical Bash check.)
    """

    behavior: Literal["allow", "deny", "defer"]
    updated_input: dict[str, Any]
    message: str = ""
    interrupt: bool = False
    decided_by: Literal["hook", "rule", "mode", "callback", "default"] = "default"
    additional_context: tuple[str, ...] = ()
    system_messages: tuple[str, ...] = ()
    stop: str | None = None
