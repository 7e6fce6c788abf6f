"""trio-agents: the Claude Agent SDK's agent loop as a tree of Trio actors.

The public names are those of the Python Claude Agent SDK::

    import trio
    from agents import query, AgentOptions, ResultMessage

    async def main():
        async for message in query(prompt="What files are here?"):
            if isinstance(message, ResultMessage):
                print(message.result)

    trio.run(main)

The SDK's own names for what trio-agents names differently (``ClaudeAgentOptions``,
``ClaudeSDKClient``, ...) are aliases, so a program written for ``claude_agent_sdk`` ports by
changing its imports. ``agents.asyncio`` has the same API for asyncio programs.

``import agents`` stays cheap: each public name is imported on first use (``from agents import
query`` loads the agent loop, not the cockpit, the Bash analysis or the ``anthropic`` client).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

if TYPE_CHECKING:
    from ._assembly.query import AgentClient as AgentClient
    from ._assembly.query import query as query
    from .hooks import HookContext as HookContext
    from .hooks import HookMatcher as HookMatcher
    from .messages import AssistantMessage as AssistantMessage
    from .messages import ContentBlock as ContentBlock
    from .messages import Message as Message
    from .messages import ResultError as ResultError
    from .messages import ResultMessage as ResultMessage
    from .messages import StreamEvent as StreamEvent
    from .messages import SystemMessage as SystemMessage
    from .messages import TextBlock as TextBlock
    from .messages import ThinkingBlock as ThinkingBlock
    from .messages import ToolResultBlock as ToolResultBlock
    from .messages import ToolUseBlock as ToolUseBlock
    from .messages import UserMessage as UserMessage
    from .options import AgentDefinition as AgentDefinition
    from .options import AgentOptions as AgentOptions
    from .permissions import PermissionResult as PermissionResult
    from .permissions import PermissionResultAllow as PermissionResultAllow
    from .permissions import PermissionResultDeny as PermissionResultDeny
    from .permissions import ToolPermissionContext as ToolPermissionContext
    from .sessions import get_session_messages as get_session_messages
    from .sessions import list_sessions as list_sessions
    from .tools.base import SdkMcpTool as SdkMcpTool
    from .tools.base import ToolAnnotations as ToolAnnotations
    from .tools.base import create_sdk_mcp_server as create_sdk_mcp_server
    from .tools.base import tool as tool

    # the Agent SDK's names for the same things (``claude_agent_sdk`` programs port by imports)
    ClaudeAgentOptions = AgentOptions
    ClaudeSDKClient = AgentClient

__all__ = [
    "AgentClient",
    "AgentDefinition",
    "AgentOptions",
    "AssistantMessage",
    "ClaudeAgentOptions",
    "ClaudeSDKClient",
    "ContentBlock",
    "HookContext",
    "HookMatcher",
    "Message",
    "PermissionResult",
    "PermissionResultAllow",
    "PermissionResultDeny",
    "ResultError",
    "ResultMessage",
    "SdkMcpTool",
    "StreamEvent",
    "SystemMessage",
    "TextBlock",
    "ThinkingBlock",
    "ToolAnnotations",
    "ToolPermissionContext",
    "ToolResultBlock",
    "ToolUseBlock",
    "UserMessage",
    "create_sdk_mcp_server",
    "get_session_messages",
    "list_sessions",
    "query",
    "tool",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "AgentClient": "._assembly.query",
        "query": "._assembly.query",
        "HookMatcher": ".hooks",
        "AssistantMessage": ".messages",
        "ContentBlock": ".messages",
        "Message": ".messages",
        "ResultError": ".messages",
        "ResultMessage": ".messages",
        "StreamEvent": ".messages",
        "SystemMessage": ".messages",
        "TextBlock": ".messages",
        "ThinkingBlock": ".messages",
        "ToolResultBlock": ".messages",
        "ToolUseBlock": ".messages",
        "UserMessage": ".messages",
        "AgentDefinition": ".options",
        "AgentOptions": ".options",
        "PermissionResultAllow": ".permissions",
        "PermissionResultDeny": ".permissions",
        "ToolPermissionContext": ".permissions",
        "get_session_messages": ".sessions",
        "list_sessions": ".sessions",
        "SdkMcpTool": ".tools.base",
        "ToolAnnotations": ".tools.base",
        "create_sdk_mcp_server": ".tools.base",
        "tool": ".tools.base",
        "HookContext": ".hooks",
        "PermissionResult": ".permissions",
        "ClaudeAgentOptions": ".options:AgentOptions",
        "ClaudeSDKClient": "._assembly.query:AgentClient",
    },
)
