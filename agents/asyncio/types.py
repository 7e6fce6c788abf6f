"""The Agent SDK's ``claude_agent_sdk.types`` names, for programs ported to trio-agents.

A program that imports from ``claude_agent_sdk.types`` changes that import to
``agents.asyncio.types`` (a Trio program may import it too: nothing here depends on the loop)::

    from agents.asyncio.types import ClaudeAgentOptions, HookContext, HookInput, HookJSONOutput

Each name is one of three kinds:

* the trio-agents class itself, under the SDK's name (``ClaudeAgentOptions`` is
  :class:`agents.AgentOptions`, ``TextBlock`` is :class:`agents.TextBlock`, ...);
* the same ``Literal`` of allowed strings (``PermissionMode``, ``EffortLevel``, ...);
* for the SDK's ``TypedDict`` shapes of plain dictionaries (hook inputs and outputs, MCP server
  configurations, usage records), ``dict[str, Any]``: the dictionaries themselves are the same,
  only the static checking of their keys is not offered.

Names of SDK features that concern its CLI process (transports, control requests, plugins,
sandbox settings, betas) are not provided.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from ..hooks import HookCallback as HookCallback
from ..hooks import HookContext as HookContext
from ..hooks import HookEvent as HookEvent
from ..hooks import HookMatcher as HookMatcher
from ..messages import AssistantMessage as AssistantMessage
from ..messages import ContentBlock as ContentBlock
from ..messages import Message as Message
from ..messages import ResultMessage as ResultMessage
from ..messages import StreamEvent as StreamEvent
from ..messages import SystemMessage as SystemMessage
from ..messages import TextBlock as TextBlock
from ..messages import ThinkingBlock as ThinkingBlock
from ..messages import ToolResultBlock as ToolResultBlock
from ..messages import ToolUseBlock as ToolUseBlock
from ..messages import UserMessage as UserMessage
from ..options import AgentDefinition as AgentDefinition
from ..options import AgentOptions
from ..permissions import CanUseTool as CanUseTool
from ..permissions import PermissionMode as PermissionMode
from ..permissions import PermissionResult as PermissionResult
from ..permissions import PermissionResultAllow as PermissionResultAllow
from ..permissions import PermissionResultDeny as PermissionResultDeny
from ..permissions import ToolPermissionContext as ToolPermissionContext
from ..tools.base import SdkMcpServer
from ..tools.base import SdkMcpTool as SdkMcpTool

__all__ = [
    "AgentDefinition",
    "AssistantMessage",
    "AsyncHookJSONOutput",
    "BaseHookInput",
    "CanUseTool",
    "ClaudeAgentOptions",
    "ContentBlock",
    "EffortLevel",
    "HookCallback",
    "HookContext",
    "HookEvent",
    "HookInput",
    "HookJSONOutput",
    "HookMatcher",
    "HookSpecificOutput",
    "McpHttpServerConfig",
    "McpSSEServerConfig",
    "McpSdkServerConfig",
    "McpServerConfig",
    "McpStdioServerConfig",
    "Message",
    "ModelUsage",
    "NotificationHookInput",
    "PermissionBehavior",
    "PermissionMode",
    "PermissionRequestHookInput",
    "PermissionResult",
    "PermissionResultAllow",
    "PermissionResultDeny",
    "PermissionUpdateDestination",
    "PostToolUseFailureHookInput",
    "PostToolUseHookInput",
    "PostToolUseHookSpecificOutput",
    "PreCompactHookInput",
    "PreToolUseHookInput",
    "PreToolUseHookSpecificOutput",
    "ResultMessage",
    "SdkMcpTool",
    "SettingSource",
    "StopHookInput",
    "StreamEvent",
    "SubagentStartHookInput",
    "SubagentStopHookInput",
    "SyncHookJSONOutput",
    "SystemMessage",
    "SystemPromptPreset",
    "TextBlock",
    "ThinkingBlock",
    "ThinkingConfig",
    "ThinkingConfigAdaptive",
    "ThinkingConfigDisabled",
    "ThinkingConfigEnabled",
    "ToolPermissionContext",
    "ToolResultBlock",
    "ToolUseBlock",
    "UserMessage",
    "UserPromptSubmitHookInput",
]

#: The SDK's options class is :class:`agents.AgentOptions`.
ClaudeAgentOptions = AgentOptions

# -- allowed strings ------------------------------------------------------------------------------
SettingSource: TypeAlias = Literal["user", "project", "local"]
EffortLevel: TypeAlias = Literal["low", "medium", "high", "xhigh", "max"]
PermissionBehavior: TypeAlias = Literal["allow", "deny", "ask"]
PermissionUpdateDestination: TypeAlias = Literal[
    "userSettings", "projectSettings", "localSettings", "session"
]

# -- plain dictionaries ---------------------------------------------------------------------------
# Hook inputs: what every hook callback receives as its first argument.
BaseHookInput: TypeAlias = dict[str, Any]
HookInput: TypeAlias = dict[str, Any]
PreToolUseHookInput: TypeAlias = dict[str, Any]
PostToolUseHookInput: TypeAlias = dict[str, Any]
PostToolUseFailureHookInput: TypeAlias = dict[str, Any]
UserPromptSubmitHookInput: TypeAlias = dict[str, Any]
StopHookInput: TypeAlias = dict[str, Any]
SubagentStartHookInput: TypeAlias = dict[str, Any]
SubagentStopHookInput: TypeAlias = dict[str, Any]
PreCompactHookInput: TypeAlias = dict[str, Any]
NotificationHookInput: TypeAlias = dict[str, Any]
PermissionRequestHookInput: TypeAlias = dict[str, Any]
# Hook outputs: what a hook callback returns.
HookJSONOutput: TypeAlias = dict[str, Any]
SyncHookJSONOutput: TypeAlias = dict[str, Any]
AsyncHookJSONOutput: TypeAlias = dict[str, Any]
HookSpecificOutput: TypeAlias = dict[str, Any]
PreToolUseHookSpecificOutput: TypeAlias = dict[str, Any]
PostToolUseHookSpecificOutput: TypeAlias = dict[str, Any]
# MCP servers: an in-process server is what ``create_sdk_mcp_server`` returns; external
# servers are configured with dictionaries.
McpSdkServerConfig: TypeAlias = SdkMcpServer
McpStdioServerConfig: TypeAlias = dict[str, Any]
McpSSEServerConfig: TypeAlias = dict[str, Any]
McpHttpServerConfig: TypeAlias = dict[str, Any]
McpServerConfig: TypeAlias = SdkMcpServer | dict[str, Any]
# Options given as dictionaries, and usage records.
SystemPromptPreset: TypeAlias = dict[str, Any]
ThinkingConfig: TypeAlias = dict[str, Any]
ThinkingConfigAdaptive: TypeAlias = dict[str, Any]
ThinkingConfigEnabled: TypeAlias = dict[str, Any]
ThinkingConfigDisabled: TypeAlias = dict[str, Any]
ModelUsage: TypeAlias = dict[str, Any]
