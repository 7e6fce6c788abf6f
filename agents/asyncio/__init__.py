"""The trio-agents API for asyncio programs, under its own names and the Agent SDK's.

``query()`` and ``AgentClient`` (alias ``ClaudeSDKClient``) run the Trio agent runtime in guest
mode on the running asyncio loop: one Trio run per loop serves all its sessions, starting with
the first and ending with the last. Hooks, ``can_use_tool``, in-process tool handlers and
prompt streams are asyncio code, run as tasks of the caller's loop. A program written for the
Python Claude Agent SDK runs with its imports changed from ``claude_agent_sdk`` to
``agents.asyncio`` (and ``claude_agent_sdk.types`` to ``agents.asyncio.types``)::

    import asyncio
    from agents.asyncio import ClaudeAgentOptions, ResultMessage, query

    async def main():
        async for message in query(prompt="What files are here?",
                                   options=ClaudeAgentOptions(allowed_tools=["Glob"])):
            if isinstance(message, ResultMessage):
                print(message.result)

    asyncio.run(main())

Cancelling the task that reads a query (or ``asyncio.timeout``) cancels its session and waits
until all of it has ended; an exception raised inside the session reaches the caller as it is.
"""

from __future__ import annotations

from .. import AgentOptions as AgentOptions
from .. import ResultError as ResultError
from .. import ToolAnnotations as ToolAnnotations
from .. import create_sdk_mcp_server as create_sdk_mcp_server
from .. import tool as tool
from ._bridge import CallbackCancelled as CallbackCancelled
from ._client import AgentClient as AgentClient
from ._client import AgentClient as ClaudeSDKClient
from ._errors import ClaudeSDKError as ClaudeSDKError
from ._errors import CLIConnectionError as CLIConnectionError
from ._errors import CLIJSONDecodeError as CLIJSONDecodeError
from ._errors import CLINotFoundError as CLINotFoundError
from ._errors import ProcessError as ProcessError
from ._guest import run_in_trio as run_in_trio
from ._query import query as query
from ._sessions import get_session_messages as get_session_messages
from ._sessions import list_sessions as list_sessions
from .types import AgentDefinition as AgentDefinition
from .types import AssistantMessage as AssistantMessage
from .types import AsyncHookJSONOutput as AsyncHookJSONOutput
from .types import BaseHookInput as BaseHookInput
from .types import CanUseTool as CanUseTool
from .types import ClaudeAgentOptions as ClaudeAgentOptions
from .types import ContentBlock as ContentBlock
from .types import EffortLevel as EffortLevel
from .types import HookCallback as HookCallback
from .types import HookContext as HookContext
from .types import HookEvent as HookEvent
from .types import HookInput as HookInput
from .types import HookJSONOutput as HookJSONOutput
from .types import HookMatcher as HookMatcher
from .types import HookSpecificOutput as HookSpecificOutput
from .types import McpHttpServerConfig as McpHttpServerConfig
from .types import McpSdkServerConfig as McpSdkServerConfig
from .types import McpServerConfig as McpServerConfig
from .types import McpSSEServerConfig as McpSSEServerConfig
from .types import McpStdioServerConfig as McpStdioServerConfig
from .types import Message as Message
from .types import ModelUsage as ModelUsage
from .types import NotificationHookInput as NotificationHookInput
from .types import PermissionBehavior as PermissionBehavior
from .types import PermissionMode as PermissionMode
from .types import PermissionRequestHookInput as PermissionRequestHookInput
from .types import PermissionResult as PermissionResult
from .types import PermissionResultAllow as PermissionResultAllow
from .types import PermissionResultDeny as PermissionResultDeny
from .types import PermissionUpdateDestination as PermissionUpdateDestination
from .types import PostToolUseFailureHookInput as PostToolUseFailureHookInput
from .types import PostToolUseHookInput as PostToolUseHookInput
from .types import PostToolUseHookSpecificOutput as PostToolUseHookSpecificOutput
from .types import PreCompactHookInput as PreCompactHookInput
from .types import PreToolUseHookInput as PreToolUseHookInput
from .types import PreToolUseHookSpecificOutput as PreToolUseHookSpecificOutput
from .types import ResultMessage as ResultMessage
from .types import SdkMcpTool as SdkMcpTool
from .types import SettingSource as SettingSource
from .types import StopHookInput as StopHookInput
from .types import StreamEvent as StreamEvent
from .types import SubagentStartHookInput as SubagentStartHookInput
from .types import SubagentStopHookInput as SubagentStopHookInput
from .types import SyncHookJSONOutput as SyncHookJSONOutput
from .types import SystemMessage as SystemMessage
from .types import SystemPromptPreset as SystemPromptPreset
from .types import TextBlock as TextBlock
from .types import ThinkingBlock as ThinkingBlock
from .types import ThinkingConfig as ThinkingConfig
from .types import ThinkingConfigAdaptive as ThinkingConfigAdaptive
from .types import ThinkingConfigDisabled as ThinkingConfigDisabled
from .types import ThinkingConfigEnabled as ThinkingConfigEnabled
from .types import ToolPermissionContext as ToolPermissionContext
from .types import ToolResultBlock as ToolResultBlock
from .types import ToolUseBlock as ToolUseBlock
from .types import UserMessage as UserMessage
from .types import UserPromptSubmitHookInput as UserPromptSubmitHookInput

__all__ = [
    "AgentClient",
    "AgentDefinition",
    "AgentOptions",
    "AssistantMessage",
    "AsyncHookJSONOutput",
    "BaseHookInput",
    "CLIConnectionError",
    "CLIJSONDecodeError",
    "CLINotFoundError",
    "CallbackCancelled",
    "CanUseTool",
    "ClaudeAgentOptions",
    "ClaudeSDKClient",
    "ClaudeSDKError",
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
    "ProcessError",
    "ResultError",
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
    "ToolAnnotations",
    "ToolPermissionContext",
    "ToolResultBlock",
    "ToolUseBlock",
    "UserMessage",
    "UserPromptSubmitHookInput",
    "create_sdk_mcp_server",
    "get_session_messages",
    "list_sessions",
    "query",
    "run_in_trio",
    "tool",
]
